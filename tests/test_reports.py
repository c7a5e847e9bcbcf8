"""Reports: build (Markdown, HTML, JSON), the PP metric, HTML escaping, compare (regressions, noise, refusals) and
bad input. Run files are synthetic, made here: the tests never depend on a runner's files."""

from __future__ import annotations

import ast
import copy
import json
import random
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest

from reports.__main__ import main
from reports.loading import SCHEMA_PATH

ROOT = Path(__file__).resolve().parent.parent
H100 = ("NVIDIA H100 80GB HBM3", "sm_90")
H200 = ("NVIDIA H200", "sm_90")
XSS = "<script>alert(1)</script>"


def samples(median: float, seed: int, n: int = 60, noise: float = 0.01) -> list[float]:
    rng = random.Random(seed)
    return [median * (1 + rng.gauss(0, noise)) for _ in range(n)]


def bench(kernel: str, dtype: str, shape: dict, median: float, measured: float | None, datasheet: float | None,
          speedup: float | None = 1.2, correct: bool = True, seed: int = 0, n: int = 60, noise: float = 0.01) -> dict:
    s = samples(median, seed, n, noise)
    base = None if speedup is None else {"name": "torch", "samples_ms": samples(median * speedup, seed + 1000, n, noise),
                                         "median_ms": median * speedup}
    return {"kernel": kernel, "dtype": dtype, "shape": shape, "config": {"num_warps": 4}, "samples_ms": s,
            "median_ms": median, "iqr_ms": 0.01, "bytes": 1e9, "flops": 0.0, "gbps": 1000.0, "tflops": 0.0,
            "bound": "memory", "efficiency_measured": measured, "efficiency_datasheet": datasheet,
            "baseline": base, "speedup": speedup, "correct": correct, "error_ratio": 0.1, "message": None}


def case(kernel: str, dtype: str, seed: int, outcome: str = "passed", ratio: float = 0.1) -> dict:
    nodeid = f"suite/test_kernels.py::test_matches_reference[{kernel}-{dtype}]"
    return {"kernel": kernel, "dtype": dtype, "shape": {"M": 4, "N": 8 + seed}, "layout": "contiguous",
            "values": "normal", "seed": seed, "outcome": outcome, "error_ratio": ratio,
            "outputs": {"out": {"error_ratio": ratio, "max_abs_error": 1e-6}}, "message": None, "duration_s": 0.01,
            "nodeid": nodeid, "repro": f"pytest '{nodeid}' --repro=seed={seed}"}


def make_run(platform: tuple[str, str] = H100, run_id: str = "20261121T000000Z-cuda-sm_90-aaaaaa",
             started: str = "2026-11-21T00:00:00+00:00", kernels=(("softmax", "fp16"), ("matmul", "bf16")),
             benchmarks: list | None = None, ceilings: bool = True) -> dict:
    device, arch = platform
    tests, cases, findings = [], [], []
    for k, d in kernels:
        tests.append({"nodeid": f"suite/test_kernels.py::test_matches_reference[{k}-{d}]", "outcome": "passed",
                      "duration_s": 0.1, "message": None, "known_issue": None})
        cases += [case(k, d, seed, ratio=0.1 * (seed + 1)) for seed in range(3)]
        findings += [{"kernel": k, "dtype": d, "backend": "cuda", "arch": arch, "property": p, "claimed": True,
                      "holds": True, "cases_checked": 5, "message": None, "repro": None}
                     for p in ("deterministic", "batch_invariant")]
    run = {"schema_version": 1, "run_id": run_id, "status": "complete", "started": started,
           "finished": started, "command": ["pytest", "--backend=cuda"],
           "environment": {"backend": "cuda", "device_name": device, "arch": arch, "sm_count": 132, "warp_size": 32,
                           "profile": "h100_sxm", "profile_note": None, "driver": "580.1", "runtime": "CUDA 13.0",
                           "torch": "2.11.0", "triton": "3.6.0", "hypothesis": "6.170", "python": "3.12",
                           "platform": "Linux", "hostname": "runner", "hypothesis_profile": "validation",
                           "hypothesis_seed": 0},
           "tests": tests, "cases": cases, "findings": findings,
           "compiles": [{"kernel": "matmul", "dtype": "bf16", "target": "gfx942", "status": "failed",
                         "failure_class": "out_of_shared_memory", "config": {"num_stages": 3}},
                        {"kernel": "matmul", "dtype": "bf16", "target": "sm_90", "status": "ok", "registers": 168,
                         "spills": False, "occupancy": 0.5, "shared_bytes": 98304}],
           "benchmarks": benchmarks if benchmarks is not None else [], "known_issues": []}
    if ceilings:
        run["ceilings"] = {"copy_gbps": 3000.0, "matmul_tflops": {"fp16": 670.0, "bf16": 710.0, "fp32": 400.0},
                           "datasheet": {"bandwidth_tbs": 3.35, "tflops": {"fp16": 989.4, "bf16": 989.4, "fp32": 494.7}}}
        run["autotune"] = {"hits": 5, "misses": 1, "stale": 0, "tuning_benchmarks": 0,
                           "entries": [{"kernel": "matmul", "dtype": "bf16", "status": "hit"}]}
    return run


