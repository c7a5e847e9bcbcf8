"""Which reductions and scans compiled Triton keeps where the interpreter runs them: the race check's barriers
(suite/checks/memcheck.py, ``Races``).

Across warps, Triton lowers a reduction or scan (``tl.sum``, ``tl.max``, ``tl.reduce``, ``tl.cumsum``, ...) through
shared memory with a barrier (``bar.sync``), which orders every global access of the program before it. The
interpreter runs every one where the source has it, but compiled Triton does not:

- **a reduction whose result nothing uses is deleted** (it is pure: dead code), and its barrier with it. Used means
  reaching, through the values computed from it, a store, an atomic, a ``device_print``, a branch or loop that does
  any of those, a call the analysis cannot see into, or the return of a function whose call is used. A result used
  only under an ``if`` on a constexpr the launch makes false is unused: that branch is not compiled; so is one
  passed to a jitted helper whose result and effects do not depend on that argument (the helper is inlined);
- **a reduction in a loop whose operands the loop does not change is hoisted out of it** (loop-invariant code
  motion), so it orders nothing within the loop: its barrier runs once, before the loop. Only one directly in the
  loop's body (one inside an ``if`` in the loop stays), on operands computed without a load.

Measured offline for sm_90 (``triton.compile``, no GPU; Triton 3.6.0): an unused ``tl.sum`` leaves no ``tt.reduce``
in the TTGIR and no ``bar.sync`` in the PTX, one added times 0.0 into what is stored leaves both; a ``tl.sum`` or
``tl.cumsum`` of a value loaded before an ``scf.for`` moves before the loop, one inside an ``if`` in the loop stays;
one used only under ``if DEBUG`` (DEBUG false) is deleted, and so is one passed to a helper that drops it. The
compiler also deletes what it folds away (an integer sum times 0, ``s - s``, ``tl.where(True, p, s)``, the unused
half of a helper's returned pair): not seen here, such a reduction is taken as a barrier.

The reduction is found from the interpreter's stack: the innermost frame of the kernel's own code and the call it is
making there (its line and columns, Python 3.11's code positions), looked up in the function's source (its AST). A
reduction the analysis cannot place (no source, Python 3.10, a call it cannot find) is taken as a barrier, as
before: no right kernel is blamed for it.
"""

from __future__ import annotations

import ast
import inspect
import linecache
import textwrap
from pathlib import Path
from typing import Any

from suite.checks.semantic_gaps import UNKNOWN, python_function, static_value

_SUITE_DIR = str(Path(__file__).resolve().parents[1]).replace("\\", "/") + "/"
# Calls whose effect the compiler keeps whatever their result: what reaches them is used.
_SINKS = {"store", "device_print", "print", "debug_barrier", "inline_asm_elementwise", "store_tensor_descriptor",
          "scatter", "_experimental_descriptor_store", "tensormap_create"}
_PURE_BUILTINS = {"min", "max", "range", "len", "int", "float", "bool", "abs", "isinstance", "getattr", "tuple",
                  "list", "zip", "enumerate", "round"}
_LOADS = {"load", "atomic_add", "gather", "_experimental_descriptor_load", "load_tensor_descriptor"}

LIVE, DEAD, RETURNED, HOISTED, UNPLACED = "live", "dead", "returned", "hoisted", "unplaced"


