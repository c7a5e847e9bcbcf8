"""Out-of-memory errors judged fairly (suite/workers/gpu_share.py), and where a run's time goes (suite/workers/timing.py)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from suite.workers import gpu_share, timing
from tests.conftest import ROOT

HUNGRY = "--kernel-module=tests/fixtures/memory_hungry.py"
GPU_80GIB = ("-p", "tests.fixtures.gpu_memory_80gib")  # a GPU's memory to judge by, on the CPU


def _role_script(tmp_path, body: str, setup: bool = False) -> str:
    """A role's script for :func:`_run_roles`: the suite's GPU lock and gate on files under ``tmp_path``, the role's
    name (``role``, its argv), ``note(what)`` (a line of ``tmp_path / 'log'``) and ``wait_for(what)`` (until the log
    holds it), then ``body``."""
    prelude = textwrap.dedent(f"""
        import os, sys, time
        sys.path.insert(0, {str(ROOT)!r})
        from suite.workers import gpu_share, timing
        s = gpu_share.share()
        {'s.setup("cpu")' if setup else ''}
        s.fd = os.open({str(tmp_path / 'g.lock')!r}, os.O_CREAT | os.O_RDWR)
        s.gate = os.open({str(tmp_path / 'g.gate')!r}, os.O_CREAT | os.O_RDWR)
        role, log = sys.argv[1], {str(tmp_path / 'log')!r}
        def note(what):
            with open(log, "a") as f:
                f.write(f"{{role}} {{what}} {{time.monotonic():.3f}}\\n")
        def wait_for(what):
            while what not in (open(log).read() if os.path.exists(log) else ""):
                time.sleep(0.02)
    """)
    return prelude + textwrap.dedent(body)


def _run_roles(script: str, roles: str, log, timeout: float = 30) -> dict[str, float]:
    """Run ``script`` once per role, at once, and read what they noted in ``log``: each line "ROLE WHAT TIME", or
    "ROLE WHAT VALUE TIME" (a figure a role measured), as {"ROLE WHAT": TIME or VALUE}."""
    procs = [subprocess.Popen([sys.executable, "-c", script, role]) for role in roles]
    for p in procs:
        assert p.wait(timeout=timeout) == 0
    events = {}
    for line in log.read_text().splitlines():
        role, what, *value = line.split()
        events[f"{role} {what}"] = float(value[0])
    return events


def test_an_oom_caused_by_sharing_is_retried_alone_and_passes(run_suite) -> None:
    run = run_suite("suite/test_kernels.py", HUNGRY, "--kernels=zz_oom_shared")
    assert run.returncode == 0, run.output[-3000:]
    data = run.run_data()
    cases = [c for c in data["cases"] if c["kernel"] == "zz_oom_shared"]
    assert cases and all(c["outcome"] == "passed" for c in cases)
    assert data["gpu_share"]["oom_retried"] >= len(cases) // 2 > 0
    assert data["gpu_share"]["oom_retried_passed"] == data["gpu_share"]["oom_retried"]
    assert "case(s) ran again after an out-of-memory error" in run.output  # the interpreter: no GPU to share


def test_out_of_memory_without_a_gpu_is_the_kernels_failure_never_too_large(run_suite) -> None:
    """On the interpreter a launcher that raised torch's out-of-memory error gave PASSED with "not run, too large",
    or NOTHING RAN with exit 0 where every case did: there is no GPU memory to share, so nothing is too large for a
    GPU. The case fails as the kernel's own, and the run with it."""
    run = run_suite("suite/test_kernels.py", HUNGRY, "--kernels=zz_oom_alone", "-n", "0")
    assert run.returncode == 1, run.output[-3000:]
    verdict = run.output[run.output.index("portability summary"):]
    assert "too large for this GPU" not in verdict and "not run" not in verdict, verdict
    data = run.run_data()
    [test] = data["tests"]
    assert test["outcome"] == "failed", test
    assert "out of memory on cpu, where no GPU memory is shared with other workers (the CPU interpreter): the " \
           "kernel's (or its launcher's) own failure" in test["message"], test["message"]
    assert data["gpu_share"]["too_large"] == 0 and not data["gpu_share"]["too_large_cases"], data["gpu_share"]
    assert "VERDICT: FAILED: 1 of 1 test failed" in run.output, run.output[-2000:]


def test_an_oom_alone_is_too_large_not_run_never_a_failure_and_the_other_cases_still_run(run_suite) -> None:
    """A two-H200 nightly failed 21 tests on out-of-memory errors: a case too large for the GPU is the suite's own
    draw, not the kernel's fault. It is not run (listed with its footprint and a reproduction line), the test
    passes on its other cases, and the run exits 0. (A GPU of 80 GiB played on the CPU: the case needs 96.)"""
    run = run_suite("suite/test_kernels.py", HUNGRY, "--kernels=zz_oom_alone", *GPU_80GIB)
    assert run.returncode == 0, run.output[-3000:]
    assert "not run, too large for this GPU" in run.output and "too large: zz_oom_alone[" in run.output
    verdict = " ".join(run.output[run.output.index("VERDICT:"):].split())
    assert re.match(r"VERDICT: PASSED: 1 of 1 test passed; \d+ cases? not run", verdict), verdict
    assert "too large for this GPU (out of memory with the GPU to itself" in verdict, verdict  # named there
    data = run.run_data()
    assert all(t["outcome"] == "passed" for t in data["tests"]), data["tests"]
    cases = [c for c in data["cases"] if c["kernel"] == "zz_oom_alone"]
    assert cases and all(c["outcome"] == "passed" and c["shape"]["N"] <= 200 for c in cases)  # went on past them
    listed = data["gpu_share"]["too_large_cases"]
    assert data["gpu_share"]["too_large"] == len(listed) > 0
    assert any("'N': 1000" in c["case"] or "N=1000" in c["case"] or '"N": 1000' in c["case"] for c in listed), listed
    assert all(c["kernel"] == "zz_oom_alone" and "--repro=" in c["repro"] and "not a wrong result" in c["message"]
               for c in listed)