def write(path: Path, data: dict) -> Path:
    path.write_text(json.dumps(data))
    return path


def cli(capsys, *argv: str) -> tuple[int, str, str]:
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def two_platforms(tmp_path: Path, softmax_h200=(0.4, 0.3)) -> list[Path]:
    small, large = {"M": 1024, "N": 1024}, {"M": 8192, "N": 8192}
    h100 = make_run(H100, benchmarks=[bench("softmax", "fp16", small, 0.1, 0.1, 0.05),
                                      bench("softmax", "fp16", large, 1.0, 0.8, 0.6, speedup=1.5),
                                      bench("matmul", "bf16", {"M": 4096, "N": 4096, "K": 4096}, 2.0, 0.7, 0.5,
                                            speedup=0.9)])
    h200 = make_run(H200, run_id="20261121T010000Z-cuda-sm_90-bbbbbb", started="2026-11-21T01:00:00+00:00",
                    benchmarks=[bench("softmax", "fp16", small, 0.1, 0.2, 0.1),
                                bench("softmax", "fp16", large, 1.0, *softmax_h200, speedup=1.1)])
    return [write(tmp_path / "h100.json", h100), write(tmp_path / "h200.json", h200)]


def test_synthetic_runs_match_the_repo_schema():
    """The helper's runs carry the optional 'ceilings' and 'autotune' objects the run-file schema must allow."""
    schema = json.loads(SCHEMA_PATH.read_text())
    jsonschema.validate(make_run(benchmarks=[bench("softmax", "fp16", {"M": 1}, 1.0, 0.5, 0.4)]), schema,
                        cls=jsonschema.Draft202012Validator)


def test_build_writes_three_files_with_sections_and_pp(tmp_path, capsys):
    out = tmp_path / "report"
    code, stdout, err = cli(capsys, "build", *two_platforms(tmp_path), "--out", out)
    assert code == 0, err
    assert {p.name for p in out.iterdir()} == {"report.md", "report.html", "summary.json"}
    md = (out / "report.md").read_text()
    for section in ("## Runs", "## Correctness matrix", "## Numeric drift", "## Property findings", "## Compile matrix",
                    "## Performance portability", "## Autotune coverage", "## Known issues"):
        assert section in md
    assert "NVIDIA H100 80GB HBM3 (sm_90)" in md and "NVIDIA H200 (sm_90)" in md  # two platforms, one arch
    summary = json.loads((out / "summary.json").read_text())
    pp = {(r["kernel"], r["dtype"]): r for r in summary["performance"]["pp"]}
    # Largest shape (8192x8192): 0.8 on H100, 0.4 on H200; the small shape's efficiencies must not count.
    assert pp[("softmax", "fp16")]["pp_measured"] == pytest.approx(2 / (1 / 0.8 + 1 / 0.4))
    assert pp[("softmax", "fp16")]["pp_datasheet"] == pytest.approx(2 / (1 / 0.6 + 1 / 0.3))
    assert pp[("matmul", "bf16")]["pp_measured"] == 0.0  # not benchmarked on the H200
    assert "no benchmark on NVIDIA H200 (sm_90)" in pp[("matmul", "bf16")]["reasons"]
    assert [r["kernel"] for r in summary["performance"]["pp"]] == ["matmul", "softmax"]  # worst first
    pp_table = md.split("### Performance portability, worst first")[1].split("###")[0]
    assert "| softmax  | fp16    | 0.533" in pp_table and "| matmul   | bf16    | 0 " in pp_table
    # softmax on both platforms is correct and faster than torch; matmul on the H100 is slower (0.9).
    share = summary["performance"]["speedup_share"]
    assert (share["correct_and_not_slower"], share["with_baseline"]) == (4, 5)
    html = (out / "report.html").read_text()
    assert html.count("data:image/png;base64,") == 2 and "<link" not in html and "<script" not in html
    assert "no data" not in md.split("## Autotune coverage")[1].split("##")[0]