class Barriers:
    """Which reductions the compiler keeps (the module docstring), with what it read kept for the next launch: owned
    by the race check (memcheck.Races, in the session's checker), one per process."""

    def __init__(self) -> None:
        self.user_code: dict[Any, bool] = {}  # code object: whether it is the kernel's own (not Triton's or ours)
        self.positions: dict[Any, list] = {}  # code object: its instructions' source positions
        self.functions: dict[Any, _Function | None] = {}  # code object: its function's AST, where found
        self.effects: dict[Any, bool] = {}  # function: whether calling it may store, print or update atomically
        self.reading: set[Any] = set()  # the helpers being read now (a recursive call is not read again)

    def user(self, code: Any) -> bool:
        user = self.user_code.get(code)
        if user is None:
            name = code.co_filename.replace("\\", "/")
            user = not ("/triton/" in name or "/numpy/" in name or name.startswith(_SUITE_DIR) or name.startswith("<"))
            self.user_code[code] = user
        return user

    def kept(self, frame: Any) -> bool:
        """Whether the reduction or scan being made from ``frame`` (a frame of Triton's interpreter, or one above
        it) is one compiled Triton keeps there, barrier and all (module docstring)."""
        f = frame
        while f is not None and not self.user(f.f_code):
            f = f.f_back
        while f is not None:
            verdict = self.verdict(f)
            if verdict != RETURNED:
                return verdict in (LIVE, UNPLACED)
            caller = f.f_back  # used only where the function's result is: its caller's call, unless it is the kernel
            if caller is not None and type(caller.f_locals.get("self")).__name__ == "GridExecutor":
                return False  # the kernel's own return value is dropped
            while caller is not None and not self.user(caller.f_code):
                caller = caller.f_back
            f = caller
        return False

    def verdict(self, frame: Any) -> str:
        function = self.function(frame.f_code)
        if function is None:
            return UNPLACED
        position = self.position(frame)
        if position is None:
            return UNPLACED
        key = function.key(position)
        if key is None:
            return UNPLACED
        return function.analysis(function.statics(frame), frame.f_globals, self).verdict(key)

    def position(self, frame: Any) -> tuple[int, int, int, int] | None:
        positions = getattr(frame.f_code, "co_positions", None)
        if positions is None:
            return None  # Python 3.10: no columns
        table = self.positions.get(frame.f_code)
        if table is None:
            table = self.positions[frame.f_code] = list(positions())
        i = frame.f_lasti // 2
        if not 0 <= i < len(table) or None in table[i]:
            return None
        return table[i]  # type: ignore[return-value]

    def function(self, code: Any) -> _Function | None:
        if code in self.functions:
            return self.functions[code]
        found = None
        try:
            lines = linecache.getlines(code.co_filename)
            block = inspect.getblock(lines[code.co_firstlineno - 1:]) if lines else []
            text = "".join(block)
            tree = ast.parse(textwrap.dedent(text))
            func = tree.body[0] if tree.body else None
            if isinstance(func, (ast.FunctionDef, ast.AsyncFunctionDef)) and func.name == code.co_name:
                indent = len(text) - len(text.lstrip()) if text else 0
                found = _Function(func, code.co_firstlineno - 1, indent)
        except (SyntaxError, IndexError, OSError, TypeError, ValueError):
            found = None
        self.functions[code] = found
        return found

    def parameters_used(self, py: Any) -> dict[str, bool] | None:
        """For each parameter of function ``py``, whether its result (or an effect) depends on it; None where the
        analysis cannot read it."""
        if py in self.reading:
            return None  # a call back into a function being read: every argument counts
        function = self.function(py.__code__)
        if function is None:
            return None
        self.reading.add(py)
        try:
            analysis = function.analysis((), py.__globals__, self)
        finally:
            self.reading.discard(py)
        return {p: p in analysis.entry for p in function.params}

    def has_effects(self, obj: Any) -> bool:
        """Whether calling ``obj`` may have an effect: a jitted function with a store, atomic or print in it (or in
        one it calls); True for what the analysis cannot read."""
        if obj is None:
            return True
        if getattr(obj, "__name__", None) in _PURE_BUILTINS and getattr(obj, "__module__", None) == "builtins":
            return False
        if _triton_function(obj):
            return False  # Triton's own (tl.sum, tl.softmax, a builtin): its name says whether it is a sink
        py = python_function(obj)
        if py is None:
            return not inspect.isclass(obj)
        if py not in self.effects:
            self.effects[py] = False  # a recursive call adds nothing
            self.effects[py] = self._reads_effects(py)
        return self.effects[py]

    def _reads_effects(self, py: Any) -> bool:
        try:
            lines, _ = inspect.getsourcelines(py)
            tree = ast.parse(textwrap.dedent("".join(lines)))
        except (OSError, TypeError, SyntaxError):
            return True
        namespace = dict(py.__globals__)
        local = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)} | \
            {a.arg for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.Lambda)) for a in n.args.args}
        for node in ast.walk(tree):
            if not isinstance(node, ast.Call):
                continue
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
            if name in _SINKS or name.startswith("atomic_"):
                return True
            root = func.value if isinstance(func, ast.Attribute) else None
            while isinstance(root, ast.Attribute):
                root = root.value
            if root is not None and (not isinstance(root, ast.Name) or root.id in local or root.id not in namespace):
                continue  # a method of a value: its name said whether it writes
            target = _resolve(func, namespace, local)
            if target is not None and python_function(target) is py:
                continue
            if self.has_effects(target):
                return True
        return False


