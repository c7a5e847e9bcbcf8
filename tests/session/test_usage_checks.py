"""Mistakes in the run's surroundings are named up front (usage errors, exit 4) or in the session header, never an
INTERNALERROR or a failure blamed on a kernel: an unwritable Triton cache, names too long to use, JSON nested deeper
than the parser goes, a bad SUITE_TEST_COSTS, --compile-targets=own on the interpreter; and -x is not a crash."""

from __future__ import annotations

import json

import pytest

from suite.workers import schedule

LONG = "x" * 300  # one name over the 255-byte limit
DEEP = "[" * 200_000 + "]" * 200_000


def test_an_unwritable_triton_cache_is_a_usage_error(run_suite, tmp_path):
    (tmp_path / "a-file").write_text("")
    res = run_suite("suite/test_kernels.py", "--kernels=vector_add",
                    env={"TRITON_CACHE_DIR": str(tmp_path / "a-file" / "cache")})
    assert res.returncode == 4, res.output[-3000:]
    assert f"TRITON_CACHE_DIR={tmp_path / 'a-file' / 'cache'}: cannot write there" in res.output
    res = run_suite("suite/test_kernels.py", "--kernels=vector_add",
                    env={"TRITON_CACHE_DIR": "", "TRITON_HOME": str(tmp_path / "a-file")})
    assert res.returncode == 4 and "Triton's cache directory (TRITON_CACHE_DIR unset)" in res.output, res.output[-3000:]
    assert not res.run_files()


@pytest.mark.parametrize("option", ["--results-dir", "--autotune-dir", "--hypothesis-db", "--kernel-module",
                                    "--known-issues"])
def test_a_name_over_255_bytes_is_a_usage_error(run_suite, tmp_path, option):
    res = run_suite("suite/test_kernels.py", "--kernels=vector_add", f"{option}={tmp_path / LONG}")
    assert "INTERNALERROR" not in res.output, res.output[-3000:]
    assert res.returncode == 4, res.output[-3000:]
    assert f"{option}=" in res.output and "over 255 bytes" in res.output, res.output[-3000:]


def test_json_nested_too_deeply_is_named(run_suite, tmp_path):
    (tmp_path / "known.json").write_text(DEEP)
    res = run_suite("suite/test_kernels.py", "--kernels=vector_add", f"--known-issues={tmp_path / 'known.json'}")
    assert res.returncode == 4 and "known.json: nested too deeply to read" in res.output, res.output[-3000:]
    (tmp_path / "tune").mkdir()
    (tmp_path / "tune" / "interpreter.json").write_text(DEEP)
    (tmp_path / "costs.json").write_text(DEEP)
    res = run_suite("suite/test_kernels.py", "--kernels=vector_add", "-k", "fp32", "--no-results",
                    f"--autotune-dir={tmp_path / 'tune'}", env={"SUITE_TEST_COSTS": str(tmp_path / "costs.json")})
    assert res.returncode == 0 and "INTERNALERROR" not in res.output, res.output[-3000:]
    assert "interpreter.json: nested too deeply to read; not an autotune cache" in res.output
    assert "costs.json: not a JSON file of test durations (nested too deeply); not used" in res.output
    # On the command line (an argument holds at most 128 KiB): 20000 levels, past what Python 3.12's parser reads
    # (3.11 stops below 1000; 3.12 reads 5000).
    deep_config = "[" * 20000 + "]" * 20000
    res = run_suite("suite/test_kernels.py", "--kernels=vector_add", f"--config={deep_config}")
    assert res.returncode == 4 and "nested too deeply to read; give a flat object" in res.output, res.output[-3000:]