def test_a_case_not_run_for_memory_held_by_others_is_named_with_its_rerun_line(run_suite) -> None:
    """A four-H200 nightly's verdict said "1 case not run ... rerun them on a GPU to themselves" and named none: the
    case was only in a warning of the log. Each is listed in the run file with its reproduction line, the summary
    gives the line, and the verdict names the first three. (An 80 GiB GPU played on the CPU, 2 GiB asked, 1 free.)"""
    run = run_suite("suite/test_kernels.py", HUNGRY, "--kernels=zz_oom_held", *GPU_80GIB)
    assert run.returncode == 0, run.output[-3000:]
    share = run.run_data()["gpu_share"]
    listed = share["held_cases"]
    assert share["oom_held"] >= len(listed) > 0 and len({c["case"] for c in listed}) == len(listed), share
    assert all(c["kernel"] == "zz_oom_held" and '"N": ' in c["case"] and c["footprint_gib"] == 2.0
               and "--repro=N=" in c["repro"] and "--kernel-module=tests/fixtures/memory_hungry.py" in c["repro"]
               for c in listed), listed
    assert f"memory held: {listed[0]['case']} (footprint 2.0 GiB); rerun: {listed[0]['repro']}" in run.output
    verdict = " ".join(run.output[run.output.index("VERDICT:"):].split())
    assert re.match(r"VERDICT: PASSED: 1 of 1 test passed; \d+ cases? not run", verdict), verdict
    assert "other processes held its memory" in verdict and "zz_oom_held[fp32] {\"N\": " in verdict, verdict


def test_a_property_case_not_run_for_memory_held_by_others_has_its_rerun_line(run_suite) -> None:
    """A two-H200 nightly's verdict said of a properties test's case not run "each with a reproduction line in the
    result file and the summary", and the run file's line was empty: the property's retry alone, deep in its draws
    and launches, has no test to build the line from. The test that caught it gives it."""
    run = run_suite("suite/test_properties.py", HUNGRY, "--kernels=zz_oom_held", *GPU_80GIB)
    assert run.returncode == 0, run.output[-3000:]
    listed = run.run_data()["gpu_share"]["held_cases"]
    assert listed and all("--repro=N=" in c["repro"] and "suite/test_properties.py" in c["repro"]
                          and "--kernel-module=tests/fixtures/memory_hungry.py" in c["repro"] for c in listed), listed
    assert f"memory held: {listed[0]['case']} (footprint 2.0 GiB); rerun: {listed[0]['repro']}" in run.output
    # Each case is met once per property: the verdict counts the cases, not the meetings.
    verdict = " ".join(run.output[run.output.index("VERDICT:"):].split())
    assert f"test passed; {len(listed)} case{'s' if len(listed) > 1 else ''} not run" in verdict, (len(listed), verdict)


def test_every_retry_alone_is_accounted_for_when_two_tests_meet_one_too_large_case(run_suite) -> None:
    """An H100 run counted 98 cases run again alone for 65 passed and 25 too large: the properties test met the
    reference test's too-large cases again and ran them alone, and the count left them out. Each test counts the
    too-large cases it met (the run file lists each case once); a replay within one test is not run alone again."""
    run = run_suite("suite/test_kernels.py", "suite/test_properties.py", HUNGRY, "--kernels=zz_oom_alone", *GPU_80GIB)
    assert run.returncode == 0, run.output[-3000:]
    share = run.run_data()["gpu_share"]
    assert share["oom_retried"] == share["oom_retried_passed"] + share["too_large"] + share["oom_held"], share
    cases = [c["case"] for c in share["too_large_cases"]]
    assert share["too_large"] > len(cases) == len(set(cases)) > 0  # one case met by both tests, listed once


def test_an_oom_while_comparing_or_in_a_property_is_retried_alone_never_a_failure(run_suite) -> None:
    """On an H100 nightly the comparison's float64 copies and a property's own input draw ran out of memory beside
    the other workers, outside what was retried: the tests failed with out-of-memory tracebacks."""
    run = run_suite("suite/test_kernels.py", "suite/test_properties.py", HUNGRY,
                    "--kernels=zz_oom_check,zz_oom_property")
    assert run.returncode == 0, run.output[-3000:]
    data = run.run_data()
    assert data["gpu_share"]["oom_retried"] > 0
    assert data["gpu_share"]["oom_retried_passed"] == data["gpu_share"]["oom_retried"]
    assert all(t["outcome"] == "passed" for t in data["tests"]), data["tests"]
    assert "OutOfMemoryError" not in run.output


def _fake(outcomes):
    calls = []

    def run():
        failure = outcomes[len(calls)]
        calls.append(failure)
        return SimpleNamespace(failure=failure, passed=failure is None, error="CUDA out of memory" if failure else None,
                               note="")
    return run, calls


def test_retry_runs_once_more_and_names_a_case_that_does_not_fit(monkeypatch) -> None:
    run, calls = _fake(["oom", "oom"])
    result = gpu_share.run_with_retry(run, "cpu")  # no GPU: out of memory twice is the kernel's failure
    assert calls == ["oom", "oom"] and result.failure == "oom" and "own failure" in result.error, result.error
    _gpu(monkeypatch, 80, 1)
    run, calls = _fake(["oom", "oom"])
    result = gpu_share.run_with_retry(run, "cuda")
    assert result.failure == "oom", result.error  # no footprint known: not too large either
    run, calls = _fake([None])
    assert gpu_share.run_with_retry(run, "cpu").passed and calls == [None]
    run, calls = _fake(["memory"])  # any other failure is the kernel's: no retry
    assert gpu_share.run_with_retry(run, "cpu").failure == "memory" and calls == ["memory"]