class _Function:
    """One function's AST, its calls by position, and its analyses by the values of its constant parameters."""

    def __init__(self, func: ast.FunctionDef | ast.AsyncFunctionDef, line_offset: int, indent: int) -> None:
        self.func, self.offset, self.indent = func, line_offset, indent
        self.calls: dict[tuple[int, int, int, int], ast.Call] = {}
        for node in ast.walk(func):
            if isinstance(node, ast.Call) and node.end_lineno is not None and node.end_col_offset is not None:
                self.calls[(node.lineno + line_offset, node.end_lineno + line_offset, node.col_offset,
                            node.end_col_offset)] = node
        self.params = [a.arg for a in func.args.posonlyargs + func.args.args + func.args.kwonlyargs]
        assigned = {n.id for n in ast.walk(func) if isinstance(n, ast.Name) and isinstance(n.ctx, (ast.Store, ast.Del))}
        self.constant_params = [p for p in self.params if p not in assigned]
        self.locals = set(self.params) | assigned
        self.analyses: dict[tuple, _Analysis] = {}

    def key(self, position: tuple[int, int, int, int]) -> tuple[int, int, int, int] | None:
        if position in self.calls:
            return position
        line, end, col, end_col = position  # the original function's code: columns as the file has them
        moved = (line, end, col - self.indent, end_col - self.indent)
        return moved if moved in self.calls else None

    def statics(self, frame: Any) -> tuple:
        """The parameters holding a Python value (a constexpr: the interpreter passes those as they are), never
        assigned in the function."""
        values = frame.f_locals
        out = []
        for name in self.constant_params:
            value = values.get(name)
            if value is None or isinstance(value, (bool, int, float, str)):
                out.append((name, value))
        return tuple(out)

    def analysis(self, statics: tuple, namespace: dict[str, Any], barriers: Barriers) -> _Analysis:
        found = self.analyses.get(statics)
        if found is None:
            found = self.analyses[statics] = _Analysis(self, dict(statics), namespace, barriers)
        return found


