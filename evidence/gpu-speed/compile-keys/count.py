"""Counts the kernel variants a GPU run would compile, on the interpreter: for every launch of a jitted kernel, the
key Triton 3.6 specializes on, and what first made each key.

    python count.py run TREE OUT.jsonl [pytest args...]   # runs the ci profile of TREE on the interpreter, recording
    python count.py show A.jsonl [B.jsonl ...]            # per kernel, distinct keys of each record, side by side
    python count.py why A.jsonl [KERNEL]                  # per kernel, what first made its keys (KERNEL: each key)
    python count.py cases A.jsonl [B.jsonl ...]           # the cases that launched a kernel, by phase
    python count.py diff OLD.jsonl NEW.jsonl              # the keys NEW has that OLD lacks, what made them, and
                                                          # the arguments that differ from OLD's nearest key

The key is computed with Triton's own code, which runs without a GPU: ``create_function_from_signature`` (the binder
JITFunction builds for each kernel, with its do_not_specialize lists and annotations) over the CUDA backend's
``native_specialize_impl``; a launch's key is (the binder's specialization, str(its options)) as
``compute_cache_key`` makes it: each constexpr's value, each tensor's dtype and whether its data pointer is
16-byte aligned (``D``), each int's class (== 1 a constexpr, divisible by 16 ``D``, other), None a constexpr,
bools and floats unspecialized; the options are the launch's num_warps, num_stages etc. (the GPU adds ``debug`` and
``instrumentation_mode``, the same for every launch: left out). The interpreter launches each case with the configs
of the interpreter's family, so "keys" is per those configs; "arg keys" drops the constexprs and options (what the
layouts and value classes change: a GPU multiplies it by the configs it runs).

"Made by" is read from the suite while it runs: the test, the case (dtype, shape, layout, value class, restride)
and the phase: ``drawn`` (a Hypothesis case), ``property``, ``search`` (a class or config never drawn),
``path-search`` (a declared path no drawn case took), ``restride-search`` (a drawn restride no case met),
``crossing`` (a path with a layout/value class/restride it had not run with), ``probe`` (the contract probe) or,
on trees that plan what the draws missed in one step (ReferenceLoop.fill), ``fill`` (a class, layout or restride
no case met, subnormals, the crossings, together). Only launches are counted: the compile matrix (which compiles
without launching) is not. Each case that launched a kernel (kernels.inputs' draw aside) is recorded too, once per
test and phase (``cases``).
"""

from __future__ import annotations

import collections
import json
import os
import subprocess
import sys

_SEEN: dict[str, set] = {}
_BINDERS: dict[int, object] = {}
_OUT = None


def _binder(fn_obj):
    from triton.backends.nvidia.compiler import CUDABackend
    from triton.runtime.jit import KernelParam, create_function_from_signature
    import inspect

    b = _BINDERS.get(id(fn_obj))
    if b is None:
        sig = inspect.signature(fn_obj.fn)
        kw = fn_obj.kwargs
        dns = kw.get("do_not_specialize") or []
        dna = kw.get("do_not_specialize_on_alignment") or []
        params = [KernelParam(i, p, i in dns or p.name in dns, i in dna or p.name in dna)
                  for i, p in enumerate(sig.parameters.values())]
        b = (create_function_from_signature(sig, params, CUDABackend), [p.name for p in params])
        _BINDERS[id(fn_obj)] = b
    return b


def _record(fn_obj, args, kwargs):
    binder, names = _binder(fn_obj)
    options = {k: v for k, v in kwargs.items() if k not in names}
    call = {k: v for k, v in kwargs.items() if k in names}
    _, spec, _ = binder(*args, **call)
    key = repr((tuple(spec), str(sorted(options.items()))))
    arg_key = repr(tuple(s for s in spec if s[0] != "constexpr"))
    name = f"{fn_obj.fn.__module__}.{fn_obj.fn.__qualname__}"
    seen = _SEEN.setdefault(name, set())
    context = _context()
    case = context.get("case")
    if (case is not None and not name.endswith("._draw_kernel")  # each case that launched a kernel (not the draw)
            and (context["test"], case, context["phase"]) not in _CASES):
        _CASES.add((context["test"], case, context["phase"]))
        _OUT.write(json.dumps({"case": case, "test": context["test"], "phase": context["phase"]}) + "\n")
    if key in seen:
        return
    seen.add(key)
    row = {"kernel": name, "key": key, "arg_key": arg_key,
           "args": {n: list(s) if isinstance(s, tuple) else s for n, s in zip(names, spec)},
           "options": {k: repr(v) for k, v in options.items()}, **context}
    _OUT.write(json.dumps(row, default=repr) + "\n")
    _OUT.flush()


