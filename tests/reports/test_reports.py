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
from tests.report_helpers import H100, H200, ROOT, XSS, bench, case, cli, make_run, write


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
    timing is a regression: tests/reports/test_reports_trust.py.)"""
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
    time one the base timed is a regression, exit 1: tests/reports/test_reports_trust.py.)"""
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


INTERPRETER = ("Triton CPU interpreter", "interpreter")
SKIP_FP8 = "Skipped: {} is not supported on {} ({} profile)"
KNOWN = [{"id": "matmul-bf16-planted", "backend": "interpret", "arch": "*", "triton": ">=3.0", "kernel": "matmul",
          "dtype": "bf16", "reason": "bit patterns", "link": "https://example.invalid/1"},
         {"id": "dropout-bf16-planted-rounding", "backend": "interpret", "arch": "*", "triton": ">=3.0",
          "kernel": "dropout", "dtype": "bf16", "test": "test_properties", "reason": "truncates",
          "link": "https://example.invalid/2"},
         {"id": "never-matched", "backend": "cuda", "arch": "*", "triton": ">=3.0", "kernel": "softmax",
          "dtype": "fp16", "reason": "r", "link": "https://example.invalid/3"}]


def interpreter_run(property_issue: str | None = "dropout-bf16-planted-rounding") -> dict:
    """A green run on the interpreter with two tests xfailed under known issues of this run's own: matmul bf16's
    reference test and dropout bf16's property test (a run file written before property tests recorded theirs has
    null), fp8_codes skipped everywhere (the interpreter has no fp8), the suite's check that inputs are drawn alike
    ('inputs'), a portability lint about another target, memory checked."""
    run = make_run(INTERPRETER, run_id="20261126T000000Z-interpret-interpreter-cccccc",
                   kernels=(("softmax", "fp16"), ("matmul", "bf16"), ("dropout", "bf16")))
    run["environment"].update(backend="interpret", profile="interpreter", driver=None, runtime=None)
    run["known_issues"] = KNOWN
    ref = "suite/test_kernels.py::test_matches_reference"
    prop = "suite/test_properties.py::test_properties[dropout-bf16]"
    for t in run["tests"]:
        if t["nodeid"] == f"{ref}[matmul-bf16]":
            t.update(outcome="xfailed", known_issue="matmul-bf16-planted")
    run["cases"] = [c for c in run["cases"] if c["kernel"] != "matmul"]
    run["cases"].append({**case("matmul", "bf16", 0, outcome="xfailed", ratio=4.5e11),
                         "known_issue": "matmul-bf16-planted"})
    run["tests"].append({"nodeid": prop, "outcome": "xfailed", "duration_s": 2.5, "message": None,
                         "known_issue": property_issue})
    run["tests"] += [{"nodeid": f"suite/{f}[fp8_codes-{d}]", "outcome": "skipped", "duration_s": 0.0,
                      "message": SKIP_FP8.format(d, "interpreter", "interpreter"), "known_issue": None}
                     for f in ("test_kernels.py::test_matches_reference", "test_properties.py::test_properties")
                     for d in ("fp8e4nv", "fp8e5")]
    run["findings"] = [f for f in run["findings"] if f["kernel"] != "matmul"]
    run["findings"] += [
        {"kernel": "dropout", "dtype": "bf16", "backend": "interpret", "arch": "interpreter",
         "property": "scaled_exactly", "claimed": True, "holds": False, "cases_checked": 4, "message": "got -14.3125",
         "repro": f"pytest '{prop}' --backend=interpret '--repro=M=2,N=1025;seed=1'"},
        {"kernel": "inputs", "dtype": "fp32", "backend": "interpret", "arch": "interpreter",
         "property": "inputs_same_on_every_device_normal", "claimed": True, "holds": True, "cases_checked": 1,
         "message": "equal", "repro": "pytest 'suite/test_hazards.py::test_inputs_are_the_same_on_every_device[normal]'"},
        {"kernel": "fp8_codes", "dtype": "fp8e4nv", "backend": "cuda", "arch": "sm_80",
         "property": "lint:fp8_flavour_unsupported", "claimed": False, "holds": False, "cases_checked": 0,
         "message": "sm_80 has no fp8", "repro": "pytest 'suite/test_compile_matrix.py::test_portability_lints[fp8_codes]'"}]
    run["memcheck"] = {"mode": "interpreter", "unchecked": {},
                       "kernels": {k: {"launches": 10, "memory_ops": 100} for k in ("softmax", "matmul", "dropout")}}
    return run


def verdict_of(out: Path) -> tuple[str, dict]:
    md = (out / "report.md").read_text()
    return md.split("## Verdict")[1].split("### Kernel x platform")[0], json.loads((out / "summary.json").read_text())