def test_a_worker_waiting_to_run_alone_is_not_starved_by_new_cases(tmp_path) -> None:
    """Three processes on one lock: A holds a case; B asks for the GPU alone; C's new case must wait for B."""
    script = _role_script(tmp_path, """
        if role == "A":
            with s.case("cpu"):
                note("start"); time.sleep(1.5); note("end")
        elif role == "B":  # asks for the GPU alone while A's case runs
            while "A start" not in (open(log).read() if os.path.exists(log) else ""):
                time.sleep(0.05)
            time.sleep(0.3)
            note("asks")
            with s.alone("cpu"):
                note("start"); time.sleep(0.5); note("end")
            note(f"alone_wait {s.alone_wait_s}"); note(f"alone_ran {s.alone_s}")
        else:  # C: a new case once B waits at the gate (B's start can lag on a loaded machine)
            while " asks " not in (open(log).read() if os.path.exists(log) else ""):
                time.sleep(0.05)
            time.sleep(0.3)
            with s.case("cpu"):
                note("start")
        note(f"waited {timing.clock().take().get('gpu_wait_s', 0.0)}")
    """)
    events = _run_roles(script, "ABC", tmp_path / "log")
    assert events["B start"] >= events["A end"]  # alone: after the running case
    assert events["C start"] >= events["B end"]  # the new case waited behind the exclusive one
    # Each wait is timed as the run's gpu_wait phase (never "other"): B waited for A's case (about 1.2 s), C behind
    # B (about 0.5 s); A never waited.
    assert events["A waited"] < 0.1
    assert events["B waited"] >= 0.8 * (events["A end"] - events["A start"] - 0.3)
    assert events["C waited"] >= 0.8 * (events["B end"] - events["B start"])
    # The case that ran alone counts its wait and its time alone for the run file's gpu_share and the summary.
    assert abs(events["B alone_wait"] - (events["B start"] - events["B asks"])) < 0.1
    assert abs(events["B alone_ran"] - (events["B end"] - events["B start"])) < 0.1
    assert "waiting at a shared GPU's gate 1.7 s" in timing.breakdown_line(timing.summed(
        [{"duration_s": 2.0, "timing": {"gpu_wait_s": 1.7}}]))


def test_a_case_compiling_gives_the_gpu_back_to_a_case_waiting_to_run_alone(tmp_path) -> None:
    """A two-H200 nightly's workers of one GPU idled for minutes: a case waiting to run alone waited for every running
    case to end, and a nightly case compiles every config of its kernel while it holds its GPU. A, a case that
    compiles for 1.5 s (Triton's compile hooks, as the suite installs them); B asks to run alone 0.3 s into it: B runs
    during A's compile, and A's next launch waits until B is done."""
    script = _role_script(tmp_path, """
        if role == "A":
            with s.case("cpu"):
                timing._before_compile()
                note("compiling"); time.sleep(1.5); note("compiled")
                timing._after_compile()
                note("launches")
        else:
            wait_for("A compiling")
            time.sleep(0.3)
            with s.alone("cpu"):
                note("start"); time.sleep(0.5); note("end")
    """)
    events = _run_roles(script, "AB", tmp_path / "log")
    assert events["B start"] < events["A compiled"]  # alone while A compiled, not after A's case
    assert events["A launches"] >= events["B end"]  # A's GPU work waited for the case alone


def test_a_case_between_two_configs_lets_a_case_waiting_to_run_alone_go_first(tmp_path) -> None:
    """A nightly case runs every config of its kernel (32 launches and checks of layernorm_backward) in one case; a
    case waiting to run alone waited for all of them while the GPU's other workers queued behind it at the gate. A runs
    two configs of 1 s each; B asks to run alone 0.3 s into the first: B runs between A's configs, and A's second
    config waits until B is done."""
    script = _role_script(tmp_path, """
        if role == "A":
            with s.case("cpu"):
                note("first"); time.sleep(1.0); note("first_done")
                s.between_configs()
                note("second"); time.sleep(1.0); note("second_done")
        else:
            wait_for("A first")
            time.sleep(0.3)
            with s.alone("cpu"):
                note("start"); time.sleep(0.5); note("end")
    """)
    events = _run_roles(script, "AB", tmp_path / "log")
    assert events["B start"] >= events["A first_done"]  # alone only once A's config ended
    assert events["B start"] < events["A second_done"]  # not after A's whole case
    assert events["A second"] >= events["B end"]  # A's next config waited for the case alone


def test_a_case_keeps_the_gpu_between_configs_where_its_tensors_would_starve_the_case_alone(tmp_path) -> None:
    """A case parked between configs keeps its tensors on the GPU. Where the case waiting to run alone needs more than
    the GPU has free (8 cases of 100-103 GiB not run in a two-H200 nightly, the memory held by others), the case goes
    on to the end instead: B asks to run alone needing 50 GiB with 10 GiB free; A's second config runs before B."""
    script = _role_script(tmp_path, """
        gpu_share.mem_info = lambda device: (10 * 2**30, 80 * 2**30)
        if role == "A":
            with s.case("cpu"):
                note("first"); time.sleep(1.0); note("first_done")
                note(f"need {s.waiting_need() // 2**30}")
                s.between_configs()
                note("second"); time.sleep(0.5); note("second_done")
        else:
            wait_for("A first")
            time.sleep(0.3)
            with s.alone("cpu", 50 * 2**30):
                note("start")
            note(f"after {s.waiting_need()}")
    """)
    events = _run_roles(script, "AB", tmp_path / "log")
    assert events["A need"] == 50  # published at the gate while B waited
    assert events["A second"] < events["B start"] and events["B start"] >= events["A second_done"]
    assert events["B after"] == 0  # taken back with the gate


def test_between_configs_keeps_the_gpu_where_nobody_waits_to_run_alone(tmp_path) -> None:
    """With no worker waiting to run alone, a case keeps its shared lock from one config to the next: C, asking to
    run alone after A's second config began, waits for the end of A's case."""
    script = _role_script(tmp_path, """
        if role == "A":
            with s.case("cpu"):
                time.sleep(0.2)
                s.between_configs()
                note("second"); time.sleep(1.0); note("second_done")
        else:
            wait_for("A second")
            time.sleep(0.2)
            with s.alone("cpu"):
                note("start")
    """)
    events = _run_roles(script, "AC", tmp_path / "log")
    assert events["C start"] >= events["A second_done"]


