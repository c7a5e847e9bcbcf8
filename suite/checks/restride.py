"""Layouts users pass, drawn without the spec listing them: the tensors make_inputs built, re-laid out.

A case may carry a *restride* (``Case.restride``) on top of its declared layout: the suite copies each tensor
make_inputs built (and each output make_outputs built, where the launcher takes strided outputs) into new storage
with other strides, so that the kernel sees the same values laid out as users lay them out:

* ``aligned_slice``: a view of a wider tensor, its row stride a multiple of 16 bytes and larger than its width (the
  q/k/v split of a fused projection; the padding holds NaN, or -94 in an integer tensor). Inputs of 2+ dims.
* ``permuted``: a 3-D or 4-D tensor stored with two leading dims swapped (``[B, S, H, D]`` stored as
  ``[B, H, S, D]``, the last dim still unit-stride). Inputs of 3 or 4 dims.
* ``broadcast``: stride 0 along dim 0 (``x[:1].expand_as(x)``: every row is row 0) for the inputs the spec says may
  be broadcast (``KernelSpec.broadcast_inputs``).

A restride is not drawn where it would change nothing (a permuted 2-D tensor) or cost a kernel variant of its own
each time (an aligned slice of rows of width 1, whose stride leaves Triton's class of 1: reach.Steer draws one per
test): ``Meet``. The other two are never drawn; the contract probe (suite/checks/reference_loop.py) tries one of
them, or a layout the spec refuses, once per test: ``unaligned_slice`` (row stride width + 1 element, aligned to nothing),
``strided_outputs`` (outputs as ``aligned_slice``, for a spec whose launcher says it takes contiguous outputs only),
and ``broadcast`` of every input where the spec names none.

Only tensors make_inputs built contiguous are re-laid (a declared layout's strides stay as the spec built them), and
never a mutable input. ``apply`` says which tensors it changed: a case met a restride only where one did.
"""

from __future__ import annotations

import dataclasses
import zlib
from collections.abc import Callable, Mapping
from typing import Any

import torch

from kernels.spec import Case, KernelSpec

DRAWN = ("aligned_slice", "permuted", "broadcast")
PROBES = ("unaligned_slice", "strided_outputs", "broadcast")
ALL = tuple(dict.fromkeys(DRAWN + PROBES))
# The float dtypes whose subnormals are drawn by default (a spec opts out with KernelSpec.no_subnormals).
SUBNORMAL_DTYPES = ("fp32", "fp16", "bf16")


def drawn(spec: KernelSpec) -> tuple[str, ...]:
    """The restrides drawn for ``spec``'s cases: aligned_slice and permuted unless it refuses them, broadcast where it
    names inputs that may be broadcast."""
    out = [r for r in ("aligned_slice", "permuted") if r not in spec.refused_layouts]
    if spec.broadcast_inputs and "broadcast" not in spec.refused_layouts:
        out.append("broadcast")
    return tuple(out)


@dataclasses.dataclass
class Meet:
    """What the drawn restrides meet in a spec's cases, read from one case built per declared layout (``by_rank``):
    layout -> the restrides that meet a tensor by its rank (``ranks``), and, for each tensor an aligned slice
    re-lays, the dim its width is (``widths``; None where no one dim is)."""

    ranks: dict[str, tuple[str, ...]]
    widths: dict[str, list[str | None]]

    def options(self, spec: KernelSpec, case: Case) -> tuple[str, ...]:
        """The restrides ``case`` may be drawn with: ``drawn`` less those that meet no tensor of its layout by rank
        (a permuted 2-D tensor would be as built), and less the aligned slice where every tensor it re-lays has rows
        of width 1 (a row stride above 1 leaves the class Triton specializes a stride of 1 on: a kernel variant of
        its own; reach.Steer slices one such case of a test)."""
        names = self.ranks.get(case.layout)
        out = [r for r in drawn(spec) if names is None or r in names]
        if "aligned_slice" in out and self.thin(case):
            out.remove("aligned_slice")
        return tuple(out)

    def thin(self, case: Case) -> bool:
        """Whether every tensor an aligned slice re-lays in ``case`` has rows of width 1."""
        widths = self.widths.get(case.layout)
        return bool(widths) and all(w is not None and case.shape.get(w) == 1 for w in widths)