def test_known_issues_the_run_met_come_first_and_one_it_did_not_meet_says_so(tmp_path, capsys):
    """A report of FlagGems' interpreter run listed first its cross_entropy known issue, whose tests were skipped (not
    checkable there), before the issues its tests did meet. Those met come first; the other says it was not met."""
    run = interpreter_run()
    run["tests"].append({"nodeid": "suite/test_kernels.py::test_matches_reference[aaa_kernel-fp32]",
                         "outcome": "skipped", "duration_s": 0.0, "message": "not checkable on the interpreter",
                         "known_issue": "aaa-not-checkable"})
    out = tmp_path / "report"
    code, _, err = cli(capsys, "build", write(tmp_path / "run.json", run), "--out", out)
    assert code == 0, err
    verdict, _ = verdict_of(out)
    assert ("**Known issues: 2 xfailed test(s)** (1 xfailed case(s) in them) under 2 known issue(s) (1 more not met "
            "in this run)") in verdict, verdict
    met = verdict.index("matmul-bf16-planted (matmul bf16")
    # a run that met none of them (FlagGems' interpreter run: its cross_entropy tests all skipped) says so first
    only = {**run, "tests": [t for t in run["tests"] if t["outcome"] != "xfailed"],
            "cases": [c for c in run["cases"] if c["outcome"] != "xfailed"]}
    code, _, err = cli(capsys, "build", write(tmp_path / "only.json", only), "--out", tmp_path / "only")
    assert code == 0, err
    alone, _ = verdict_of(tmp_path / "only")
    assert "**Known issues: none met in this run** (1 listed for these tests) - aaa-not-checkable (not met in this " \
           "run: " in alone, alone
    unmet = verdict.index("aaa-not-checkable (not met in this run: aaa_kernel fp32 on Triton CPU interpreter "
                          "(interpreter): 1 skipped test)")
    assert met < unmet, verdict


@pytest.mark.parametrize("recorded", [True, False], ids=["issue-recorded", "issue-not-recorded"])
def test_a_green_interpreter_run_with_known_issues_is_correct(tmp_path, capsys, recorded):
    """Nothing is broken: the property that fails under its declared known issue is a known issue. The xfailed
    count is pytest's (tests, 2; cases said apart), every known issue that matched is named with its counts (from
    the registry where the run file did not record the property test's), and 'inputs' is no kernel."""
    out = tmp_path / "report"
    path = write(tmp_path / "run.json", interpreter_run("dropout-bf16-planted-rounding" if recorded else None))
    code, _, err = cli(capsys, "build", path, "--out", out)
    assert code == 0, err
    verdict, summary = verdict_of(out)
    assert "Broken" not in verdict and "**Correct: every case run passed** (3 kernel(s) run" in verdict, verdict
    assert summary["verdict"]["broken"] == []
    assert "**Known issues: 2 xfailed test(s)** (1 xfailed case(s) in them) under 2 known issue(s)" in verdict
    assert "matmul-bf16-planted (matmul bf16 on Triton CPU interpreter (interpreter): 1 xfailed test, 1 xfailed " \
           "case)" in verdict and "dropout-bf16-planted-rounding (dropout bf16 on Triton CPU interpreter " \
           "(interpreter): 1 xfailed test)" in verdict and "never-matched" not in verdict, verdict
    assert summary["verdict"]["known_issues"]["xfailed_tests"] == 2
    states = summary["verdict"]["states"]
    assert "inputs" not in states and "inputs" not in summary["verdict"]["cells"]
    assert {k: s["Triton CPU interpreter (interpreter)"]["state"] for k, s in states.items()} == {
        "dropout": "known issue", "matmul": "known issue", "softmax": "passed", "fp8_codes": "not run"}
    md = (out / "report.md").read_text()
    used = md.split("### Tests and cases under known issues")[1]
    assert "| dropout-bf16-planted-rounding | Triton CPU interpreter (interpreter) | 1 xfailed test " in used
    assert "| matmul-bf16-planted           | Triton CPU interpreter (interpreter) | 1 xfailed test, 1 xfailed " \
           "case |" in used
    findings = md.split("## Property findings")[1].split("## Compile matrix")[0]
    assert "known issue dropout-bf16-planted-rounding: claimed, does not hold" in findings
    assert "BROKEN:" not in findings


