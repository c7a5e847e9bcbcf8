"""Races the interpreter cannot show (suite/checks/memcheck.py, Races): within one program, an element one lane stores
and another lane loads or stores, with no tl.debug_barrier() between, fails as the memory check fails an
out-of-bounds access, naming the load, the store and their lines. Suite runs use tests/fixtures/races.py."""

from __future__ import annotations

import inspect
import os
from pathlib import Path

import pytest
import torch
import triton
import triton.language as tl

from suite.checks import memcheck
from tests.fixtures import race_tries

pytestmark = pytest.mark.skipif(os.environ.get("TRITON_INTERPRET") != "1", reason="interpreter only")

FIXTURE = "--kernel-module=tests/fixtures/races.py"


@triton.jit
def _shift(x_ptr, BLOCK: tl.constexpr, WHICH: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    if WHICH == 0:  # store, then another lane loads it: a race
        tl.store(x_ptr + offs, offs.to(tl.float32))
        y = tl.load(x_ptr + (offs + 1) % BLOCK)
        tl.store(x_ptr + BLOCK + offs, y)
    elif WHICH == 1:  # the same with a barrier between: ordered
        tl.store(x_ptr + offs, offs.to(tl.float32))
        tl.debug_barrier()
        y = tl.load(x_ptr + (offs + 1) % BLOCK)
        tl.store(x_ptr + BLOCK + offs, y)
    elif WHICH == 2:  # two stores of one element by two lanes: a race (which value stays?)
        tl.store(x_ptr + offs, offs.to(tl.float32))
        tl.store(x_ptr + (BLOCK - 1 - offs), offs.to(tl.float32))
    elif WHICH == 3:  # each lane its own element, loaded and stored twice: no race
        x = tl.load(x_ptr + offs)
        tl.store(x_ptr + offs, x + 1.0)
        x = tl.load(x_ptr + offs)
        tl.store(x_ptr + offs, x * 2.0)
    elif WHICH == 4:  # atomics are not races
        tl.atomic_add(x_ptr + offs * 0, 1.0)
        tl.atomic_add(x_ptr + offs * 0, 1.0)
    elif WHICH == 6:  # every lane loads x[1] (a scalar), lane 1 stores it: a race
        s = tl.load(x_ptr + 1)
        tl.store(x_ptr + offs, s + offs.to(tl.float32))
    elif WHICH == 7:  # the same with a block-wide reduction between, which orders them on a GPU (bar.sync)
        s = tl.load(x_ptr + 1)
        t = tl.sum(tl.load(x_ptr + BLOCK + offs), axis=0)
        tl.store(x_ptr + offs, s + t + offs.to(tl.float32))
    else:  # each program stores its own element and loads the next program's: not within one program
        pid = tl.program_id(0)
        tl.store(x_ptr + pid, 1.0)
        y = tl.load(x_ptr + (pid + 1) % 4)
        tl.store(x_ptr + 8 + pid, y)


@pytest.fixture
def checker():
    checker = memcheck.install()
    races, checker.races = checker.races, memcheck.Races()  # on, whatever SUITE_RACE_CHECK this process has
    try:
        yield checker
    finally:
        checker.races = races


def _line(text: str) -> int:
    lines, start = inspect.getsourcelines(_shift.fn)
    return start + next(i for i, line in enumerate(lines) if text in line)


def _fixture_line(function: str, text: str) -> int:
    """The line of tests/fixtures/races.py holding ``text``, the first after ``def function(``."""
    lines = (Path(__file__).parent.parent / "fixtures" / "races.py").read_text().splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(f"def {function}("))
    return 1 + next(i for i in range(start, len(lines)) if text in lines[i])


def _launch(which: int, grid: int = 1) -> BaseException | None:
    x = torch.zeros(16)
    try:
        _shift[(grid,)](x, BLOCK=8, WHICH=which)
    except Exception as exc:  # noqa: BLE001 - the interpreter wraps what the hooks raise
        return memcheck.violation_in(exc)
    return None


def test_a_load_of_an_element_another_lane_stored_is_a_race_naming_both_lines(checker):
    race = _launch(0)
    assert isinstance(race, memcheck.DataRace), race
    text = str(race)
    assert text.startswith("data race in kernel _shift in program (0, 0, 0): argument 'x_ptr' (shape (16,), 4-byte "
                           "elements) at element (1,): lane (1,) of block (8,) stores it at line "
                           f"{_line('tl.store(x_ptr + offs, offs.to(tl.float32))')} of _shift "
                           f"(tests/checks/test_races.py:{_line('tl.store(x_ptr + offs, offs.to(tl.float32))')}), and lane "
                           f"(0,) of block (8,) loads it at line {_line('y = tl.load(x_ptr + (offs + 1) % BLOCK)')}"), text
    assert "with no tl.debug_barrier() between; 8 element(s) so" in text


def test_a_barrier_between_orders_them(checker):
    assert _launch(1) is None


def test_two_lanes_storing_one_element_race(checker):
    race = _launch(2)
    assert isinstance(race, memcheck.DataRace) and "stores it at line" in str(race), race


def test_a_reduction_between_orders_them_as_a_barrier_does(checker):
    """Liger's cross_entropy loads X[y] as a scalar and, after the block-wide max and sum, stores the gradient over X:
    ordered on a GPU by the reductions' barriers."""
    race = _launch(6)
    assert isinstance(race, memcheck.DataRace) and "every lane (a one-element load: every thread of the program makes " \
        "it) loads it" in str(race), race
    assert _launch(7) is None


def test_lanes_on_their_own_elements_atomics_and_other_programs_do_not_race(checker):
    assert _launch(3) is None
    assert _launch(4) is None
    assert _launch(8, grid=4) is None


