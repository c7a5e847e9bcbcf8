"""AMD's float -> OCP fp8 conversions, executed from the LLVM IR Triton 3.6.0 compiles for gfx90a and gfx942, against
the suite's model (suite/checks/numerics_fp8.py).

No AMD GPU is at hand. gfx90a and gfx942 have no OCP fp8 instructions (gfx942's ``v_cvt_pk_fp8_f32`` is FNUZ's):
Triton converts to fp8e4nv and fp8e5 there with integer code (shifts, masks, adds, compares and selects; the AMDGCN
shows ``v_add3_u32``, ``v_bfe_u32``, ``v_cndmask_b32``, no ``v_cvt`` to fp8). That code is plain integer arithmetic,
so its LLVM IR can be executed exactly on the CPU, one operation at a time over numpy arrays (:func:`run`): this runs
the compiled conversion itself, not a reading of it. What it cannot show is a miscompilation below the IR (the AMDGPU
backend's instruction selection), which no CPU check shows.

- ``python evidence/numerics/amd_fp8_ir.py write`` compiles a 64-element ``x.to(dst)`` kernel (one warp of 64 lanes,
  one element each) for each target, source and destination, and writes the conversion's IR to
  evidence/numerics/amd-fp8-ir/ (the lines between the input's load and the output's store).
- ``python evidence/numerics/amd_fp8_ir.py check [SOURCE ...]`` executes each on every input of the named sources
  (all three where none is named) and prints how many differ from the model: fp16 and bf16 take seconds; fp32 (2**32
  inputs, in chunks of 2**24 at about 8 s a chunk on one core here) about 35 minutes a conversion, so that the
  harness's test takes instead every sign and exponent with the mantissas at and around each rounding boundary of both
  formats, and random ones (1.1 million inputs a conversion).
- ``python evidence/numerics/amd_fp8_ir.py same`` says whether the committed IR (and fp8_conversions.SM80_ASM, sm_80's
  instruction text) is what the installed Triton compiles now.
tests/checks/test_numerics_fp8.py runs the same comparison on every fp16 and bf16 input and on a sample of fp32 ones.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
IR_DIR = HERE / "amd-fp8-ir"
ARCHS = ("gfx90a", "gfx942")
SOURCES = ("fp32", "fp16", "bf16")
DESTS = ("fp8e4nv", "fp8e5")
DECODED = ("fp8e4nv", "fp8e5")  # fp8 -> fp32, whose IR files are {arch}-{fp8}-fp32.ll
WIDTH = {"i1": 1, "i8": 8, "i16": 16, "i32": 32, "i64": 64, "half": 16, "bfloat": 16, "float": 32, "f16": 16,
         "bf16": 16, "f32": 32}
_ASSIGN = re.compile(r"^\s*(%[\w.]+) = (.*?)(?:, !dbg !\d+)?$")


def ir_file(arch: str, src: str, dst: str) -> Path:
    return IR_DIR / f"{arch}-{src}-{dst}.ll"


def conversion_ir(arch: str, src: str, dst: str) -> str:
    """The conversion's lines of the kernel's LLVM IR, as the installed Triton compiles it for ``arch``."""
    sys.path.insert(0, str(HERE))
    from _amd_fp8_kernel import llir  # a @triton.jit function must live in a file of its own

    text = llir(arch, src, dst)
    body = text[text.index("define amdgpu_kernel"):]
    body = body[:body.index("\n}\n")]
    lines = body.splitlines()
    start = next(i for i, line in enumerate(lines) if "buffer.load" in line)
    stop = next(i for i, line in enumerate(lines) if "buffer.store" in line)
    return "\n".join(re.sub(r", !dbg !\d+$", "", line) for line in lines[start:stop + 1]) + "\n"


def _value(token: str, env: dict[str, np.ndarray]) -> np.ndarray | int:
    token = token.strip()
    if token.startswith("%"):
        return env[token]
    if token in ("true", "false"):
        return int(token == "true")
    if token.startswith(("0xH", "0xR")):
        return int(token[3:], 16)
    if re.fullmatch(r"-?[\d.]+e[+-]\d+", token):
        return int(np.float32(float(token)).view(np.uint32))
    return int(token)


def _mask(width: int) -> int:
    return (1 << width) - 1


def _signed(v: np.ndarray, width: int) -> np.ndarray:
    v = np.asarray(v, dtype=np.int64) & _mask(width)
    return np.where(v >= 1 << (width - 1), v - (1 << width), v)


def _is_nan(bits: np.ndarray, ty: str) -> np.ndarray:
    exp_bits, man_bits = {"float": (8, 23), "half": (5, 10), "bfloat": (8, 7)}[ty]
    exp = (bits >> man_bits) & _mask(exp_bits)
    return (exp == _mask(exp_bits)) & ((bits & _mask(man_bits)) != 0)


def run(ir: str, source_bits: np.ndarray) -> np.ndarray:
    """The conversion's IR executed on the inputs' bit patterns (int64 array): the stored values (uint8 bytes, or
    fp32 for a decode). Only what the stored value depends on is executed (addresses and descriptors are not); a
    name it depends on that the IR does not define, other than the loaded input, is an error."""
    defs: dict[str, str] = {}
    out = load = None
    for line in ir.splitlines():
        if "buffer.store" in line:
            out = re.search(r"\((?:i8|float) (%[\w.]+),", line).group(1)
            break
        m = _ASSIGN.match(line)
        if not m:
            raise ValueError(f"not understood: {line}")
        defs[m.group(1)] = m.group(2)
        if "buffer.load" in m.group(2):
            load = m.group(1)
    if out is None or load is None:
        raise ValueError("no input load and i8 or float store in the IR")
    needed: set[str] = set()
    todo = [out]
    while todo:
        name = todo.pop()
        if name in needed:
            continue
        needed.add(name)
        if name == load:
            continue
        if name not in defs:
            raise ValueError(f"{name}, which the stored value depends on, is not defined in the conversion's IR")
        todo += re.findall(r"%[\w.]+", defs[name])
    env: dict[str, np.ndarray] = {}
    for name, expr in defs.items():
        if name not in needed:
            continue
        try:
            env[name] = _eval(expr, env, source_bits)
        except (AttributeError, KeyError, ValueError) as exc:
            raise ValueError(f"not understood: {name} = {expr} ({exc!r})") from exc
    value = env[out]
    if "buffer.store.f32" in ir:
        return (np.asarray(value, dtype=np.int64) & 0xFFFFFFFF).astype(np.uint32).view(np.float32)
    return (np.asarray(value, dtype=np.int64) & 0xFF).astype(np.uint8)


def _eval(expr: str, env: dict[str, np.ndarray], source_bits: np.ndarray) -> np.ndarray:
    words = expr.replace(",", " ").split()
    op = words[0]
    if "buffer.load" in expr:
        return np.asarray(source_bits, dtype=np.int64)
    if op == "extractelement" and not expr.endswith("i64 0"):
        raise ValueError(f"only element 0 is read here: {expr}")
    if op in ("bitcast", "extractelement"):
        return np.asarray(_value(re.search(r"(%[\w.]+)", expr).group(1), env), dtype=np.int64)
    if op == "insertelement":  # <N x i8> <i8 0, i8 poison, ...>, i8 %x, i64 1: the byte as the high one of an i16
        m = re.match(r"insertelement <\d+ x i8> <i8 0(?:, i8 poison)+>, i8 (\S+), i64 1$", expr)
        return (np.asarray(_value(m.group(1), env), dtype=np.int64) & 0xFF) << 8
    if op == "fpext":  # half -> float, exact
        m = re.match(r"fpext half (\S+) to float$", expr)
        half = (np.asarray(_value(m.group(1), env), dtype=np.int64) & 0xFFFF).astype(np.uint16).view(np.float16)
        return half.astype(np.float32).view(np.uint32).astype(np.int64)
    if op in ("trunc", "zext"):
        m = re.match(r"\w+(?: nuw| nsw)* (\w+) (\S+) to (\w+)", expr)
        return np.asarray(_value(m.group(2), env), dtype=np.int64) & _mask(WIDTH[m.group(3)])
    if op in ("and", "or", "xor", "add", "sub", "shl", "lshr", "ashr", "mul"):
        m = re.match(r"\w+(?: nuw| nsw| exact| disjoint)* (\w+) (\S+), (\S+)$", expr)
        ty, a, b = m.group(1), _value(m.group(2), env), _value(m.group(3), env)
        width = WIDTH[ty]
        a, b = np.asarray(a, dtype=np.int64) & _mask(width), np.asarray(b, dtype=np.int64) & _mask(width)
        result = {"and": lambda: a & b, "or": lambda: a | b, "xor": lambda: a ^ b, "add": lambda: a + b,
                  "sub": lambda: a - b, "mul": lambda: a * b, "shl": lambda: a << b, "lshr": lambda: a >> b,
                  "ashr": lambda: _signed(a, width) >> b}[op]()
        return np.asarray(result, dtype=np.int64) & _mask(width)
    if op == "icmp":
        m = re.match(r"icmp(?: samesign)? (\w+) (\w+) (\S+), (\S+)$", expr)
        pred, width = m.group(1), WIDTH[m.group(2)]
        a = np.asarray(_value(m.group(3), env), dtype=np.int64) & _mask(width)
        b = np.asarray(_value(m.group(4), env), dtype=np.int64) & _mask(width)
        if pred.startswith("s"):
            a, b = _signed(a, width), _signed(b, width)
        return {"eq": a == b, "ne": a != b, "ugt": a > b, "uge": a >= b, "ult": a < b, "ule": a <= b,
                "sgt": a > b, "sge": a >= b, "slt": a < b, "sle": a <= b}[pred].astype(np.int64)
    if op == "select":
        m = re.match(r"select i1 (\S+), \w+ (\S+), \w+ (\S+)$", expr)
        cond = np.asarray(_value(m.group(1), env), dtype=np.int64) != 0
        return np.where(cond, _value(m.group(2), env), _value(m.group(3), env)).astype(np.int64)
    if op == "fcmp":
        m = re.match(r"fcmp (\w+) (\w+) (\S+), (\S+)$", expr)
        pred, ty = m.group(1), m.group(2)
        nan = _is_nan(np.asarray(_value(m.group(3), env), dtype=np.int64), ty)
        if _value(m.group(4), env) != 0:
            raise ValueError(f"fcmp against a non-zero constant: {expr}")
        return {"uno": nan, "ord": ~nan}[pred].astype(np.int64)
    if op == "tail" or op == "call":
        m = re.match(r"(?:tail )?call \w+ @llvm\.([\w.]+)\((.*)\)$", expr)
        name, args = m.group(1), [a.split()[-1] for a in m.group(2).split(",")]
        base, ty = name.rsplit(".", 1)
        width = WIDTH[ty]
        vals = [np.asarray(_value(a, env), dtype=np.int64) & _mask(width) for a in args]
        if base == "umax":
            return np.maximum(vals[0], vals[1])
        if base == "umin":
            return np.minimum(vals[0], vals[1])
        if base == "usub.sat":
            return np.maximum(vals[0] - vals[1], 0)
        if base == "fabs":
            return vals[0] & _mask(width - 1)
        raise ValueError(f"intrinsic not understood: {name}")
    raise ValueError(f"operation not understood: {expr}")


def source_values(src: str, bits: np.ndarray) -> np.ndarray:
    """Bit patterns as the interpreter holds ``src`` values (fp32, fp16 as themselves; bf16 as uint16 bits)."""
    if src == "fp32":
        return bits.astype(np.uint32).view(np.float32)
    if src == "fp16":
        return bits.astype(np.uint16).view(np.float16)
    return bits.astype(np.uint16)


def compare(arch: str, src: str, dst: str, bits: np.ndarray) -> tuple[int, list[tuple[str, str, str]]]:
    """How many of the inputs' bytes differ between the executed IR and the model, and the first few."""
    sys.path.insert(0, str(HERE.parents[1]))
    from suite.checks import numerics_fp8

    got = run(ir_file(arch, src, dst).read_text(), bits)
    want = numerics_fp8.convert(source_values(src, bits), src, dst, arch, "amd")
    bad = np.nonzero(got != want)[0]
    return len(bad), [(hex(int(bits[i])), hex(int(got[i])), hex(int(want[i]))) for i in bad[:5]]


