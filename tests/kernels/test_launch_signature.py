"""The compile matrix compiles the kernel a launch runs.

Triton's JIT turns an integer argument equal to 1 into the constant 1 before compiling (a unit stride, a row
count of one), and that changes the code: loads along a unit stride vectorize and pipeline, without it they go
element by element through registers. A compile signature that leaves a unit stride a plain ``i32`` makes the
compile matrix (and the tuner, which prunes on its findings) judge a kernel no launch compiles: for
``fp8_scaled_matmul`` on sm_90 every pointer config then spilled at 255 registers and took 2-7 s to compile, while
as launched three of the four did not spill.

Each spec's launcher runs here on the CPU with its typical cases (every dim a multiple of 16, fp16 or the first
dtype, the first layout) and every NVIDIA config, the launch intercepted before anything runs; every integer argument the
launch passes as 1 must be the constant 1 in the spec's compile signature for that kernel, and every runtime
argument that signature pins to a constant must be launched with that value. The same check runs on the GPU
against the loaded kernels' registers (``suite/test_compile_matrix.py::test_offline_registers_match_the_loaded_kernel``);
this one needs no GPU and covers every kernel.
"""

from __future__ import annotations

import inspect
from typing import Any

import pytest
import torch

from kernels import registry
from kernels.spec import Case, KernelSpec, split_config, unwrap_jit

TYPICAL = 32  # every dim that has no fixed choices: a multiple of 16, and not 1


# Where TYPICAL alone does not give the launch the compile matrix describes: layernorm_backward sums one row per
# group up to ROW_GROUPS rows (rows_per_group would be the constant 1), and its wide path (three kernels) needs
# rows wider than the default block, as does softmax_online's online kernel.
SHAPES = {"layernorm_backward": ({"M": 1056, "N": TYPICAL}, {"M": 1056, "N": 8208}),
          # attention: whole key blocks of every tile (S a multiple of 128).
          "attention": ({}, {"B": 2, "H": 2, "S": 256}),
          "softmax_online": ({"M": TYPICAL, "N": TYPICAL}, {"M": TYPICAL, "N": 4112})}


def typical_cases(spec: KernelSpec) -> list[Case]:
    base = {d.name: (d.choices[0] if d.choices else TYPICAL) for d in spec.dims}
    dtype = "fp16" if "fp16" in spec.dtypes else spec.dtypes[0]  # the compile matrix's main dtype
    return [Case(spec.name, dtype, {**base, **shape}, layout=spec.layouts[0] if spec.layouts else "contiguous")
            for shape in SHAPES.get(spec.name, ({},))]


def typical_case(spec: KernelSpec) -> Case:
    return typical_cases(spec)[0]


def launches(spec: KernelSpec, case: Case, config: dict,
             tensors: tuple[dict, dict] | None = None) -> list[tuple[Any, dict[str, Any]]]:
    """(jitted function, its arguments by name) of every kernel launch the spec's launcher makes for the case (its
    inputs and outputs: ``tensors``, else drawn); none of them runs."""
    seen: list[tuple[Any, dict[str, Any]]] = []
    classes = {type(unwrap_jit(k.fn)) for k in spec.jit_kernels()}

    def capture(self, *args, **kwargs):
        params = list(inspect.signature(self.fn).parameters)
        named = dict(zip(params, args, strict=False))  # launch options come as keywords
        named.update({k: v for k, v in kwargs.items() if k in params})
        if "num_warps" in kwargs:
            named["num_warps"] = kwargs["num_warps"]
        seen.append((self, named))

    inputs, outputs = tensors or draw(spec, case)
    with pytest.MonkeyPatch.context() as mp:
        for cls in classes:
            mp.setattr(cls, "run", capture)
        spec.run(inputs, outputs, config)
    return seen


def draw(spec: KernelSpec, case: Case) -> tuple[dict, dict]:
    inputs = spec.make_inputs(case, "cpu")
    return inputs, spec.make_outputs(inputs, case)


def mismatches(spec: KernelSpec, case: Case, config: dict, seen: list | None = None) -> list[str]:
    """Where the spec's compile signatures and the launch's specialization disagree (empty: they agree); ``seen``:
    the launches, if already made."""
    meta = split_config(config)[0]
    found = []
    kernels = {id(unwrap_jit(k.fn)): k for k in spec.jit_kernels()}
    for fn, args in launches(spec, case, config) if seen is None else seen:
        kernel = kernels.get(id(fn))
        if kernel is None:
            found.append(f"{spec.name}: launches {getattr(fn, '__name__', fn)}, which no compile signature describes")
            continue
        signature, constexprs = kernel.signature(case.dtype, meta)
        options = dict(kernel.options) if kernel.options is not None else split_config(config)[1]
        if "num_warps" in options and args.get("num_warps", options["num_warps"]) != options["num_warps"]:
            found.append(f"{kernel.name}: the compile matrix builds it with num_warps={options['num_warps']}; the "
                         f"launch passes num_warps={args['num_warps']}")
        declared = {p.name for p in inspect.signature(fn.fn).parameters.values()
                    if "constexpr" in str(p.annotation)}
        for name, value in args.items():
            if name == "num_warps" or name in declared or isinstance(value, bool) or not isinstance(value, int):
                continue
            if value == 1 and constexprs.get(name) != 1:
                found.append(f"{kernel.name}: the launch passes {name}=1, which the JIT compiles as the constant 1; "
                             f"the compile signature has it as {signature.get(name)!r}")
            elif name in constexprs and constexprs[name] != value:
                found.append(f"{kernel.name}: the compile signature pins {name}={constexprs[name]!r}; the launch "
                             f"passes {value!r}")
    return found


