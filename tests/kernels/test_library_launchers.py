"""What a library's launchers do that the suite could not express (issue 51, item 5): several known issues of one
kernel x dtype x test, each with its own failure_pattern; one launcher dispatching to several autotuned kernels
with different settings; integer outputs where ties are legal (topk's indices)."""

from __future__ import annotations

from suite.session import known_issues

KNOWN = "--kernel-module=tests/fixtures/known_issue_kernels.py"
FAST_SHRINK = {"SUITE_SHRINK_SECONDS": "3"}


def _entry(id: str, pattern: str) -> known_issues.KnownIssue:  # noqa: A002 - the entry's field
    return known_issues.KnownIssue(id=id, backend="interpret", arch="*", triton=">=3.0", kernel="k", dtype="fp32",
                                   reason=f"reason {id}", link=f"link-{id}", failure_pattern=pattern)


def test_every_known_issue_of_a_kernel_dtype_and_test_is_read():
    entries = [_entry("nan", r"NaN where"), _entry("error", r"out: error"), _entry("other-dtype", "")]
    entries[2] = known_issues.KnownIssue(**{**entries[2].as_record(), "dtype": "fp16"})
    found = known_issues.find(entries, "interpret", "interpreter", "3.6.0", "k", "fp32")
    assert found.covers("out: 1 NaN where the reference is not") and found.covers("out: error 3.0 at (1,) is 4x")
    assert not found.covers("out: 2 of 9 elements never written")
    # a case's problems, each described by one entry or another, are the group's; one undescribed is not
    assert found.covers_all(["out: 1 NaN where the reference is not", "out: error 3.0 at (1,) is 4x"])
    assert not found.covers_all(["out: 1 NaN where the reference is not", "out: 2 of 9 elements never written"])
    assert found.which("out: error 3.0 at (1,)").id == "error" and found.id == "nan + error"
    assert found.as_record()["failure_pattern"] == "nan: NaN where | error: out: error"
    one = known_issues.find(entries, "interpret", "interpreter", "3.6.0", "k", "fp16")
    assert one is entries[2]  # one entry: itself, as before


def test_a_kernel_with_two_bugs_each_a_known_issue_is_expected_to_fail(run_suite):
    run = run_suite("suite/test_kernels.py", KNOWN, "--kernels=known_two_bugs_add", "-n", "0", env=FAST_SHRINK)
    assert run.returncode == 0, run.output[-3000:]
    [test] = run.run_data()["tests"]
    assert test["outcome"] == "xfailed" and test["known_issue"] == "nan-for-large-x-3 + sub-for-negative-x", test
    failed = {c["values"]: c["message"] for c in run.run_data()["cases"] if c["outcome"] == "xfailed"}
    assert set(failed) == {"large", "negative"}, failed


def _run_tie_case(name: str):
    from kernels import registry
    from kernels.spec import Case
    from suite.checks import harness, interpreter, launches
    from suite.session.backend import resolve
    from tests.conftest import ROOT

    registry.load_module("tests/fixtures/tie_kernels.py", str(ROOT))
    interpreter.install()
    launches.install()
    spec = registry.get(name)
    return harness.run_case(spec, Case.parse(name, "fp32", "M=6,N=9;seed=3"), resolve("interpret"))


def test_indices_where_ties_are_legal_compare_by_what_they_select():
    assert not _run_tie_case("tie_argmax_exact").passed  # index by index, a right argmax fails on its ties
    right = _run_tie_case("tie_argmax_last")
    assert right.passed, right.message()
    wrong = _run_tie_case("tie_argmax_off_by_one").message()
    assert "index: " in wrong and "indices select another value than the reference's (first at (" in wrong, wrong
    repeats = _run_tie_case("tie_top2_repeats").message()
    assert "index: an index repeats along dim 1: " in repeats, repeats


def _dispatch(name: str, n: int, config: dict | None = None):
    from kernels import registry
    from kernels.spec import Case
    from suite.checks import harness, interpreter, launches
    from suite.session.backend import resolve
    from tests.conftest import ROOT

    registry.load_module("tests/fixtures/dispatch_kernels.py", str(ROOT))
    interpreter.install()
    launches.install()
    spec = registry.get(name)
    launches.take_untuned()
    with launches.chosen(config):
        result = harness.run_case(spec, Case.parse(name, "fp32", f"N={n};seed=1"), resolve("interpret"), config)
    return spec, result, launches.take_untuned()


def test_a_launcher_dispatching_to_several_autotuned_kernels_runs_every_config_of_each():
    spec, _, _ = _dispatch("dispatch_two_tuned", 8)
    configs = spec.configs["nvidia"]
    # Each config names both kernels' settings; every config of long_scale appears (the first kernel's configs alone
    # used to be the spec's: long_scale, listed in jit_fns, ran its first config in every case).
    assert {c["long_scale.TILE"] for c in configs} == {16, 32, 64} and {c["short_scale.BLOCK"] for c in configs} == {32,
                                                                                                                  64}
    assert spec.configs["interpret"] == configs and spec.default_config["nvidia"] == configs[0]
    for config in configs:
        _, result, untuned = _dispatch("dispatch_two_tuned", 150, config)
        assert result.passed and not untuned, (result.message(), untuned)
        assert result.autotuned == {"long_scale": {"TILE": config["long_scale.TILE"],
                                                   "num_warps": config["long_scale.num_warps"],
                                                   "num_stages": config["long_scale.num_stages"]}}, result.autotuned
    _, short, _ = _dispatch("dispatch_two_tuned", 40, configs[1])
    assert short.autotuned == {"short_scale": {"BLOCK": 64, "num_warps": 2, "num_stages": configs[1][
        "short_scale.num_stages"]}}, short.autotuned


def test_a_case_that_launched_no_autotuned_kernel_records_that_none_ran():
    from suite.checks import harness

    spec, short, _ = _dispatch("dispatch_one_tuned", 40, {"TILE": 32, "num_warps": 4, "num_stages": 3})
    assert short.passed and short.autotuned == {}, short.autotuned  # its config set nothing that ran
    assert harness.record(short, "n", "r")["autotuned"] == {}
    _, long, _ = _dispatch("dispatch_one_tuned", 150, {"TILE": 32, "num_warps": 4, "num_stages": 3})
    assert long.autotuned == {"long_scale": {"TILE": 32, "num_warps": 4, "num_stages": 3}}, long.autotuned
    # A library's spec that lists no jitted function (FlagGems' rms_norm) says the same where its config is set.
    import dataclasses

    from kernels.spec import Case
    from suite.session.backend import resolve

    bare = dataclasses.replace(spec, jit_fns=())
    config = {"TILE": 32, "num_warps": 4, "num_stages": 3}
    result = harness.run_case(bare, Case.parse(bare.name, "fp32", "N=40;seed=1"), resolve("interpret"), config)
    assert result.passed and result.autotuned == {}, result.autotuned
    assert harness.run_case(bare, Case.parse(bare.name, "fp32", "N=40;seed=1"), resolve("interpret"), {}).autotuned \
        is None  # no config, nothing listed: nothing to say


def test_the_untuned_advice_names_the_scoped_configs():
    from suite.checks import launches

    [line] = launches.untuned_lines([{"kernel": "k", "dtype": "fp32", "untuned": {"loop": 12}}])
    assert "list it in jit_fn/jit_fns" not in line and "configs=autotune_config_space(loop, <the others>)" in line
