"""Adversarial tries against the autotune source hash of commit 245b84a (suite/checks/autotune.py: source_hash,
_judging_lines, _names_in).

Run from the repository root:  .venv/bin/python evidence/adv-autotune-hash/tries.py
One line per try. No tracked file is touched: every variant is a copy of a shipped kernel module, edited in memory,
written under a fresh /tmp directory and imported from there under its own module name (with
kernels.registry.register made a no-op, so the copies do not clash with the shipped specs). Importing a copy keeps
the loaded code objects and the file on disk in step, which the repository's PlantedPath technique does not do
for an edit that adds or removes lines (try T30 shows it).

For each try:
  new   - did the current source_hash change? (caught / PASSED)
  old   - did the whole-file hash before 245b84a change? (caught / PASSED)
  class - what the edit does: kernel (the compiled kernel or its launch arguments/options differ),
          workload (same kernel, the timed data differ), launch (what the launch runs differs, torch path),
          harmless (only what the suite draws for checks or how it judges)
  verdict - NEW HOLE (real change, passes now, the old hash caught it), OLD HOLE (passes both),
          ok (caught, or a harmless pass), conservative (a harmless edit caught)
  effect - measured on CPU: the launch of one small case (the jit kernels and descriptor_matmul replaced by
          recorders; tensors as (dtype, strides, 16-byte aligned), ints as values), base copy vs edited copy.
"""

from __future__ import annotations

import hashlib
import importlib.util
import inspect
import itertools
import json
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

import torch  # noqa: E402

from kernels import registry  # noqa: E402

registry.load_builtin()
from kernels.spec import Case, unwrap_jit  # noqa: E402
from suite.checks import autotune  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
import fix_sketch  # noqa: E402 - the third column: source_hash with the holes closed (a sketch, not the repo's code)

TMP = Path(tempfile.mkdtemp(prefix="adv-autotune-hash-", dir="/tmp"))
SHIPPED = {
    e["kernel"]: e["source_hash"]
    for e in json.loads((ROOT / "hardware_profiles/autotune/sm_90.json").read_text())["entries"].values()
}
_serial = itertools.count()


# --- the two hashes ------------------------------------------------------------------------------------------------


def hashed_files(spec) -> list[str]:
    """The files source_hash reads (the same loop in the old and the new hash)."""
    files = []
    for obj in (spec.run, *(getattr(unwrap_jit(k.fn), "fn", None) for k in spec.jit_kernels())):
        try:
            path = inspect.getsourcefile(obj) if obj is not None else None
        except TypeError:
            path = None
        if path and path not in files:
            files.append(path)
    return files


def old_hash(spec) -> str:
    """source_hash as it was before 245b84a: the whole files."""
    digest = hashlib.sha256()
    for path in hashed_files(spec):
        digest.update(autotune.Path(path).read_bytes())
    return digest.hexdigest()[:16]


def new_hash(spec) -> str:
    return autotune.source_hash(spec)


# --- variants --------------------------------------------------------------------------------------------------


def apply(source: bytes, edits) -> bytes:
    for old, new in edits:
        n = source.count(old)
        assert n == 1, f"edit anchor found {n} times: {old[:80]!r}"
        source = source.replace(old, new)
    return source


def shipped(rel: str) -> bytes:
    return (ROOT / rel).read_bytes()


def load(source: bytes, filename: str, modname: str | None = None):
    """Import ``source`` from a fresh file under TMP, register() a no-op while it runs."""
    tag = f"v{next(_serial)}"
    folder = TMP / tag
    folder.mkdir()
    path = folder / filename
    path.write_bytes(source)
    name = modname or f"advhash_{tag}_{path.stem}"
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    real = registry.register
    registry.register = lambda s: s
    try:
        spec.loader.exec_module(module)
    finally:
        registry.register = real
    return module


# --- the launch recorder ---------------------------------------------------------------------------------------


def sig(a):
    if isinstance(a, torch.Tensor):
        return (str(a.dtype).replace("torch.", ""), tuple(a.stride()), a.data_ptr() % 16 == 0)
    if isinstance(a, dict):
        return {k: sig(v) for k, v in sorted(a.items())}
    if isinstance(a, (list, tuple)):
        return type(a)(sig(v) for v in a)
    return a


class Recorder:
    def __init__(self, name, log):
        self.name, self.log = name, log

    def __getitem__(self, grid):
        def launch(*args, **kwargs):
            self.log.append((self.name, grid, sig(args), sig(kwargs)))

        return launch


def launch_record(module, spec, case: Case, config: dict):
    """What spec.run launches for ``case`` (inputs from spec.make_inputs on the CPU, as --retune draws them on
    the GPU): the recorded launches and the outputs' sums (for a torch path inside the launch)."""
    log: list = []
    swapped = {}
    for name, value in list(vars(module).items()):
        if type(value).__name__ in ("JITFunction", "Autotuner", "Heuristics"):
            swapped[name] = value
            setattr(module, name, Recorder(name, log))
        elif name == "descriptor_matmul":
            swapped[name] = value
            setattr(module, name, lambda *a, **k: log.append(("descriptor_matmul", None, sig(a), sig(k))))
        elif isinstance(value, dict) and any(type(v).__name__ == "JITFunction" for v in value.values()):
            swapped[name] = value  # reductions.KERNELS: op -> kernel
            setattr(module, name, {k: Recorder(k, log) if type(v).__name__ == "JITFunction" else v for k, v in value.items()})
    try:
        torch.manual_seed(0)
        inputs = spec.make_inputs(case, "cpu")
        outputs = spec.make_outputs(inputs, case) if spec.make_outputs else {}
        for t in outputs.values():
            t.zero_()
        spec.run(inputs, outputs, dict(config))
    finally:
        for name, value in swapped.items():
            setattr(module, name, value)
    sums = {k: round(float(v.double().nan_to_num().abs().sum()), 6) for k, v in sorted(outputs.items())}
    return {"inputs": sig(inputs), "launches": log, "torch_outputs": sums if not log else None}


