"""Reports: build (Markdown, HTML, JSON), the PP metric, HTML escaping, compare (regressions, noise, refusals) and
bad input. Run files are synthetic, made here: the tests never depend on a runner's files."""

from __future__ import annotations

import ast
import copy
import json
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest

from reports.loading import SCHEMA_PATH
from tests.report_helpers import H100, H200, ROOT, XSS, bench, cli, make_run, write


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
    assert html.count("data:image/png;base64,") == 3 and "<link" not in html and "<script" not in html
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


# --- output files: never over an input, atomic, readable (issue 13) ---------------------------------------------


@pytest.mark.parametrize("target", ["candidate", "base", "link to candidate"])
def test_compare_never_writes_over_an_input(tmp_path, capsys, target):
    paths = _pair(tmp_path, 0.2)
    before = [p.read_bytes() for p in paths]
    out = {"candidate": paths[1], "base": paths[0], "link to candidate": tmp_path / "link.json"}[target]
    if target.startswith("link"):
        out.symlink_to(paths[1])
    code, stdout, err = cli(capsys, "compare", *paths, "--out", out)
    assert code == 2 and "refusing to write" in err and "it is the input file" in err and stdout == ""
    assert [p.read_bytes() for p in paths] == before


def test_build_never_writes_over_an_input(tmp_path, capsys):
    run = write(tmp_path / "summary.json", make_run())
    code, _, err = cli(capsys, "build", run, "--out", tmp_path)
    assert code == 2 and "refusing to write" in err and json.loads(run.read_text())["schema_version"] == 1


def test_outputs_are_replaced_whole_and_readable_by_all(tmp_path, capsys):
    """Atomic: the output is a new file renamed over the old one, so a reader holding the old file (here a hard
    link) never sees a half-written one; created 0666 less the umask, like any file a command writes."""
    import os

    old = os.umask(0o022)
    try:
        paths = _pair(tmp_path, 0.0)
        out_md, held = tmp_path / "cmp.md", tmp_path / "held.md"
        out_md.write_text("previous comparison\n")
        os.link(out_md, held)
        assert cli(capsys, "compare", *paths, "--out", out_md)[0] == 0
        assert held.read_text() == "previous comparison\n" and out_md.read_text().startswith("# Run comparison")
        report = tmp_path / "report"
        assert cli(capsys, "build", *paths, "--out", report)[0] == 0
        for path in [out_md, *report.iterdir()]:
            assert oct(path.stat().st_mode & 0o777) == oct(0o644), path
        assert not [p for p in [*tmp_path.iterdir(), *report.iterdir()] if p.name.endswith(".tmp")]
    finally:
        os.umask(old)


# --- build from the usable files (issue 13) -----------------------------------------------------------------------


def test_build_uses_the_good_files_and_lists_the_bad_ones(tmp_path, capsys):
    good = write(tmp_path / "good.json", make_run())
    bad = tmp_path / "bad.json"
    bad.write_text('{"schema_version": 1,')
    out = tmp_path / "r"
    code, stdout, err = cli(capsys, "build", good, bad, "--out", out)
    assert code == 2 and f"error: {bad}: malformed JSON" in err and "left out of the report" in err
    md = (out / "report.md").read_text()
    assert "1 run file(s) could not be read and are left out" in md.split("## Runs")[0]  # on the first screen
    assert "### Left out" in md and f"{bad}: malformed JSON" in md
    summary = json.loads((out / "summary.json").read_text())
    assert len(summary["runs"]) == 1 and summary["verdict"]["unreadable_files"][0].startswith(str(bad))


# --- compare says what it could not compare (issue 13) ------------------------------------------------------------


def test_compare_names_benchmarks_it_could_not_compare(tmp_path, capsys):
    """The base run's timing is invalid: nothing was known, so it is set aside and named. (The candidate's invalid
    timing is a regression: tests/test_reports_trust.py.)"""
    base = make_run(benchmarks=[bench("softmax", "fp16", {"M": 1}, 1.0, 0.5, 0.4),
                                {**bench("gelu", "fp16", {"M": 1}, 1.0, 0.5, 0.4), "samples_ms": [], "median_ms": -1.0}])
    cand = make_run(run_id="20261121T020000Z-cuda-sm_90-cccccc",
                    benchmarks=[bench("softmax", "fp16", {"M": 1}, 1.0, 0.5, 0.4, seed=3),
                                bench("gelu", "fp16", {"M": 1}, 1.0, 0.5, 0.4)])
    code, out, _ = cli(capsys, "compare", write(tmp_path / "b.json", base), write(tmp_path / "c.json", cand))
    verdict = out.split("## Verdict")[1].split("\n## ")[0]
    assert code == 0 and "Not compared: 1 benchmark(s) (1 invalid timing: median -1 ms in the base run)" in verdict


