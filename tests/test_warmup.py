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

    def slow(device: str) -> None:
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
    monkeypatch.setattr(warmup, "_warm", calls.append)
    warmup.start("cpu")
    warmup.wait()
    assert calls == []
    monkeypatch.undo()
    warmup.start("cuda:0")  # no GPU here: torch raises inside the thread, and wait() returns
    warmup.wait()


def test_the_start_ups_objects_are_frozen_once_it_is_done(monkeypatch):
    """After the start-up, a full collection (one after every GPU test) walks none of what the start-up made."""
    monkeypatch.setattr(warmup, "_warm", lambda device: None)
    gc.unfreeze()
    made = [[i] for i in range(1000)]  # objects the start-up made, which live on
    warmup.start("cuda")
    warmup.wait()
    assert gc.get_freeze_count() >= len(made)
    assert not any(gc.is_tracked(m) and any(m is o for o in gc.get_objects()) for m in made[:3])