class _Analysis:
    """Liveness of one function's calls, backward over its statements: which calls' results reach an effect (with
    the function's return unused, and with it used), and which reductions a loop would hoist."""

    def __init__(self, function: _Function, statics: dict[str, Any], namespace: dict[str, Any],
                 barriers: Barriers) -> None:
        self.function, self.statics, self.namespace, self.barriers = function, statics, namespace, barriers
        self.live: dict[bool, set[int]] = {}
        self.entry: set[str] = set()  # what the function reads of its parameters where its result is used
        for returned in (False, True):
            self.returned, self.marked = returned, set()
            self.entry = self.block(function.func.body, set())
            self.live[returned] = self.marked
        self.hoisted: set[int] = set()
        self.loops(function.func.body)
        self.ids = {key: id(node) for key, node in function.calls.items()}

    def verdict(self, key: tuple[int, int, int, int]) -> str:
        node = self.ids[key]
        if node in self.hoisted:
            return HOISTED
        if node in self.live[False]:
            return LIVE
        return RETURNED if node in self.live[True] else DEAD

    # the value of a condition where the launch's constants decide it --------------------------------------------
    def decided(self, test: ast.expr) -> Any:
        return static_value(test, self.statics, self.namespace, self.function.locals - set(self.statics))

    # statements, backward ------------------------------------------------------------------------------------------
    def block(self, body: list[ast.stmt], live: set[str]) -> set[str]:
        for stmt in reversed(body):
            live = self.stmt(stmt, live)
        return live

    def stmt(self, node: ast.stmt, live: set[str]) -> set[str]:
        if isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if node.value is None:
                return live
            out = set(live)
            for target in targets:
                out -= _names(target)
            for target in targets:
                out |= self.assigned(target, node.value, live)
            return out | self.effects(node.value)
        if isinstance(node, ast.AugAssign):
            if not isinstance(node.target, ast.Name) or node.target.id in live:
                return live | self.use(node.value) | self.use(node.target)
            return live | self.effects(node.value)
        if isinstance(node, ast.Expr):
            return live | self.effects(node.value)
        if isinstance(node, ast.Return):
            if node.value is None:
                return set()
            return self.use(node.value) if self.returned else self.effects(node.value)
        if isinstance(node, ast.If):
            decided = self.decided(node.test)
            if decided is not UNKNOWN:
                return self.block(node.body if decided else node.orelse, live)
            before = set(self.marked)
            body, orelse = self.block(node.body, live), self.block(node.orelse, live)
            matters = self.marked != before or bool(live & (_assigned(node.body) | _assigned(node.orelse)))
            return body | orelse | (self.use(node.test) if matters else self.effects(node.test))
        if isinstance(node, (ast.For, ast.While)):
            if isinstance(node, ast.While) and self.decided(node.test) is False:
                return self.block(node.orelse, live)
            after = self.block(node.orelse, live)
            loop = set(after)
            for _ in range(64):  # to a fixed point: what one iteration uses, the one before it must keep
                inside = self.block(node.body, loop)
                if isinstance(node, ast.For):
                    inside -= _names(node.target)
                grown = loop | inside
                if grown == loop:
                    break
                loop = grown
            head = node.iter if isinstance(node, ast.For) else node.test
            return loop | self.use(head)
        if isinstance(node, (ast.With, ast.AsyncWith)):
            inside = self.block(node.body, live)
            return inside | set().union(*(self.use(i.context_expr) for i in node.items))
        if isinstance(node, (ast.Pass, ast.Break, ast.Continue, ast.Assert, ast.FunctionDef, ast.AsyncFunctionDef,
                             ast.ClassDef, ast.Import, ast.ImportFrom, ast.Global, ast.Nonlocal)):
            return live  # an assert is compiled only in debug mode: what only it uses is unused
        used = set(live)  # anything else: every expression in it counts as used
        for child in ast.walk(node):
            if isinstance(child, ast.expr):
                used |= self.use(child)
        return used

    def assigned(self, target: ast.expr, value: ast.expr, live: set[str]) -> set[str]:
        if isinstance(target, (ast.Tuple, ast.List)) and isinstance(value, (ast.Tuple, ast.List)) \
                and len(target.elts) == len(value.elts) and not any(isinstance(e, ast.Starred) for e in target.elts):
            out: set[str] = set()
            for t, v in zip(target.elts, value.elts, strict=True):
                out |= self.assigned(t, v, live)
            return out
        names = _names(target)
        if names & live or not names or not all(isinstance(n, (ast.Name, ast.Tuple, ast.List, ast.Starred))
                                                for n in ast.walk(target) if isinstance(n, ast.expr)):
            return self.use(value) | (self.use(target) if not names else set())
        return set()

    # expressions ---------------------------------------------------------------------------------------------------
    def use(self, node: ast.expr) -> set[str]:
        """``node``'s value is used: every call in it is, and the names it reads; but an argument of a jitted
        helper that the helper's result does not depend on is not (the helper is inlined, the argument dropped)."""
        read: set[str] = set()
        stack = [node]
        while stack:
            child = stack.pop()
            if isinstance(child, ast.Call):
                self.marked.add(id(child))
                dropped = self.dropped_arguments(child)
                for part in ast.iter_child_nodes(child):
                    if any(part is d for d in dropped):
                        read |= self.effects(part)
                    else:
                        stack.append(part)
            elif isinstance(child, ast.Name) and isinstance(child.ctx, ast.Load):
                read.add(child.id)
            else:
                stack.extend(ast.iter_child_nodes(child))
        return read

    def dropped_arguments(self, call: ast.Call) -> list[ast.expr]:
        """The arguments of ``call`` (to a jitted function of the kernel's code) that its result does not use."""
        if self.method_of_value(call.func) or any(isinstance(a, ast.Starred) for a in call.args):
            return []
        target = _resolve(call.func, self.namespace, self.function.locals)
        py = python_function(target) if target is not None and not _triton_function(target) else None
        used = self.barriers.parameters_used(py) if py is not None else None
        if used is None:
            return []
        params = list(used)
        dropped = [a for a, p in zip(call.args, params, strict=False) if not used[p]]
        dropped += [k.value for k in call.keywords if k.arg in used and not used[k.arg]]
        return dropped

    def effects(self, node: ast.expr) -> set[str]:
        """The calls in ``node`` that have an effect whatever their result (stores, atomics, prints, calls the
        analysis cannot see into): their arguments are used."""
        read: set[str] = set()
        for child in ast.walk(node):
            if isinstance(child, ast.Call) and self.effectful(child):
                self.marked.add(id(child))
                for arg in [*child.args, *(k.value for k in child.keywords)]:
                    read |= self.use(arg)
        return read

    def effectful(self, call: ast.Call) -> bool:
        func = call.func
        name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
        if name in _SINKS or name.startswith("atomic_"):
            return True
        if self.method_of_value(func):
            return False  # x.to(...), x.sum(0), desc.load(...): its name said whether it writes
        target = _resolve(func, self.namespace, self.function.locals)
        return self.barriers.has_effects(target)

    def method_of_value(self, func: ast.expr) -> bool:
        """``func`` is a method of a value the function computes (``x.sum``), not of a module or global."""
        if not isinstance(func, ast.Attribute):
            return False
        root = func.value
        while isinstance(root, ast.Attribute):
            root = root.value
        return not isinstance(root, ast.Name) or root.id in self.function.locals or root.id not in self.namespace

    # loop-invariant reductions -------------------------------------------------------------------------------------
    def loops(self, body: list[ast.stmt], loop: ast.stmt | None = None) -> None:
        changed = _assigned([loop]) if loop is not None else set()
        for stmt in body:
            if loop is not None and isinstance(stmt, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Expr)):
                value = stmt.value
                for call in (n for n in ast.walk(value) if isinstance(n, ast.Call)) if value is not None else ():
                    if self.invariant(call, changed):
                        self.hoisted.add(id(call))
            if isinstance(stmt, (ast.For, ast.While)):
                self.loops(stmt.body, stmt)
                self.loops(stmt.orelse, loop)
            elif isinstance(stmt, ast.If):
                decided = self.decided(stmt.test)
                if decided is not UNKNOWN:  # a constexpr if: not compiled as a branch, its body stays in the loop
                    self.loops(stmt.body if decided else stmt.orelse, loop)
                else:
                    for inner in ast.walk(stmt):
                        if isinstance(inner, (ast.For, ast.While)):
                            self.loops(inner.body, inner)
            elif isinstance(stmt, (ast.With, ast.AsyncWith)):
                self.loops(stmt.body, loop)

    def invariant(self, call: ast.Call, changed: set[str]) -> bool:
        """A call of Triton's own (a reduction, or a function made of them) on operands the loop does not change,
        computed without loads or calls the analysis cannot see into: hoisted out of the loop."""
        method = self.method_of_value(call.func)
        if method:
            if call.func.attr in _LOADS or call.func.attr in _SINKS or call.func.attr.startswith("atomic_"):
                return False
        elif not _triton_function(_resolve(call.func, self.namespace, self.function.locals)):
            return False
        for arg in [*call.args, *(k.value for k in call.keywords), *([call.func] if method else [])]:
            for child in ast.walk(arg):
                if isinstance(child, ast.Name) and isinstance(child.ctx, ast.Load) and child.id in changed:
                    return False
                if isinstance(child, ast.Call):
                    func = child.func
                    name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
                    if name in _LOADS or name in _SINKS or name.startswith("atomic_"):
                        return False
                    if not self.method_of_value(func) and \
                            not _triton_function(_resolve(func, self.namespace, self.function.locals)):
                        return False
        return True


