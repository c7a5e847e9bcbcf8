"""Kernel specs: what the suite needs to know about a kernel, declared as data.

This module knows nothing of pytest or Hypothesis; ``suite/`` turns these
declarations into strategies and tests.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import torch

from kernels import _validation as validation
from kernels._types import (  # noqa: F401 - re-exported: kernel modules import these from kernels.spec
    AMD_ONLY_OPTIONS,
    BACKENDS,
    DTYPE_NAMES,
    FAMILIES,
    INTEGER_DTYPES,
    KNOWN_ISSUE_TESTS,
    LAUNCH_OPTIONS,
    VENDOR_ONLY_OPTIONS,
    Case,
    CodePath,
    Dim,
    IndexOutput,
    JitKernel,
    KnownIssue,
    MissingArgument,
    Property,
    Tolerance,
    amd_options,
    autotune_config_space,
    autotune_configs,
    cdiv,
    constexpr_names,
    is_autotuned,
    is_autotuner,
    jit_name,
    next_power_of_2,
    row_chunks,
    scoped_config,
    signature,
    split_config,
    unwrap_jit,
)
from kernels._validation import SpecError  # noqa: F401 - re-exported: the error a wrong spec raises

DTYPES: dict[str, torch.dtype] = {
    "fp32": torch.float32,
    "fp16": torch.float16,
    "bf16": torch.bfloat16,
    "fp64": torch.float64,
    "int32": torch.int32,
    "int64": torch.int64,
    "int8": torch.int8,
    "uint8": torch.uint8,
    "fp8e4nv": torch.float8_e4m3fn,
    "fp8e4b8": torch.float8_e4m3fnuz,
    "fp8e5": torch.float8_e5m2,
    "fp8e5b16": torch.float8_e5m2fnuz,
}

assert tuple(DTYPES) == DTYPE_NAMES, "DTYPES and kernels/_types.py DTYPE_NAMES name the same dtypes"
assert INTEGER_DTYPES == tuple(k for k, v in DTYPES.items() if not v.is_floating_point), "INTEGER_DTYPES: the integers"


@dataclass(frozen=True)
class KernelSpec:
    """A kernel as the suite sees it: declared as data next to the kernel, checked when it is made.

    Every field is validated in ``__post_init__`` (so ``dataclasses.replace`` is checked too): a mistake
    raises :class:`SpecError` naming the module, the spec, the field and what would
    be right. What can only be known by running (the reference returns exactly the declared outputs,
    of the outputs' shapes, finite where the inputs are) is checked by the suite on every case.
    """

    name: str
    description: str
    dims: tuple[Dim, ...]
    dtypes: tuple[str, ...]
    make_inputs: Callable[[Case, str], dict[str, torch.Tensor]]
    # None: the launcher allocates its own outputs and ``run`` returns them (a dict name -> tensor, or a tensor /
    # tuple of tensors in the order of ``outputs``), called with an empty dict for the outputs; see
    # suite/checks/returned.py for the checks such outputs get and the ones they cannot.
    make_outputs: Callable[[dict[str, torch.Tensor], Case], dict[str, torch.Tensor]] | None
    run: Callable[[dict[str, torch.Tensor], dict[str, torch.Tensor], dict | None], Any]
    reference: Callable[[dict[str, torch.Tensor], Case], dict[str, torch.Tensor]]
    # The names of the outputs make_outputs returns; the reference must return exactly these, and each
    # is compared.
    outputs: tuple[str, ...] = ()
    tolerance: Tolerance = field(default_factory=Tolerance)
    # An output named here is held to its own rule instead of `tolerance` (a loss and its gradient, say).
    output_tolerances: Mapping[str, Tolerance] = field(default_factory=dict)
    # Integer outputs of indices where ties are legal (topk's indices): compared by the elements they select
    # (IndexOutput), not index by index.
    index_outputs: Mapping[str, IndexOutput] = field(default_factory=dict)
    # Outputs that start from a value instead of the poison: output -> the name of an input of its shape and
    # dtype (an in-place kernel: the output starts as a copy of that input, which itself stays untouched) or a
    # number (an accumulating kernel: e.g. 0.0). The guard regions around them are poisoned as for any output.
    initial_outputs: Mapping[str, str | float] = field(default_factory=dict)
    # Outputs that run returns (make_outputs=None) and torch finishes from what the spec's own kernel wrote (a sum of
    # its partials, say): output -> why. They are exempt from the rule that every value judged is the kernel's own
    # (suite/checks/last_writer.py); the kernel's launches must still write something. docs/checks.md.
    host_epilogue: Mapping[str, str] = field(default_factory=dict)
    # Inputs the kernel may write (a workspace, a lock or counter array it leaves changed): restored to what
    # make_inputs built before every launch and before the reference. Any other input the kernel changes fails the
    # case, naming the input and the first changed element.
    mutable_inputs: tuple[str, ...] = ()
    layouts: tuple[str, ...] = ("contiguous",)
    value_classes: tuple[str, ...] = ("normal",)
    # Value classes whose finite inputs may give a reference with NaN or inf (say, an overflow the
    # kernel must reproduce). Elsewhere a non-finite reference from finite inputs is a broken spec.
    nonfinite_reference: tuple[str, ...] = ()
    # FLOPs and the fewest bytes a launch must move, for roofline efficiency.
    flops: Callable[[Case], float] = lambda case: 0.0
    min_bytes: Callable[[Case], float] = lambda case: 0.0
    # The same computation through torch, timed as the speed-up baseline.
    torch_baseline: Callable[[dict[str, torch.Tensor]], Any] | None = None
    # Meta-parameters per vendor family: the default and the space to tune over.
    default_config: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    configs: Mapping[str, tuple[Mapping[str, Any], ...]] = field(default_factory=dict)
    benchmark_shapes: tuple[Mapping[str, int], ...] = ()
    # Autotune cache bucket of a shape (suite/checks/autotune.py); None: each dim rounded up to a power
    # of two, dims with fixed choices kept exact.
    tune_bucket: Callable[[Mapping[str, int]], dict[str, int]] | None = None
    # Cases always run before the drawn ones (Hypothesis explicit examples), as
    # Case fields without kernel and dtype: known edge cases and regressions.
    examples: tuple[Mapping[str, Any], ...] = ()
    properties: tuple[Property, ...] = ()
    # Paths that only some shapes and configs take; the suite makes sure each is exercised (see CodePath).
    paths: tuple[CodePath, ...] = ()
    # Batch invariance: the Dim that indexes independent rows, and the inputs and
    # outputs whose dim 0 it is. None: the kernel has no batch dimension.
    batch_dim: str | None = None
    batch_inputs: tuple[str, ...] = ()
    batch_outputs: tuple[str, ...] = ()
    # What the kernel claims; the suite records what it finds and fails on a broken claim.
    deterministic: bool = True
    batch_invariant: bool = True
    # The jitted kernel and how to compile it with no GPU (the compile matrix).
    # compile_signature(dtype, meta) -> (signature, constexprs), meta being a config's
    # constexpr part (see split_config); launch options come from the config itself.
    jit_fn: Any = None
    compile_signature: Callable[[str, Mapping[str, Any]], tuple[dict, dict]] | None = None
    # Which dtypes and configs launch jit_fn (JitKernel.used; None: all), where a config key selects another function.
    jit_fn_used: Callable[[str, Mapping[str, Any]], bool] | None = None
    # More jitted functions the run launches (a forward and a backward, two stages), each compiled by the
    # compile matrix like jit_fn.
    jit_fns: tuple[JitKernel, ...] = ()
    # Expected failures of this kernel, shipped with its module (see KnownIssue).
    known_issues: tuple[KnownIssue, ...] = ()
    # The cases (and configs) for which the launcher launches no @triton.jit function and computes the outputs
    # another way (torch for small inputs, say): (case, config) -> bool, mirroring the launcher's test. A case with
    # output elements whose run launched nothing fails unless this says so (the kernel was never tested on it).
    torch_fallback: Callable[[Case, Mapping[str, Any]], bool] | None = None
    # Why a test none of whose cases launched a @triton.jit function (torch_fallback covered every one) is "not
    # tested" rather than failed: a spec that exercises a torch path on purpose. None: such a test fails.
    untested_reason: str | None = None
    # Layouts users pass, which the suite draws without the spec listing them (suite/checks/restride.py): the
    # inputs that may be broadcast (stride 0 along dim 0; none: broadcast is not drawn, only tried once per test);
    # whether the launcher takes outputs of any strides (make_outputs' tensors re-laid out like the inputs); the
    # drawn layouts ("aligned_slice", "permuted", "broadcast") the launcher refuses, each with why (tried once per
    # test: the launcher must raise on them or be right).
    broadcast_inputs: tuple[str, ...] = ()
    strided_outputs: bool = False
    refused_layouts: Mapping[str, str] = field(default_factory=dict)
    # Why the suite must not try, once per test, a layout the spec did not declare (None: it tries one).
    no_contract_probe: str | None = None
    # Why subnormal inputs are not drawn for fp32/fp16/bf16 cases though value_classes leaves them out (None: they
    # are, at least once per test).
    no_subnormals: str | None = None

    def __post_init__(self) -> None:
        if not self.configs and not self.default_config:
            # An @triton.autotune kernel brings its configs: every family runs them, the first as default. Several
            # bring each its own, every config naming each kernel's settings (autotune_config_space).
            tuned = autotune_config_space(*(k.fn for k in self.jit_kernels() if is_autotuned(k.fn)))
            if tuned:
                object.__setattr__(self, "configs", {family: tuned for family in FAMILIES})
                object.__setattr__(self, "default_config", {family: dict(tuned[0]) for family in FAMILIES})
        validation.check_spec(self)

    def jit_kernels(self) -> tuple[JitKernel, ...]:
        """Every jitted function of the spec: ``jit_fn`` (with ``compile_signature``) first, then ``jit_fns``."""
        first = (JitKernel(self.jit_fn, self.compile_signature, self.jit_fn_used),) if self.jit_fn is not None else ()
        return first + tuple(k for k in self.jit_fns if isinstance(k, JitKernel))

    def tolerance_for(self, output: str) -> Tolerance:
        """The tolerance rule output ``output`` is held to."""
        return self.output_tolerances.get(output, self.tolerance)

    def default_config_for(self, family: str) -> dict[str, Any]:
        """The family's default config (the interpreter falls back to NVIDIA's)."""
        if family in self.default_config:
            return dict(self.default_config[family])
        if family == "interpret" and "nvidia" in self.default_config:
            return dict(self.default_config["nvidia"])
        return {}

    def oversized(self, shape: Mapping[str, int]) -> list[str]:
        """Each dim of ``shape`` larger than the spec ever draws (the largest of its interpret_max, gpu_max and
        nightly_max): not a case the suite made, and one whose memory may not exist (a --repro typo, say)."""
        out = []
        for dim in self.dims:
            bounds = [b for b in (dim.interpret_max, dim.gpu_max, dim.nightly_max) if b is not None]
            value = shape.get(dim.name)
            if not dim.choices and bounds and isinstance(value, int) and value > max(bounds):
                out.append(f"{dim.name}={value} is above the largest size the spec draws, {max(bounds)} (the largest of "
                           f"its interpret_max, gpu_max and nightly_max)")
        return out

    def check_case(self, case: Case) -> None:
        """ValueError naming what does not fit when ``case`` is not a case of this kernel (a ``--repro``
        value copied from another kernel's reproduction line, say)."""
        values = (*self.value_classes, "subnormal") if case.values == "subnormal" and not self.no_subnormals \
            and case.dtype in ("fp32", "fp16", "bf16") else None
        problems = validation.case_problems(self, case.shape, case.layout, case.values, values=values)
        if case.restride and case.restride not in ("aligned_slice", "permuted", "broadcast", "unaligned_slice",
                                                   "strided_outputs"):
            problems.append(f"restride {case.restride!r} is not one of aligned_slice, permuted, broadcast, "
                            f"unaligned_slice, strided_outputs (or none)")
        if not problems and not any(dict(e.get("shape", {})) == dict(case.shape) for e in self.examples):
            problems = self.oversized(case.shape)
        if problems:
            raise ValueError(f"not a case of kernel {self.name!r}: {'; '.join(problems)}")
