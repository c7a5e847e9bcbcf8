"""Hazards read from a kernel compiled for an AMD target: its AMDGCN assembly and its TTIR, text only, nothing run.

Three rules, each written from what Triton 3.6 emits for gfx90a, gfx942 and gfx950 (docs/hazards.md, 25-27):

- **Bare transcendentals** (``bare_transcendentals``): ``v_exp_f32``, ``v_log_f32``, ``v_sqrt_f32``, ``v_rsq_f32``
  and ``v_rcp_f32`` do not handle subnormal inputs (LLVM's AMDGPUUsage: the float instruction "does not natively
  support denormal inputs"; LLVM commit 89ccfa1: codegen straight to v_log_f32 "is broken for denormals"). What
  LLVM and ROCm's device libraries emit around them instead is a scaled sequence: the input scaled into the normal
  range (``v_ldexp_f32``, or a ``v_mul_f32`` by a power of two of at least 2^8: ocml's rsqrt scales by 2^24) and
  the result unscaled (again ``v_ldexp_f32`` or a power-of-two multiply), or for ``v_rcp_f32`` the IEEE division's
  ``v_div_scale_f32``. Seen in Triton 3.6 for gfx942 fp32: ``tl.exp``, ``tl.log``, ``tl.log2``, ``x / y``, ``1 / x``
  and ``tl.math.div_rn`` are scaled; ``tl.exp2`` (``llvm.amdgcn.exp2``), ``tl.sqrt`` (``llvm.amdgcn.sqrt``),
  ``tl.math.rsqrt`` and ``tl.math.sqrt_rn`` (``llvm.amdgcn.rsq``, sqrt_rn with a Newton step but no scale) are bare.
  An instruction is scaled when the instruction that last wrote its source register in the same basic block is
  such a scale, or when the next reader of its result in the block is such an unscale; otherwise it is bare, but
  for one whose input is an integer converted to float (v_cvt_f32_u32, through adds and FMAs: the reciprocal in
  64-bit integer division, ``offsets // n_cols``), never subnormal.
- **fp8 decoded in software** (``fp8_software``): a TTIR conversion to or from an fp8 type of a flavour (OCP:
  f8E4M3FN, f8E5M2; FNUZ: f8E4M3FNUZ, f8E5M2FNUZ) the target has no instructions for (gfx90a: none; gfx942: FNUZ;
  gfx950: OCP) compiles to shifts and masks on bytes, not ``v_cvt_*fp8*``/``v_cvt_*bf8*``: slower, and its own
  rounding and saturation.
- **Scans longer than a wavefront** (``long_scans``): a ``tt.scan`` whose axis is longer than the target's wavefront
  (ROCm/triton #947).
"""

from __future__ import annotations

import functools
import linecache
import re
import struct
from pathlib import Path
from typing import Any

TRANSCENDENTALS = ("v_exp_f32", "v_log_f32", "v_sqrt_f32", "v_rsq_f32", "v_rcp_f32")
_TRANSCENDENTAL = re.compile(r"(v_(?:exp|log|sqrt|rsq|rcp)_f32)(?:_e32|_e64)?(?:_dpp|_sdwa)?$")
_MUL = re.compile(r"v_mul_f32(?:_e(?:32|64))?$")
_ANY_TRANSCENDENTAL = re.compile(r"\bv_(?:exp|log|sqrt|rsq|rcp)_f32")
_INT_TO_FLOAT = re.compile(r"v_cvt_f32_[iu]32(?:_e(?:32|64))?$")
_ARITHMETIC = re.compile(r"v_(?:fmamk|fmaak|fmac|fma|madmk|madak|mac|mad|mul|add)_f32(?:_e(?:32|64))?$")
_MIN_SCALE_EXPONENT = 8  # a scale moving subnormals into the normal range: ocml uses 2^24, 2^32, 2^100; LLVM 2^32
_FILE = re.compile(r'^\s*\.file\s+(\d+)\s+"([^"]*)"(?:\s+"([^"]*)")?')
_LOC = re.compile(r"^\s*\.loc\s+(\d+)\s+(\d+)\s+(\d+)")
_LABEL = re.compile(r"^(?:\.LBB\w+|[A-Za-z_]\w*):")  # a block's or function's label; not .Ltmp (debug info)
_BRANCH = re.compile(r"^s_(?:cbranch|branch|setpc|endpgm)")
_REGISTER = re.compile(r"\b([vs])(\d+)\b|\b([vs])\[(\d+):(\d+)\]")