def test_wrong_output_on_one_platform_makes_pp_zero(tmp_path, capsys):
    paths = two_platforms(tmp_path)
    h200 = json.loads(paths[1].read_text())
    h200["benchmarks"][1]["correct"] = False
    write(paths[1], h200)
    code, _, err = cli(capsys, "build", *paths, "--out", tmp_path / "r")
    assert code == 0, err
    pp = {r["kernel"]: r for r in json.loads((tmp_path / "r" / "summary.json").read_text())["performance"]["pp"]}
    assert pp["softmax"]["pp_measured"] == 0.0 and "wrong output" in pp["softmax"]["reasons"]


def test_html_escapes_strings_from_result_files(tmp_path, capsys):
    run = make_run(kernels=((XSS, "fp16"),), benchmarks=[bench(XSS, "fp16", {"M": 1}, 1.0, 0.5, 0.4)])
    run["environment"]["device_name"] = "<b>GPU</b>"
    run["known_issues"] = [{"id": "<i>id</i>", "backend": "cuda", "arch": "*", "triton": "*", "kernel": XSS,
                            "dtype": "fp16", "reason": "<img src=x onerror=alert(2)>", "link": "javascript:alert(3)"}]
    code, _, err = cli(capsys, "build", write(tmp_path / "x.json", run), "--out", tmp_path / "r")
    assert code == 0, err
    html = (tmp_path / "r" / "report.html").read_text()
    assert "<script" not in html and "<b>GPU" not in html and "<img src=x" not in html and "<i>id" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html and "<title>" in html and "&lt;b&gt;GPU&lt;/b&gt;" in html


def test_no_benchmarks_no_compiles_no_autotune_say_no_data(tmp_path, capsys):
    run = make_run(ceilings=False)
    run["compiles"] = []
    code, _, err = cli(capsys, "build", write(tmp_path / "a.json", run), "--out", tmp_path / "r")
    assert code == 0, err
    md = (tmp_path / "r" / "report.md").read_text()
    for section in ("## Compile matrix", "## Performance portability", "## Autotune coverage"):
        assert "no data" in md.split(section)[1].split("\n## ")[0]


def test_incomplete_run_is_accepted_with_a_visible_warning(tmp_path, capsys):
    run = make_run()
    run["status"], run["finished"] = "incomplete", None
    code, _, err = cli(capsys, "build", write(tmp_path / "a.json", run), "--out", tmp_path / "r")
    assert code == 0, err
    assert "**Warning:**" in (tmp_path / "r" / "report.md").read_text()
    assert 'class="warn"' in (tmp_path / "r" / "report.html").read_text()
    assert "incomplete" in json.loads((tmp_path / "r" / "summary.json").read_text())["warnings"][0]


def _bad_files(tmp_path: Path) -> dict[str, tuple[list[Path], str]]:
    good = make_run()
    malformed = tmp_path / "malformed.json"
    malformed.write_text('{"schema_version": 1,')
    future = write(tmp_path / "future.json", {**good, "schema_version": 99})
    missing = write(tmp_path / "missing.json", {k: v for k, v in good.items() if k != "environment"})
    no_samples = copy.deepcopy(good)
    no_samples["benchmarks"] = [{k: v for k, v in bench("m", "fp16", {"M": 1}, 1, 1, 1).items() if k != "samples_ms"}]
    first, twin = write(tmp_path / "first.json", good), write(tmp_path / "twin.json", good)
    return {"malformed": ([malformed], "malformed JSON"), "version": ([future], "unknown schema_version 99"),
            "missing": ([missing], "'environment' is a required property"),
            "no_samples": ([write(tmp_path / "no_samples.json", no_samples)], "samples_ms"),
            "absent": ([tmp_path / "absent.json"], "no such file"),
            "twice": ([first, twin], "already given as")}


@pytest.mark.parametrize("command", ["build", "compare"])
@pytest.mark.parametrize("name", ["malformed", "version", "missing", "no_samples", "absent", "twice"])
def test_bad_input_is_a_clear_error_naming_the_file(tmp_path, capsys, name, command):
    files, words = _bad_files(tmp_path)[name]
    if command == "compare" and len(files) == 1:
        files = [*files, write(tmp_path / "other.json", make_run(run_id="other"))]
    args = ["--out", tmp_path / "r"] if command == "build" else []
    code, _, err = cli(capsys, command, *files, *args)
    assert code == 2
    assert err.startswith("error: ") and str(files[-1] if name == "twice" else files[0]) in err and words in err
    assert "Traceback" not in err


@pytest.mark.parametrize("argv, words", [(["build", "--out", "d"], "no run files given"),
                                         (["compare", "only.json"], "exactly two run files")])
def test_missing_file_arguments(capsys, argv, words):
    code, _, err = cli(capsys, *argv)
    assert code == 2 and words in err