def test_a_case_working_on_the_host_gives_the_gpu_to_a_case_waiting_to_run_alone(tmp_path) -> None:
    """A four-GPU nightly's GPU did nothing for five minutes: a case computed its float64 reference on the host
    (suite/checks/host_reference.py) holding its GPU's lock, a worker waited to run alone behind it and the rest
    queued at the gate. A works 1.5 s on the host (off_gpu) inside its case; B asks to run alone 0.3 s into it: B runs
    meanwhile, and A's GPU work after waits until B is done."""
    script = _role_script(tmp_path, """
        if role == "A":
            with s.case("cpu"):
                with s.off_gpu():
                    note("host"); time.sleep(1.5); note("host_done")
                note("gpu")
        else:
            wait_for("A host")
            time.sleep(0.3)
            with s.alone("cpu"):
                note("start"); time.sleep(0.5); note("end")
    """)
    events = _run_roles(script, "AB", tmp_path / "log")
    assert events["B start"] < events["A host_done"]  # alone while A worked on the host, not after A's case
    assert events["A gpu"] >= events["B end"]  # A's GPU work waited for the case alone


def test_a_case_alone_working_on_the_host_lets_the_other_cases_run(tmp_path) -> None:
    """A four-H200 nightly's case, run alone after an out-of-memory error, computed its float64 reference on the host
    (too large for the GPU even alone) and held the GPU at 0% for 95 s while the other 15 workers waited at the gate.
    B runs alone and works 1.5 s on the host (off_gpu) inside; C asks for a case 0.3 s into it: C runs meanwhile, and
    B's GPU work after waits until C's case is done, then has the GPU alone again."""
    script = _role_script(tmp_path, """
        if role == "B":
            with s.alone("cpu"):
                with s.off_gpu():
                    note("host"); time.sleep(1.5); note("host_done")
                note("gpu"); note(f"exclusive {int(s.exclusive)}")
        else:
            wait_for("B host")
            time.sleep(0.3)
            with s.case("cpu"):
                note("start"); time.sleep(0.5); note("end")
    """)
    events = _run_roles(script, "BC", tmp_path / "log")
    assert events["C start"] < events["B host_done"]  # C's case ran while B worked on the host
    assert events["B gpu"] >= events["C end"] and events["B exclusive"] == 1  # then B had the GPU alone again


def test_phases_are_exclusive_and_summed_per_run() -> None:
    clock = timing.Clock()
    outer = clock.enter("launch")
    time.sleep(0.05)
    inner = clock.enter("compile")
    time.sleep(0.1)
    clock.leave(inner)
    clock.leave(outer)
    rec = clock.take()
    assert rec["compile_s"] >= 0.1 and 0.04 <= rec["launch_s"] < 0.1  # the compile is not counted twice
    assert clock.take() == {}
    total = timing.summed([{"duration_s": 1.0, "timing": {"launch_s": 0.25, "triton_compiled": 3, "triton_cached": 1}},
                           {"duration_s": 2.0, "timing": {"inputs_s": 0.5}}, {"duration_s": 1.0}])
    assert total["tests_s"] == 4.0 and total["other_s"] == 3.25 and total["triton_cache"] == "cold"
    assert "inputs 0.5 s" in timing.breakdown_line(total)
    # A phase that would show as 0.0 s is left out (an installed run on an H100 printed "waiting at a shared GPU's
    # gate 0.0 s" with nothing shared).
    line = timing.breakdown_line(timing.summed([{"duration_s": 1.0, "timing": {"gpu_wait_s": 0.01, "check_s": 0.3}}]))
    assert "check 0.3 s" in line and "gate" not in line


@pytest.mark.slow
def test_a_run_file_breaks_each_test_time_down(run_suite) -> None:
    run = run_suite("-n", "2", "--kernels=vector_add")
    assert run.returncode == 0, run.output[-3000:]
    data = run.run_data()
    kernels = [t for t in data["tests"] if "test_matches_reference" in t["nodeid"]]
    assert kernels and all({"inputs_s", "launch_s", "reference_s", "check_s"} <= set(t["timing"]) for t in kernels)
    matrix = [t for t in data["tests"] if "test_compile_matrix" in t["nodeid"] and t["outcome"] == "passed"]
    assert matrix and all(t["timing"].get("compile_matrix_s", 0) > 0 for t in matrix)
    assert data["timing"]["tests_s"] > 0 and data["timing"]["launch_s"] > 0
    assert "time in tests:" in run.output and "slow: suite/" in run.output


def test_lock_files_are_per_gpu_and_unlocked_when_a_holder_dies(tmp_path) -> None:
    """The suite's own lock (Share.setup, Share.alone), not the OS's flock alone: a worker running alone on GPU A
    holds A's lock, not B's (a lock file per GPU, named by the GPU's UUID); a second worker of A waits for it; and
    a holder that dies (a GPU fault ends its process) leaves no lock behind."""
    script = textwrap.dedent(f"""
        import os, sys, tempfile, time
        from types import SimpleNamespace
        import torch
        sys.path.insert(0, {str(ROOT)!r})
        tempfile.tempdir = {str(tmp_path)!r}
        torch.cuda.get_device_properties = lambda index: SimpleNamespace(uuid=sys.argv[1])
        from suite.workers import gpu_share
        s = gpu_share.share()
        s.setup("cuda")
        with s.alone("cpu"):  # the GPU's memory is not asked about: only its lock
            open(os.path.join(tempfile.tempdir, "alone-" + sys.argv[2]), "w").close()
            time.sleep(float(sys.argv[3]))
    """)
    log = tmp_path / "alone-"

    def start(gpu: str, name: str, hold: float) -> subprocess.Popen:
        return subprocess.Popen([sys.executable, "-c", script, f"GPU-{gpu}", name, str(hold)])

    def wait_for(name: str, seconds: float) -> bool:
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            if Path(f"{log}{name}").exists():
                return True
            time.sleep(0.05)
        return False

    holder = start("A", "holder", 120)
    try:
        assert wait_for("holder", 60)
        other_gpu = start("B", "other-gpu", 0)
        assert other_gpu.wait(timeout=60) == 0 and wait_for("other-gpu", 1)  # B's lock is another file
        same_gpu = start("A", "same-gpu", 0)
        assert not wait_for("same-gpu", 3)  # A's lock is held: it waits
        holder.kill()
        holder.wait()
        assert same_gpu.wait(timeout=60) == 0 and wait_for("same-gpu", 1)  # a dead holder leaves no lock behind
    finally:
        holder.kill()
    assert sorted(p.name for p in tmp_path.glob("suite-gpu-*.lock")) == ["suite-gpu-GPU-A.lock", "suite-gpu-GPU-B.lock"]