@pytest.mark.parametrize(("text", "problem"), [
    ('{"tests": {"a": Infinity}}', "tests['a'] is Infinity; a duration is a finite number of seconds >= 0"),
    ('{"tests": {"a": NaN}}', "tests['a'] is NaN"),
    ('{"tests": {"a": -1}}', "tests['a'] is -1"),
    ('{"tests": {"a": "fast"}}', "tests['a'] is \"fast\""),
    ('{"tests": {"a": true}}', "tests['a'] is true"),
    ('{"tests": {"a": null}}', "tests['a'] is null"),
    ('{"tests": ["a"]}', "expected an object with 'tests'"),
    ('[1, 2]', "expected an object with 'tests'"),
    ('{"tests": {}, "parts": {"a": 1000000000}}', "parts['a'] is 1000000000; a test is split into a whole number of "
                                                 "parts from 1 to 24"),
    ('{"tests": {}, "parts": {"a": 2.5}}', "parts['a'] is 2.5"),
    ('{"tests": {}, "parts": {"a": "3"}}', "parts['a'] is \"3\""),
    ('{"tests": {}, "parts": [3]}', "'parts' must be an object"),
    ('{"tests": {"a": 1', "not a JSON file of test durations"),
])
def test_bad_test_durations_are_named_and_not_used(tmp_path, text, problem):
    path = tmp_path / "costs.json"
    path.write_text(text)
    tests, parts, why = schedule.read(path)
    assert (tests, parts) == ({}, {}) and why is not None and problem in why, why
    assert why.endswith("not used (collection order, no test split)")


def test_durations_that_are_fine_are_used(tmp_path, monkeypatch):
    path = tmp_path / "costs.json"
    path.write_text(json.dumps({"tests": {"a": 1, "b": 2.5}, "parts": {"a": 1, "b": 3}}))
    assert schedule.read(path) == ({"a": 1.0, "b": 2.5}, {"b": 3}, None)
    assert schedule.read(tmp_path / "none.json")[2].startswith(f"test durations {tmp_path / 'none.json'}: cannot be read")
    monkeypatch.setenv("SUITE_TEST_COSTS", "")
    assert schedule.read() == ({}, {}, "test durations: none (SUITE_TEST_COSTS is empty): collection order, no test "
                                       "split")
    assert schedule.read()[0] == schedule.load() == {}


def test_a_bad_durations_file_is_named_in_the_header(run_suite, tmp_path):
    (tmp_path / "costs.json").write_text('{"tests": {}, "parts": {"suite/test_kernels.py::test_matches_reference'
                                         '[vector_add-fp32]": 1000000000}}')
    res = run_suite("suite/test_kernels.py", "--kernels=vector_add", "-k", "fp32", "--no-results",
                    env={"SUITE_TEST_COSTS": str(tmp_path / "costs.json")}, timeout=300)
    assert res.returncode == 0, res.output[-3000:]
    assert "portability: test durations SUITE_TEST_COSTS=" in res.output and "is 1000000000" in res.output
    assert "1 passed" in res.output  # whole, not a billion parts


def test_compile_targets_own_on_the_interpreter_is_a_usage_error(run_suite):
    res = run_suite("suite/test_compile_matrix.py", "--kernels=vector_add", "--backend=interpret",
                    "--compile-targets=own")
    assert res.returncode == 4, res.output[-3000:]
    assert "--compile-targets=own: the CPU interpreter has no GPU arch of its own" in res.output


def test_stopping_at_the_first_failure_is_not_a_crash(run_suite):
    """-x: the run stops after a failing test on purpose; the run file says it was stopped (interrupted), with no
    crash incident for the tests it did not run."""
    res = run_suite("suite/test_kernels.py", "--kernel-module=tests/fixtures/planted_bugs.py", "-x",
                    "--kernels=planted_vector_add_dropped_mask,vector_add", "-k", "fp32", timeout=300)
    assert res.returncode == 1, res.output[-3000:]
    data = res.run_data()
    assert data["status"] == "interrupted", data["status"]
    assert not [i for i in data.get("incidents", []) if i["kind"] == "crash"], data["incidents"]
    assert "VERDICT: FAILED: 1 of 1 test failed" in res.output, res.output[-2000:]  # the exit code's word
