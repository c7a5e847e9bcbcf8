"""A worker's GPU start-up in a thread (suite/workers/warmup.py): the first test waits for it; its errors are left to the
test that meets them."""

from __future__ import annotations

import threading
import time

from suite.workers import warmup


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