def test_workers_share_the_cpu_cores_for_torch_threads(monkeypatch) -> None:
    """Sixteen workers each running torch's default one thread per core oversubscribed a 16-core runner."""
    import torch

    from suite.plugin.hooks import share_cpu_threads

    before = torch.get_num_threads()
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    monkeypatch.setattr(os, "sched_getaffinity", lambda _: set(range(16)))
    try:
        assert share_cpu_threads(16) == 1 and torch.get_num_threads() == 1
        assert share_cpu_threads(4) == 4 and torch.get_num_threads() == 4
        assert share_cpu_threads(32) == 1
        monkeypatch.setenv("OMP_NUM_THREADS", "3")
        torch.set_num_threads(3)
        assert share_cpu_threads(16) is None and torch.get_num_threads() == 3  # the user's choice stands
    finally:
        torch.set_num_threads(before)


def test_an_out_of_memory_message_gives_the_case_footprint() -> None:
    assert gpu_share.requested_bytes("CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has") == 2 * 2**30
    assert gpu_share.requested_bytes("Tried to allocate 512.00 MiB") == 512 * 2**20
    assert gpu_share.requested_bytes("out of memory") == 0
    # what the case held when it failed comes from torch's own message: the frames that held it may be gone
    message = ("CUDA out of memory. Tried to allocate 8.00 GiB. GPU 0 has a total capacity of 79.18 GiB of which 1.51 "
               "GiB is free. Of the allocated memory 62.25 GiB is allocated by PyTorch, and 1.5 GiB is reserved")
    assert gpu_share.footprint(torch_oom(message.removeprefix("CUDA out of memory. ")), "cpu") == int(70.25 * 2**30)
    error = torch_oom("Tried to allocate 1.50 GiB")
    assert gpu_share.footprint(error, "cpu") == int(1.5 * 2**30)  # no GPU: nothing allocated on one
    # what the process had in use, its allocator's reserved blocks among live tensors with it: a four-H200 nightly's
    # row_argmax ran alone once its allocated + asked were free and ran out again, 25.72 GiB reserved beside them
    message = ("Tried to allocate 29.39 GiB. GPU 0 has a total capacity of 139.80 GiB of which 23.64 GiB is free. "
               "Including non-PyTorch memory, this process has 89.03 GiB memory in use. Of the allocated memory 62.49 "
               "GiB is allocated by PyTorch, and 25.72 GiB is reserved by PyTorch but unallocated.")
    assert gpu_share.footprint(torch_oom(message), "cpu") == int(89.03 * 2**30) + int(29.39 * 2**30)


def torch_oom(message: str) -> BaseException:
    import torch

    return torch.OutOfMemoryError(f"CUDA out of memory. {message}")


def _gpu(monkeypatch, total_gib: float, workers: int, free_gib: float = 1.0) -> None:
    monkeypatch.setattr(gpu_share, "mem_info", lambda device: (int(free_gib * 2**30), int(total_gib * 2**30))
                        if device.startswith("cuda") else None)
    monkeypatch.setattr(gpu_share.share(), "workers", workers)


def test_an_oom_alone_is_too_large_only_when_the_footprint_exceeds_the_gpu(monkeypatch) -> None:
    """A two-H200 nightly called a few-GiB case "too large for this GPU (140 GiB)": the other 15 workers on the GPU
    still held their caches. A case that fits is not run (other processes held the memory), never a failure."""
    _gpu(monkeypatch, 140, 16)
    failure, message = gpu_share.judge_oom_alone("cuda", "CUDA out of memory", 4 * 2**30)
    assert failure == "oom_held" and "needs 4.0 GiB" in message and "Not a result of the kernel" in message
    failure, message = gpu_share.judge_oom_alone("cuda", "CUDA out of memory", 200 * 2**30)
    assert failure == "too_large" and "needs at least 200.0 GiB" in message and "130.6 GiB" in message
    # past the GPU less the other workers' contexts (15 x 0.625 GiB): too large for it as shared
    assert gpu_share.judge_oom_alone("cuda", "", int(131 * 2**30))[0] == "too_large"
    # no GPU: the kernel's own failure, never too large; a need the free memory held: the kernel's too
    assert gpu_share.judge_oom_alone("cpu", "", 4 * 2**30)[0] == "oom"
    _gpu(monkeypatch, 80, 16, free_gib=79)
    failure, message = gpu_share.judge_oom_alone("cuda", "Tried to allocate 1.00 MiB", 2**20)
    assert failure == "oom" and "with the GPU to itself and 79.0 GiB free" in message, message
    assert gpu_share.judge_oom_alone("cuda", "", 0)[0] == "oom"  # a footprint it cannot tell


def test_an_oom_alone_is_judged_by_the_memory_free_when_it_failed(monkeypatch) -> None:
    """A four-H200 nightly failed row_argmax bf16 as "out of memory with the GPU to itself and 111.8 GiB free, more
    than the case's footprint (91.9 GiB)": 111.8 GiB was free after the case let its own memory go; when the
    allocation failed, torch's message said 23.64 GiB was free (other processes held 27 GiB). Judged by what was free
    then: not run, memory held by others; where the allocation had the room it asked for, the kernel's own."""
    _gpu(monkeypatch, 140, 16, free_gib=111.8)
    error = ("OutOfMemoryError: CUDA out of memory. Tried to allocate 29.39 GiB. GPU 0 has a total capacity of 139.80 "
             "GiB of which 23.64 GiB is free. Process 4360 has 11.13 GiB memory in use. Including non-PyTorch memory, "
             "this process has 89.03 GiB memory in use. Of the allocated memory 62.49 GiB is allocated by PyTorch, and "
             "25.72 GiB is reserved by PyTorch but unallocated.")
    need = gpu_share.allocated_bytes(error) + gpu_share.requested_bytes(error)
    assert gpu_share.judge_oom_alone("cuda", error, need)[0] == "oom_held"
    roomy = error.replace("of which 23.64 GiB is free", "of which 60.00 GiB is free")
    failure, message = gpu_share.judge_oom_alone("cuda", roomy, need)
    assert failure == "oom" and "60.0 GiB free" in message, message