def same() -> list[str]:
    """What differs between the committed code (the IR files, fp8_conversions.SM80_ASM) and what the installed Triton
    compiles now; empty where nothing does."""
    import fp8_conversions

    pairs = [*((src, dst) for src in SOURCES for dst in DESTS), *((src, "fp32") for src in DECODED)]
    differ = [ir_file(arch, src, dst).name for arch in ARCHS for src, dst in pairs
              if conversion_ir(arch, src, dst) != ir_file(arch, src, dst).read_text()]
    asm = fp8_conversions.SM80_ASM
    want = {"fp32": [asm["rz"], asm["fp16"]], "fp16": [asm["fp16"]], "bf16": [asm["bf16"]]}
    differ += [f"SM80_ASM for {src}" for src in want if fp8_conversions.sm80_blocks(src) != want[src]]
    return differ


def compare_decode(arch: str, src: str) -> tuple[int, list[tuple[str, str, str]]]:
    """How many of the 256 codes decode otherwise in the executed IR than in the model (NaN equal to NaN)."""
    sys.path.insert(0, str(HERE.parents[1]))
    from suite.checks import numerics_fp8

    codes = np.arange(256, dtype=np.int64)
    got = run(ir_file(arch, src, "fp32").read_text(), codes)
    want = numerics_fp8.decode(codes.astype(np.uint8), src)
    same = (got.view(np.uint32) == want.view(np.uint32)) | (np.isnan(got) & np.isnan(want))
    bad = np.nonzero(~same)[0]
    return len(bad), [(hex(int(codes[i])), repr(float(got[i])), repr(float(want[i]))) for i in bad[:5]]