def test_compare_with_no_comparable_benchmark_is_an_error(tmp_path, capsys):
    """Only the base run's benchmark, which it could not time: nothing to compare against. (A candidate that cannot
    time one the base timed is a regression, exit 1: tests/test_reports_trust.py.)"""
    base = make_run(benchmarks=[{**bench("softmax", "fp16", {"M": 1}, 1.0, 0.5, 0.4), "samples_ms": [1.0, -1.0, 0.0],
                                 "median_ms": 0.0}])
    cand = make_run(run_id="20261121T020000Z-cuda-sm_90-cccccc",
                    benchmarks=[bench("softmax", "fp16", {"M": 1}, 1.0, 0.5, 0.4)])
    code, out, err = cli(capsys, "compare", write(tmp_path / "b.json", base), write(tmp_path / "c.json", cand))
    assert code == 2 and "CANNOT COMPARE: no benchmark could be compared" in out and "No regressions" not in out
    assert "error: no benchmark could be compared (1 in both runs): 1 invalid timing: median 0 ms in the base" in err


def test_compare_with_nothing_in_common_is_an_error(tmp_path, capsys):
    base = make_run(kernels=(("softmax", "fp16"),))
    cand = make_run(run_id="20261121T020000Z-cuda-sm_90-cccccc", kernels=(("gelu", "fp32"),))
    code, _, err = cli(capsys, "compare", write(tmp_path / "b.json", base), write(tmp_path / "c.json", cand),
                       "--allow-different-tests")
    assert code == 2 and "nothing to compare" in err


# --- what run files say is shown, never obeyed; invalid timings (issue 13) ---------------------------------------


def test_markdown_shows_html_from_run_files_as_text(tmp_path, capsys):
    run = make_run(kernels=((XSS, "fp16"),), benchmarks=[bench(XSS, "fp16", {"M": 1}, 1.0, 0.5, 0.4)])
    run["environment"]["device_name"] = '<img src=x onerror="alert(2)">'
    code, _, err = cli(capsys, "build", write(tmp_path / "x.json", run), "--out", tmp_path / "r")
    assert code == 0, err
    md = (tmp_path / "r" / "report.md").read_text()
    assert "<script" not in md and "<img" not in md
    assert "&lt;script>alert(1)&lt;/script>" in md and '&lt;img src=x onerror="alert(2)">' in md
    paths = _pair(tmp_path, 0.0)
    cand = json.loads(paths[1].read_text())
    cand["tests"][0]["outcome"], cand["tests"][0]["message"] = "failed", "<iframe src=//evil>"
    write(paths[1], cand)
    out = cli(capsys, "compare", *paths)[1]
    assert "<iframe" not in out and "&lt;iframe src=//evil>" in out


def test_negative_and_zero_timings_are_shown_invalid_and_left_out(tmp_path, capsys):
    bad = {**bench("gelu", "fp16", {"M": 8}, -1.0, -0.5, -0.4, speedup=-1.2), "samples_ms": [-1.0, 0.0, -2.0]}
    zero = {**bench("softmax", "fp16", {"M": 8}, 0.0, None, None, speedup=None), "samples_ms": [0.0, 0.0]}
    run = make_run(kernels=(("gelu", "fp16"), ("softmax", "fp16")),
                   benchmarks=[bad, zero, bench("swiglu", "fp16", {"M": 8}, 1.0, 0.5, 0.4)])
    code, _, err = cli(capsys, "build", write(tmp_path / "x.json", run), "--out", tmp_path / "r")
    assert code == 0, err
    md = (tmp_path / "r" / "report.md").read_text()
    eff = md.split("### Efficiency at the largest benchmark shape")[1].split("###")[0]
    assert "INVALID: invalid timing: median -1 ms" in eff and "INVALID: invalid timing: median 0 ms" in eff
    assert "-50.0%" not in md and "-100.0%" not in md
    summary = json.loads((tmp_path / "r" / "summary.json").read_text())
    pp = {r["kernel"]: r for r in summary["performance"]["pp"]}
    assert pp["gelu"]["pp_measured"] is None and pp["softmax"]["pp_measured"] is None  # unknown, not 0
    share = summary["performance"]["speedup_share"]
    assert (share["with_baseline"], share["invalid_timings"]) == (1, 2)
    slow = md.split("### Slower than the baseline, or wrong")[1]
    assert "gelu" not in slow and "softmax" not in slow