def pick(spec: KernelSpec, case: Case, meet: Meet | None = None) -> Case:
    """A drawn case with the restride it takes, chosen by the case itself (a rerun takes the same): of ``drawn``
    (``meet.options``: those that would change something) and none, one each in turn; a case that already names
    one keeps it."""
    options = ("", *(meet.options(spec, case) if meet is not None else drawn(spec)))
    if case.restride or len(options) == 1:
        return case
    choice = options[zlib.crc32(f"{case.dtype};{case.spec_string()}".encode()) % len(options)]
    return dataclasses.replace(case, restride=choice) if choice else case


def _relaid(spec: KernelSpec, restride: str, built: Mapping[str, Any]) -> list[str]:
    """The names of ``built`` (make_inputs' tensors) that ``restride`` may re-lay: tensors built contiguous, never a
    mutable input; for a drawn broadcast, those the spec names."""
    names = [n for n, t in built.items() if isinstance(t, torch.Tensor) and n not in spec.mutable_inputs
             and t.is_contiguous()]
    if restride == "broadcast" and spec.broadcast_inputs:
        names = [n for n in names if n in spec.broadcast_inputs]
    return names


_RANKS = {"aligned_slice": lambda d: d >= 2, "unaligned_slice": lambda d: d >= 2, "strided_outputs": lambda d: d >= 2,
          "permuted": lambda d: d in (3, 4), "broadcast": lambda d: d >= 1}


def by_rank(spec: KernelSpec, built: Mapping[str, Any], made: Mapping[str, Any] | None) -> tuple[str, ...]:
    """The restrides of ``drawn`` that meet a tensor of ``built`` (make_inputs' tensors of one layout) or of its
    outputs ``made`` (where the launcher takes strided outputs) by its rank alone: a permuted tensor has 3 or 4
    dims, a slice 2 or more. Its sizes are the case's (a permuted dim of 1 changes nothing in one case, not in
    another); its rank is the spec's: a spec whose tensors are all 2-D draws no permuted case, which would be
    as built."""
    out = []
    for name in drawn(spec):
        fits = _RANKS[name]
        if any(fits(built[n].dim()) for n in _relaid(spec, name, built)) or (
                made and spec.strided_outputs and name != "broadcast"
                and any(isinstance(t, torch.Tensor) and fits(t.dim()) for t in made.values())):
            out.append(name)
    return tuple(out)


def width_dims(spec: KernelSpec, built: Mapping[str, Any], shape: Mapping[str, int]) -> list[str | None]:
    """For each tensor of ``built`` (make_inputs' for a case of ``shape``, its dims of distinct sizes) an aligned
    slice re-lays, the dim of ``shape`` its width is: the one dim of that size (None: none, or more than one)."""
    out: list[str | None] = []
    for name in _relaid(spec, "aligned_slice", built):
        t = built[name]
        if t.dim() >= 2:
            dims = [d for d, v in shape.items() if v == t.shape[-1]]
            out.append(dims[0] if len(dims) == 1 else None)
    return out


def rows16(spec: KernelSpec, built: Mapping[str, Any]) -> bool:
    """Whether a tensor of ``built`` that an aligned slice re-lays has rows (two or more) whose width is a multiple
    of 16 elements: there the slice's row stride is one too (``row_stride``), the class a launcher that takes a
    16-divisible stride for dense rows gets wrong, and the class no other case of a test may have met."""
    for name in _relaid(spec, "aligned_slice", built):
        t = built[name]
        if t.dim() >= 2 and t.shape[-1] and t.shape[-1] % 16 == 0 and t.numel() // t.shape[-1] >= 2:
            return True
    return False