def test_kernels_that_never_ran_are_not_run_with_the_reason_never_ok(tmp_path, capsys):
    """fp8_codes, every test skipped because the interpreter has no fp8 (as on an arch without it), is 'not run:
    unsupported' with the dtypes and why, on the first screen and in summary.json."""
    out = tmp_path / "report"
    code, _, err = cli(capsys, "build", write(tmp_path / "run.json", interpreter_run()), "--out", out)
    assert code == 0, err
    verdict, summary = verdict_of(out)
    assert "**Not run: 1 kernel(s)** (1 unsupported: the platform lacks their dtypes) - fp8_codes on Triton CPU " \
           "interpreter (interpreter) (unsupported dtype on interpreter: fp8e4nv, fp8e5)" in verdict, verdict
    cell = summary["verdict"]["states"]["fp8_codes"]["Triton CPU interpreter (interpreter)"]
    assert cell["state"] == "not run" and cell["unsupported"] and cell["text"] == "not run: unsupported", cell
    assert summary["verdict"]["cells"]["fp8_codes"]["Triton CPU interpreter (interpreter)"] != "ok"
    matrix = (out / "report.md").read_text().split("### Cases (passed/failed/xfailed)")[1].split("###")[0]
    assert "not run: fp8e4nv is not supported on interpreter (interpreter profile)" in matrix


def test_a_kernel_whose_cases_launched_no_triton_kernel_is_unchecked(tmp_path, capsys):
    run = interpreter_run()
    del run["memcheck"]["kernels"]["softmax"]
    run["memcheck"]["unchecked"] = {"softmax": "its cases launched no kernel through the interpreter"}
    out = tmp_path / "report"
    code, _, err = cli(capsys, "build", write(tmp_path / "run.json", run), "--out", out)
    assert code == 0, err
    verdict, summary = verdict_of(out)
    assert "**Unchecked: 1 kernel(s)**" in verdict and "softmax on Triton CPU interpreter (interpreter) (its cases " \
           "launched no kernel through the interpreter)" in verdict, verdict
    assert summary["verdict"]["states"]["softmax"]["Triton CPU interpreter (interpreter)"]["state"] == "unchecked"
    assert summary["verdict"]["cells"]["softmax"]["Triton CPU interpreter (interpreter)"] == "unchecked: no launch"


def test_memory_checking_off_is_said_on_the_first_screen(tmp_path, capsys):
    h100 = make_run(H100)
    h100["memcheck"] = {"mode": "off", "kernels": {},
                        "unchecked": {k: "memory checking is off in this run" for k in ("softmax", "matmul")}}
    checked = interpreter_run()
    out = tmp_path / "report"
    code, _, err = cli(capsys, "build", write(tmp_path / "h100.json", h100), write(tmp_path / "i.json", checked),
                       "--out", out)
    assert code == 0, err
    verdict, summary = verdict_of(out)
    assert "**Memory not checked**" in verdict and "every kernel on NVIDIA H100 80GB HBM3 (sm_90)" in verdict, verdict
    assert "on Triton CPU interpreter" not in verdict.split("**Memory not checked**")[1].split("\n")[0]
    assert summary["verdict"]["memory_not_checked"] == {"NVIDIA H100 80GB HBM3 (sm_90)": ["matmul", "softmax"]}
    assert summary["verdict"]["states"]["softmax"]["NVIDIA H100 80GB HBM3 (sm_90)"]["memory_checked"] is False


def test_a_kernel_unsupported_on_a_platform_makes_pp_zero_and_says_so(tmp_path, capsys):
    """fp8_scaled_matmul fp8e4nv benchmarked on the H100 and skipped on the H200 as a dtype it lacks: in PP that
    platform is unsupported (PP 0, Pennycook et al.), named as such, and the H200's verdict is not run, never ok."""
    big = {"M": 8192, "N": 8192}
    h100 = make_run(H100, benchmarks=[bench("fp8_scaled_matmul", "fp8e4nv", big, 1.0, 0.7, 0.5),
                                      bench("softmax", "fp16", big, 1.0, 0.8, 0.6)])
    h200 = make_run(H200, run_id="20261121T010000Z-cuda-sm_90-bbbbbb", started="2026-11-21T01:00:00+00:00",
                    benchmarks=[bench("softmax", "fp16", big, 1.0, 0.6, 0.4)])
    h200["tests"] += [{"nodeid": "suite/test_benchmarks.py::test_benchmark[fp8_scaled_matmul-fp8e4nv]",
                       "outcome": "skipped", "duration_s": 0.0, "message": SKIP_FP8.format("fp8e4nv", "sm_90", "h200"),
                       "known_issue": None}]
    out = tmp_path / "report"
    code, _, err = cli(capsys, "build", write(tmp_path / "h100.json", h100), write(tmp_path / "h200.json", h200),
                       "--out", out)
    assert code == 0, err
    summary = json.loads((out / "summary.json").read_text())
    pp = {(r["kernel"], r["dtype"]): r for r in summary["performance"]["pp"]}[("fp8_scaled_matmul", "fp8e4nv")]
    assert pp["pp_measured"] == 0.0 and pp["efficiency"]["NVIDIA H200 (sm_90)"]["status"] == "unsupported", pp
    assert "unsupported on NVIDIA H200 (sm_90): fp8e4nv is not supported on sm_90" in pp["reasons"]
    assert summary["verdict"]["cells"]["fp8_scaled_matmul"]["NVIDIA H200 (sm_90)"] == "not run: unsupported"
    assert "unsupported" in (out / "report.md").read_text().split("### Efficiency at the largest benchmark shape")[1]