def main(what: str) -> None:
    if what == "same":
        differ = same()
        print("the committed code is what Triton compiles" if not differ else f"differs: {', '.join(differ)}")
        raise SystemExit(1 if differ else 0)
    if what == "write":
        IR_DIR.mkdir(exist_ok=True)
        for arch in ARCHS:
            for src, dst in [*((s, d) for s in SOURCES for d in DESTS), *((s, "fp32") for s in DECODED)]:
                ir_file(arch, src, dst).write_text(conversion_ir(arch, src, dst))
        return
    only = sys.argv[2:]  # sources to check (all where none are named)
    for arch in ARCHS:
        for src in SOURCES:
            for dst in DESTS:
                if only and src not in only:
                    continue
                total, differ, first = 0, 0, []
                span = 1 << (32 if src == "fp32" else 16)
                for start in range(0, span, 1 << 24):
                    bits = np.arange(start, min(span, start + (1 << 24)), dtype=np.int64)
                    n, f = compare(arch, src, dst, bits)
                    total, differ, first = total + len(bits), differ + n, first + f
                print(f"{arch} {src}->{dst}: {differ} of {total} differ {first[:5]}", flush=True)
        for src in DECODED:
            differ, first = compare_decode(arch, src)
            print(f"{arch} {src}->fp32: {differ} of 256 codes differ {first}", flush=True)


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "check")