def meets(spec: KernelSpec, case: Case, built: Mapping[str, Any], made: Mapping[str, Any] | None = None,
          rows16_only: bool = False) -> bool:
    """Whether the case's restride re-lays a tensor of ``built`` (make_inputs' for ``case``) or of its outputs
    ``made`` with something to stride over: a slice of two rows or more, a permuted or broadcast tensor (these
    change nothing along a dim of 1); ``rows16_only``: an input slice whose rows are of a width divisible by 16."""
    if rows16_only:  # an aligned slice, or the case as built, of such rows
        return case.restride in ("aligned_slice", "") and rows16(spec, built)
    tensors = [built[n] for n in inputs(spec, case, built)[1]]
    if made is not None and takes_outputs(spec, case):
        _, names = outputs(spec, case, dict(made), lambda _: None)
        tensors += [made[n] for n in names]
    if case.restride in ("aligned_slice", "unaligned_slice"):
        return any(t.numel() // max(t.shape[-1], 1) >= 2 for t in tensors)
    return bool(tensors)


def _int_class(value: int) -> str:
    """Triton's specialization of an int argument: 1, divisible by 16, or other (count.py's key)."""
    return "1" if value == 1 else "D" if value % 16 == 0 else ""


def classes_changed(before: Mapping[str, Any], after: Mapping[str, Any]) -> int:
    """How many strides of the tensors in both ``before`` and ``after`` (the same names, re-laid) change the class
    Triton specializes a kernel on (1, divisible by 16, other), and how many data pointers their 16-byte alignment:
    each may make a GPU compile a kernel variant that the case as built had not."""
    changed = 0
    for name, new in after.items():
        old = before.get(name)
        if not isinstance(new, torch.Tensor) or not isinstance(old, torch.Tensor) or new is old:
            continue
        changed += sum(_int_class(a) != _int_class(b) for a, b in zip(old.stride(), new.stride(), strict=True))
        changed += (old.data_ptr() % 16 == 0) != (new.data_ptr() % 16 == 0)
    return changed


def probes(spec: KernelSpec, dtype: str) -> list[str]:
    """The undeclared layouts a test of ``spec`` x ``dtype`` may try, in the order it tries them until one meets a
    tensor (none: the spec opts out, saying why): the layouts the spec refuses, broadcast where it declares none,
    strided outputs where it takes contiguous ones only, an unaligned slice; the dtype picks the first, so a kernel's
    tests try several."""
    if spec.no_contract_probe:
        return []
    options = [r for r in spec.refused_layouts]
    if not spec.broadcast_inputs:
        options.append("broadcast")
    if not spec.strided_outputs and spec.make_outputs is not None:
        options.append("strided_outputs")
    options.append("unaligned_slice")
    first = zlib.crc32(f"{spec.name};{dtype}".encode()) % len(options)
    return options[first:] + options[:first]


def _fill(dtype: torch.dtype) -> float | int | bool:
    if dtype.is_floating_point:
        return float("nan")
    if dtype == torch.bool:
        return False
    return 0x5A if dtype == torch.uint8 else -94


def row_stride(width: int, element_size: int) -> int:
    """The aligned slice's row stride, in elements: above ``width``, a multiple of 16 bytes, and of the width's own
    class for Triton's specialization of an int argument (divisible by 16 or not) where the dtype allows it, so that
    the stride a launcher passes compiles no kernel variant the contiguous case did not: ``width + 16`` where the
    width's rows are 16-byte aligned already (a multiple of 4 fp32 elements, 8 fp16: the stride then keeps the
    width's class, and so does every multiple of it, a batch stride M * stride); else the least multiple of 16
    bytes above the width that is not one of 16 elements. A 1-byte dtype's 16 bytes are 16 elements: there the
    stride is a multiple of 16 whatever the width."""
    unit = max(1, 16 // element_size)
    if width % unit == 0:  # rows 16-byte aligned already: 16 elements more keeps every multiple's class too
        return width + 16
    stride = -(-(width + 1) // unit) * unit
    while stride % 16 == 0 and unit < 16:
        stride += unit
    return stride


def _slice(t: torch.Tensor, aligned: bool, fill: Callable[[torch.Tensor], None] | None = None) -> torch.Tensor | None:
    """``t`` as a view of a wider tensor: row stride a multiple of 16 bytes above the width (``aligned``), else
    width + 1 element. None where ``t`` has under 2 dims or no elements."""
    if t.dim() < 2 or t.numel() == 0 or t.dtype.is_complex:
        return None
    width = t.shape[-1]
    stride = row_stride(width, t.element_size()) if aligned else width + 1
    buf = torch.full((*t.shape[:-1], stride), _fill(t.dtype), dtype=t.dtype, device=t.device)
    if fill is not None:
        fill(buf)
    view = buf[..., :width]
    view.copy_(t)
    return view


def _permuted(t: torch.Tensor) -> torch.Tensor | None:
    """A 3-D (dims 0, 1) or 4-D (dims 1, 2) tensor stored with two leading dims swapped; None where they would not
    change the strides (a dim of size 1) or ``t`` is of other rank."""
    if t.dim() not in (3, 4) or t.numel() == 0:
        return None
    a, b = (0, 1) if t.dim() == 3 else (1, 2)
    if t.shape[a] < 2 or t.shape[b] < 2:
        return None
    return t.transpose(a, b).contiguous().transpose(a, b)


def _broadcast(t: torch.Tensor) -> torch.Tensor | None:
    if t.dim() < 1 or t.shape[0] < 2:
        return None
    return t[:1].expand_as(t)


def _one(restride: str, t: torch.Tensor) -> torch.Tensor | None:
    if restride == "aligned_slice":
        return _slice(t, aligned=True)
    if restride == "unaligned_slice":
        return _slice(t, aligned=False)
    if restride == "permuted":
        return _permuted(t)
    if restride == "broadcast":
        return _broadcast(t)
    return None


def undeclared(spec: KernelSpec, case: Case) -> bool:
    """Whether ``case`` is the contract probe's: a restride the spec does not draw. The launcher may take it by a
    path of its own (torch, or the kernel on contiguous copies it makes): what users get is its values, so those are
    judged, where a drawn case fails a launch that computed without the kernel or reached none of the outputs."""
    return bool(case.restride) and case.restride not in drawn(spec)


def unknown(restride: str) -> str | None:
    """Why ``restride`` names no restride (a --repro typo, say), or None."""
    if restride and restride not in ALL:
        return f"restride {restride!r} is not one of {list(ALL)} (or none)"
    return None


def inputs(spec: KernelSpec, case: Case, built: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """The inputs with the case's restride applied, and the names of those it changed."""
    if not case.restride or case.restride == "strided_outputs":
        return built, []
    names = _relaid(spec, case.restride, built)
    out, changed = dict(built), []
    for name in names:
        new = _one(case.restride, built[name])
        if new is not None:
            out[name] = new
            changed.append(name)
    return out, changed


def takes_outputs(spec: KernelSpec, case: Case) -> bool:
    """Whether the case's outputs are re-laid too: a strided restride and a launcher that takes strided outputs
    (or the probe of strided outputs)."""
    if case.restride == "strided_outputs":
        return True
    return spec.strided_outputs and case.restride in ("aligned_slice", "permuted", "unaligned_slice")


def outputs(spec: KernelSpec, case: Case, made: dict[str, torch.Tensor],
            poison: Callable[[dict[str, torch.Tensor]], None]) -> tuple[dict[str, torch.Tensor], list[str]]:
    """make_outputs' tensors re-laid as the case's restride lays out the inputs (strided_outputs: as aligned_slice),
    their whole storage poisoned; and the names of those changed."""
    if not case.restride or not takes_outputs(spec, case):
        return made, []
    how = "aligned_slice" if case.restride == "strided_outputs" else case.restride
    out, changed = dict(made), []
    for name, t in made.items():
        if how == "permuted":
            new = _permuted(t)
        else:
            new = _slice(t, aligned=how == "aligned_slice", fill=lambda buf: poison({"buf": buf}))
        if new is not None:
            out[name] = new
            changed.append(name)
    return out, changed


def padding(view: torch.Tensor) -> torch.Tensor | None:
    """The padding after each row of an output ``outputs`` laid out as a slice (the rest of its wider buffer), or
    None (a permuted output has none): a kernel that writes it clobbers what users keep there (the other half of a
    fused tensor), so the suite checks it still holds the poison."""
    base = view._base
    if base is None or base.shape[:-1] != view.shape[:-1] or base.shape[-1] <= view.shape[-1]:
        return None
    return base[..., view.shape[-1]:]


def subnormals_implied(spec: KernelSpec, dtype: str) -> bool:
    """Whether subnormal inputs are drawn for ``spec`` x ``dtype`` though the spec does not list them: a float dtype
    that has them, and no ``no_subnormals`` reason."""
    return dtype in SUBNORMAL_DTYPES and not spec.no_subnormals and "subnormal" not in spec.value_classes


def judge(result: Any, name: str) -> tuple[str, str]:
    """What the launcher did with the undeclared layout ``name`` (the contract probe's case ``result``): ("right",
    ""), ("refused", its error: it raised before launching any kernel), ("not judged", why: the spec's own code
    raised on it, or the interpreter cannot run it), ("none met", ...) where no tensor was re-laid, or ("wrong", ""):
    a result off the reference (a launcher's own path for the layout, no kernel or copies of its own, is judged by
    its values: ``undeclared``), or an error raised once a kernel had been launched (a compile error, a fault)."""
    failure = str(result.failure) if result.failure else None
    if not result.restrided and result.passed:
        return "none met", f"no tensor of the case that {name} applies to"
    if result.passed:
        return "right", ""
    if result.raised:
        return "refused", result.message().splitlines()[0][:300]
    if failure in ("spec", "interpreter", "not_checkable", "oom_held", "too_large"):
        return "not judged", result.message().splitlines()[0][:300]
    return "wrong", ""


HOW = {
    "broadcast": ("input(s) with stride 0 along dim 0, every row holding row 0's values, which the reference was "
                  "computed on too", "declare the inputs it takes so: broadcast_inputs=(...)"),
    "unaligned_slice": ("inputs of 2+ dims as a view of a wider tensor, row stride width + 1",
                        "lay them out so through a layout of your own in layouts (kernels.inputs.place's padded_rows)"),
    "strided_outputs": ("outputs as a view of a wider tensor (row stride above the width)",
                        "declare it: strided_outputs=True"),
    "aligned_slice": ("inputs of 2+ dims as a view of a wider tensor, row stride a multiple of 16 bytes",
                      "take it out of refused_layouts"),
    "permuted": ("3-D/4-D inputs with two leading dims swapped in memory", "take it out of refused_layouts"),
}


def undeclared_text(spec: KernelSpec, name: str, result: Any) -> str:
    """The failure of a launcher that accepted a layout ``spec`` did not declare and was wrong on it."""
    what, declare = HOW[name]
    return (f"the launcher accepted a layout the spec did not declare, restride {name!r} ({what}: "
            f"{', '.join(result.restrided)}), and is wrong on it: {result.message()}\n"
            f"Fix the launcher or the kernel and {declare}; or make the launcher refuse that layout (raise a clear "
            f"error, e.g. on x.stride()); or say why the suite must not try it: KernelSpec(no_contract_probe='...') "
            f"(docs/checks.md, Layouts users pass)")