_CASES: set = set()


_PHASES = {"try_contract": "probe", "cross": "crossing", "reach_defaults": "restride-search", "fill": "fill",
           "reach_missing_paths": "path-search", "search": "search"}


def _context():
    """What is launching, read from the call stack (the suite is not patched: it refuses a run whose checking code
    was replaced): the nearest frame holding a ``case`` (harness.run_case, or a property runner's closure), and the
    nearest ReferenceLoop method that names a phase."""
    import sys as _sys

    frame, case, phase = _sys._getframe(2), None, None
    while frame is not None:
        code = frame.f_code
        if case is None and "case" in code.co_varnames + code.co_freevars and "suite" in code.co_filename:
            c = frame.f_locals.get("case")
            if hasattr(c, "shape") and hasattr(c, "layout"):
                case = c
                if "property" in code.co_filename:
                    phase = "property"
        if phase is None and code.co_name in _PHASES and code.co_filename.endswith("reference_loop.py"):
            phase = _PHASES[code.co_name]
        frame = frame.f_back
    ctx = {"test": os.environ.get("PYTEST_CURRENT_TEST", "?").split(" ")[0], "phase": phase or "drawn"}
    if case is not None:
        ctx.update(dtype=case.dtype, shape=dict(case.shape), layout=case.layout, values=case.values,
                   restride=getattr(case, "restride", "") or "", case=f"{case.kernel}[{case.dtype}] "
                   f"{case.spec_string() if hasattr(case, 'spec_string') else case}")
    return ctx


def pytest_configure(config):
    global _OUT
    path = os.environ.get("COMPILE_KEYS_OUT")
    if not path:
        return
    worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
    _OUT = open(f"{path}.{worker}", "a")
    from triton.runtime.interpreter import InterpretedFunction

    orig_run = InterpretedFunction.run

    def run(self, *args, grid, warmup, **kwargs):
        try:
            _record(self, args, kwargs)
        except Exception as exc:  # the count must not change the run: said in the record instead
            _OUT.write(json.dumps({"kernel": "?", "error": repr(exc)[:300]}) + "\n")
        return orig_run(self, *args, grid=grid, warmup=warmup, **kwargs)

    InterpretedFunction.run = run


def _load(path):
    rows = []
    for p in [path] if os.path.exists(path) else []:
        rows += [json.loads(line) for line in open(p)]
    base = os.path.dirname(path) or "."
    for f in sorted(os.listdir(base)):
        if f.startswith(os.path.basename(path) + "."):
            rows += [json.loads(line) for line in open(os.path.join(base, f))]
    firsts: dict[tuple, dict] = {}
    for r in rows:
        if "key" in r:
            firsts.setdefault((r["kernel"], r["key"]), r)
    return list(firsts.values()), [r for r in rows if "error" in r]


def _short(name):
    return name.rsplit(".", 1)[-1] if name.startswith("kernels.") else name


def show(paths):
    tables = []
    for p in paths:
        rows, errors = _load(p)
        if errors:
            print(f"{p}: {len(errors)} launches not keyed, e.g. {errors[0]['error']}")
        keys = collections.Counter(_short(r["kernel"]) for r in rows)
        args = collections.defaultdict(set)
        for r in rows:
            args[_short(r["kernel"])].add(r["arg_key"])
        tables.append((keys, {k: len(v) for k, v in args.items()}))
    names = sorted(set().union(*(t[0] for t in tables)))
    head = " ".join(f"{os.path.basename(p)[:18]:>18}" for p in paths)
    print(f"{'kernel':40} {head}    (keys / arg keys)")
    for n in names:
        print(f"{n[:40]:40} " + " ".join(f"{t[0].get(n, 0):>11} /{t[1].get(n, 0):>5}" for t in tables))
    print(f"{'total':40} " + " ".join(f"{sum(t[0].values()):>11} /{sum(t[1].values()):>5}" for t in tables))


