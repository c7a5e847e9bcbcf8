"""Every shipped spec: what its run is, which files source_hash reads, how many lines _judging_lines leaves out,
the kind of each judging function, and which of them is reachable from run through globals and closures (by
identity). Run from the repository root: .venv/bin/python evidence/adv-autotune-hash/scan_shipped.py"""

import inspect
import sys
import types

sys.path.insert(0, ".")  # run from the repository root
from kernels import registry

registry.load_builtin()
from suite.checks import autotune  # noqa: E402 (the registry first)


def reach(fn, seen):
    """functions transitively reachable from fn through globals/closures (python only)"""
    if not inspect.isfunction(fn) or fn in seen:
        return
    seen.add(fn)
    g = fn.__globals__

    def walk(code):
        for n in code.co_names:
            v = g.get(n)
            if inspect.isfunction(v):
                reach(v, seen)
            elif isinstance(v, types.ModuleType):
                pass
        for c in code.co_consts:
            if inspect.iscode(c):
                walk(c)

    walk(fn.__code__)
    for cell in fn.__closure__ or ():
        try:
            v = cell.cell_contents
        except ValueError:
            continue
        if inspect.isfunction(v):
            reach(v, seen)


for spec in registry.all_specs():
    files = []
    from kernels.spec import unwrap_jit

    for obj in (spec.run, *(getattr(unwrap_jit(k.fn), "fn", None) for k in spec.jit_kernels())):
        try:
            p = inspect.getsourcefile(obj) if obj is not None else None
        except TypeError:
            p = None
        if p and p not in files:
            files.append(p)
    tol = spec.tolerance
    judg = {
        "make_inputs": spec.make_inputs,
        "reference": spec.reference,
        "magnitude": getattr(tol, "magnitude", None),
        "torch_baseline": spec.torch_baseline,
    }
    excl = {}
    for f in files:
        ln = autotune._judging_lines(spec, f)
        if ln:
            excl[f.split("/")[-1]] = len(ln)
    seen = set()
    reach(spec.run, seen)
    hit = [k for k, v in judg.items() if v in seen]
    runname = spec.run.__name__ if hasattr(spec.run, "__name__") else type(spec.run).__name__
    kinds = {
        k: (
            "lambda"
            if getattr(v, "__name__", "") == "<lambda>"
            else (v.__name__ if inspect.isfunction(v) else type(v).__name__)
        )
        for k, v in judg.items()
    }
    print(
        f"{spec.name:24s} run={runname:10s} files={[f.split('/')[-1] for f in files]} excluded_lines={excl} judging={kinds} reachable_from_run={hit}"  # noqa: E501
    )
