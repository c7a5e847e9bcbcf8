"""Subnormals flushed to zero: which flushes a vendor documents, for the message of a case of the ``subnormal`` value
class (kernels/inputs.py) whose results came out 0 where the reference is subnormal.

Such a case holds its outputs to the output dtype's own smallest subnormal (suite/checks/tolerance.py: bound,
``keep_subnormals``), so a flush fails wherever it happens. What the message adds is whose flush it may be:

- NVIDIA: Triton lowers ``tl.exp2``, ``tl.sqrt``, ``tl.rsqrt`` and ``tl.log``/``tl.log2`` on fp32 to PTX's
  approximate ``.ftz`` instructions, which flush fp32 subnormals; ``tl.sqrt_rn``, ``tl.div_rn`` and ``tl.exp`` do not.
- AMD: denormals are kept by default, but ``exp2`` flushes; gfx90a's matrix cores (``tl.dot``) flush fp16 and bf16
  subnormals.
- Triton's CPU interpreter flushes nothing (numpy keeps subnormals), but its fp32 -> bf16 and fp8 conversions garble
  subnormals, so it draws no subnormal cases for those dtypes (suite/checks/strategies.py: drawn_value_classes).

A flush through one of the vendor's documented operations is named as such; any other is the kernel's own.
"""

from __future__ import annotations

import inspect
import re
from typing import Any

from kernels.spec import unwrap_jit

# Operation -> the pattern of its call in a kernel's source, per vendor family.
DOCUMENTED = {
    "nvidia": {"tl.exp2": r"\bexp2\(", "tl.sqrt": r"\bsqrt\(", "tl.rsqrt": r"\brsqrt\(", "tl.log": r"\blog2?\("},
    "amd": {"tl.exp2": r"\bexp2\("},
}
WHY = {
    "nvidia": "on NVIDIA GPUs Triton lowers them on fp32 to PTX's approximate .ftz instructions, which flush fp32 "
              "subnormals (not tl.sqrt_rn, tl.div_rn or tl.exp)",
    "amd": "on AMD GPUs exp2 flushes subnormals (denormals are otherwise kept)",
}


def keeps_subnormals(case: Any) -> bool:
    """Whether the case's outputs are held to their dtype's own smallest subnormal: a case of the subnormal class."""
    return case.values == "subnormal"


def sources(spec: Any) -> str:
    """The source of every @triton.jit function the spec declares (jit_fn, jit_fns); "" where it declares none."""
    found = []
    for kernel in spec.jit_kernels():
        jitted = unwrap_jit(kernel.fn)
        src = getattr(jitted, "src", None)  # a JITFunction's; the interpreter's function keeps the Python one
        if not isinstance(src, str):
            try:
                src = inspect.getsource(getattr(jitted, "fn", jitted))
            except (OSError, TypeError):
                continue
        found.append(src)
    return "\n".join(found)


def documented_ops(spec: Any, backend: Any, dtype: str) -> list[str]:
    """The operations of the spec's kernels that the backend's vendor documents as flushing subnormals."""
    source = sources(spec)
    ops = [op for op, pattern in DOCUMENTED.get(backend.family, {}).items() if re.search(pattern, source)]
    if backend.family == "amd" and backend.arch == "gfx90a" and dtype in ("fp16", "bf16") and re.search(r"\bdot\(",
                                                                                                          source):
        ops.append("tl.dot on gfx90a's matrix cores (they flush fp16/bf16 subnormals)")
    return ops


def note(spec: Any, backend: Any, dtype: str, repro_hint: str = "") -> str:
    """What a case's flushed elements say: the vendor's documented flush, or the kernel's own."""
    if backend.name == "interpret":
        return ("Triton's CPU interpreter flushes nothing: the flush is the kernel's own (a where(|x| < tiny, 0, x), "
                "a cast through a format without subnormals) and would fail on every backend")
    if not sources(spec):
        return (f"the spec declares no jit_fn, so the suite cannot tell whether the kernel calls an operation "
                f"{backend.family} documents as flushing ({', '.join(DOCUMENTED.get(backend.family, {})) or 'none'})")
    ops = documented_ops(spec, backend, dtype)
    if not ops:
        return (f"none of the operations {backend.family} documents as flushing subnormals "
                f"({', '.join(DOCUMENTED.get(backend.family, {})) or 'none'}) is in the kernel's source: the flush is "
                f"the kernel's own")
    return (f"the kernel calls {', '.join(ops)}: {WHY.get(backend.family, 'the vendor documents them as flushing')}: "
            f"this is the vendor's documented flush, where the flushed values pass through them; a flush elsewhere "
            f"would be the kernel's own")
