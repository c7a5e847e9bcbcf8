"""The suite's input generator (kernels/inputs.py): counter-based draws, the same numbers on every device."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest
import torch

from kernels import inputs
from kernels.spec import Case

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _kernel_draw(seed: int, draw: int, kind: int, n: int) -> np.ndarray:
    """What the Triton kernel writes (interpreted here: this process runs under TRITON_INTERPRET)."""
    out = torch.empty(n, dtype=torch.int64)
    inputs._draw_kernel[(-(-n // 256),)](out, n, seed, draw, inputs._DOMAIN, KIND=kind, BLOCK=256)
    return out.numpy()


@pytest.mark.parametrize("kind", [inputs._NORMAL, inputs._BITS])
def test_the_kernel_and_the_cpu_draw_alike(kind: int) -> None:
    for seed, draw, n in ((0, 1, 1), (7, 2, 300), (2**31 - 1, 9, 1000), (2**63 - 1, 4, 513), (2**64 - 1, 3, 700)):
        assert np.array_equal(_kernel_draw(seed, draw, kind, n), inputs.draw_numpy(seed, draw, kind, n)), (seed, n)


def test_a_wrong_cpu_philox_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    """The comparison above can fail: a CPU draw with one Philox round too few differs from the kernel's."""
    real = inputs.philox_numpy
    monkeypatch.setattr(inputs, "philox_numpy", lambda seed, *c, rounds=10: real(seed, *c, rounds=rounds - 1))
    assert not np.array_equal(_kernel_draw(5, 1, inputs._NORMAL, 100), inputs.draw_numpy(5, 1, inputs._NORMAL, 100))


def test_draws_depend_on_seed_and_draw_number_only() -> None:
    case = Case("k", "fp32", {"N": 4}, seed=11)
    a, b = inputs.generator(case), inputs.generator(case)
    first = a.normal((50,))
    assert torch.equal(first, b.normal((50,)))
    assert not torch.equal(a.normal((50,)), first)  # each draw of a stream is new
    other = inputs.generator(Case("k", "fp32", {"N": 4}, seed=12)).normal((50,))
    assert not torch.equal(other, inputs.generator(case).normal((50,)))
    # A prefix of a larger draw is the smaller draw: element j depends on (seed, draw, j) alone.
    assert torch.equal(inputs.generator(case).normal((1000,))[:50], inputs.generator(case).normal((50,)))


def test_distributions() -> None:
    gen = inputs.generator(Case("k", "fp32", {"N": 4}, seed=3))
    x = gen.normal((200_000,))
    assert abs(float(x.mean())) < 0.01 and abs(float(x.std()) - 1.0) < 0.01
    assert float(x.abs().max()) <= 2 * 3**0.5
    u = gen.uniform((200_000,))
    assert float(u.min()) >= 0.0 and float(u.max()) < 1.0 and abs(float(u.mean()) - 0.5) < 0.01
    i = gen.integers(-3, 4, (70_000,))
    counts = torch.bincount(i + 3)
    assert counts.numel() == 7 and int(counts.min()) > 9_000


@pytest.mark.parametrize("n", [1, 5, 16, 1000])
def test_special_values_hold_at_least_one_of_each_kind_there_is_room_for(n: int) -> None:
    for seed in range(20):
        case = Case("k", "fp32", {"N": n}, values="special", seed=seed)
        x = inputs.values((n,), case, inputs.generator(case))
        specials = int((~torch.isfinite(x)).sum())
        assert specials >= 1
        if n >= 1000:
            assert 20 < specials < 120 and bool(torch.isnan(x).any()) and bool(torch.isinf(x).any())


def test_torch_generator_calls_keep_working() -> None:
    """A spec that calls torch's random functions with the case's generator gets torch's CPU numbers, as before."""
    case = Case("k", "fp32", {"N": 4}, seed=21)
    expected = torch.randn(8, generator=torch.Generator().manual_seed(21), dtype=torch.float64)
    assert torch.equal(torch.randn(8, generator=inputs.generator(case), dtype=torch.float64), expected)


_COMPILE = """
import json, sys
import triton
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource
from kernels import inputs
sig = {"out_ptr": "*i64", "n": "i64", "seed": "i64", "draw": "i64", "domain": "i64", "KIND": "constexpr",
       "BLOCK": "constexpr"}
done = []
for backend, arch, warp in json.loads(sys.argv[1]):
    for kind in (0, 1):
        src = ASTSource(fn=inputs._draw_kernel, signature=sig, constexprs={"KIND": kind, "BLOCK": 1024})
        target = GPUTarget(backend, int(arch[3:]) if backend == "cuda" else arch, warp)
        triton.compile(src, target=target, options={"num_warps": 4})
        done.append(f"{arch}/{kind}")
print(" ".join(done))
"""


def test_the_draw_kernel_compiles_for_every_target() -> None:
    """Every GPU run draws its inputs with this kernel: it must build for each vendor's targets (no GPU needed)."""
    import hardware_profiles

    targets = hardware_profiles.targets()
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    proc = subprocess.run([sys.executable, "-c", _COMPILE, json.dumps(targets)], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert len(proc.stdout.split()) == 2 * len(targets), proc.stdout


@pytest.mark.parametrize("kind", [inputs._NORMAL, inputs._BITS])
def test_the_device_check_holds_for_the_run_s_launch(kind: int) -> None:
    """suite/test_hazards.py's device check, here on the interpreter: the launch a GPU run makes draws every element
    of sizes that are not multiples of the block, and nothing past them."""
    from suite.test_hazards import draw_problems

    assert draw_problems("cpu", kind) == []


@pytest.mark.parametrize("planted, words", [
    ("one_program_short", ["n=1025: element 1024 is", "(1 elements never written)"]),
    ("no_mask", ["n=1: 1023 elements written past the end of the output on cpu"]),
])
def test_the_device_check_fails_a_planted_draw_launch(planted: str, words: list[str],
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    from suite.checks import memcheck
    from suite.test_hazards import draw_problems
    from tests.fixtures import planted_draws

    if (checker := memcheck.active()) is not None:  # as on a GPU: the guard regions, not the interpreter's checker
        monkeypatch.setattr(checker, "check", lambda *args, **kwargs: None)
    found = "\n".join(draw_problems("cpu", inputs._NORMAL, getattr(planted_draws, planted)))
    for word in words:
        assert word in found, found


def test_cross_entropys_draw_never_ignores_the_first_row():
    """A case of one row whose row the draw ignored handed the kernel no logit to read: the case failed as a broken
    spec (``M=1,V=2999;layout=padded_rows;values=subnormal;seed=17910``, a nightly's draw). About a quarter of the
    seeds ignored it."""
    from kernels import cross_entropy

    for seed in range(64):
        case = Case("cross_entropy", "fp32", {"M": 1, "V": 33}, values="normal", seed=seed)
        assert cross_entropy._make_inputs(case, "cpu")["target"][0] != cross_entropy.IGNORE_INDEX, seed
    case = Case.parse("cross_entropy", "fp32", "M=1,V=2999;layout=padded_rows;values=subnormal;seed=17910")
    assert cross_entropy._make_inputs(case, "cpu")["target"][0] != cross_entropy.IGNORE_INDEX
