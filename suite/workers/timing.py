"""Where a run's wall time goes: each test's time split into phases, and whether Triton's cache started cold.

A worker keeps one :class:`Clock`. The harness wraps its work in ``phase(...)``: drawing inputs, launching, the
float64 reference, comparing, a property's own checks, the compile matrix; Triton's own hooks add the time spent
compiling a kernel (taken out of the launch that triggered it). Each test's phases travel to the controller with the test report
(``TIMING_PROPERTY``); the run file keeps them per test and summed, with how many kernels Triton compiled and how
many it found in its cache. What no phase holds is "other": Hypothesis drawing and shrinking, pytest, the harness's
own bookkeeping. Waiting at a shared GPU's gate (``suite/workers/gpu_share.py``: for the cases running on it to end
before an out-of-memory case runs alone, or behind such a case) is a phase of its own, ``gpu_wait``, so that a run
whose workers idle behind one another says so instead of adding it to "other".
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from suite.session import stash

TIMING_PROPERTY = "suite_timing"
PHASES = ("inputs", "compile", "launch", "reference", "check", "property", "compile_matrix", "gpu_wait")
LABELS = {"gpu_wait": "waiting at a shared GPU's gate"}  # a phase's name in the summary, where not its own


class Clock:
    """Exclusive time per phase: a phase entered inside another pauses the outer one."""

    def __init__(self) -> None:
        self.totals: dict[str, float] = dict.fromkeys(PHASES, 0.0)
        self.compiled = 0  # kernels Triton compiled from source (its cache missed)
        self.cached = 0  # kernels Triton loaded from its on-disk cache
        self._stack: list[list[Any]] = []  # [phase, started]

    def enter(self, name: str) -> int:
        now = time.perf_counter()
        if self._stack:
            outer = self._stack[-1]
            self.totals[outer[0]] += now - outer[1]
        self._stack.append([name, now])
        return len(self._stack) - 1

    def leave(self, depth: int) -> None:
        """Close the phase opened at ``depth`` and any left open above it (a compile that raised)."""
        now = time.perf_counter()
        while len(self._stack) > depth:
            name, started = self._stack.pop()
            self.totals[name] += now - started
        if self._stack:
            self._stack[-1][1] = now

    def take(self, duration: float | None = None) -> dict[str, Any]:
        """This test's record, and a fresh start for the next test."""
        record: dict[str, Any] = {f"{k}_s": round(v, 4) for k, v in self.totals.items() if v > 0}
        if self.compiled or self.cached:
            record["triton_compiled"], record["triton_cached"] = self.compiled, self.cached
        self.totals = dict.fromkeys(PHASES, 0.0)
        self.compiled = self.cached = 0
        return record


def clock() -> Clock:
    """This process's clock (kept in the session's state, suite/session/stash.py)."""
    state = stash.session()
    if state.clock is None:
        state.clock = Clock()
    return state.clock


@contextmanager
def phase(name: str) -> Iterator[None]:
    depth = clock().enter(name)
    try:
        yield
    finally:
        clock().leave(depth)


# Called with True when a JIT compile begins in this process and False when it ends (suite/workers/gpu_share.py: a
# case gives its GPU's shared lock back while it compiles).
COMPILE_LISTENERS: list[Any] = []


def _before_compile(**_: Any) -> bool:
    stash.session().compile_depth.append(clock().enter("compile"))
    for listener in COMPILE_LISTENERS:
        listener(True)
    return False  # a true value would tell Triton to skip the compile


def _after_compile(**_: Any) -> None:
    depths = stash.session().compile_depth
    if depths:
        clock().leave(depths.pop())
    for listener in COMPILE_LISTENERS:
        listener(False)


def _listener(chained: Any):
    def listen(*, cache_hit: bool, **kwargs: Any) -> None:
        if cache_hit:
            clock().cached += 1
        else:
            clock().compiled += 1
        if chained is not None:
            chained(cache_hit=cache_hit, **kwargs)
    listen.suite_timing = True
    return listen


def install() -> None:
    """Time Triton's JIT compiles in this process (keeping any hooks a user set: they still run)."""
    try:
        from triton import knobs
    except ImportError:  # an older Triton: compile time stays inside the launch phase
        return
    from suite import compat

    compat.require("timing-knobs-hooks")  # hooks Triton moved: a usage error naming the patch, not an untimed run
    if getattr(knobs.compilation.listener, "suite_timing", False):
        return
    knobs.compilation.listener = _listener(knobs.compilation.listener)
    before, after = knobs.runtime.jit_cache_hook, knobs.runtime.jit_post_compile_hook

    def cache_hook(**kw: Any) -> bool:
        _before_compile()
        return bool(before(**kw)) if before is not None else False

    def post_hook(**kw: Any) -> None:
        _after_compile()
        if after is not None:
            after(**kw)

    knobs.runtime.jit_cache_hook, knobs.runtime.jit_post_compile_hook = cache_hook, post_hook