def test_the_rotate_half_in_place_fixture_fails_naming_the_race_and_the_others_pass(run_suite):
    """Before this check the reduced in-place rotary embedding passed on the interpreter (it runs the block as one),
    while FlagGems' in-place rope was wrong in 6 of 22 runs of a case on an H100."""
    run = run_suite("suite/test_kernels.py", FIXTURE, "--kernels=rotate_half_inplace,rotate_half_barrier,scale_inplace",
                    env={"SUITE_INTERMITTENT_RUNS": "2", "SUITE_SHRINK_SECONDS": "3"})
    assert run.returncode == 1, run.output[-3000:]
    data = run.run_data()
    outcomes = {t["nodeid"].rsplit("[", 1)[1].split("-")[0]: t["outcome"] for t in data["tests"]}
    assert outcomes == {"rotate_half_inplace": "failed", "rotate_half_barrier": "passed", "scale_inplace": "passed"}
    [case] = [c for c in data["cases"] if c["outcome"] == "failed"]
    assert case["failure"] == "memory", case
    assert case["message"].startswith("data race in kernel rotate_half_kernel in program (0, 0, 0): argument 'x_ptr'")
    load, store = _fixture_line("rotate_half_kernel", "partner, mask=mask)"), _fixture_line("rotate_half_kernel",
                                                                                           "tl.store(")
    assert f"loads it at line {load} of rotate_half_kernel (tests/fixtures/races.py:{load})" in case["message"]
    assert f"stores it at line {store} of rotate_half_kernel (tests/fixtures/races.py:{store})" in case["message"]


def test_a_bad_race_check_setting_is_a_usage_error(run_suite):
    run = run_suite("suite/test_kernels.py", "--kernels=vector_add", "-k", "fp32", env={"SUITE_RACE_CHECK": "yes"})
    assert run.returncode == 4, run.output[-2000:]
    assert "SUITE_RACE_CHECK='yes': must be 1" in run.output


# Issue 61, item 8: races the check missed, each with a right twin that must still pass.
MISSED = {  # kernel: (its jitted function, what the message must say)
    "sub_first_inplace": ("sub_first_kernel", "every lane (a one-element load: every thread of the program makes it)"),
    "pair_pick_last": ("pair_pick_kernel", "both store it, different values, in one store"),
    "rotate_half_unused_sum": ("rotate_half_sum_kernel", "loads it at line"),
    "pair_sum_atomic": ("pair_sum_atomic_kernel", "updates it atomically (atomic_fadd) at line"),
}
RIGHT_TWINS = ("sub_first_barrier", "pair_pick_same", "rotate_half_used_sum", "pair_sum_atomic_barrier")


def test_a_scalar_load_a_colliding_scatter_an_unused_sum_and_an_atomic_beside_a_store_race(run_suite):
    """Before, all eight passed: a scalar load was taken as lane 0's alone (on a GPU every thread loads it), one store's
    lanes were never compared with each other, any reduction was taken as a barrier (the compiler deletes one whose
    result is unused), and atomics were not looked at. Two lanes storing one value, a used sum and a barrier are
    still not races."""
    run = run_suite("suite/test_kernels.py", FIXTURE, f"--kernels={','.join([*MISSED, *RIGHT_TWINS])}",
                    env={"SUITE_INTERMITTENT_RUNS": "2", "SUITE_SHRINK_SECONDS": "3"})
    assert run.returncode == 1, run.output[-3000:]
    data = run.run_data()
    outcomes = {t["nodeid"].rsplit("[", 1)[1].split("-")[0]: t["outcome"] for t in data["tests"]}
    assert outcomes == {**dict.fromkeys(MISSED, "failed"), **dict.fromkeys(RIGHT_TWINS, "passed")}, outcomes
    failed = {c["kernel"]: c for c in data["cases"] if c["outcome"] == "failed"}
    for kernel, (function, said) in MISSED.items():
        case = failed[kernel]
        assert case["failure"] == "memory", case
        assert case["message"].startswith(f"data race in kernel {function} in program ("), case["message"]
        assert said in case["message"], case["message"]


def _try(kernel, which: int, aliased: bool) -> BaseException | None:
    x = torch.zeros(64)
    y = x if aliased else torch.zeros(64)
    try:
        kernel[(1,)](x, y, 5, BLOCK=8, W=which, DEBUG=False)
    except Exception as exc:  # noqa: BLE001 - the interpreter wraps what the hooks raise
        return memcheck.violation_in(exc) or exc
    return None


@pytest.mark.parametrize("which", race_tries.RACY)
def test_each_way_tried_to_hide_a_race_is_found(checker, which):
    """tests/fixtures/race_tries.py, ``racy``: a block of one, aliasing arguments, signed zeros, tail-only collisions,
    reductions the compiler deletes or hoists (unused in eight ways, loop-invariant), atomics beside plain accesses
    and atomics of two kinds."""
    found = _try(race_tries.racy, which, which in race_tries.ALIASED)
    assert isinstance(found, memcheck.DataRace), found


@pytest.mark.parametrize("which", race_tries.ORDERED)
def test_each_right_kernel_that_looks_alike_passes(checker, which):
    """``ordered``: one-thread scalar stores, one value stored by many lanes, reductions the compiler keeps (used,
    feeding a branch or a loop bound, a helper's, inside an ``if`` in a loop), barriers, disjoint views, an atomic
    then the same lane's load."""
    x = torch.zeros(64)
    y = x[16:] if which == 7 else torch.zeros(64)
    try:
        race_tries.ordered[(1,)](x, y, 5, BLOCK=8, W=which, DEBUG=False)
    except Exception as exc:  # noqa: BLE001 - the interpreter wraps what the hooks raise
        pytest.fail(str(memcheck.violation_in(exc) or exc))