def test_retry_alone_of_a_case_that_fits_the_gpu_is_not_run_and_counted(monkeypatch) -> None:
    _gpu(monkeypatch, 80, 16)
    monkeypatch.setattr(gpu_share.share(), "held", 0)
    calls = []

    def run():
        calls.append(1)
        return SimpleNamespace(failure="oom", passed=False, error="CUDA out of memory. Tried to allocate 2.00 GiB",
                               note="", footprint=3 * 2**30)
    result = gpu_share.run_with_retry(run, "cuda")
    assert len(calls) == 2 and result.failure == "oom_held" and gpu_share.share().held == 1
    assert "too large" not in result.error


@pytest.mark.slow
def test_the_gpu_to_itself_gets_the_other_workers_memory(tmp_path) -> None:
    """Three workers on one GPU of 100 units (a file each holds what its torch cache keeps): A runs a case holding
    40, C idles holding 40 (a compile, say) and starts a case later; B, out of memory, asks for the GPU alone for a
    case of 70. A gives its cache back as its case ends (B waits at the gate), C before it waits at the gate, and B
    runs only once the memory is free: with only the lock (the old design) B ran with 20 free."""
    script = textwrap.dedent(f"""
        import os, sys, time
        import torch  # noqa: F401 - imported before the start line, as a worker has it: its import takes seconds
        sys.path.insert(0, {str(ROOT)!r})
        os.environ["SUITE_DRAIN_WAIT_S"] = "20"
        from suite.workers import gpu_share
        unit = 2**30
        tmp, role = {str(tmp_path)!r}, sys.argv[1]
        def held(r):
            try:
                return int(open(os.path.join(tmp, "held-" + r)).read() or 0)
            except FileNotFoundError:
                return 0
        def hold(n):
            with open(os.path.join(tmp, "held-" + role), "w") as f:
                f.write(str(n))
        gpu_share.mem_info = lambda device: ((100 - sum(held(r) for r in "ABC")) * unit, 100 * unit)
        s = gpu_share.share()
        s.workers = 3
        s.fd = os.open(os.path.join(tmp, "g.lock"), os.O_CREAT | os.O_RDWR)
        s.gate = os.open(os.path.join(tmp, "g.gate"), os.O_CREAT | os.O_RDWR)
        def note(what):
            with open(os.path.join(tmp, "log"), "a") as f:
                f.write(f"{{role}} {{what}} {{time.monotonic():.3f}}\\n")
        def drain(device):
            hold(0); note("drain")
        s.drain = drain
        if role != "B":
            hold(40)
        open(os.path.join(tmp, "ready-" + role), "w").close()
        while not all(os.path.exists(os.path.join(tmp, "ready-" + r)) for r in "ABC"):  # all started and holding
            time.sleep(0.01)
        if role == "A":
            with s.case("cuda"):
                deadline = time.monotonic() + 30
                while not s.contended() and time.monotonic() < deadline:  # until B waits to run alone
                    time.sleep(0.05)
                time.sleep(0.3)
        elif role == "B":
            time.sleep(0.3)
            with s.alone("cuda", 70 * unit):
                free = gpu_share.mem_info("cuda")[0] // unit
                note(f"start-free-{{free}}")
        else:
            time.sleep(3.0)
            with s.case("cuda"):
                note("case")
    """)
    for name in "ABC":
        (tmp_path / f"held-{name}").write_text("0")
    events = _run_roles(script, "ABC", tmp_path / "log", timeout=60)
    start = [k for k in events if k.startswith("B start-free-")]
    assert start == ["B start-free-100"], events  # it ran with the whole GPU free
    assert "A drain" in events and "C drain" in events, events
    assert events[start[0]] >= events["C drain"] >= events["A drain"]
    assert events["C case"] >= events[start[0]]  # C's case still waited behind B's


def test_the_summary_says_how_long_cases_waited_to_run_alone_and_ran_alone() -> None:
    """A two-H200 nightly's workers of one GPU idled for minutes while its out-of-memory cases ran alone, and nothing
    in the summary said so: the line gives the wait for the running cases, the time alone and the gate's whole wait."""
    from suite.plugin import summary

    data = {"gpu_share": {"workers": 32, "oom_retried": 8, "oom_retried_passed": 6, "oom_held": 2, "too_large": 0,
                          "too_large_cases": [], "alone_wait_s": 212.34, "alone_s": 95.1},
            "timing": {"gpu_wait_s": 4803.2}}
    [line] = summary.share_lines(data)
    assert ("8 out-of-memory case(s) ran again alone (waiting 212.3 s for the cases running on their GPU to end and "
            "for its memory, then 95.1 s alone; all workers waited 4803.2 s at their GPU's gate), 6 then passed") in line, \
        line
    data["gpu_share"]["alone_cases"] = [
        {"kernel": "row_argmax", "dtype": "bf16", "case": "row_argmax[bf16] M=15048,N=262144", "need_gib": 91.9,
         "waited_s": 0.4, "alone_s": 15.1},
        {"kernel": "cross_entropy", "dtype": "fp32", "case": "cross_entropy[fp32] M=1869,V=262143", "need_gib": 0,
         "waited_s": 3.12, "alone_s": 95.2}]
    lines = summary.share_lines(data)
    assert lines[1:] == ["  alone 95.2 s (after waiting 3.1 s): cross_entropy[fp32] cross_entropy[fp32] M=1869,V=262143",
                         "  alone 15.1 s (after waiting 0.4 s): row_argmax[bf16] row_argmax[bf16] M=15048,N=262144"], lines
    data["gpu_share"].update(alone_wait_s=0.0, alone_s=0.0)  # the interpreter: nothing shared, nothing to say
    assert "waiting" not in summary.share_lines(data)[0]
    assert summary.share_lines({"gpu_share": {**data["gpu_share"], "oom_retried": 0}}) == []