FP8_FLAVOURS = {"f8E4M3FN": "ocp", "f8E5M2": "ocp", "f8E4M3FNUZ": "fnuz", "f8E5M2FNUZ": "fnuz"}
_FP8_TYPE = re.compile(r"(f8E4M3FNUZ|f8E5M2FNUZ|f8E4M3FN|f8E5M2)(?!\w)")  # "tensor<256xf8E4M3FN>": no \\b before
_FP8_CONVERSION = re.compile(r"\b(?:tt\.fp_to_fp|arith\.(?:extf|truncf)|tt\.dot|tt\.dot_scaled)\b")
_HARDWARE_FP8 = re.compile(r"\bv_cvt\w*(?:fp8|bf8)\w*")
_BYTE_TWIDDLE = re.compile(r"\bv_(?:lshlrev|lshrrev|ashrrev|lshl_or|and_or|and|or|bfe|bfi|perm|alignbit)_b32|"
                           r"\bv_(?:lshl|lshr|ashr)_\w+|\bv_bfe_[iu]32")

_SCAN = re.compile(r'"tt\.scan"\(.*?<\{axis = (\d+) : i32[^}]*\}>')
_SCAN_TYPE = re.compile(r"\}\)\s*:\s*\(tensor<([0-9x]+)x[^>]*>")
_LOC_REF = re.compile(r"loc\((#loc\d*)\)\s*$")
_LOC_DEF = re.compile(r"^(#loc\d*) = loc\((.*)\)\s*$", re.M)
_LOC_PLACE = re.compile(r'"([^"]+)":(\d+):(\d+)')


def _registers(operand: str) -> set[str]:
    """The 32-bit registers an operand names (v7, s[4:5] -> s4 s5); modifiers (-v7, |v7|) dropped."""
    names = set()
    for m in _REGISTER.finditer(operand):
        if m[1]:
            names.add(f"{m[1]}{m[2]}")
        else:
            names |= {f"{m[3]}{i}" for i in range(int(m[4]), int(m[5]) + 1)}
    return names


def _instructions(asm: str) -> list[dict[str, Any]]:
    """Instructions in order: mnemonic, operands, the block they are in, and the source place of the debug line
    before them (file path, line; None after a line-0 one)."""
    files: dict[str, str] = {}
    out, block, place = [], 0, None
    for raw in asm.splitlines():
        line = raw.split(";", 1)[0].rstrip()
        if m := _FILE.match(line):
            files[m[1]] = str(Path(m[2]) / m[3]) if m[3] else m[2]
            continue
        if m := _LOC.match(line):  # line 0: code the compiler made for no source line
            place = (files.get(m[1], f"file {m[1]}"), int(m[2])) if int(m[2]) else None
            continue
        stripped = line.strip()
        if _LABEL.match(stripped):  # before directives: a block's label starts with "." too (.LBB0_3:)
            block += 1
            continue
        if not stripped or stripped.startswith(".") or stripped.endswith(":"):
            continue
        mnemonic, _, rest = stripped.partition(" ")
        operands = [o.strip() for o in rest.split(",")] if rest.strip() else []
        out.append({"op": mnemonic, "operands": operands, "block": block, "place": place})
        if _BRANCH.match(mnemonic):
            block += 1
    return out


