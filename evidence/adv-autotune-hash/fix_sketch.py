"""A sketch (not the repository's code) of source_hash with the holes tries.py finds closed, used by tries.py as a
third column ("fix"). Four changes to suite/checks/autotune.py at 245b84a:

1. make_inputs is never left out: --retune times the launch on make_inputs' tensors (suite/tools/bench.py
   ConfigTimer), so their dtype, strides, alignment and values are part of what a config was timed on. Only
   reference, the tolerance's magnitude and torch_baseline, which --retune never calls, may be left out.
2. "The launcher uses it" is decided by identity over everything reachable from spec.run (globals resolved in each
   function's __globals__, closure cells, defaults, functools.partial and bound methods, nested code), not by
   comparing __name__ with the names the run lambda's own code holds. A run that is no plain function, partial or
   bound method (a callable object) leaves nothing out.
3. Only the body of a left-out function is left out (its ast body's lines): its decorators, signature, default
   values and annotations, which run at import, stay in the hash. A one-line def leaves nothing out.
4. A function whose code writes a module global (STORE_GLOBAL/DELETE_GLOBAL, nested code included) is kept.
5. A function with __wrapped__ is kept (inspect.getsourcelines follows __wrapped__ to another function's lines).

And, for the old holes:
6. (T38) the launcher's file is found through a partial or bound method (getsourcefile of the underlying function).
7. (T37, T43, T44; optional, a design choice) the source lines of every function reachable from run or from
   make_inputs that is defined in another file, not a library's (a helper such as _types.amd_options,
   vector_add.launch for vector_add_int64, or a draw defined in another module) are hashed too: the function's
   lines only, not its whole file.
"""

from __future__ import annotations

import ast
import dis
import functools
import hashlib
import inspect
import sysconfig
import textwrap

from suite.checks import autotune

LIBRARY = autotune.Path(sysconfig.get_paths()["stdlib"]).resolve()

JUDGING = ("reference", "magnitude", "torch_baseline")


def _underlying(obj):
    while True:
        if isinstance(obj, functools.partial):
            obj = obj.func
        elif inspect.ismethod(obj):
            obj = obj.__func__
        else:
            return obj


def _codes(code):
    yield code
    for const in code.co_consts:
        if inspect.iscode(const):
            yield from _codes(const)


def reachable(root) -> list:
    """Every Python function reachable from ``root`` (identity), or None when root is no function at all."""
    if not inspect.isfunction(_underlying(root)):
        return None
    seen, out, stack = set(), [], [root]
    while stack:
        obj = stack.pop()
        if isinstance(obj, functools.partial):
            stack += [obj.func, *obj.args, *obj.keywords.values()]
            continue
        if inspect.ismethod(obj):
            stack.append(obj.__func__)
            continue
        if not inspect.isfunction(obj) or id(obj) in seen:
            continue
        seen.add(id(obj))
        out.append(obj)
        for code in _codes(obj.__code__):
            stack += [obj.__globals__[n] for n in code.co_names if n in obj.__globals__]
        for cell in obj.__closure__ or ():
            try:
                stack.append(cell.cell_contents)
            except ValueError:
                pass
        stack += [*(obj.__defaults__ or ()), *(obj.__kwdefaults__ or {}).values()]
    return out


def _writes_globals(fn) -> bool:
    return any(
        i.opname in ("STORE_GLOBAL", "DELETE_GLOBAL") for code in _codes(fn.__code__) for i in dis.get_instructions(code)
    )


def _body_lines(fn) -> set[int]:
    source, start = inspect.getsourcelines(fn)
    node = ast.parse(textwrap.dedent("".join(source))).body[0]
    if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return set()
    first, last = node.body[0].lineno, node.body[-1].end_lineno
    if first == node.lineno:  # def f(): return x - the body shares the signature's line
        return set()
    return set(range(start + first - 1, start + last))


def judging_lines(spec, path: str) -> set[int]:
    tolerance = getattr(spec, "tolerance", None)
    reached = reachable(spec.run)
    if reached is None:
        return set()
    lines: set[int] = set()
    for fn in (spec.reference, getattr(tolerance, "magnitude", None), spec.torch_baseline):
        if not inspect.isfunction(fn) or fn.__name__ == "<lambda>" or any(fn is r for r in reached):
            continue
        if _writes_globals(fn) or hasattr(fn, "__wrapped__"):
            continue
        try:
            if inspect.getsourcefile(fn) != path:
                continue
            lines |= _body_lines(fn)
        except (OSError, TypeError, SyntaxError):
            continue
    return lines


def _helpers(spec, files: list[str]) -> list[tuple[str, int, int]]:
    """(file, first line, line count) of each function reachable from run or make_inputs defined in a file other
    than those hashed whole, outside the standard library and site-packages."""
    out = set()
    for root in (spec.run, spec.make_inputs):
        for fn in reachable(root) or ():
            try:
                path = inspect.getsourcefile(fn)
                source, start = inspect.getsourcelines(fn)
            except (OSError, TypeError):
                continue
            resolved = autotune.Path(path).resolve()
            if path in files or "site-packages" in resolved.parts or resolved.is_relative_to(LIBRARY):
                continue  # the kernel's own code, wherever it lives (tries.py's copies are under /tmp); not libraries
            out.add((path, start, len(source)))
    return sorted(out)


def source_hash(spec) -> str:
    from kernels.spec import unwrap_jit

    files = []
    for obj in (_underlying(spec.run), *(getattr(unwrap_jit(k.fn), "fn", None) for k in spec.jit_kernels())):
        try:
            path = inspect.getsourcefile(obj) if obj is not None else None
        except TypeError:
            path = None
        if path and path not in files:
            files.append(path)
    digest = hashlib.sha256()
    for path, first, count in _helpers(spec, files):
        lines = autotune.Path(path).read_bytes().splitlines(keepends=True)
        digest.update(b"".join(lines[first - 1 : first - 1 + count]))
    for path in files:
        skip = judging_lines(spec, path)
        kept = [
            line
            for number, line in enumerate(autotune.Path(path).read_bytes().splitlines(keepends=True), 1)
            if number not in skip
        ]
        digest.update(b"".join(kept))
    return digest.hexdigest()[:16]
