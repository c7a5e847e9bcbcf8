"""A worker's GPU start-up in a thread (suite/workers/warmup.py): the first test waits for it; its errors are left to the
test that meets them."""

from __future__ import annotations

import gc
import threading
import time

import pytest

from suite.workers import warmup


@pytest.fixture(autouse=True)
def _unfrozen():
    """wait() freezes this process's objects (a worker's start-up): this test process gets them back afterwards."""
    yield
    gc.unfreeze()


def test_the_first_test_waits_for_the_start_up(monkeypatch):
    done = threading.Event()

    def slow(device: str, loaded: threading.Event, times: dict) -> None:
        time.sleep(0.3)
        done.set()

    monkeypatch.setattr(warmup, "_warm", slow)
    warmup.start("cuda")
    assert not done.is_set()
    warmup.wait()
    assert done.is_set()
    warmup.wait()  # later tests: nothing to wait for


def test_no_start_up_off_the_gpu_and_errors_stay_in_the_thread(monkeypatch):
    calls = []
    monkeypatch.setattr(warmup, "_warm", lambda device, loaded, times: calls.append(device))
    warmup.start("cpu")
    warmup.wait()
    assert calls == []
    monkeypatch.undo()
    warmup.start("cuda:0")  # no GPU here: torch raises inside the thread, and wait() returns
    warmup.wait()


def test_the_start_ups_objects_are_frozen_once_it_is_done(monkeypatch):
    """After the start-up, a full collection (one after every GPU test) walks none of what the start-up made."""
    monkeypatch.setattr(warmup, "_warm", lambda device, loaded, times: None)
    gc.unfreeze()
    made = [[i] for i in range(1000)]  # objects the start-up made, which live on
    warmup.start("cuda")
    warmup.wait()
    assert gc.get_freeze_count() >= len(made)
    assert not any(gc.is_tracked(m) and any(m is o for o in gc.get_objects()) for m in made[:3])


def test_the_context_comes_first_and_the_draws_only_once_the_kernels_are_loaded(monkeypatch):
    """The thread makes the CUDA context at once, and draws with the input generator (importing the kernels) only once
    the worker has loaded them: it never waits on the worker's imports, nor they on it. The first test gets its times.
    (torch's context and the draws played on the CPU.)"""
    import torch

    from kernels import inputs

    steps = []
    context_made = threading.Event()

    def empty(*args, device=None, **kwargs):
        steps.append(f"context {device}")
        context_made.set()
        return torch.zeros(1)

    monkeypatch.setattr(torch, "empty", empty)
    monkeypatch.setattr(torch.cuda, "synchronize", lambda device=None: steps.append("synchronize"))
    monkeypatch.setattr(inputs, "_draw", lambda seed, draw, kind, shape, device: steps.append(f"draw {kind}"))
    compiled = threading.Event()

    def compile_draws(startup) -> None:
        compiled.wait(5)
        steps.append("compile")
        startup.times["compiled"] = time.time()
        startup.loaded.set()

    monkeypatch.setattr(warmup, "_compile_draws", compile_draws)
    warmup.start("cuda")
    assert context_made.wait(5)
    time.sleep(0.05)
    assert steps == ["context cuda"]  # the kernels are not loaded yet: no draw
    warmup.kernels_loaded()
    time.sleep(0.05)
    assert steps == ["context cuda"]  # loaded, but the generator's kernels not compiled yet: still no draw
    compiled.set()
    times = warmup.wait()
    assert steps == ["context cuda", "compile", f"draw {inputs._NORMAL}", f"draw {inputs._BITS}", "synchronize"]
    assert times["began"] <= times["context"] <= times["compiled"] <= times["ended"] and times["waited_s"] >= 0


def test_the_generators_kernels_are_compiled_as_the_draws_launch_them(monkeypatch):
    """_compile_draws compiles (warmup) each kernel variant the start-up's draws launch: the same arguments, so the
    draws find them compiled (Triton's JIT played: what each call was given is compared)."""
    import torch

    from kernels import inputs

    calls = []

    class Kernel:
        def warmup(self, *args, grid, **kwargs):
            calls.append(("warmup", tuple(torch.int64 if a is torch.int64 else a for a in args), kwargs))

        def __getitem__(self, grid):
            return lambda *args, **kwargs: calls.append(
                ("launch", tuple(a.dtype if isinstance(a, torch.Tensor) else a for a in args), kwargs))

    monkeypatch.setattr(inputs, "_draw_kernel", Kernel())
    startup = warmup.Startup("cuda")
    warmup._compile_draws(startup)
    assert startup.loaded.is_set() and "compiled" in startup.times
    for kind in (inputs._NORMAL, inputs._BITS):  # what _warm draws: seed 0, draw 0, 1024 values
        inputs.draw_into(torch.empty(1024, dtype=torch.int64), 0, 0, kind)
    warmups = [c[1:] for c in calls if c[0] == "warmup"]
    launches = [c[1:] for c in calls if c[0] == "launch"]
    assert len(warmups) == 2 and warmups == launches


def test_a_worker_that_never_said_its_kernels_were_loaded_still_gets_its_first_test(monkeypatch):
    monkeypatch.setattr(warmup, "_warm", lambda device, loaded, times: loaded.wait())
    warmup.start("cuda")
    assert warmup.wait()["waited_s"] < 5  # wait() gives the go-ahead itself: no hang


def test_on_an_nvidia_worker_the_drivers_context_comes_before_torchs(monkeypatch):
    """start(driver=True): the CUDA driver's primary context (which torch's runtime then takes as its own) is made
    first, in the thread, before anything of torch's; here no CUDA driver: it says so, and the start-up goes on."""
    steps = []
    monkeypatch.setattr(warmup, "_primary_context", lambda: steps.append("driver") or True)
    monkeypatch.setattr(warmup, "_warm", lambda device, loaded, times: steps.append("torch"))
    warmup.start("cuda", driver=True)
    warmup.wait()
    assert steps == ["driver", "torch"]
    monkeypatch.undo()
    assert warmup._primary_context("libcuda-not-here.so.1") is False