def _power_of_two_scale(operand: str) -> bool:
    """A literal that is 2^k with |k| >= 8 (0x4f800000 is 2^32): a scale into or out of the subnormal range."""
    try:
        if operand.lower().startswith("0x"):
            bits = int(operand, 16)
        else:
            bits = struct.unpack("<I", struct.pack("<f", float(operand)))[0]
    except (ValueError, OverflowError, struct.error):
        return False
    exponent = (bits >> 23) & 0xFF
    return bits & 0x7FFFFF == 0 and 0 < exponent < 0xFF and abs(exponent - 127) >= _MIN_SCALE_EXPONENT


def _is_scale(ins: dict[str, Any], division: bool = False) -> bool:
    """v_ldexp_f32 or a multiply by a large power of two; v_div_scale_f32 too where ``division`` (the input of a
    v_rcp_f32: the IEEE division's own scaling). Never v_div_scale_f32 reading a result: that is a division of it."""
    if ins["op"].startswith("v_ldexp_f32") or (division and ins["op"].startswith("v_div_scale_f32")):
        return True
    return bool(_MUL.match(ins["op"])) and any(_power_of_two_scale(o) for o in ins["operands"][1:])


def _definition(code: list[dict[str, Any]], at: int, register: str) -> int | None:
    """The index of the instruction that last wrote ``register`` before ``at`` in its basic block."""
    for i in range(at - 1, -1, -1):
        if code[i]["block"] != code[at]["block"]:
            return None
        if code[i]["operands"] and register in _registers(code[i]["operands"][0]):
            return i
    return None


def _from_integers(code: list[dict[str, Any]], at: int, depth: int = 0) -> bool:
    """Whether every register the instruction at ``at`` reads comes from an integer converted to float (v_cvt_f32_u32/
    i32), through adds, multiplies and FMAs with literals: never subnormal (integer division's reciprocal)."""
    ins = code[at]
    if _INT_TO_FLOAT.match(ins["op"]):
        return True
    if depth and not _ARITHMETIC.match(ins["op"]):
        return False
    sources = set().union(*map(_registers, ins["operands"][1:])) if len(ins["operands"]) > 1 else set()
    if not sources or depth > 4:
        return False
    for register in sources:
        defined = _definition(code, at, register)
        if defined is None or not _from_integers(code, defined, depth + 1):
            return False
    return True


def _scaled(code: list[dict[str, Any]], at: int) -> bool:
    """Whether the transcendental at ``at`` has its source scaled before it or its result unscaled after it."""
    ins = code[at]
    if len(ins["operands"]) < 2:
        return False
    dest, sources = _registers(ins["operands"][0]), set().union(*map(_registers, ins["operands"][1:]))
    for prev in reversed(code[:at]):
        if prev["block"] != ins["block"]:
            break
        if prev["operands"] and _registers(prev["operands"][0]) & sources:
            if _is_scale(prev, division=ins["op"].startswith("v_rcp_f32")):
                return True
            break
    for nxt in code[at + 1:]:
        if nxt["block"] != ins["block"]:
            break
        if any(_registers(o) & dest for o in nxt["operands"][1:]):
            if _is_scale(nxt):
                return True
            break
        if nxt["operands"] and _registers(nxt["operands"][0]) & dest:
            break
    return False


_CHECKOUT = Path(__file__).resolve().parents[2]


@functools.cache
def here(file: str | None) -> str | None:
    """A compiled kernel's source file as it is on this machine. Triton's on-disk cache is keyed by the source, not its
    path: a kernel first compiled from another checkout (an earlier clone, since removed) carries that checkout's path
    in its debug lines. Where that file no longer exists, the longest tail of its path, of a directory and a file at
    least, that names a file of this checkout is read instead; otherwise the path is kept (a file that exists is never
    replaced, a bare file name never matched)."""
    if not file or Path(file).is_file():
        return file
    parts = Path(file).parts
    for i in range(0 if not Path(file).is_absolute() else 1, len(parts) - 1):
        candidate = _CHECKOUT.joinpath(*parts[i:])
        if candidate.is_file():
            return str(candidate)
    return file


