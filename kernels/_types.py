"""The declarations of a kernel spec (dims, cases, tolerances, properties, code paths, known issues) and the
helpers around them, without torch: ``kernels.spec`` re-exports every name here, and ``kernels._validation`` (which
an xdist controller imports before torch) checks specs against them. Import them from ``kernels.spec``."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

# The dtype names a spec may use (kernels.spec.DTYPES maps each to its torch dtype).
DTYPE_NAMES = ("fp32", "fp16", "bf16", "fp64", "int32", "int64", "int8", "uint8", "fp8e4nv", "fp8e4b8", "fp8e5",
               "fp8e5b16")
# The integer ones: inputs drawn as integers in the dtype's range (kernels/inputs.py), outputs compared exactly.
INTEGER_DTYPES = ("int32", "int64", "int8", "uint8")

# Vendor families whose configs differ; the interpreter takes its own small configs.
FAMILIES = ("nvidia", "amd", "interpret")
# Where kernels run: Triton's CPU interpreter, NVIDIA (CUDA) and AMD (ROCm) GPUs.
BACKENDS = ("interpret", "cuda", "rocm")
# The tests that run per kernel and dtype, and so the ones a known issue can mark (suite/test_*.py).
KNOWN_ISSUE_TESTS = ("test_matches_reference", "test_properties", "test_benchmark")


# Keys of a config that are launch options, not constexpr meta-parameters.
LAUNCH_OPTIONS = ("num_warps", "num_stages", "num_ctas", "maxnreg", "waves_per_eu", "matrix_instr_nonkdim", "kpack")


AMD_ONLY_OPTIONS = ("waves_per_eu", "matrix_instr_nonkdim", "kpack")
# Launch options that only one vendor's Triton backend knows; the other raises at launch (docs/hazards.md, hazard 4).
VENDOR_ONLY_OPTIONS = {"nvidia": ("maxnreg",), "amd": AMD_ONLY_OPTIONS}


def amd_options(config: Mapping[str, Any]) -> dict[str, Any]:
    """The AMD-only launch options a config carries. Only AMD configs carry them: NVIDIA's launch
    raises on them (the lints and the autotune candidates check that)."""
    return {k: config[k] for k in AMD_ONLY_OPTIONS if k in config}


def split_config(config: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """(constexpr meta-parameters, launch options) of a config."""
    meta = {k: v for k, v in config.items() if k not in LAUNCH_OPTIONS}
    options = {k: v for k, v in config.items() if k in LAUNCH_OPTIONS}
    return meta, options


def unwrap_jit(fn: Any) -> Any:
    """The ``@triton.jit`` function under ``@triton.autotune`` / ``@triton.heuristics`` wrappers (each wrapper keeps
    the function it wraps as ``.fn``; the jitted function's own ``.fn`` is plain Python, without ``arg_names``)."""
    while hasattr(getattr(fn, "fn", None), "arg_names"):
        fn = fn.fn
    return fn


def jit_name(fn: Any) -> str:
    """The name of a ``@triton.jit`` function, wrapped or not."""
    inner = unwrap_jit(fn)
    return getattr(getattr(inner, "fn", None), "__name__", None) or getattr(inner, "__name__", type(fn).__name__)


def is_autotuner(fn: Any) -> bool:
    """Whether ``fn`` is Triton's ``Autotuner`` or a subclass of it (flash-linear-attention's ``CachedAutotuner``
    behind ``fla_cache_autotune``, say), with its list of ``triton.Config``. By the class names of its MRO, so that
    this module need not import Triton's runtime."""
    return hasattr(fn, "configs") and any(cls.__name__ == "Autotuner" for cls in type(fn).__mro__)


def is_autotuned(fn: Any) -> bool:
    """Whether ``fn`` is wrapped in ``@triton.autotune`` or a subclass of its Autotuner."""
    while fn is not None:
        if is_autotuner(fn):
            return True
        fn = getattr(fn, "fn", None)
    return False


def autotune_configs(fn: Any) -> tuple[dict[str, Any], ...]:
    """The configs of a ``@triton.autotune`` kernel (or one under a subclass of Triton's Autotuner) as the suite
    writes configs: its meta-parameters plus ``num_warps`` and ``num_stages`` (and ``num_ctas``/``maxnreg`` where
    set). Empty for a kernel not autotuned."""
    while fn is not None and not is_autotuner(fn):
        fn = getattr(fn, "fn", None)
    if fn is None:
        return ()
    out = []
    for config in fn.configs:
        cfg = {**config.kwargs, "num_warps": config.num_warps, "num_stages": config.num_stages}
        if getattr(config, "num_ctas", 1) not in (None, 1):
            cfg["num_ctas"] = config.num_ctas
        if getattr(config, "maxnreg", None) is not None:
            cfg["maxnreg"] = config.maxnreg
        out.append(cfg)
    return tuple(out)


def autotune_config_space(*fns: Any) -> tuple[dict[str, Any], ...]:
    """The configs of a launcher that runs several ``@triton.autotune`` kernels, each with settings of its own (one
    kernel for short rows, another that loops over long ones): each config names every kernel's settings as
    ``'<kernel>.<parameter>'`` (``'layer_norm_loop_kernel.TILE_N'``, ``'layer_norm_loop_kernel.num_warps'``), and
    the configs go through each kernel's configs in turn, as many as the longest list, so that every config of every
    kernel runs. A single kernel's are :func:`autotune_configs`, unscoped."""
    lists = [(jit_name(fn), autotune_configs(fn)) for fn in fns]
    lists = [(name, configs) for name, configs in lists if configs]
    if len(lists) <= 1:
        return lists[0][1] if lists else ()
    return tuple({f"{name}.{k}": v for name, configs in lists for k, v in configs[i % len(configs)].items()}
                 for i in range(max(len(configs) for _, configs in lists)))


def scoped_config(config: Mapping[str, Any], kernel: str) -> dict[str, Any]:
    """What ``config`` sets for the jitted function ``kernel``: its plain keys, and its ``'<kernel>.<key>'`` keys
    (:func:`autotune_config_space`) as ``key``, over them; other kernels' scoped keys left out."""
    mine = {k.split(".", 1)[1]: v for k, v in config.items() if k.startswith(f"{kernel}.")}
    return {**{k: v for k, v in config.items() if "." not in k}, **mine}


def constexpr_names(fn: Any) -> tuple[str, ...]:
    """The ``tl.constexpr`` parameters of a ``@triton.jit`` function (wrapped or not), by their annotations."""
    import inspect

    inner = getattr(unwrap_jit(fn), "fn", None)
    try:
        params = inspect.signature(inner).parameters.values()
    except (TypeError, ValueError):
        return ()
    return tuple(p.name for p in params
                 if "constexpr" in (p.annotation if isinstance(p.annotation, str) else getattr(p.annotation, "__name__", "")))


class MissingArgument(KeyError):
    """:func:`signature` was given neither a type nor a constexpr value for an argument of the kernel."""

    def __init__(self, kernel: str, argument: str, constexpr: bool) -> None:
        super().__init__(f"{kernel}: no {'value for tl.constexpr' if constexpr else 'type for argument'} {argument!r}")
        self.kernel, self.argument, self.constexpr = kernel, argument, constexpr


def signature(fn: Any, types: Mapping[str, str], constexprs: Mapping[str, Any]) -> tuple[dict, dict]:
    """A cross-compile signature for ``triton.compile(ASTSource(...))``: every argument of
    the jitted ``fn`` in order, typed from ``types`` (``*fp16``, ``i32``, ...) or constexpr.
    :class:`MissingArgument` (a KeyError) for an argument given neither."""
    sig = {}
    for name in unwrap_jit(fn).arg_names:
        if name in constexprs:
            sig[name] = "constexpr"
        elif name in types:
            sig[name] = types[name]
        else:
            raise MissingArgument(jit_name(fn), name, name in constexpr_names(fn))
    return sig, dict(constexprs)


@dataclass(frozen=True)
class Dim:
    """One shape dimension and how the suite may draw it.

    ``blocks`` are the kernel's block sizes along this dimension: the suite biases
    draws toward 1, block-1, block, block+1 and a few blocks. ``choices`` fixes the
    dimension to a set (e.g. head dims 64 and 128); a dimension with choices needs no maxima.

    The largest size must reach past one block, or every case runs a one-program grid along the dim and hides a
    program index that is never scaled (checked when the spec is made, see kernels/_validation.py). ``one_block``
    says why a dim may stay within one block (a row one program holds whole, by design); None: it may not.
    """

    name: str
    interpret_max: int | None = None
    gpu_max: int | None = None
    nightly_max: int | None = None
    blocks: tuple[int, ...] = ()
    choices: tuple[int, ...] = ()
    min: int = 1
    one_block: str | None = None


@dataclass(frozen=True)
class Case:
    """One concrete test case: everything needed to rebuild its inputs."""

    kernel: str
    dtype: str
    shape: Mapping[str, int]
    layout: str = "contiguous"
    values: str = "normal"
    seed: int = 0
    # A layout the suite gives the inputs make_inputs built, on top of ``layout`` (same values, new strides:
    # suite/checks/restride.py): "" for none, else "aligned_slice", "permuted", "broadcast", "unaligned_slice",
    # "strided_outputs".
    restride: str = ""

    def spec_string(self) -> str:
        """The case as the ``--repro`` option takes it."""
        dims = ",".join(f"{k}={v}" for k, v in self.shape.items())
        more = f";restride={self.restride}" if self.restride else ""
        return f"{dims};layout={self.layout};values={self.values};seed={self.seed}{more}"

    @classmethod
    def parse(cls, kernel: str, dtype: str, text: str) -> Case:
        """Inverse of :meth:`spec_string`; raises ValueError naming the bad part. Whether the case fits a
        kernel (its dims, layouts, value classes) is :meth:`KernelSpec.check_case`."""
        if not text.strip():
            raise ValueError("--repro: empty value; expected e.g. 'M=3,N=17;layout=contiguous;values=normal;seed=1'")
        parts = text.split(";")
        shape: dict[str, int] = {}
        extra: dict[str, str] = {}
        for i, part in enumerate(parts):
            for item in filter(None, (p.strip() for p in part.split(","))):
                if "=" not in item:
                    raise ValueError(f"--repro: expected NAME=VALUE, got {item!r} in {text!r}")
                key, value = (s.strip() for s in item.split("=", 1))
                if not key:
                    raise ValueError(f"--repro: a field has no name in {item!r}")
                target = shape if i == 0 else extra
                if key in target:
                    raise ValueError(f"--repro: {key!r} is given twice in {text!r}")
                if i == 0:
                    try:
                        shape[key] = int(value)
                    except ValueError:
                        raise ValueError(f"--repro: dimension {key}={value!r} is not an integer") from None
                    if shape[key] < 0:
                        raise ValueError(f"--repro: dimension {key}={value} is negative")
                else:
                    extra[key] = value
        if not shape:
            raise ValueError(f"--repro: no dimensions before the first ';' in {text!r} (e.g. 'M=3,N=17;seed=1')")
        unknown = set(extra) - {"layout", "values", "seed", "restride"}
        if unknown:
            raise ValueError(f"--repro: unknown field(s) {sorted(unknown)}; expected layout, values, seed, restride")
        try:
            seed = int(extra.get("seed", 0))
        except ValueError:
            raise ValueError(f"--repro: seed={extra['seed']!r} is not an integer") from None
        if not 0 <= seed < 2**63:
            raise ValueError(f"--repro: seed={seed} is out of range (0 to 2**63 - 1)")
        return cls(kernel=kernel, dtype=dtype, shape=shape, layout=extra.get("layout", "contiguous"),
                   values=extra.get("values", "normal"), seed=seed, restride=extra.get("restride", ""))

    def as_record(self) -> dict[str, Any]:
        return {
            "kernel": self.kernel,
            "dtype": self.dtype,
            "shape": dict(self.shape),
            "layout": self.layout,
            "values": self.values,
            "seed": self.seed,
            **({"restride": self.restride} if self.restride else {}),
        }

    def __str__(self) -> str:
        layout = f"{self.layout}+{self.restride}" if self.restride else self.layout
        return f"{self.kernel}[{self.dtype}] {json.dumps(dict(self.shape))} {layout} {self.values} seed={self.seed}"


@dataclass(frozen=True)
class Tolerance:
    """How far an output may be from the float64 reference.

    The bound per element is ``safety * ((operand_u + sqrt(K) * u_acc) * mag + u_out * |ref|)``
    plus the output dtype's smallest subnormal, where K is ``reduction(case)``, ``mag``
    is ``magnitude(inputs, ref)`` (the sum of absolute terms that make up the result;
    ``|ref|`` when not given), ``u_acc`` the accumulator's unit roundoff, ``u_out`` the
    output dtype's, and ``operand_u`` the rounding of operands inside the compute (TF32
    or XF32 for an fp32 ``tl.dot`` where the arch rounds them).

    ``accumulator``: the precision the kernel computes in, ``"fp32"``, ``"fp16"`` or ``"fp64"``; None (the default)
    is the case's own: fp64 for an fp64 case, fp32 for every other, so an fp64 case is held to fp64 unless the spec
    says otherwise (a kernel that computes its fp64 cases in fp32 fails).

    ``output_dtype``: only for an output the launcher allocates (``make_outputs=None``): the dtype it is meant to have
    where that is narrower than the case dtype by design (a quantizer's fp8 output from fp32 cases). Such an output
    is judged at its own dtype's rounding and range only where declared, never looser than this dtype's; undeclared,
    an output narrower than the case dtype (fp16 for an fp32 case) is judged at the case dtype's
    (suite/checks/returned.py).

    The same rule can hold every output (``KernelSpec.tolerance``) or one output
    (``KernelSpec.output_tolerances``); ``dtype_safety`` gives a case dtype its own safety factor where that dtype
    needs more room than the others (e.g. ``{"bf16": 16.0}``).
    """

    reduction: Callable[[Case], int] = lambda case: 1
    magnitude: Callable[[dict, dict], dict] | None = None
    safety: float = 4.0  # kernels._validation.DEFAULT_SAFETY
    uses_dot: bool = False
    accumulator: str | None = None
    dtype_safety: Mapping[str, float] = field(default_factory=dict)
    output_dtype: str | None = None

    def safety_for(self, dtype: str) -> float:
        """The safety factor for cases of ``dtype`` (a name such as ``"bf16"``)."""
        return float(self.dtype_safety.get(dtype, self.safety))

    def accumulator_for(self, dtype: str) -> str:
        """The accumulator cases of ``dtype`` are held to: the declared one, else fp64 for fp64 cases, else fp32."""
        if self.accumulator is not None:
            return self.accumulator
        return "fp64" if dtype == "fp64" else "fp32"


@dataclass(frozen=True)
class Property:
    """A kernel-specific property beyond matching the reference.

    ``check(case, device, run)`` builds what it needs (``run(inputs)`` launches the
    kernel on fresh poisoned outputs and returns them) and returns None when the
    property holds, else a message saying what was seen.
    """

    name: str
    description: str
    check: Callable[[Case, str, Callable[[dict], dict]], str | None]


@dataclass(frozen=True)
class CodePath:
    """A path through the kernel that only some shapes and configs take: a loop that runs more than once, a
    masked tail, a grid that spans several groups. ``taken(case, config)`` says whether a case run with a config
    takes it, mirroring the launcher's arithmetic. The suite shows that every declared path was exercised in a
    run, and where the drawn cases missed one it finds a case and config that take it and runs that too.
    ``applies(dtype, family)`` says whether the path exists for that dtype on that vendor family (``nvidia``,
    ``amd``, ``interpret``; None: everywhere), e.g. a TMA path that only 16-bit operands on NVIDIA configs take:
    elsewhere it is neither counted nor searched for."""

    name: str
    description: str
    taken: Callable[[Case, Mapping[str, Any]], bool]
    applies: Callable[[str, str], bool] | None = None

    def applies_to(self, dtype: str, family: str | None) -> bool:
        return self.applies is None or family is None or bool(self.applies(dtype, family))


@dataclass(frozen=True)
class JitKernel:
    """One ``@triton.jit`` function of a spec (wrapped in ``@triton.autotune`` or not) and how to compile it with no
    GPU: ``signature(dtype, meta) -> (signature, constexprs)``, ``meta`` being a config's constexpr part (see
    :func:`signature` and :func:`split_config`). The compile matrix compiles every one of a spec's functions, each
    with the dtypes and configs that launch it: ``used(dtype, config)`` says whether they do (None: all), so a
    kernel that only some configs select (say, a TMA variant) is neither compiled nor pruned with the others.
    ``options``: the launch options the function always runs with, whatever the config (None: the config's)."""

    fn: Any
    signature: Callable[[str, Mapping[str, Any]], tuple[dict, dict]]
    used: Callable[[str, Mapping[str, Any]], bool] | None = None
    options: Mapping[str, Any] | None = None

    @property
    def name(self) -> str:
        return jit_name(self.fn)


@dataclass(frozen=True)
class KnownIssue:
    """An expected failure of this kernel, declared in its module. It joins the entries of the known-issue file
    (``--known-issues``) and matches the same way: ``backend``, ``arch``, ``dtype`` and ``test`` are globs,
    ``triton`` a version specifier ('' for every version). ``failure_pattern``: what fails, a regular expression searched for
    in a failing case's message (a test's failure message, for a property or a benchmark); a failure it does not
    match fails the run, and cases keep running past the ones it covers ('': any failure, discouraged). A matching
    test that passes (no case met the issue) is named "not met in this run" in the verdict; with
    --strict-known-issues it fails the run (XPASS(strict)), to be told when a bug is fixed."""

    id: str
    reason: str
    link: str
    backend: str = "*"
    arch: str = "*"
    triton: str = ""
    dtype: str = "*"
    test: str = "test_matches_reference"
    failure_pattern: str = ""


@dataclass(frozen=True)
class IndexOutput:
    """An integer output of indices into the input ``source`` along ``dim`` where ties are legal (topk's or
    argmax's indices): any index of an element equal to the one the reference picked is right. The output is
    compared by what it selects: ``source`` gathered at the returned indices must equal ``source`` gathered at the
    reference's indices, exactly, and the returned indices must lie in range and, where ``distinct``, differ along
    ``dim`` (topk's k indices name k different elements)."""

    source: str
    dim: int = -1
    distinct: bool = True


def cdiv(a: int, b: int) -> int:
    return -(-a // b)


def row_chunks(rows: int, cols: int, elements: int = 1 << 24) -> list[slice]:
    """Row ranges of about ``elements`` elements (at least one row each): a property's float64 work stays on the
    case's device, in bounded pieces (a nightly case of 1024 x 262144 in float64 is 2 GiB a tensor). Softmax's
    properties keep their own copy (kernels/softmax_online.py's bytes are its tuned configs' source hash)."""
    step = max(1, elements // max(1, cols))
    return [slice(r, min(rows, r + step)) for r in range(0, rows, step)]


def next_power_of_2(n: int) -> int:
    return 1 << max(0, int(n) - 1).bit_length()
