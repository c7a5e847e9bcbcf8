"""A row's outputs do not depend on the batch it runs in: the ``batch_invariant`` claim, held where the interpreter
cannot show it, and the property check shown to catch a kernel that breaks it.

The property check (suite/test_properties.py) runs the first half of a batch alone, with the same config, and
compares bitwise. On the interpreter a row's arithmetic is the same whatever the launch. On a GPU the launch's
integer arguments also pick the compiled kernel: Triton's JIT specializes an integer that is a multiple of 16
(divisibility) or equal to 1 (a constant), and another variant may lay a row out otherwise across threads and add
its sums in another order. layernorm_backward at M=1981, N=257 on an H200 (fp16: BLOCK_M=1, ROW_GROUPS=132, 8
warps) passed rows_per_group=16 to the whole batch and 8 to its first 990 rows, and their dx differed.

Here, with no GPU: every launch of layernorm_backward that computes dx is specialized alike for a batch and its first
half (Triton's own binder, for sm_90 and gfx942, every NVIDIA and AMD config); the shipped kernel's dx is bitwise
batch-invariant on the interpreter with the configs the caches give the finding's shape; and a planted kernel whose
row reduction follows the batch size (tests/fixtures/batch_variant.py) fails the property check.
"""

from __future__ import annotations

import functools
from types import SimpleNamespace

import pytest
import torch
from triton.backends.compiler import GPUTarget
from triton.compiler.compiler import make_backend
from triton.runtime.jit import JITFunction, create_function_from_signature

from kernels import layernorm_backward as lb
from kernels.spec import Case, KernelSpec, unwrap_jit
from suite.checks import autotune
from tests.kernels.test_launch_signature import launches

TARGETS = {"nvidia": GPUTarget("cuda", 90, 32), "amd": GPUTarget("hip", "gfx942", 64)}
# (M, N): the finding (rows_per_group 16 against 8 at ROW_GROUPS=132), a row count of 1 (the constant 1), a half
# batch of 16 rows (divisible) under an odd one; N=8208 takes the three-launch path with every config.
BATCHES = ((1981, 257), (2, 257), (33, 257), (2, 8208), (33, 8208))
# Launches that reduce over the batch: dweight and dbias are sums over every row, not batch outputs.
BATCH_REDUCTIONS = {"layernorm_bwd_reduce_kernel"}


@functools.cache
def as_jit(fn) -> JITFunction:
    """The JITFunction Triton builds for ``fn`` (an InterpretedFunction keeps the decorator's arguments)."""
    fn = unwrap_jit(fn)
    if isinstance(fn, JITFunction):
        return fn
    kwargs = getattr(fn, "kwargs", {})
    return JITFunction(fn.fn, do_not_specialize=kwargs.get("do_not_specialize"),
                       do_not_specialize_on_alignment=kwargs.get("do_not_specialize_on_alignment"))


def specializations(spec: KernelSpec, tensors: tuple[dict, dict], case: Case, config: dict,
                    target: GPUTarget, skip: set[str] = frozenset(), jit=as_jit) -> list[tuple]:
    """(function, Triton's specialization of every argument, num_warps) of each launch the launcher makes, but those
    in ``skip``: what the JIT would compile for ``target``, from the launch's own arguments (nothing runs)."""
    backend = make_backend(target)
    out = []
    for fn, args in launches(spec, case, config, tensors):
        kernel = jit(fn)
        if kernel.fn.__name__ in skip:
            continue
        binder = create_function_from_signature(kernel.signature, kernel.params, backend)
        _, specialization, _ = binder(**{k: v for k, v in args.items() if k != "num_warps"})
        out.append((kernel.fn.__name__, specialization, args.get("num_warps")))
    return out