def bare_transcendentals(asm: str) -> list[dict[str, Any]]:
    """Each bare (unscaled) v_exp/v_log/v_sqrt/v_rsq/v_rcp_f32 of ``asm``, one entry per instruction and source place:
    instruction, count, file, line, source (the line's text where the file is readable)."""
    if not _ANY_TRANSCENDENTAL.search(asm):  # most kernels: nothing to parse
        return []
    code = _instructions(asm)
    found: dict[tuple, dict[str, Any]] = {}
    for i, ins in enumerate(code):
        m = _TRANSCENDENTAL.match(ins["op"])
        if not m or _scaled(code, i) or _from_integers(code, i):
            continue
        file, line = ins["place"] or (None, None)
        file = here(file)
        key = (m[1], file, line)
        if key not in found:
            text = linecache.getline(file, line).strip() if file and line else ""
            found[key] = {"instruction": m[1], "count": 0, "file": file, "line": line, "source": text or None}
        found[key]["count"] += 1
    return list(found.values())


def fp8_software(ttir: str, asm: str, flavour: str | None) -> list[dict[str, Any]]:
    """fp8 types converted in ``ttir`` whose flavour is not the target's ``flavour`` (None: no fp8 instructions):
    one entry per type, with the conversions' count and the assembly's hardware fp8 conversions and byte operations."""
    types: dict[str, int] = {}
    for line in ttir.splitlines():
        if _FP8_CONVERSION.search(line):
            for t in set(_FP8_TYPE.findall(line)):
                types[t] = types.get(t, 0) + 1
    foreign = {t: n for t, n in types.items() if FP8_FLAVOURS[t] != flavour}
    if not foreign:
        return []
    hardware, twiddles = len(_HARDWARE_FP8.findall(asm)), len(_BYTE_TWIDDLE.findall(asm))
    return [{"type": t, "flavour": FP8_FLAVOURS[t], "target_flavour": flavour, "conversions": n,
             "hardware_conversions": hardware, "byte_operations": twiddles} for t, n in sorted(foreign.items())]


def _place(ttir: str, ref: str, depth: int = 0) -> tuple[str, int] | None:
    """The first file:line a TTIR location alias resolves to (through callsite and fused locations)."""
    defs = dict(_LOC_DEF.findall(ttir))
    text = defs.get(ref)
    if text is None or depth > 16:
        return None
    if m := re.fullmatch(r"callsite\((#loc\d*) at (#loc\d*)\)", text.strip()):  # the caller's line: the kernel's
        return _place(ttir, m[2], depth + 1) or _place(ttir, m[1], depth + 1)
    if m := _LOC_PLACE.search(text):
        return m[1], int(m[2])
    for inner in re.findall(r"#loc\d*", text):
        if (found := _place(ttir, inner, depth + 1)) is not None:
            return found
    return None


def long_scans(ttir: str, lanes: int) -> list[dict[str, Any]]:
    """Each ``tt.scan`` of ``ttir`` whose axis is longer than ``lanes``: axis, length, shape, file, line."""
    found = []
    for m in _SCAN.finditer(ttir):
        tail = _SCAN_TYPE.search(ttir, m.end())
        if tail is None:
            continue
        shape = [int(d) for d in tail[1].split("x")]
        axis = int(m[1])
        if axis >= len(shape) or shape[axis] <= lanes:
            continue
        end = ttir.find("\n", tail.end())
        ref = _LOC_REF.search(ttir[tail.start():end if end >= 0 else None])
        file, line = (_place(ttir, ref[1]) if ref else None) or (None, None)
        found.append({"axis": axis, "length": shape[axis], "shape": shape, "lanes": lanes, "file": here(file),
                      "line": line})
    return found


def examine(asm: str, ttir: str, fp8_flavour: str | None, lanes: int) -> dict[str, list[dict[str, Any]]]:
    """The three rules on one compiled kernel, JSON-able (a compile record's ``amd_hazards``)."""
    return {"bare_transcendentals": bare_transcendentals(asm), "fp8_software": fp8_software(ttir, asm, fp8_flavour),
            "long_scans": long_scans(ttir, lanes)}