def test_each_case_run_alone_is_listed_with_its_wait_and_its_time_alone(tmp_path, monkeypatch) -> None:
    """A four-H200 nightly's GPU sat at 0% for 95 s with 14 workers at its gate, and only the totals said that cases
    ran alone: which case held the GPU had to be inferred. Each case run alone is now listed (the run file's
    gpu_share.alone_cases), and the test's counts give them to the recorder once."""
    from kernels.spec import Case

    s = gpu_share.Share()
    s.fd = os.open(str(tmp_path / "g.lock"), os.O_CREAT | os.O_RDWR)
    s.gate = os.open(str(tmp_path / "g.gate"), os.O_CREAT | os.O_RDWR)
    case = Case(kernel="cross_entropy", dtype="fp32", shape={"M": 1869, "V": 262143})
    s.retried = 1
    with s.alone("cpu", 3 * 2**30, case):
        time.sleep(0.2)
    counts = s.take_counts()
    [listed] = counts["alone_cases"]
    assert (listed["kernel"], listed["dtype"], listed["case"]) == ("cross_entropy", "fp32", str(case))
    assert listed["need_gib"] == 3.0
    assert 0.2 <= listed["alone_s"] < 1.0 and 0 <= listed["waited_s"] < 1.0
    assert s.take_counts() is None and s.alone_cases == []  # given once


def test_a_case_alone_stops_waiting_once_the_gpus_free_memory_stops_growing(monkeypatch) -> None:
    """A case parked mid-compile keeps its tensors until the case alone is done: free memory that stopped growing
    short of the need is all there will be, so the wait ends after the settle time, not SUITE_DRAIN_WAIT_S."""
    monkeypatch.setattr(gpu_share, "mem_info", lambda device: (10 * gpu_share.GIB, 80 * gpu_share.GIB))
    monkeypatch.setattr(gpu_share, "DRAIN_SETTLE_S", 0.3)
    monkeypatch.setenv("SUITE_DRAIN_WAIT_S", "20")
    started = time.monotonic()
    gpu_share.wait_for_memory("cuda:0", 30 * gpu_share.GIB, workers=16)  # needs 30 GiB; 10 GiB free, not growing
    assert time.monotonic() - started < 3


def test_merged_shards_add_up_the_waits_of_their_cases_alone() -> None:
    from reports import shards

    merged = shards._sum_counters([{"oom_retried": 1, "alone_wait_s": 10.5, "alone_s": 3.25},
                                   {"oom_retried": 0}, {"oom_retried": 2, "alone_wait_s": 20.0, "alone_s": 4.0}],
                                  shards.COUNTERS["gpu_share"])
    assert (merged["oom_retried"], merged["alone_wait_s"], merged["alone_s"]) == (3, 30.5, 7.25)


def test_a_stopped_run_says_where_each_worker_stood_on_its_gpus_lock(tmp_path) -> None:
    """A two-GPU nightly stopped with one GPU idle for six minutes, its 16 workers' tests unfinished, and nothing
    said which worker held the GPU. A holds a case (its host work); B asks to run alone; C's new case waits behind B.
    While they wait, each worker's GPU state (crash.Journal.gpu_state) says what it waits for; A's says nothing; once
    the waits end, none is left. The controller reads them into the run file's unfinished tests and the summary."""
    journals = tmp_path / "journals"
    journals.mkdir()
    script = _role_script(tmp_path, f"""
        import json
        from suite.workers import crash
        crash.process().journal = crash.Journal({str(journals)!r}, "gw" + role)
        crash.process().journal.start_test("t" + role, [])
        if role == "A":
            with s.case("cpu"):
                note("start"); wait_for("D read"); note("end")
        elif role == "B":
            wait_for("A start"); time.sleep(0.2)
            with s.alone("cpu"):
                note("start"); note("end")
        elif role == "C":
            wait_for("A start"); time.sleep(0.6)  # after B took the gate
            with s.case("cpu"):
                note("start")
        else:  # D: reads the three states while A holds its case and B and C wait
            wait_for("A start"); time.sleep(1.5)
            states = {{w: crash.read_gpu_state({str(journals)!r}, "gw" + w) for w in "ABC"}}
            json.dump(states, open({str(tmp_path / 'states.json')!r}, "w"))
            note("read")
        crash.process().journal.end_test()
    """)
    events = _run_roles(script, "ABCD", tmp_path / "log")
    assert events["B start"] >= events["A end"] and events["C start"] >= events["B end"]
    import json

    states = json.loads((tmp_path / "states.json").read_text())
    assert states["A"] is None, states
    assert states["B"]["nodeid"] == "tB" and states["B"]["what"].startswith(
        "waiting to run alone: for the cases running on its GPU to end"), states
    assert states["C"]["nodeid"] == "tC" and states["C"]["what"] == (
        "waiting at its GPU's gate (another worker waits to run alone there)"), states
    assert not list(journals.glob("*.gpu")), list(journals.iterdir())  # each wait ended: its state went with it


def test_the_run_file_and_summary_place_each_unfinished_test(tmp_path) -> None:
    from suite.plugin import recorder, summary
    from suite.workers import crash

    journal = crash.Journal(str(tmp_path), "gw3")
    journal.start_test("suite/test_kernels.py::test_matches_reference[k-fp32]", ["pytest", "x"])
    journal.start_case(SimpleNamespace(as_record=lambda: {"kernel": "k"},
                                       spec_string=lambda: "N=5;layout=contiguous;values=normal;seed=1"))
    journal.gpu_state("running alone on its GPU (the GPU's other workers wait at its gate)")
    me = SimpleNamespace(ctx=SimpleNamespace(pinning=SimpleNamespace(assigned={"gw3": "1"}, journal_dir=str(tmp_path))))
    where = recorder.RunRecorder._where_it_stood(me, "suite/test_kernels.py::test_matches_reference[k-fp32]", "gw3",
                                              time.time() + 10)
    assert where["gpu"] == "1" and where["case"] == "N=5;layout=contiguous;values=normal;seed=1", where
    assert where["gpu_state"].startswith("running alone") and 9 < where["gpu_state_s"] < 12, where
    assert recorder.RunRecorder._where_it_stood(me, "another test", "gw3", time.time()) == {"gpu": "1"}
    lines = summary.stopped_lines([{"nodeid": "a", "worker": "gw3", "running_s": 400.0, **where},
                                   {"nodeid": "b", "worker": "gw5", "running_s": 300.0, "gpu": "1",
                                    "case": "N=7;layout=contiguous;values=normal;seed=2", "case_running_s": 290.0}])
    assert lines[0] == "where the unfinished tests stood on their GPUs at the stop:", lines
    assert re.match(r"  gw3 \(GPU 1\): running alone on its GPU .*, for 1\d s; case N=5;.*, for 1\d s$", lines[1]), lines
    assert lines[2] == ("  gw5 (GPU 1): waiting for nothing on its GPU; case N=7;layout=contiguous;values=normal;"
                        "seed=2, for 290 s"), lines
    assert summary.stopped_lines([{"nodeid": "b", "worker": "gw5", "running_s": 3.0}]) == []