def diff(a, b) -> str:
    if a == b:
        return "launch identical"
    parts = []
    if a["inputs"] != b["inputs"]:
        changed = [k for k in a["inputs"] if a["inputs"][k] != b["inputs"].get(k)]
        parts.append("inputs " + "; ".join(f"{k}: {a['inputs'][k]} -> {b['inputs'][k]}" for k in changed))
    if a["launches"] != b["launches"]:
        la = [(x[0], x[2], x[3]) for x in a["launches"]]
        lb = [(x[0], x[2], x[3]) for x in b["launches"]]
        if [x[0] for x in la] != [x[0] for x in lb]:
            parts.append(f"kernel {[x[0] for x in la]} -> {[x[0] for x in lb]}")
        else:
            for (n, args_a, kw_a), (_, args_b, kw_b) in zip(la, lb, strict=False):
                d = [f"arg{i} {x} -> {y}" for i, (x, y) in enumerate(zip(args_a, args_b, strict=False)) if x != y]
                d += [
                    f"{k} {kw_a.get(k)} -> {kw_b.get(k)}" for k in sorted(set(kw_a) | set(kw_b)) if kw_a.get(k) != kw_b.get(k)
                ]
                parts.append(f"{n}: " + ", ".join(d))
    if a["torch_outputs"] != b["torch_outputs"]:
        parts.append(f"torch-path outputs {a['torch_outputs']} -> {b['torch_outputs']}")
    return "LAUNCH DIFFERS: " + " | ".join(parts)


# --- the tries -------------------------------------------------------------------------------------------------