def summed(tests: list[dict[str, Any]]) -> dict[str, Any]:
    """The run's breakdown: each phase summed over its tests, "other" the rest of the tests' time."""
    out: dict[str, Any] = dict.fromkeys((f"{p}_s" for p in PHASES), 0.0)
    out.update(tests_s=0.0, other_s=0.0, triton_compiled=0, triton_cached=0)
    for t in tests:
        timing = t.get("timing") or {}
        out["tests_s"] += t.get("duration_s", 0.0)
        for key, value in timing.items():
            out[key] = out.get(key, 0) + value
    phases = sum(out[f"{p}_s"] for p in PHASES)
    out["other_s"] = max(0.0, out["tests_s"] - phases)
    out = {k: round(v, 3) if isinstance(v, float) else v for k, v in out.items()}
    compiles = out["triton_compiled"] + out["triton_cached"]
    # Cold: most of the kernels this run needed were compiled from source, not found in Triton's cache.
    out["triton_cache"] = "none" if compiles == 0 else ("cold" if out["triton_compiled"] > compiles / 2 else "warm")
    return out


def _spread(values: list[float]) -> dict[str, float]:
    values = sorted(values)
    return {"first": round(values[0], 3), "median": round(values[len(values) // 2], 3), "last": round(values[-1], 3)}


def startup_times(reported: dict[str, dict[str, float]], t0: float) -> dict[str, Any] | None:
    """The workers' GPU start-ups (suite/workers/warmup.py: what each worker's first test reported, in seconds since
    the epoch) as the timeline gives them: when they began, had their CUDA context, had compiled the input generator's
    kernels and ended, in seconds from the session's start (first, median and last worker), and how long the workers'
    first tests waited for them, summed."""
    if not reported:
        return None
    out: dict[str, Any] = {}
    for key, name in (("began", "began_s"), ("context", "context_s"), ("compiled", "compiled_s"),
                      ("ended", "ended_s")):
        values = [r[key] - t0 for r in reported.values() if isinstance(r.get(key), (int, float))]
        if values:
            out[name] = _spread(values)
    out["first_test_waited_s"] = round(sum(r.get("waited_s", 0.0) for r in reported.values()), 3)
    return out


def timeline(tests: list[dict[str, Any]], ready: dict[str, float], session_s: float,
             startup: dict[str, Any] | None = None) -> dict[str, Any] | None:
    """Where the session's wall time went, worker by worker (seconds from the session's start): when the workers
    were ready (their collection reached the controller; with no xdist, the first test's start), how much of the
    time from then to the session's end they spent in tests, and when the first test began and the last ended;
    ``startup``, the workers' GPU start-ups (``startup_times``)."""
    placed = [t for t in tests if "began_s" in t and "ended_s" in t]
    if not placed:
        return None
    per: dict[str, list[dict[str, Any]]] = {}
    for t in placed:
        per.setdefault(t.get("worker") or "main", []).append(t)
    ready_at = {w: ready.get(w, min(t["began_s"] for t in ts)) for w, ts in per.items()}
    ready_at.update({w: at for w, at in ready.items() if w not in ready_at})  # workers that ran no test
    busy = sum(t["ended_s"] - t["began_s"] for t in placed)
    available = sum(max(0.0, session_s - at) for at in ready_at.values())
    out = {"count": len(ready_at), "session_s": round(session_s, 3), "ready_s": _spread(list(ready_at.values())),
           "first_test_s": round(min(t["began_s"] for t in placed), 3),
           "last_test_ended_s": round(max(t["ended_s"] for t in placed), 3),
           "busy": round(busy / available, 4) if available > 0 else 0.0}
    if startup:
        out["startup"] = startup
    return out


def timeline_line(workers: dict[str, Any] | None) -> str:
    """One line for the terminal summary: when the workers started working, and how busy they were after."""
    if not workers:
        return ""
    r = workers["ready_s"]
    gpu = ""
    if (ended := (workers.get("startup") or {}).get("ended_s")) is not None:
        gpu = f", their GPU start-up done {ended['first']:.1f}-{ended['last']:.1f} s"
    return (f"timeline: {workers['count']} worker(s) ready {r['first']:.1f}-{r['last']:.1f} s into the session "
            f"(median {r['median']:.1f} s){gpu}, in tests {100 * workers['busy']:.0f}% of the time from then "
            f"on; first test began at {workers['first_test_s']:.1f} s, the last ended at {workers['last_test_ended_s']:.1f} s "
            f"of {workers['session_s']:.1f} s")


def breakdown_line(total: dict[str, Any]) -> str:
    """One line for the terminal summary: where the tests' time went."""
    if not total or not total.get("tests_s"):
        return ""
    parts = [f"{LABELS.get(p, p.replace('_', ' '))} {total[f'{p}_s']:.1f} s" for p in PHASES
             if total.get(f"{p}_s", 0) >= 0.05]  # a phase that shows as 0.0 s says nothing
    parts.append(f"other (Hypothesis, pytest, harness) {total['other_s']:.1f} s")
    cache = {"cold": "Triton cache started cold", "warm": "Triton cache warm", "none": ""}[total["triton_cache"]]
    compiles = (f" ({total['triton_compiled']} kernels compiled, {total['triton_cached']} from the cache; {cache})"
                if total["triton_cache"] != "none" else "")
    return f"time in tests: {total['tests_s']:.1f} s summed over workers: " + ", ".join(parts) + compiles