def cases(paths):
    """Per record, the cases that launched a kernel (kernels.inputs' draw of the inputs aside), by what ran them (a
    case run in two phases counts in each; the contract probe's too, which the run file leaves out)."""
    for p in paths:
        rows = []
        base = os.path.dirname(p) or "."
        for f in sorted(os.listdir(base)):
            if f.startswith(os.path.basename(p) + "."):
                rows += [json.loads(line) for line in open(os.path.join(base, f))]
        by = collections.Counter(r["phase"] for r in rows if "case" in r and "key" not in r)
        print(f"{os.path.basename(p)}: {sum(by.values())} cases: " + ", ".join(f"{k} {v}" for k, v in by.most_common()))


def why(path, kernel=None):
    rows, _ = _load(path)
    by = collections.defaultdict(list)
    for r in rows:
        by[_short(r["kernel"])].append(r)
    for n in sorted(by):
        if kernel and n != kernel:
            continue
        made = collections.Counter(f"{r['phase']}:{r.get('restride') or '-'}" for r in by[n])
        print(f"{n}: {len(by[n])} keys; first made by " + ", ".join(f"{k} {v}" for k, v in made.most_common()))
        if kernel:
            for r in by[n]:
                print(f"  {r['phase']:15} {r.get('dtype')} {r.get('restride') or '-':15} {r.get('layout')} "
                      f"{r.get('values')} {json.dumps(r.get('shape'))} {r['key'][:400]}")


def diff(old_path, new_path):
    """Per kernel, the keys of ``new_path`` that ``old_path`` lacks, grouped by what first made them and by which
    arguments differ from the nearest key of ``old_path`` (the fewest differing arguments, same options)."""
    old, _ = _load(old_path)
    new, _ = _load(new_path)
    old_by = collections.defaultdict(list)
    for r in old:
        old_by[r["kernel"]].append(r)
    old_keys = {(r["kernel"], r["key"]) for r in old}
    groups = collections.Counter()
    for r in new:
        if (r["kernel"], r["key"]) in old_keys:
            continue
        best = None
        for o in old_by[r["kernel"]]:
            if o["options"] != r["options"] or set(o["args"]) != set(r["args"]):
                continue
            d = [n for n in r["args"] if o["args"][n] != r["args"][n]]
            if best is None or len(d) < len(best):
                best = d
        what = "no old key with these options" if best is None else ",".join(best) or "same args"
        groups[(_short(r["kernel"]), f"{r['phase']}:{r.get('restride') or '-'}", what)] += 1
    for (k, maker, what), n in sorted(groups.items()):
        print(f"{n:4} {k:28} {maker:28} differs in {what}")
    print(f"{sum(groups.values()):4} new keys in all")


def main(argv):
    if argv[:1] == ["run"]:
        tree, out, rest = argv[1], os.path.abspath(argv[2]), argv[3:]
        here = os.path.dirname(os.path.abspath(__file__))
        env = {**os.environ, "COMPILE_KEYS_OUT": out,
               "PYTHONPATH": here + os.pathsep + os.environ.get("PYTHONPATH", "")}
        for f in os.listdir(os.path.dirname(out) or "."):
            if f.startswith(os.path.basename(out) + "."):
                os.remove(os.path.join(os.path.dirname(out) or ".", f))
        cmd = [sys.executable, "-m", "pytest", "-p", "count", "--backend=interpret", "-p", "no:cacheprovider",
               "--hypothesis-profile=ci", *rest]
        return subprocess.call(cmd, cwd=tree, env=env)
    if argv[:1] == ["show"]:
        return show(argv[1:])
    if argv[:1] == ["cases"]:
        return cases(argv[1:])
    if argv[:1] == ["diff"]:
        return diff(argv[1], argv[2])
    if argv[:1] == ["why"]:
        return why(argv[1], argv[2] if len(argv) > 2 else None)
    print(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]) or 0)