CE = "kernels/cross_entropy.py"
CE_CASE = (Case("cross_entropy", "fp16", {"M": 8, "V": 64}, seed=0), {"BLOCK_SIZE": 4096, "num_warps": 16, "num_stages": 3})
CE_TINY = (Case("cross_entropy", "fp32", {"M": 4, "V": 8}, seed=0), {"BLOCK_SIZE": 4096, "num_warps": 16, "num_stages": 3})
MM_CASE = (
    Case("matmul", "fp16", {"M": 64, "N": 64, "K": 64}, seed=0),
    {"BLOCK_M": 128, "BLOCK_N": 256, "BLOCK_K": 64, "GROUP_M": 8, "num_warps": 8, "num_stages": 3, "TMA": 1},
)
F8_CASE = (
    Case("fp8_scaled_matmul", "fp8e4nv", {"M": 64, "N": 64, "K": 64}, seed=0),
    {"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 128, "GROUP_M": 8, "num_warps": 8, "num_stages": 4, "TMA": 1},
)
FQ_CASE = (Case("fp8_quant_rowwise", "fp8e4nv", {"M": 8, "K": 64}, seed=0), {"BLOCK_K": 1024, "num_warps": 8})
SM_CASE = (Case("softmax", "fp16", {"M": 8, "N": 64}, seed=0), {"num_warps": 8})
RS_CASE = (Case("row_sum", "fp16", {"M": 8, "N": 64}, seed=0), {"BLOCK_SIZE": 4096, "num_warps": 8, "num_stages": 3})

# Pieces of base variants (a file state that a retune would first have made valid; the try then edits it).
CE_RUN = b'    run=lambda inp, out, cfg: cross_entropy(inp["logits"], inp["target"], inp["grad_loss"], out, cfg),\n'
CE_REF_EDIT = [
    (
        b'grad = (prob - onehot) * inputs["grad_loss"].double()[:, None]',
        b'grad = (prob - onehot) * inputs["grad_loss"].double()[:, None] * 2',
    )
]
CE_FALLBACK = [
    (
        b'    cfg = config or {}\n    block = cfg.get("BLOCK_SIZE")',
        b"    cfg = config or {}\n"
        b"    if n_cols <= 16:  # a tiny vocabulary: torch, no launch\n"
        b'        ref = _reference({"logits": logits, "target": target, "grad_loss": grad_loss}, None)\n'
        b"        for name, t in out.items():\n"
        b"            t.copy_(ref[name])\n"
        b"        return out\n"
        b'    block = cfg.get("BLOCK_SIZE")',
    )
]
LIMITS = [
    (
        b"IGNORE_INDEX = -100\n",
        b'IGNORE_INDEX = -100\n_LIMITS = {"max_warps": 32}\n\n\ndef _launch_limits(**limits):\n'
        b"    _LIMITS.update(limits)\n    return lambda fn: fn\n",
    ),
    (
        b'    options.setdefault("num_warps", min(max(block // 256, 1), 8))\n',
        b'    options.setdefault("num_warps", min(max(block // 256, 1), 8))\n'
        b'    options["num_warps"] = min(options["num_warps"], _LIMITS["max_warps"])\n',
    ),
]


def T(id, title, rel, attr, edits, klass, base=(), case=None, note="", extra=None, also=()):
    return {
        "id": id,
        "title": title,
        "rel": rel,
        "attr": attr,
        "edits": list(edits),
        "base": list(base),
        "class": klass,
        "case": case,
        "note": note,
        "extra": extra,
        "also": also,
    }


def ignored_rows(module) -> str:
    """T09: the share of rows of a benchmark-like draw (M=4096) that the kernel computes (target not ignored)."""
    case = Case("cross_entropy", "fp16", {"M": 4096, "V": 8}, seed=0)
    target = module.SPEC.make_inputs(case, "cpu")["target"]
    return f"{float((target != module.IGNORE_INDEX).double().mean()):.0%}"


TRIES = [
    # --- controls: the rule as documented -------------------------------------------------------------------
    T(
        "T01",
        "cross_entropy _make_inputs: ignored[0] False -> True (the 245b84a fix, reversed)",
        CE,
        "SPEC",
        [(b"ignored[0] = False", b"ignored[0] = True ")],
        "harmless",
        case=CE_CASE,
    ),
    T(
        "T02",
        "cross_entropy _reference: loss gathers column 1",
        CE,
        "SPEC",
        [(b"x.gather(1, target[:, None])[:, 0]\n    return", b"x.gather(1, target[:, None])[:, 1]\n    return")],
        "harmless",
        case=CE_CASE,
    ),
    T(
        "T03",
        "cross_entropy _magnitude: spread 1.0 -> 2.0",
        CE,
        "SPEC",
        [(b"spread = 1.0 + lse.abs()", b"spread = 2.0 + lse.abs()")],
        "harmless",
    ),
    T(
        "T04",
        "cross_entropy _torch_baseline: label_smoothing added (the speed-up baseline only)",
        CE,
        "SPEC",
        [
            (
                b'reduction="none", ignore_index=IGNORE_INDEX)',
                b'reduction="none", ignore_index=IGNORE_INDEX, label_smoothing=0.0)',
            )
        ],
        "harmless",
    ),
    T(
        "T05",
        "cross_entropy kernel body: valid = target >= ignore_index",
        CE,
        "SPEC",
        [(b"valid = target != ignore_index", b"valid = target >= ignore_index")],
        "kernel",
    ),
    T(
        "T06",
        "cross_entropy launcher: default num_warps block // 128",
        CE,
        "SPEC",
        [(b"block // 256, 1), 8))", b"block // 128, 1), 8))")],
        "kernel",
        case=(Case("cross_entropy", "fp16", {"M": 2, "V": 1024}, seed=0), {}),
    ),
    T(
        "T07",
        "cross_entropy module level: IGNORE_INDEX = -101",
        CE,
        "SPEC",
        [(b"IGNORE_INDEX = -100", b"IGNORE_INDEX = -101")],
        "kernel",
        case=CE_CASE,
    ),
    # --- the draw decides what --retune timed (bench.ConfigTimer times spec.make_inputs' tensors) --------------
    T(
        "T08",
        "cross_entropy _make_inputs: target drawn as int32 (kernel compiled for *i32)",
        CE,
        "SPEC",
        [(b'"target": target.to(device),', b'"target": target.to(device, torch.int32),')],
        "kernel",
        case=CE_CASE,
    ),
    T(
        "T09",
        "cross_entropy _make_inputs: 95% of rows ignored instead of 25% (ignored rows load nothing)",
        CE,
        "SPEC",
        [(b"(gen.uniform((m,), dev) < 0.25)", b"(gen.uniform((m,), dev) < 0.95)")],
        "workload",
        case=CE_CASE,
        note="same compiled kernel, different timed work",
        extra=lambda m: f"rows computed in an M=4096 draw {ignored_rows(m)}",
    ),
    T(
        "T10",
        "matmul _make_inputs: A drawn column-major for the contiguous case (TMA config -> pointer kernel)",
        "kernels/matmul.py",
        "SPEC",
        [
            (
                b'a_layout = "transposed" if case.layout in ("transposed_a", "transposed_ab") else "contiguous"',
                b'a_layout = "transposed" if case.layout in ("transposed_a", "transposed_ab", "contiguous") else "contiguous"',
            )
        ],
        "kernel",
        case=MM_CASE,
    ),
    T(
        "T11",
        "fp8_scaled_matmul _matmul_inputs: B drawn N-major (B_K_MAJOR constexpr flips)",
        "kernels/fp8.py",
        "MATMUL_SPEC",
        [
            (
                b'b_q = bt_q.t().contiguous() if case.layout.endswith("b_rowmajor")',
                b'b_q = bt_q.t().contiguous() if not case.layout.endswith("b_rowmajor")',
            )
        ],
        "kernel",
        case=F8_CASE,
    ),
    T(
        "T12",
        "softmax _make_inputs: rows drawn padded (row stride N+13: no 16-divisibility, misaligned rows)",
        "kernels/softmax.py",
        "SPEC",
        [
            (
                b'return {"x": inputs.rows(case, device, inputs.generator(case))}',
                b'return {"x": inputs.rows(Case(case.kernel, case.dtype, case.shape, "padded_rows"), device, '
                b"inputs.generator(case))}",
            )
        ],
        "kernel",
        case=SM_CASE,
    ),
    T(
        "T13",
        "fp8_quant_rowwise _quant_inputs: x drawn fp32 instead of bf16 (kernel compiled for *fp32)",
        "kernels/fp8.py",
        "QUANT_SPEC",
        [(b"replace(case, dtype=_high_precision(case.layout))", b'replace(case, dtype="fp32")')],
        "kernel",
        case=FQ_CASE,
    ),
    T(
        "T14",
        "reductions _make_inputs (shared by row_sum/row_max/row_argmax): rows drawn padded",
        "kernels/reductions.py",
        "ROW_SUM",
        [
            (
                b'return {"x": inputs.rows(case, device, gen)}',
                b'return {"x": inputs.rows(Case(case.kernel, case.dtype, case.shape, "padded_rows"), device, gen)}',
            )
        ],
        "kernel",
        case=RS_CASE,
        also=("ROW_MAX", "ROW_ARGMAX"),
    ),
    # --- a judging function the launch calls, one step away from the run lambda ------------------------------
    T(
        "T15",
        "launcher cross_entropy() calls _reference on a tiny-V torch path; edit _reference",
        CE,
        "SPEC",
        CE_REF_EDIT,
        "launch",
        base=CE_FALLBACK,
        case=CE_TINY,
        note="the run lambda names only cross_entropy; _names_in does not follow it",
    ),
    T(
        "T16",
        "control: the run lambda itself calls _reference on that path; edit _reference",
        CE,
        "SPEC",
        CE_REF_EDIT,
        "launch",
        case=CE_TINY,
        base=[
            (
                CE_RUN,
                b"    run=lambda inp, out, cfg: {k: out[k].copy_(v) for k, v in _reference(inp, None).items()} "
                b'if inp["logits"].shape[1] <= 16 else cross_entropy(inp["logits"], inp["target"], '
                b'inp["grad_loss"], out, cfg),\n',
            )
        ],
    ),
    T(
        "T17",
        "alias: _torch_path = _reference at module level, the run lambda calls _torch_path; edit _reference",
        CE,
        "SPEC",
        CE_REF_EDIT,
        "launch",
        case=CE_TINY,
        base=[
            (b"def _magnitude(", b"_torch_path = _reference\n\n\ndef _magnitude("),
            (
                CE_RUN,
                b"    run=lambda inp, out, cfg: {k: out[k].copy_(v) for k, v in _torch_path(inp, None).items()} "
                b'if inp["logits"].shape[1] <= 16 else cross_entropy(inp["logits"], inp["target"], '
                b'inp["grad_loss"], out, cfg),\n',
            ),
        ],
        note="the guard compares __name__ ('_reference') with the names the lambda uses ('_torch_path')",
    ),
    T(
        "T18",
        "control: run lambda with a nested lambda that calls _reference; edit _reference",
        CE,
        "SPEC",
        CE_REF_EDIT,
        "launch",
        case=CE_TINY,
        base=[
            (
                CE_RUN,
                b"    run=lambda inp, out, cfg: (lambda: {k: out[k].copy_(v) for k, v in _reference(inp, None).items()"
                b'})() if inp["logits"].shape[1] <= 16 else cross_entropy(inp["logits"], inp["target"], '
                b'inp["grad_loss"], out, cfg),\n',
            )
        ],
    ),
    T(
        "T19",
        "run = functools.partial(_run), _run calls _reference on the tiny-V path; edit _reference",
        CE,
        "SPEC",
        CE_REF_EDIT,
        "launch",
        case=CE_TINY,
        base=[
            (b"import math\n", b"import functools\nimport math\n"),
            (
                b"def _signature(",
                b'def _run(inp, out, cfg):\n    if inp["logits"].shape[1] <= 16:\n'
                b"        return {k: out[k].copy_(v) for k, v in _reference(inp, None).items()}\n"
                b'    return cross_entropy(inp["logits"], inp["target"], inp["grad_loss"], out, cfg)\n'
                b"\n\ndef _signature(",
            ),
            (CE_RUN, b"    run=functools.partial(_run),\n"),
        ],
        note="a partial has no __code__: nothing is 'named', every judging function is left out",
    ),
    T(
        "T20",
        "control: run = _run (a def, same body); edit _reference",
        CE,
        "SPEC",
        CE_REF_EDIT,
        "launch",
        case=CE_TINY,
        base=[
            (
                b"def _signature(",
                b'def _run(inp, out, cfg):\n    if inp["logits"].shape[1] <= 16:\n'
                b"        return {k: out[k].copy_(v) for k, v in _reference(inp, None).items()}\n"
                b'    return cross_entropy(inp["logits"], inp["target"], inp["grad_loss"], out, cfg)\n'
                b"\n\ndef _signature(",
            ),
            (CE_RUN, b"    run=_run,\n"),
        ],
    ),
    T(
        "T21",
        "control: the launcher calls _parts (a helper _reference/_magnitude share); edit _parts",
        CE,
        "SPEC",
        [(b"lse = torch.logsumexp(x, dim=-1)\n    prob", b"lse = torch.logsumexp(x, dim=-1) * 1\n    prob")],
        "launch",
        base=[
            (
                b'    cfg = config or {}\n    block = cfg.get("BLOCK_SIZE")',
                b'    cfg = config or {}\n    if n_cols <= 16:\n        _parts({"logits": logits, "target": target})\n'
                b'    block = cfg.get("BLOCK_SIZE")',
            )
        ],
    ),
    # --- lines inside the excluded range that run at import, or code that runs when the suite draws ----------
    T(
        "T22",
        "decorator on _make_inputs: @_launch_limits(max_warps=16) -> 8 (the launcher caps num_warps)",
        CE,
        "SPEC",
        [(b"@_launch_limits(max_warps=16)", b"@_launch_limits(max_warps=8) ")],
        "kernel",
        case=CE_CASE,
        base=LIMITS + [(b"def _make_inputs(", b"@_launch_limits(max_warps=16)\ndef _make_inputs(")],
    ),
    T(
        "T23",
        "default argument of _magnitude evaluated at def time: _LIMITS.update(max_warps=16) -> 8",
        CE,
        "SPEC",
        [(b"_=_LIMITS.update(max_warps=16)", b"_=_LIMITS.update(max_warps=8) ")],
        "kernel",
        case=CE_CASE,
        base=LIMITS
        + [
            (
                b"def _magnitude(inputs: dict[str, torch.Tensor], ref: dict[str, torch.Tensor])",
                b"def _magnitude(inputs: dict[str, torch.Tensor], ref: dict[str, torch.Tensor], "
                b"_=_LIMITS.update(max_warps=16))",
            )
        ],
    ),
    T(
        "T24",
        "body of _make_inputs changes module state the launch reads (runs before every timed launch)",
        CE,
        "SPEC",
        [(b'    _LIMITS["max_warps"] = 16\n', b'    _LIMITS["max_warps"] = 8\n')],
        "kernel",
        case=CE_CASE,
        base=LIMITS
        + [
            (
                b"    gen = inputs.generator(case)\n    m, v =",
                b'    _LIMITS["max_warps"] = 16\n    gen = inputs.generator(case)\n    m, v =',
            )
        ],
        note="a body-only exclusion would still miss this",
    ),
    T(
        "T25",
        "shipped file, _make_inputs body gains 'global IGNORE_INDEX; IGNORE_INDEX = -1' (kernel argument)",
        CE,
        "SPEC",
        [
            (
                b"    gen = inputs.generator(case)\n    m, v =",
                b"    global IGNORE_INDEX\n    IGNORE_INDEX = -1\n    gen = inputs.generator(case)\n    m, v =",
            )
        ],
        "kernel",
        case=CE_CASE,
    ),
    T(
        "T26",
        "module-level statement relies on the draw: the launcher casts targets to the dtype _make_inputs "
        "draws; the draw goes int32",
        CE,
        "SPEC",
        [(b'"target": target.to(device),', b'"target": target.to(device, torch.int32),')],
        "kernel",
        case=CE_CASE,
        base=[
            (
                b"def _reference(",
                b'_DRAWN = _make_inputs(Case("cross_entropy", "fp32", {"M": 1, "V": 2}), "cpu")\n\n\ndef _reference(',
            ),
            (b"    cfg = config or {}\n", b'    target = target.to(_DRAWN["target"].dtype)\n    cfg = config or {}\n'),
        ],
    ),
    # --- how the exclusion treats other shapes of function ---------------------------------------------------
    T(
        "T27",
        "matmul reference is a lambda in the spec: edit it",
        "kernels/matmul.py",
        "SPEC",
        [
            (
                b'reference=lambda inp, case: {"c": inp["a"].double() @ inp["b"].double()}',
                b'reference=lambda inp, case: {"c": inp["a"].double() @ inp["b"].double() * 1}',
            )
        ],
        "harmless",
    ),
    T(
        "T40",
        "reductions: the run lambda (inside the _spec factory) calls its closure variable torch_baseline on "
        "a narrow-row torch path; ROW_SUM's baseline is the def _sum_baseline; edit _sum_baseline",
        "kernels/reductions.py",
        "ROW_SUM",
        [(b'    return inp["x"].sum(dim=-1)\n', b'    return inp["x"].sum(dim=-1) * 2\n')],
        "launch",
        case=(Case("row_sum", "fp32", {"M": 4, "N": 3}, seed=0), {}),
        base=[
            (
                b'        run=lambda inp, out, cfg: row_reduce(op, inp["x"], out["out"], cfg),',
                b'        run=lambda inp, out, cfg: row_reduce(op, inp["x"], out["out"], cfg) if inp["x"].shape[1] > 4 '
                b'else out["out"].copy_(torch_baseline(inp)),',
            ),
            (b"ROW_SUM = _spec(", b'def _sum_baseline(inp):\n    return inp["x"].sum(dim=-1)\n\n\nROW_SUM = _spec('),
            (b'                lambda inp: inp["x"].sum(dim=-1))', b"                _sum_baseline)"),
        ],
        note="named holds the freevar 'torch_baseline', the function is '_sum_baseline'",
    ),
    T(
        "T41",
        "residual of fix_sketch: _magnitude's body (no global statement) sets _LIMITS['max_warps'] that the launcher reads",
        CE,
        "SPEC",
        [(b'    _LIMITS["max_warps"] = 16\n    x, valid', b'    _LIMITS["max_warps"] = 8\n    x, valid')],
        "kernel",
        base=LIMITS
        + [
            (
                b"    # moves the loss by e and every probability by about prob * e.\n",
                b'    # moves the loss by e and every probability by about prob * e.\n    _LIMITS["max_warps"] = 16\n',
            )
        ],
        extra=lambda m: (
            "max_warps after one judged case = "
            + str((m.SPEC.tolerance.magnitude(m.SPEC.make_inputs(CE_CASE[0], "cpu"), {}), m._LIMITS["max_warps"])[1])
        ),
        note="magnitude runs after launches in a normal run, never under --retune; later launches see its write",
    ),
    T(
        "T42",
        "_torch_baseline borrows the launcher's docstring: @functools.wraps(cross_entropy, assigned=('__doc__',))"
        "; edit the launcher's num_warps",
        CE,
        "SPEC",
        [(b"block // 256, 1), 8))", b"block // 128, 1), 8))")],
        "kernel",
        case=(Case("cross_entropy", "fp16", {"M": 2, "V": 1024}, seed=0), {}),
        base=[
            (b"import math\n", b"import functools\nimport math\n"),
            (b"def _torch_baseline(", b'@functools.wraps(cross_entropy, assigned=("__doc__",))\ndef _torch_baseline('),
        ],
        note="getsourcelines follows __wrapped__: the lines left out are the launcher's",
    ),
    T(
        "T28",
        "reductions: body of the nested reference() that _reference(op) returns",
        "kernels/reductions.py",
        "ROW_SUM",
        [(b'return {"out": x.sum(dim=-1)}', b'return {"out": x.sum(dim=-1) * 1}')],
        "harmless",
    ),
    T(
        "T29",
        "reductions: the factory line around it (return reference)",
        "kernels/reductions.py",
        "ROW_SUM",
        [(b"    return reference\n", b"    return (reference)\n")],
        "harmless",
    ),
    T(
        "T30",
        "magnitude as a bound method (_Judge().magnitude): edit its body",
        CE,
        "SPEC",
        [(b"spread = 1.0 + lse.abs()", b"spread = 2.0 + lse.abs()")],
        "harmless",
        base=[
            (b"def _magnitude(inputs", b"class _Judge:\n  def magnitude(self, inputs"),
            (b"magnitude=_magnitude,", b"magnitude=_Judge().magnitude,"),
        ],
    ),
    T(
        "T31",
        "magnitude as a staticmethod (_Judge.magnitude, a plain function): edit its body",
        CE,
        "SPEC",
        [(b"spread = 1.0 + lse.abs()", b"spread = 2.0 + lse.abs()")],
        "harmless",
        base=[
            (b"def _magnitude(inputs", b"class _Judge:\n  @staticmethod\n  def magnitude(inputs"),
            (b"magnitude=_magnitude,", b"magnitude=_Judge.magnitude,"),
        ],
    ),
    T(
        "T32",
        "make_inputs = functools.partial(_make_inputs): edit its body as in T01",
        CE,
        "SPEC",
        [(b"ignored[0] = False", b"ignored[0] = True ")],
        "harmless",
        base=[
            (b"import math\n", b"import functools\nimport math\n"),
            (b"make_inputs=_make_inputs,", b"make_inputs=functools.partial(_make_inputs),"),
        ],
    ),
    T(
        "T33",
        "a line added inside _make_inputs (a comment): line numbers after it shift",
        CE,
        "SPEC",
        [(b"    dev = x.device", b"    # a new line\n    dev = x.device")],
        "harmless",
    ),
    T(
        "T34",
        "_torch_baseline moved above _make_inputs (reorder)",
        CE,
        "SPEC",
        [
            (
                b"\n\ndef _torch_baseline(inputs: dict[str, torch.Tensor]) -> torch.Tensor:\n"
                b'    logits = inputs["logits"].detach().requires_grad_()\n'
                b'    loss = torch.nn.functional.cross_entropy(logits, inputs["target"], reduction="none", ignore_index=IGNORE_INDEX)\n'  # noqa: E501 (the source line as shipped)
                b'    loss.backward(inputs["grad_loss"].to(loss.dtype))\n    return logits.grad\n',
                b"",
            ),
            (
                b"\n\ndef _make_inputs(",
                b"\n\ndef _torch_baseline(inputs: dict[str, torch.Tensor]) -> torch.Tensor:\n"
                b'    logits = inputs["logits"].detach().requires_grad_()\n'
                b'    loss = torch.nn.functional.cross_entropy(logits, inputs["target"], reduction="none", ignore_index=IGNORE_INDEX)\n'  # noqa: E501 (the source line as shipped)
                b'    loss.backward(inputs["grad_loss"].to(loss.dtype))\n    return logits.grad\n\n\ndef _make_inputs(',
            ),
        ],
        "harmless",
    ),
    T(
        "T35",
        "fp8.py: the quantization spec's draw, seen from fp8_scaled_matmul (another spec of the file)",
        "kernels/fp8.py",
        "MATMUL_SPEC",
        [
            (
                b'layout = "padded_rows" if case.layout.endswith("padded_rows") else "contiguous"',
                b'layout = "padded_rows" if case.layout.endswith("_padded_rows") else "contiguous"',
            )
        ],
        "harmless",
    ),
]


def run_try(t) -> dict:
    base_src = apply(shipped(t["rel"]), t["base"])
    edit_src = apply(base_src, t["edits"])
    name = Path(t["rel"]).name
    base_mod, edit_mod = load(base_src, name), load(edit_src, name)
    base_spec, edit_spec = getattr(base_mod, t["attr"]), getattr(edit_mod, t["attr"])
    row = {
        "new": new_hash(base_spec) != new_hash(edit_spec),
        "old": old_hash(base_spec) != old_hash(edit_spec),
        "fix": fix_sketch.source_hash(base_spec) != fix_sketch.source_hash(edit_spec),
    }
    if not t["base"]:
        row["base_is_shipped"] = new_hash(base_spec) == SHIPPED.get(base_spec.name)
    if t["case"]:
        case, cfg = t["case"]
        row["effect"] = diff(launch_record(base_mod, base_spec, case, cfg), launch_record(edit_mod, edit_spec, case, cfg))
    for attr in t["also"]:  # other specs of the file the same edit reaches
        a, b = getattr(base_mod, attr), getattr(edit_mod, attr)
        row.setdefault("also", []).append(
            f"{a.name}: new {'caught' if new_hash(a) != new_hash(b) else 'PASSED'}, "
            f"old {'caught' if old_hash(a) != old_hash(b) else 'PASSED'}"
        )
    if t["extra"]:
        row["effect"] = "; ".join(x for x in (row.get("effect"), f"{t['extra'](base_mod)} -> {t['extra'](edit_mod)}") if x)
    return row


# --- tries that need more than one file ------------------------------------------------------------------------


def try_planted_line_shift() -> dict:
    """T36: T33's edit (a line added inside _make_inputs) read through the tests' PlantedPath technique."""
    source_file = ROOT / CE
    planted = apply(source_file.read_bytes(), [(b"    dev = x.device", b"    # a new line\n    dev = x.device")])
    spec = registry.get("cross_entropy")
    before_new, before_old, before_fix = new_hash(spec), old_hash(spec), fix_sketch.source_hash(spec)
    real_path = autotune.Path

    class PlantedPath(type(Path())):
        def read_bytes(self):
            return planted if self.resolve() == source_file.resolve() else super().read_bytes()

    autotune.Path = PlantedPath
    try:
        after_new, after_old, after_fix = new_hash(spec), old_hash(spec), fix_sketch.source_hash(spec)
    finally:
        autotune.Path = real_path
    return {"new": before_new != after_new, "old": before_old != after_old, "fix": before_fix != after_fix}


def try_helper_module() -> dict:
    """T37: kernels/_types.py amd_options (matmul's AMD launch options) drops kpack: _types.py is hashed by no spec."""
    source_file = ROOT / "kernels/_types.py"
    planted = apply(
        source_file.read_bytes(), [(b"AMD_ONLY_OPTIONS if k in config}", b'AMD_ONLY_OPTIONS if k in config and k != "kpack"}')]
    )
    spec = registry.get("matmul")
    before_new, before_old, before_fix = new_hash(spec), old_hash(spec), fix_sketch.source_hash(spec)
    real_path = autotune.Path

    class PlantedPath(type(Path())):
        def read_bytes(self):
            return planted if self.resolve() == source_file.resolve() else super().read_bytes()

    autotune.Path = PlantedPath
    try:
        after_new, after_old, after_fix = new_hash(spec), old_hash(spec), fix_sketch.source_hash(spec)
    finally:
        autotune.Path = real_path
    from kernels import _types

    cfg = {"BLOCK_M": 128, "kpack": 2, "waves_per_eu": 2}
    ns: dict = {}
    exec(compile(planted, str(source_file), "exec"), ns)  # noqa: S102 - the planted helper, for the effect only
    effect = f"amd_options {_types.amd_options(cfg)} -> {ns['amd_options'](cfg)}"
    return {
        "new": before_new != after_new,
        "old": before_old != after_old,
        "fix": before_fix != after_fix,
        "effect": "LAUNCH DIFFERS: " + effect,
    }


LAUNCH_FILE = b"""from __future__ import annotations

import dataclasses
import functools

import triton

from kernels import inputs
from kernels.registry import register
import %(kernel)s as K


def cross_entropy(logits, target, grad_loss, out, config):
    n_rows, n_cols = logits.shape
    cfg = config or {}
    block = cfg.get("BLOCK_SIZE") or min(triton.next_power_of_2(n_cols), 4096)
    options = {k: cfg[k] for k in ("num_warps", "num_stages") if k in cfg}
    options.setdefault("num_warps", min(max(block // 256, 1), 8))
    K.cross_entropy_kernel[(n_rows,)](logits, target, grad_loss, out["loss"], out["lse"], out["grad"], logits.stride(0),
                                      out["grad"].stride(0), n_cols, K.IGNORE_INDEX, BLOCK_SIZE=block, **options)
    return out


def _run(inp, out, cfg):
    return cross_entropy(inp["logits"], inp["target"], inp["grad_loss"], out, cfg)


SPEC = register(dataclasses.replace(K.SPEC, run=%(run)s))
"""


def try_two_files(run: bytes) -> dict:
    """T38/T39: the launcher in its own file, the jit kernel in the kernel file; run = functools.partial(_run)
    (T38) or _run (T39). Edit: the launcher's default num_warps."""
    kernel_name = f"advhash_kernel_{next(_serial)}"
    kernel = load(shipped(CE), "cross_entropy.py", kernel_name)
    base_src = LAUNCH_FILE % {b"kernel": kernel_name.encode(), b"run": run}
    edit_src = apply(base_src, [(b"block // 256, 1), 8))", b"block // 128, 1), 8))")])
    base_mod, edit_mod = load(base_src, "ce_launch.py"), load(edit_src, "ce_launch.py")
    row = {
        "new": new_hash(base_mod.SPEC) != new_hash(edit_mod.SPEC),
        "old": old_hash(base_mod.SPEC) != old_hash(edit_mod.SPEC),
        "fix": fix_sketch.source_hash(base_mod.SPEC) != fix_sketch.source_hash(edit_mod.SPEC),
    }
    case = Case("cross_entropy", "fp16", {"M": 2, "V": 1024}, seed=0)
    logs = []
    for mod in (base_mod, edit_mod):
        log: list = []
        real = kernel.cross_entropy_kernel
        kernel.cross_entropy_kernel = Recorder("cross_entropy_kernel", log)
        try:
            inputs = mod.SPEC.make_inputs(case, "cpu")
            mod.SPEC.run(inputs, mod.SPEC.make_outputs(inputs, case), {})
        finally:
            kernel.cross_entropy_kernel = real
        logs.append({"inputs": sig(inputs), "launches": log, "torch_outputs": None})
    row["effect"] = diff(*logs)
    return row


def try_other_file(edits, title_edit) -> dict:
    """T43/T44: vector_add_int64 is vector_add's spec with its own kernel and run (kernels/vector_add_int64.py); its
    launch goes through vector_add.launch and its draw is vector_add._make_inputs, both in kernels/vector_add.py,
    which no hash of vector_add_int64 reads."""
    mods = []
    for source in (shipped("kernels/vector_add.py"), apply(shipped("kernels/vector_add.py"), edits)):
        va = load(source, "vector_add.py")
        real = sys.modules["kernels.vector_add"]
        sys.modules["kernels.vector_add"] = va  # the int64 copy imports SPEC and launch from this copy
        try:
            mods.append((va, load(shipped("kernels/vector_add_int64.py"), "vector_add_int64.py")))
        finally:
            sys.modules["kernels.vector_add"] = real
    (va0, i0), (va1, i1) = mods
    row = {
        "new": new_hash(i0.SPEC) != new_hash(i1.SPEC),
        "old": old_hash(i0.SPEC) != old_hash(i1.SPEC),
        "fix": fix_sketch.source_hash(i0.SPEC) != fix_sketch.source_hash(i1.SPEC),
        "base_is_shipped": new_hash(i0.SPEC) == SHIPPED["vector_add_int64"],
    }
    row["also"] = [
        f"vector_add: new {'caught' if new_hash(va0.SPEC) != new_hash(va1.SPEC) else 'PASSED'}, old "
        f"{'caught' if old_hash(va0.SPEC) != old_hash(va1.SPEC) else 'PASSED'}"
    ]
    case = Case("vector_add_int64", "fp16", {"N": 4096}, seed=0)
    row["effect"] = diff(
        launch_record(i0, i0.SPEC, case, {"BLOCK_SIZE": 1024, "num_warps": 8}),
        launch_record(i1, i1.SPEC, case, {"BLOCK_SIZE": 1024, "num_warps": 8}),
    )
    return row


SPECIAL = [
    (
        "T43",
        "kernels/vector_add.py launch() gains a num_stages=1 default (tuned configs carry none): vector_add_int64's launch",
        "kernel",
        lambda: try_other_file(
            [
                (
                    b'{"BLOCK_SIZE": 1024, "num_warps": 4, **(config or {})}',
                    b'{"BLOCK_SIZE": 1024, "num_warps": 4, "num_stages": 1, **(config or {})}',
                )
            ],
            "",
        ),
        "shipped, live: vector_add_int64's hash reads vector_add_int64.py only",
    ),
    (
        "T44",
        "kernels/vector_add.py _make_inputs draws x, y one element into a wider buffer (2-byte offset): "
        "vector_add_int64's timed tensors",
        "kernel",
        lambda: try_other_file(
            [
                (
                    b'return {name: inputs.place(inputs.values((n,), case, gen), case, device) for name in ("x", "y")}',
                    b'return {name: inputs.place(inputs.values((n + 1,), case, gen), case, device)[1:] for name in ("x", "y")}',
                )
            ],
            "",
        ),
        "shipped, live: the draw is in a file vector_add_int64's hash never reads",
    ),
    (
        "T36",
        "PlantedPath (the tests' technique) with T33's line-adding edit",
        "harmless",
        try_planted_line_shift,
        "artifact: excluded line numbers come from the loaded code, the bytes from the planted file",
    ),
    (
        "T37",
        "kernels/_types.py amd_options drops kpack (matmul's AMD launch options)",
        "kernel",
        try_helper_module,
        "helper modules are hashed by no spec",
    ),
    (
        "T38",
        "launcher in its own file, run=functools.partial(_run): edit its num_warps",
        "kernel",
        lambda: try_two_files(b"functools.partial(_run)"),
        "getsourcefile(partial) raises: the launcher's file is not hashed",
    ),
    ("T39", "control: the same with run=_run", "kernel", lambda: try_two_files(b"_run"), ""),
]


def verdict(klass: str, new: bool, old: bool) -> str:
    if klass == "harmless":
        return "ok" if not new else "conservative"
    if new:
        return "ok"
    return "NEW HOLE" if old else "OLD HOLE"


def main() -> None:
    print(
        f"# variants under {TMP}; shipped sm_90.json hashes: "
        + ", ".join(f"{k}={v}" for k, v in sorted(SHIPPED.items()) if k in ("cross_entropy", "matmul", "softmax"))
    )
    counts: dict[str, int] = {}
    rows = sorted(
        [(t["id"], t["title"], t["class"], lambda t=t: run_try(t), t["note"]) for t in TRIES] + SPECIAL,
        key=lambda r: int(r[0][1:]),
    )
    for id, title, klass, fn, note in rows:
        try:
            row = fn()
        except Exception as exc:  # noqa: BLE001 - a try that cannot run is reported, not hidden
            print(f"{id} ERROR {type(exc).__name__}: {exc} | {title}")
            counts["error"] = counts.get("error", 0) + 1
            continue
        v = verdict(klass, row["new"], row["old"])
        counts[v] = counts.get(v, 0) + 1
        fixed = verdict(klass, row["fix"], row["old"])
        counts["with fix_sketch: " + fixed] = counts.get("with fix_sketch: " + fixed, 0) + 1
        shipped_ok = (
            ""
            if "base_is_shipped" not in row
            else (" [base hash = shipped]" if row["base_is_shipped"] else " [BASE HASH != SHIPPED]")
        )
        print(
            f"{id} new={'caught' if row['new'] else 'PASSED'} old={'caught' if row['old'] else 'PASSED'} "
            f"class={klass} verdict={v} fix_sketch={'caught' if row['fix'] else 'PASSED'}({fixed}) | {title}{shipped_ok}"
            + (f" | {row['effect']}" if row.get("effect") else "")
            + (f" | {note}" if note else "")
            + (f" | also {'; '.join(row['also'])}" if row.get("also") else "")
        )
    print("# " + ", ".join(f"{k}: {v}" for k, v in sorted(counts.items())) + f" (of {len(rows)} tries)")


if __name__ == "__main__":
    main()