def test_build_warns_where_one_platforms_runs_tested_different_code_of_a_kernel_module(tmp_path, capsys):
    """Runs of a planted copy and of the fixed module, built together with --keep-superseded: their results are added
    up, and the report says the module's code differed between them (compare says it per pair; build said nothing).
    Without it the older code's run is superseded (tests/reports/test_report_superseded.py)."""
    runs = []
    for i, sha in enumerate(("a" * 64, "b" * 64, "b" * 64)):
        run = make_run(run_id=f"20261121T00000{i}Z-cuda-sm_90-aaaaa{i}", started=f"2026-11-21T00:00:0{i}+00:00")
        run["kernel_modules"] = [{"module": f"/tmp/copy{i}/x.py", "file": f"/tmp/copy{i}/x.py", "sha256": sha,
                                  "libraries": []}]
        runs.append(write(tmp_path / f"r{i}.json", run))
    code, _, err = cli(capsys, "build", *runs, "--out", tmp_path / "r", "--keep-superseded")
    assert code == 0, err
    md = (tmp_path / "r" / "report.md").read_text()
    assert code == 0 and "kernel module x.py differs between its runs (2 versions, sha256 aaaaaaaaaaaa, bbbbbbbbbbbb)" \
        in md, md[:3000]
    code, _, _ = cli(capsys, "build", runs[1], runs[2], "--out", tmp_path / "same")
    assert "differs between its runs" not in (tmp_path / "same" / "report.md").read_text()


def test_a_test_that_failed_its_end_of_test_check_is_no_green_cell(tmp_path, capsys):
    """Issue 61, item 14: every case of softmax fp16 passed and its test failed at the end (a declared path no case
    took): the correctness matrix read '3/0/0', as a kernel x dtype all right; one failing before any case read '-'."""
    run = make_run(kernels=(("softmax", "fp16"), ("matmul", "bf16")))
    for t in run["tests"]:
        t["outcome"], t["message"] = "failed", "softmax: declared path(s) ['tail'] are taken by no case the dims allow"
    run["cases"] = [c for c in run["cases"] if c["kernel"] == "softmax"]  # matmul failed before its first case
    out = tmp_path / "report"
    code, _, err = cli(capsys, "build", write(tmp_path / "run.json", run), "--out", out)
    assert code == 0, err
    matrix = (out / "report.md").read_text().split("### Cases (passed/failed/xfailed)")[1].split("###")[0]
    assert "| softmax  | fp16    | 3/0/0; 1 test failed" in matrix, matrix
    assert "| matmul   | bf16    | 0/0/0; 1 test failed" in matrix, matrix
    summary = json.loads((out / "summary.json").read_text())
    assert {(r["kernel"], r.get("failed_tests")) for r in summary["correctness"]} == {("softmax", 1), ("matmul", 1)}


def test_a_modelled_run_is_its_own_column_never_the_hardware(tmp_path, capsys):
    interp = ("Triton CPU interpreter", "interpreter")
    plain = make_run(interp, run_id="20261121T000000Z-interpret-interpreter-aaaaaa")
    modelled = make_run(interp, run_id="20261121T010000Z-interpret-interpreter-bbbbbb",
                        started="2026-11-21T01:00:00+00:00")
    modelled["environment"]["numerics"] = {"profile": "mi300x", "arch": "gfx942", "vendor": "amd",
                                           "model": "mmasim 2.1.1 CDNA3", "parts": ["dot", "fma", "reduce order"],
                                           "modelled": ["tl.dot fp16: mfma"]}
    hardware = make_run(("AMD Instinct MI300X", "gfx942"), run_id="20261121T020000Z-hip-gfx942-cccccc",
                        started="2026-11-21T02:00:00+00:00")
    paths = [write(tmp_path / f"{n}.json", r) for n, r in (("plain", plain), ("modelled", modelled),
                                                         ("hw", hardware))]
    code, _, err = cli(capsys, "build", *paths, "--out", tmp_path / "r")
    assert code == 0, err
    summary = json.loads((tmp_path / "r" / "summary.json").read_text())
    assert summary["platforms"] == ["Triton CPU interpreter (interpreter)", "mi300x (modelled) (interpreter)",
                                    "AMD Instinct MI300X (gfx942)"]
    md = (tmp_path / "r" / "report.md").read_text()
    matrix = md.split("## Correctness matrix")[1].split("\n## ")[0]
    assert "mi300x (modelled) (interpreter)" in matrix and "AMD Instinct MI300X (gfx942)" in matrix