def batch_and_half(spec: KernelSpec, case: Case) -> tuple[tuple[dict, dict], tuple[dict, dict], int]:
    """The inputs and outputs of a case and of its first half, sliced as the property check slices them."""
    inputs = spec.make_inputs(case, "cpu")
    part = max(1, case.shape[spec.batch_dim] // 2)
    sliced = {k: (v[:part] if k in spec.batch_inputs else v) for k, v in inputs.items()}
    return (inputs, spec.make_outputs(inputs, case)), (sliced, spec.make_outputs(sliced, case)), part


def variant_differences(spec: KernelSpec, dtype: str, family: str, jit=as_jit) -> list[str]:
    """Where a launch that computes a batch output is specialized otherwise for a batch and its first half."""
    configs = [spec.default_config_for(family), *(dict(c) for c in spec.configs[family])]
    found = []
    for m, n in BATCHES:
        for layout in spec.layouts:
            case = Case(spec.name, dtype, {"M": m, "N": n}, layout)
            full, half, part = batch_and_half(spec, case)
            for config in configs:
                a = specializations(spec, full, case, config, TARGETS[family], BATCH_REDUCTIONS, jit)
                b = specializations(spec, half, case, config, TARGETS[family], BATCH_REDUCTIONS, jit)
                assert a, f"no launch computes dx for {case} with {config}"
                if a != b:
                    diff = [(x[0], [(i, s, t) for i, (s, t) in enumerate(zip(x[1], y[1], strict=True)) if s != t])
                            for x, y in zip(a, b, strict=True) if x != y]
                    found.append(f"{case.spec_string()} {config}: {m} rows against {part}: {diff}")
    return found


@pytest.mark.kernels("layernorm_backward")
@pytest.mark.parametrize("family", sorted(TARGETS))
@pytest.mark.parametrize("dtype", lb.SPEC.dtypes)
def test_layernorm_backward_compiles_one_dx_kernel_for_every_batch(family: str, dtype: str) -> None:
    """The kernels behind dx take the batch-dependent integers unspecialized: a batch and its first half run the
    same compiled kernel, with every config of the family."""
    found = variant_differences(lb.SPEC, dtype, family)
    assert not found, "\n".join(found[:5])


@pytest.mark.kernels("layernorm_backward")
def test_a_specialized_row_count_is_caught() -> None:
    """Planted: the kernels as they were, every integer specialized; the finding's shape is among those caught."""
    found = variant_differences(lb.SPEC, "fp16", "nvidia", jit=lambda fn: JITFunction(unwrap_jit(fn).fn))
    finding = [f for f in found if f.startswith("M=1981,N=257;layout=contiguous")
               and "'BLOCK_M': 1, 'ROW_GROUPS': 132, 'num_warps': 8}" in f]
    assert finding and "layernorm_bwd_fused_kernel" in finding[0] and "('i32', 'D'), ('i32', '')" in finding[0], found


@pytest.mark.kernels("layernorm_backward")
@pytest.mark.parametrize("dtype", ["fp16", "bf16"])
def test_layernorm_backward_dx_is_batch_invariant_on_the_interpreter(dtype: str) -> None:
    """The shipped kernel, run: every config the caches and defaults give M=1981, N=257 (sm_90 and the H200's file,
    AMD, the interpreter), on 64 rows and their first 32 so that it stays quick; with ROW_GROUPS=4, rows_per_group
    is 16 against 8, as at the finding."""
    spec = lb.SPEC
    configs = []
    for profile in (None, "h200_sxm"):
        backend = SimpleNamespace(name="cuda", arch="sm_90", family="nvidia", sm_count=132, profile=None)
        cache = autotune.load(autotune.cache_path("sm_90", None, profile), "sm_90", profile)
        fallback = autotune.load(autotune.cache_path("sm_90"), "sm_90") if profile else None
        config, _, _ = autotune.Lookup(backend, cache, fallback).choose(spec, dtype, {"M": 1981, "N": 257})
        configs.append(config)
    configs += [spec.default_config_for("amd"), spec.default_config_for("interpret")]
    case = Case(spec.name, dtype, {"M": 64, "N": 257}, "padded_rows", "normal", 7)
    for config in configs:
        config = {**config, "ROW_GROUPS": 4}
        assert lb.plan(64, 257, config).rows_per_group == 16 and lb.plan(32, 257, config).rows_per_group == 8
        (inputs, outputs), (sliced, small), part = batch_and_half(spec, case)
        spec.run(inputs, outputs, config)
        spec.run(sliced, small, config)
        same = torch.equal(outputs["dx"][:part].view(torch.int16), small["dx"].view(torch.int16))
        assert same, f"{config}: the first {part} rows of dx differ when run alone"


@pytest.mark.slow
def test_a_row_reduction_that_follows_the_batch_size_fails_the_property(run_suite) -> None:
    """The planted kernel fails ``batch_invariant`` on its example (48 rows against 24) and nothing else; the same
    kernel with the variant fixed passes."""
    run = run_suite("suite/test_properties.py", "--kernel-module=tests/fixtures/batch_variant.py",
                    "--kernels=planted_row_center_by_batch,row_center_fixed")
    assert run.returncode == 1, run.output[-3000:]
    findings = {(f["kernel"], f["property"]): f for f in run.run_data()["findings"]}
    planted = findings[("planted_row_center_by_batch", "batch_invariant")]
    assert planted["claimed"] and not planted["holds"], planted
    assert "the first 24 of 48 along M differ bitwise when run as a batch of 24: outputs ['y']; y: " in planted["message"]
    assert findings[("planted_row_center_by_batch", "deterministic")]["holds"]
    assert all(findings[("row_center_fixed", p)]["holds"] for p in ("deterministic", "batch_invariant")), findings


@pytest.mark.kernels("layernorm_backward")
def test_the_compile_matrix_leaves_unspecialized_arguments_unspecialized() -> None:
    """The matrix compiles what a launch builds: no divisibility on the batch-dependent integers, as the JIT gives
    them none; the other integers and the pointers keep theirs."""
    from suite.tools import compile_matrix

    fn = as_jit(lb.layernorm_bwd_fused_kernel)
    signature, _ = lb._fused_signature("fp16", {"BLOCK_M": 1, "BLOCK_N": 512})
    unspecialized = frozenset(p.name for p in fn.params if p.do_not_specialize)
    assert unspecialized == {"n_rows", "rows_per_group"}
    attrs = compile_matrix._attrs(signature, "cuda", unspecialized)
    names = list(signature)
    assert {names[i] for (i,) in attrs} == {n for n, t in signature.items()
                                             if t != "constexpr" and n not in unspecialized}


def test_the_batch_check_takes_the_outputs_two_runs_agreed_on_and_nothing_else(monkeypatch) -> None:
    """After check_determinism found two runs of a case bitwise equal, the batch-invariance check of that case and
    config compares its half batch with those outputs (on those inputs) instead of a third run; for another case or
    config, or after runs that disagreed, it runs the whole batch itself."""
    import suite.checks.property_loop as props

    spec = SimpleNamespace(batch_dim="M", batch_inputs={"x"}, batch_outputs=["y"])
    runs: list[int] = []
    outputs = {"flip": False}

    def runner(*_args):
        def run(inputs):
            runs.append(len(inputs["x"]))
            y = inputs["x"] * 2
            if outputs["flip"] and len(runs) % 2 == 0:
                y = y + 1  # a second run that disagrees
            return {"y": y}
        return run

    drawn = []
    monkeypatch.setattr(props, "make_runner", runner)
    monkeypatch.setattr(props, "draw_inputs", lambda *_a: drawn.append(1) or {"x": torch.arange(8.0)})
    case = Case("k", "fp32", {"M": 8}, "contiguous", "normal", 0)
    assert props.check_determinism(spec, case, None, {"BLOCK": 4}) is None
    assert props.check_batch_invariance(spec, case, None, {"BLOCK": 4}) is None
    assert runs == [8, 8, 4] and len(drawn) == 1  # the whole batch ran twice, then only the half
    runs.clear()
    props.check_determinism(spec, case, None, {"BLOCK": 4})
    props.check_batch_invariance(spec, case, None, {"BLOCK": 8})  # another config: runs its own whole batch
    assert runs == [8, 8, 8, 4]
    runs.clear()
    outputs["flip"] = True
    assert props.check_determinism(spec, case, None, {"BLOCK": 4}) is not None
    props.check_batch_invariance(spec, case, None, {"BLOCK": 4})  # runs that disagreed lend nothing
    assert runs == [8, 8, 8, 4]


def test_where_a_half_batch_differs_names_the_elements_it_never_wrote() -> None:
    """A grid that follows the batch size (n // BLOCK programs) leaves the half batch's tail unwritten: the message
    says where the outputs differ and that those elements still hold the poison; a sum in another order differs
    where it was written, and says nothing of the poison."""
    from suite.checks.harness import poison
    from suite.checks.property_loop import where_bits_differ

    whole = torch.arange(8.0)
    half = {"y": torch.empty(8)}
    poison(half)
    half["y"][:5] = whole[:5]
    text = where_bits_differ("y", whole, half["y"], 8)
    assert text == ("y: 3 element(s) differ, first at (5,), 3 of them never written in the batch of 8 (they still "
                    "hold the poison: a grid or mask that follows the batch size?)"), text
    reordered = whole.clone()
    reordered[2] = torch.nextafter(reordered[2], torch.tensor(9.0))
    assert where_bits_differ("y", whole, reordered, 8) == "y: 1 element(s) differ, first at (2,)"