def test_the_run_file_lists_every_case_run_alone_across_tests_up_to_a_cap() -> None:
    """The recorder adds each test's cases run alone to the run file's list (not merged by case, unlike the too-large
    cases: one case may run alone in several properties), up to ALONE_LISTED."""
    from types import SimpleNamespace

    from suite.plugin.recorder import RunRecorder

    run_file = SimpleNamespace(data={"gpu_share": {"oom_retried": 0, "alone_cases": []}})
    recorder = RunRecorder(run_file)
    one = {"kernel": "k", "dtype": "fp32", "case": "c", "need_gib": 1.0, "waited_s": 0.1, "alone_s": 2.0}
    recorder._count_share({"oom_retried": 1, "alone_cases": [one]})
    recorder._count_share({"oom_retried": 2, "alone_cases": [one, {**one, "alone_s": 3.0}]})
    share = run_file.data["gpu_share"]
    assert share["oom_retried"] == 3 and [c["alone_s"] for c in share["alone_cases"]] == [2.0, 2.0, 3.0]
    recorder._count_share({"oom_retried": 1, "alone_cases": [one] * (gpu_share.ALONE_LISTED + 5)})
    assert len(share["alone_cases"]) == gpu_share.ALONE_LISTED


@pytest.mark.parametrize("need_gib, failure", [(200, "too_large"), (3, "oom_held")])
def test_both_tests_take_one_out_of_memory_path_and_record_the_case_once(monkeypatch, need_gib, failure) -> None:
    """The reference test's result and the property test's exception meet one path (gpu_share.alone_on_oom): the
    same verdict and text for the same out-of-memory error alone, the case listed once, its line added by the test."""
    from kernels.spec import Case
    from suite.checks import property_loop

    _gpu(monkeypatch, 80, 16)
    share = gpu_share.share()
    for name, value in (("held", 0), ("retried", 0), ("held_cases", []), ("too_large", []), ("_too_large_now", {})):
        monkeypatch.setattr(share, name, value)
    case = Case("k", "fp32", {"N": 4}, "contiguous", "normal", 0)
    error = f"CUDA out of memory. Tried to allocate {need_gib}.00 GiB"
    result = gpu_share.run_with_retry(lambda: SimpleNamespace(failure="oom", passed=False, error=error, note="",
                                                              footprint=need_gib * 2**30), "cuda", case)

    class OutOfMemoryError(RuntimeError):
        pass

    def attempt():
        raise OutOfMemoryError(error)

    monkeypatch.setattr(gpu_share, "footprint", lambda exc, device: need_gib * 2**30)
    raised = {"too_large": gpu_share.TooLarge, "oom_held": gpu_share.MemoryHeld}[failure]
    with pytest.raises(raised) as err:
        property_loop.alone_on_oom(attempt, SimpleNamespace(device="cuda"), case)
    assert type(err.value) is raised and result.failure == failure, (result.failure, err.value)
    said = str(err.value).removeprefix(f"{case}: ")  # the same verdict's words, the case named where it is raised
    assert said != str(err.value) and said.split(". ")[0] == result.error.split(". ")[0], (result.error, said)
    listed = share.too_large if failure == "too_large" else share.held_cases
    assert [c["case"] for c in listed] == [str(case)] and listed[0]["repro"] == ""
    share.note_repro(case, "pytest --repro=N=4")
    assert listed[0]["repro"] == "pytest --repro=N=4"


def test_a_look_at_a_cases_inputs_out_of_memory_is_no_broken_spec(run_suite) -> None:
    """A nightly on one H200 (16 workers) failed row_max bf16 and cross_entropy bf16 as "broken spec: _make_inputs()
    ... raised OutOfMemoryError": after the draws the test builds the largest passed case's inputs again, with
    subnormal values, to look whether make_inputs builds the class, outside the one out-of-memory path, while other
    workers held the GPU. The look goes through it: out of memory alone too, the look is not made and the run file
    says so; the cases that ran pass."""
    run = run_suite("suite/test_kernels.py", HUNGRY, "--kernels=zz_oom_look", *GPU_80GIB)
    assert run.returncode == 0, run.output[-3000:]
    assert "broken spec" not in run.output, run.output[-3000:]
    data = run.run_data()
    coverage = next(c for c in data["coverage"] if c["kernel"] == "zz_oom_look")
    not_met = coverage["not_met"]
    assert "out of memory" in not_met["values=subnormal"], not_met
    held = data["gpu_share"]["held_cases"]  # the look's case is listed as not run, with the line that reruns it
    assert held and all("--repro=N=" in c["repro"] for c in held), held


def test_the_contract_probes_look_at_passed_cases_out_of_memory_is_no_broken_spec(run_suite) -> None:
    """The same nightly's next run (one H200, 16 workers) failed cross_entropy bf16 as "broken spec: _make_inputs()
    ... raised OutOfMemoryError" where the contract probe built passed cases' inputs again to pick the case it runs
    on. Every look at a case's inputs goes through the one out-of-memory path: what ran out of memory alone too is
    listed as not run, the test passes."""
    run = run_suite("suite/test_kernels.py", HUNGRY, "--kernels=zz_oom_rebuild", *GPU_80GIB)
    assert run.returncode == 0, run.output[-3000:]
    assert "broken spec" not in run.output, run.output[-3000:]
    assert "cases not run" in run.output, run.output[-3000:]
    # each listed with the line that reruns it, as the verdict says: the looks' cases and the contract probe's too
    held = run.run_data()["gpu_share"]["held_cases"]
    assert held and all("--repro=N=" in c["repro"] for c in held), [c for c in held if not c["repro"]]
