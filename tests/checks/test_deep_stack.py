"""Launches run from a frame that starts its own chunk of CPython's frame stack (suite/checks/deep_stack.py): where
the interpreter's call depth crosses a chunk boundary, CPython 3.11+ would map and unmap a chunk on every call.

Measured with the process's minor page faults: every freshly mapped chunk faults when its first frame is written.
"""

from __future__ import annotations

import dataclasses
import resource
import sys

import pytest

from kernels import registry
from suite.checks import deep_stack, harness

CALLS = 2000
DEPTHS = range(0, 200)  # frames of _at_depth: more than one 16 KiB chunk's worth, so a boundary is crossed


def _faults() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt


def _at_depth(depth: int, fn, *args):
    if depth:
        return _at_depth(depth - 1, fn, *args)
    return fn(*args)


def _leaf() -> None:
    # Locals enough that its frame is larger than one _at_depth frame: some depth puts the boundary between the
    # loop below and this frame.
    a0 = a1 = a2 = a3 = a4 = a5 = a6 = a7 = a8 = a9 = b0 = b1 = b2 = b3 = b4 = b5 = b6 = b7 = b8 = b9 = 0
    return a0 + a1 + a2 + a3 + a4 + a5 + a6 + a7 + a8 + a9 + b0 + b1 + b2 + b3 + b4 + b5 + b6 + b7 + b8 + b9


def _calls() -> None:
    for _ in range(CALLS):
        _leaf()


def _worst_faults(call) -> int:
    """The most page faults of CALLS calls made at any depth of DEPTHS, each depth's frames under ``call``."""
    worst = 0
    for depth in DEPTHS:
        before = _faults()
        call(_at_depth, depth, _calls)
        worst = max(worst, _faults() - before)
    return worst


def _plain(fn, *args):
    return fn(*args)


def test_calls_under_it_stay_in_one_chunk_at_every_depth(monkeypatch):
    monkeypatch.setenv("TRITON_INTERPRET", "1")  # the interpreter's fix (a GPU host's tests run with it unset)
    if sys.version_info >= (3, 11):  # the measurement sees the thrashing where it happens: a plain call
        assert _worst_faults(_plain) >= CALLS, "no depth crossed a chunk boundary: the check below checks nothing"
    assert _worst_faults(deep_stack.call) < CALLS // 20


def test_the_harness_launches_through_it(monkeypatch):
    """Both ways the harness runs a spec (the reference test's launch, benchmarks' run_spec) call ``run`` from it."""
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    callers = []

    def run(inputs, outputs, config):
        callers.append(sys._getframe(1).f_code)

    spec = dataclasses.replace(registry.get("vector_add"), run=run)
    harness.launch(spec, {}, {}, {})
    harness.run_spec(spec, {}, {}, {})
    assert callers == [deep_stack._DEEP_CALL.__code__] * 2, [c.co_name for c in callers]


@pytest.mark.parametrize("args, kwargs", [((1, 2), {}), ((), {"a": 1, "b": 2})])
def test_it_passes_arguments_and_the_result_through(args, kwargs):
    assert deep_stack.call(lambda *a, **k: (a, k), *args, **kwargs) == (args, kwargs)


def test_off_the_interpreter_a_launch_is_called_as_it_is(monkeypatch):
    """The deep frame is the interpreter's fix: a GPU launch (a benchmark times thousands) gets no fresh chunk."""
    def caller() -> str:
        return sys._getframe(1).f_code.co_name

    monkeypatch.setenv("TRITON_INTERPRET", "1")
    assert deep_stack.call(caller) == "deep_call"
    monkeypatch.delenv("TRITON_INTERPRET")
    assert deep_stack.call(caller) == "call"
