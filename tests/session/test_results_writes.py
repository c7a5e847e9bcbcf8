"""Writing what the suite writes: never over an input, only regular files, atomically; and a results directory that
fills up (or goes read-only) mid-run costs the run file's later tests, not the run."""

from __future__ import annotations

import json
import os
import stat

import pytest

from suite.session import results
from suite.workers import schedule
from tests.conftest import ROOT, run_python

# Planted in the child run: every write of the run file after its first test fails as on a full disk.
FULL_DISK = (
    "import errno\n"
    "import suite.session.results as results\n"
    "real = results.write_json_atomic\n"
    "calls = []\n"
    "def full(path, data, **how):\n"
    "    calls.append(path)\n"
    "    if len(calls) > 2:  # the empty file at the first report, then that test\n"
    "        raise OSError(errno.ENOSPC, 'No space left on device')\n"
    "    real(path, data, **how)\n"
    "results.write_json_atomic = full\n")


@pytest.mark.parametrize("workers", [[], ["-n", "2"]])
def test_a_full_results_directory_mid_run_is_one_line_and_an_error_of_the_run(run_suite, tmp_path, workers):
    (tmp_path / "full_disk.py").write_text(FULL_DISK)
    res = run_suite("suite/test_kernels.py", "--kernels=vector_add", "-p", "full_disk", *workers,
                    env={"PYTHONPATH": str(tmp_path)}, timeout=300)
    assert "INTERNALERROR" not in res.output, res.output[-3000:]
    assert res.returncode == 1, res.output[-3000:]
    assert "3 passed" in res.output  # every test ran
    assert "cannot write the run file" in res.output and "No space left on device" in res.output
    assert "it keeps the 1 test(s) written before" in res.output
    assert "result file NOT up to date" in res.output and "it holds 1 of the 3 tests" in res.output
    data = res.run_data()  # what the one good write put there
    assert data["status"] == "incomplete" and len(data["tests"]) == 1


@pytest.mark.parametrize("kind", ["symlink", "fifo", "device"])
def test_write_atomic_writes_only_regular_files(tmp_path, kind):
    target = tmp_path / "out.json"
    if kind == "symlink":
        (tmp_path / "elsewhere.json").write_text("keep")
        target.symlink_to(tmp_path / "elsewhere.json")
    elif kind == "fifo":
        os.mkfifo(target)
    else:  # a device node of its own (a copy of /dev/null's numbers), so that a planted bug replaces nothing real
        try:
            os.mknod(target, stat.S_IFCHR | 0o666, os.makedev(1, 3))
        except PermissionError:
            pytest.skip("making a device node needs root")
    with pytest.raises(results.NotARegularFile, match=f"refusing to write {target}: it is a"):
        results.write_atomic(target, "text")
    assert os.path.lexists(target)
    if kind == "symlink":
        assert target.is_symlink() and (tmp_path / "elsewhere.json").read_text() == "keep"
    results.write_atomic(tmp_path / "new.json", "ok")  # a new file, and a regular one again
    results.write_atomic(tmp_path / "new.json", "ok again")
    assert (tmp_path / "new.json").read_text() == "ok again"


def _costs_cli(run_path, costs_path, tmp_path):
    return run_python("suite.workers.schedule", str(run_path), cwd=ROOT,
                      env={**os.environ, "SUITE_TEST_COSTS": str(costs_path)}, timeout=120)


def test_the_costs_command_never_writes_over_its_input(tmp_path):
    run = {"environment": {"backend": "cuda", "arch": "sm_90"},
           "tests": [{"nodeid": "suite/test_kernels.py::test_matches_reference[a-fp32]", "duration_s": 3.0,
                      "outcome": "passed"}]}
    path = tmp_path / "run.json"
    path.write_text(json.dumps(run))
    before = path.read_text()
    proc = _costs_cli(path, path, tmp_path)
    assert proc.returncode == 2 and "is the input run file" in proc.stderr, proc.stderr
    assert path.read_text() == before
    link = tmp_path / "link.json"
    link.symlink_to(path)
    proc = _costs_cli(path, link, tmp_path)  # the same file by another name
    assert proc.returncode == 2 and path.read_text() == before, proc.stderr
    out = tmp_path / "costs.json"
    proc = _costs_cli(path, out, tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert schedule.load(out) == {"suite/test_kernels.py::test_matches_reference[a-fp32]": 3.0}
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]


def test_a_run_file_that_cannot_be_claimed_is_tried_again(tmp_path, monkeypatch):
    """The directory went read-only (or full) before the first report: no exception into pytest, the error is kept,
    and the next report claims the file once the directory takes writes again."""
    import errno

    run = results.RunFile(tmp_path, "20260101T000000Z-interpret-interpreter-abcdef", {}, ["pytest"])
    real_open = os.open

    def read_only(path, flags, mode=0o777):
        raise OSError(errno.EROFS, "Read-only file system", str(path))

    monkeypatch.setattr(os, "open", read_only)
    run.add_report("t1", "passed", 0.1, None, [], None)
    assert not run.started and run.write_error.endswith("Read-only file system")
    monkeypatch.setattr(os, "open", real_open)
    run.add_report("t2", "passed", 0.1, None, [], None)
    assert run.started and run.write_error is None and run.tests_written == 2
    assert [t["nodeid"] for t in json.loads(run.path.read_text())["tests"]] == ["t1", "t2"]


def test_the_run_file_is_on_one_line_until_the_run_ends(tmp_path):
    """The controller rewrites the run file after every test: on one line (json's C encoder) until ``finish``, which
    writes it indented; both read back as the same data."""
    run = results.RunFile(tmp_path, "r1", {"backend": "interpret"}, ["pytest"])
    run.add_report("suite/test_x.py::test_a", "passed", 0.5, None, [{"kernel": "k", "outcome": "passed"}], None)
    text = run.path.read_text()
    assert text.count("\n") == 1 and json.loads(text) == run.data
    run.finish("complete")
    text = run.path.read_text()
    assert text.count("\n") > 10 and json.loads(text) == run.data and json.loads(text)["status"] == "complete"
