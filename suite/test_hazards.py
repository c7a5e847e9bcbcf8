"""Cross-vendor hazards that no kernel x dtype case reaches by itself (see docs/hazards.md for the list, and for
the hazards reached elsewhere: fp8 codes by the fp8_codes kernel, NaN through tl.dot by matmul's special values,
masked-lane `other` and config-dependent miscompiles by config-differential runs, determinism by the property
tests, ties by row_argmax).

Grids: a 1-D grid of more than 65535 programs faulted on AMD, and grid y/z are limited to 65535 on both vendors.
A launch past a limit must either run right or be refused with an error: a silently wrong (or partly unwritten)
result is the hazard. GPU only: the interpreter loops over programs in Python and has no grid limits.
"""

from __future__ import annotations

import pytest
import torch

from suite.checks.harness import poison, unwritten
from suite.plugin.context import BACKEND
from suite.session import results

FINDINGS = "suite_finding_records"
PROGRAMS = 65537  # one past 65535, and one more


def _finding(request: pytest.FixtureRequest, kernel: str, name: str, holds: bool, message: str) -> None:
    backend = request.config.stash[BACKEND]
    request.node.user_properties.append((FINDINGS, [{
        "kernel": kernel, "dtype": "fp32", "backend": backend.name, "arch": backend.arch, "property": name,
        "claimed": True, "holds": holds, "cases_checked": 1, "message": message[:2000],
        "repro": f"pytest '{request.node.nodeid}' --backend={backend.name}"}]))


@pytest.fixture
def gpu(request: pytest.FixtureRequest):
    backend = request.config.stash[BACKEND]
    if backend.device == "cpu":
        pytest.skip("grid limits are a GPU's: the interpreter runs any grid, one program after another")
    return backend


@pytest.mark.kernels()  # probe kernels of its own
def test_a_grid_past_65535_programs_on_axis_0_runs_every_program(gpu, request: pytest.FixtureRequest) -> None:
    from kernels.vector_add import vector_add

    block = 32
    n = PROGRAMS * block - 5  # the last program is masked too
    gen = torch.Generator(device="cuda").manual_seed(0)
    x = torch.randn(n, device="cuda", generator=gen)
    y = torch.randn(n, device="cuda", generator=gen)
    out = torch.empty_like(x)
    poison({"out": out})
    vector_add(x, y, out, {"BLOCK_SIZE": block, "num_warps": 1})
    torch.cuda.synchronize()
    missing = int(unwritten(out).sum())
    wrong = int((out != x + y).sum()) - missing
    message = f"{PROGRAMS} programs on axis 0: {missing} elements never written, {wrong} wrong"
    _finding(request, "vector_add", "grid_axis0_past_65535", missing == wrong == 0, message)
    assert missing == wrong == 0, message


@pytest.mark.kernels()  # probe kernels of its own
def test_a_grid_past_65535_on_axis_1_is_refused_or_right(gpu, request: pytest.FixtureRequest) -> None:
    from kernels.gelu import gelu

    block_n = 16
    x = torch.randn(1, PROGRAMS * block_n, device="cuda", generator=torch.Generator(device="cuda").manual_seed(1))
    out = torch.empty_like(x)
    poison({"out": out})
    try:
        gelu(x, out, {"BLOCK_M": 1, "BLOCK_N": block_n, "num_warps": 1})
        torch.cuda.synchronize()
    except Exception as exc:  # noqa: BLE001 - a refused launch is the right answer to an impossible grid
        torch.cuda.synchronize()  # a launch-configuration error leaves the context usable
        message = f"grid (1, {PROGRAMS}) refused at launch: {type(exc).__name__}: {exc}"
        _finding(request, "gelu", "grid_axis1_past_65535", True, message)
        request.node.user_properties.append((results.CASES_PROPERTY, []))
        return
    missing = int(unwritten(out).sum())
    reference = torch.nn.functional.gelu(x.double(), approximate="tanh")
    far = int(((out.double() - reference).abs() > 1e-5 * (1 + reference.abs())).sum()) - missing
    message = f"grid (1, {PROGRAMS}) launched: {missing} elements never written, {far} wrong"
    _finding(request, "gelu", "grid_axis1_past_65535", missing == far == 0, message)
    assert missing == far == 0, f"{message}: a launch past the grid's y limit must be refused, not run partly"


# Sizes around the draw kernel's block (1024): one element, a block less one and plus one, several blocks and a
# partial one; and a guard region wider than a block on either side, so that an unmasked store shows.
DRAW_CASES = ((0, 1, 1), (12345, 2, 1023), (7, 4, 1025), (2**31 - 1, 7, 5000), (2**63 - 1, 3, 3 * 1024 + 1))
DRAW_GUARD = 2048
_SENTINEL = 0x5A5A5A5A5A5A5A5A  # not a draw the kernel makes (a normal draw is below 2**34; bits: 1 in 2**63)


def draw_problems(device: str, kind: int, draw_into=None) -> list[str]:
    """Where the Triton draw (``inputs.draw_into``, the launch a GPU run makes, or ``draw_into``) differs from the
    CPU's numpy draw, for sizes that are not multiples of the block, and any element it wrote outside its output
    (guard regions of sentinels on both sides)."""
    import numpy as np

    from kernels import inputs

    draw_into = draw_into or inputs.draw_into
    bad = []
    for seed, draw, n in DRAW_CASES:
        buf = torch.full((n + 2 * DRAW_GUARD,), _SENTINEL, dtype=torch.int64, device=device)
        draw_into(buf[DRAW_GUARD:DRAW_GUARD + n], seed, draw, kind)
        got = buf.cpu().numpy()
        where = f"seed={seed} draw={draw} n={n}"
        for side, region in (("before", got[:DRAW_GUARD]), ("past the end of", got[DRAW_GUARD + n:])):
            if (touched := int((region != _SENTINEL).sum())):
                bad.append(f"{where}: {touched} elements written {side} the output on {device}")
        got = got[DRAW_GUARD:DRAW_GUARD + n]
        expected = inputs.draw_numpy(seed, draw, kind, n)
        if not np.array_equal(got, expected):
            first = int(np.flatnonzero(got != expected)[0])
            unwritten = int((got == _SENTINEL).sum())
            bad.append(f"{where}: element {first} is {got[first]} on {device}, {expected[first]} on the CPU"
                       + (f" ({unwritten} elements never written)" if unwritten else ""))
    return bad


@pytest.mark.kernels()  # the suite's own input generator
@pytest.mark.parametrize("kind", ["normal", "bits"])
def test_inputs_are_the_same_on_every_device(kind: str, request: pytest.FixtureRequest) -> None:
    """Cases' inputs are drawn on the device they run on (kernels/inputs.py): the Triton kernel that draws them
    there, launched as a run launches it, must give the CPU's numbers bit for bit, every element of them and
    nothing past them, or one case would test different inputs on each vendor, and a reproduction line would not
    reproduce on another backend. On the interpreter, the interpreted kernel (tests/kernels/test_inputs.py plants a launch
    one program short and a store without its mask, and watches this check fail)."""
    from kernels import inputs

    backend = request.config.stash[BACKEND]
    bad = draw_problems(backend.device, {"normal": inputs._NORMAL, "bits": inputs._BITS}[kind])
    _finding(request, "inputs", f"inputs_same_on_every_device_{kind}", not bad, "; ".join(bad) or "equal")
    assert not bad, "\n".join(bad)