def _names(target: ast.expr) -> set[str]:
    return {n.id for n in ast.walk(target) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}


def _assigned(body: list[ast.stmt]) -> set[str]:
    out: set[str] = set()
    for stmt in body:
        for n in ast.walk(stmt):
            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store):
                out.add(n.id)
    return out


def _resolve(func: ast.expr, namespace: dict[str, Any], local: list[str]) -> Any:
    parts = []
    while isinstance(func, ast.Attribute):
        parts.append(func.attr)
        func = func.value
    if not isinstance(func, ast.Name) or func.id in local:
        return None
    builtins = namespace.get("__builtins__")
    obj = namespace.get(func.id, (builtins.get(func.id) if isinstance(builtins, dict)
                                  else getattr(builtins, func.id, None)))
    for part in reversed(parts):
        obj = getattr(obj, part, None)
    return obj


def _triton_function(obj: Any) -> bool:
    """Triton's own function (``tl.sum``, ``tl.store``, a jitted one of triton.language), not the kernel's: a
    JITFunction's own ``__module__`` is its class's, so the function under it is asked."""
    if obj is None or inspect.ismodule(obj):
        return False
    py = python_function(obj)
    module = getattr(py if py is not None else obj, "__module__", None) or ""
    return module.startswith("triton")


__all__ = ["Barriers"]