def _specs() -> list[KernelSpec]:
    registry.load_builtin()
    return [s for s in registry.all_specs() if s.jit_kernels()]


@pytest.mark.parametrize("spec", _specs(), ids=lambda s: s.name)
def test_compile_signature_matches_the_launch(spec: KernelSpec) -> None:
    """With the default and every NVIDIA config, on the typical cases."""
    configs = [spec.default_config_for("nvidia")]
    configs += [dict(c) for c in spec.configs.get("nvidia", ()) if dict(c) not in configs]
    launched, found = set(), []
    for case in typical_cases(spec):
        tensors = draw(spec, case)
        for config in configs:
            seen = launches(spec, case, config, tensors)
            assert seen, f"{spec.name}: the launcher launched nothing for {case} with {config}"
            launched |= {id(fn) for fn, _ in seen}
            found += [f"{m} ({case.spec_string()}, config {config})" for m in mismatches(spec, case, config, seen)]
    assert not found, "\n".join(found[:10])
    # Every function the matrix compiles is one of these launches (else a path this test does not reach, or a
    # signature for a kernel no launcher runs).
    missing = [k.name for k in spec.jit_kernels() if id(unwrap_jit(k.fn)) not in launched]
    assert not missing, f"{spec.name}: no typical case launches {missing}; add a shape to SHAPES that does"


def test_a_unit_stride_left_unspecialized_is_caught(monkeypatch) -> None:
    """Planted: the matmul signature without its unit strides (what fp8_scaled_matmul's was)."""
    from kernels import matmul

    def plain(dtype: str, meta: dict) -> tuple[dict, dict]:
        signature, constexprs = matmul.SPEC.compile_signature(dtype, meta)
        for name in ("stride_ak", "stride_bn", "stride_cn"):
            signature[name] = "i32"
            constexprs.pop(name)
        return signature, constexprs

    import dataclasses

    planted = dataclasses.replace(matmul.SPEC, compile_signature=plain)
    found = mismatches(planted, typical_case(planted), planted.default_config_for("nvidia"))
    assert len(found) == 3 and all("the constant 1" in f for f in found), found
    assert "stride_ak=1" in found[0]


def test_a_pinned_value_the_launch_does_not_pass_is_caught() -> None:
    """Planted: a signature pinning B's row stride to 1 where the launch (K-major B: stride K) does not."""
    import dataclasses

    from kernels import matmul

    def pinned(dtype: str, meta: dict) -> tuple[dict, dict]:
        signature, constexprs = matmul.SPEC.compile_signature(dtype, meta)
        signature["stride_bk"], constexprs["stride_bk"] = "constexpr", 1
        return signature, constexprs

    planted = dataclasses.replace(matmul.SPEC, compile_signature=pinned)
    found = mismatches(planted, typical_case(planted), planted.default_config_for("nvidia"))
    assert found == [f"matmul_kernel: the compile signature pins stride_bk=1; the launch passes {TYPICAL}"], found


def test_cpu_tensors_reach_the_launch() -> None:
    """The launch sees the case's strides (the interception is not fooled by a copy)."""
    from kernels import matmul

    case = typical_case(matmul.SPEC)
    (fn, args), = launches(matmul.SPEC, case, matmul.SPEC.default_config_for("nvidia"))
    assert args["stride_ak"] == 1 and args["stride_am"] == TYPICAL and isinstance(args["a_ptr"], torch.Tensor)


def test_launch_options_other_than_the_matrix_builds_are_caught() -> None:
    """Planted: layernorm_backward's reduction declared as launched with 8 warps (it runs with its own 4), and
    without its own options (the matrix would build it with the config's 16)."""
    import dataclasses

    from kernels import layernorm_backward as lb

    spec = lb.SPEC
    config = dict(spec.default_config_for("nvidia"))
    case = typical_cases(spec)[0]
    assert not mismatches(spec, case, config)
    for options, built in (({"num_warps": 8}, 8), (None, config["num_warps"])):
        jit_fns = tuple(dataclasses.replace(k, options=options) if k.fn is lb.layernorm_bwd_reduce_kernel else k
                        for k in spec.jit_fns)
        found = mismatches(dataclasses.replace(spec, jit_fns=jit_fns), case, config)
        assert found == [f"layernorm_bwd_reduce_kernel: the compile matrix builds it with num_warps={built}; the "
                         f"launch passes num_warps={lb.REDUCE_TILE['num_warps']}"], found