def _pair(tmp_path: Path, shift: float, n: int = 60, cand_seed: int = 7, noise: float = 0.01, **cand_env) -> list[Path]:
    base = make_run(benchmarks=[bench("softmax", "fp16", {"M": 8192}, 1.0, 0.8, 0.6, n=n, noise=noise)])
    cand = make_run(run_id="20261121T020000Z-cuda-sm_90-cccccc", started="2026-11-21T02:00:00+00:00",
                    benchmarks=[bench("softmax", "fp16", {"M": 8192}, 1.0, 0.8, 0.6, seed=cand_seed, n=n, noise=noise)])
    cand["benchmarks"][0]["samples_ms"] = [s * (1 + shift) for s in cand["benchmarks"][0]["samples_ms"]]
    cand["benchmarks"][0]["median_ms"] *= 1 + shift
    cand["environment"].update(driver="590.2", **cand_env)
    return [write(tmp_path / "base.json", base), write(tmp_path / "cand.json", cand)]


def test_compare_detects_a_planted_slowdown(tmp_path, capsys):
    code, out, err = cli(capsys, "compare", *_pair(tmp_path, 0.20), "--out", tmp_path / "cmp.md")
    assert code == 1, err + out
    regressions = out.split("## Speed regressions")[1].split("\n## ")[0]
    assert "softmax" in regressions and "+20." in regressions and "REGRESSION" in out
    assert (tmp_path / "cmp.md").read_text() == out
    assert "| driver" in out  # the environment difference is shown


def test_compare_ignores_noise_and_lists_improvements(tmp_path, capsys):
    code, out, _ = cli(capsys, "compare", *_pair(tmp_path, 0.0))
    assert code == 0 and "No regressions" in out and "1 benchmark(s) unchanged" in out
    code, out, _ = cli(capsys, "compare", *_pair(tmp_path, -0.20))
    assert code == 0 and "softmax" in out.split("## Speed improvements")[1].split("\n## ")[0]


def test_threshold_and_p_value_options(tmp_path, capsys):
    small = _pair(tmp_path, 0.03, noise=0.002)  # statistically real, but below the default 5% threshold
    assert cli(capsys, "compare", *small)[0] == 0
    assert cli(capsys, "compare", *small, "--threshold", "0.02")[0] == 1
    few = _pair(tmp_path, 0.20, n=4)  # 4 against 4 samples: the smallest two-sided p is 2/70 = 0.029
    assert cli(capsys, "compare", *few)[0] == 0
    assert cli(capsys, "compare", *few, "--p-value", "0.05")[0] == 1


def test_compare_finds_correctness_regressions(tmp_path, capsys):
    paths = _pair(tmp_path, 0.0)
    cand = json.loads(paths[1].read_text())
    cand["cases"][1] = {**cand["cases"][1], "outcome": "failed", "error_ratio": 12.0}
    cand["tests"][0]["outcome"] = "failed"
    write(paths[1], cand)
    code, out, _ = cli(capsys, "compare", *paths)
    table = out.split("## Correctness regressions")[1].split("\n## ")[0]
    assert code == 1 and "| test " in table and "| case " in table and "seed=1" in table


def test_compare_refuses_different_hardware_or_tests(tmp_path, capsys):
    paths = _pair(tmp_path, 0.0, device_name=H200[0])
    code, _, err = cli(capsys, "compare", *paths)
    assert code == 2 and "different hardware" in err and "--allow-different-hardware" in err and str(paths[1]) in err
    assert cli(capsys, "compare", *paths, "--allow-different-hardware")[0] == 0
    seeded = _pair(tmp_path, 0.0, hypothesis_seed=1)
    code, _, err = cli(capsys, "compare", *seeded)
    assert code == 2 and "hypothesis_seed" in err and "--allow-different-tests" in err
    assert cli(capsys, "compare", *seeded, "--allow-different-tests")[0] == 0
    paths = _pair(tmp_path, 0.0)
    cand = json.loads(paths[1].read_text())
    cand["tests"].pop()
    write(paths[1], cand)
    code, _, err = cli(capsys, "compare", *paths)
    assert code == 2 and "test(s) only in" in err


def test_reports_never_imports_the_gpu_stack():
    forbidden = {"torch", "triton", "kernels", "suite"}
    for path in (ROOT / "reports").glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module or ""] if isinstance(node, ast.ImportFrom) else []
            assert not {n.split(".")[0] for n in names} & forbidden, f"{path.name} imports {names}"
    proc = subprocess.run([sys.executable, "-m", "reports", "--help"], cwd=ROOT, capture_output=True, text=True)
    assert proc.returncode == 0 and "compare" in proc.stdout
