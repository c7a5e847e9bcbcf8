"""Python constructs that Triton's compiler and its CPU interpreter evaluate differently, found in a jitted function's
source (its AST), before anything runs, on any machine.

Compiled, Triton lowers ``a and b``, ``a or b`` and ``not a`` on tensors elementwise (it warns that ``and``/``or`` on
block tensors are deprecated, only when compiling, and never for ``not``). The interpreter runs the function as
Python, where a block tensor is always true (``bool()`` of a tensor of more than one element is True there):
``a and b`` is ``b``, ``a or b`` is ``a``, ``not a`` is False, and a chained comparison ``lo <= x < hi`` is
``x < hi``. A mask built so drops its other terms on the interpreter and nowhere else: a right kernel reads out of
bounds or computes wrong values there. Measured with this module's probe (suite/checks/interpreter.py:
``misevaluated``) on Triton 3.6.0 (all four wrong) and 3.9.0 (``and``, ``or``, ``not`` wrong; the chained comparison
right: 3.9 rewrites chains). Triton 3.6's compiler refuses any chained comparison ("simultaneous multiple comparison
is not supported"); 3.9's compiles it as the ``and`` of its comparisons.

Only what is a gap is flagged: an operand that is a *block* tensor where the analysis can tell (made by ``tl.arange``,
``tl.zeros``, ``tl.full``, ``tl.load`` of a block of pointers, ``tl.make_block_ptr``, and anything computed
elementwise from one), in a position where Python's truthiness changes the result:

- ``and`` / ``or``: a block operand anywhere but last (``CONST and mask`` and ``pid < n and mask`` are right on the
  interpreter too: the last operand is returned whole where the ones before it are true);
- ``not``: a block operand (on a scalar, ``not pid`` is right on both: it is a gap for block tensors only);
- a chained comparison: a block operand in any comparison but the last.

Scalars (``tl.program_id``, scalar arguments, constexprs, full reductions) are never flagged; a value whose kind the
analysis cannot tell (a reduction along an axis, a call it does not know) is taken as not a block, so a shipped kernel
gets no finding unless it has the gap. Jitted functions a function calls are followed, with the kinds of the
arguments at each call.
"""

from __future__ import annotations

import ast
import functools
import inspect
import os
import textwrap
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

AND, OR, NOT, CHAIN = "and", "or", "not", "chained comparison"
CONSTRUCTS = (AND, OR, NOT, CHAIN)

# What compiled Triton computes, and what to write instead (the interpreter's result is measured: interpreter.py).
COMPILED = {
    AND: "compiled Triton computes it elementwise (and warns that 'and' on block tensors is deprecated); write `&`",
    OR: "compiled Triton computes it elementwise (and warns that 'or' on block tensors is deprecated); write `|`",
    NOT: "compiled Triton computes it elementwise, without a warning; write `~` on a boolean tensor (or `x == 0`)",
    CHAIN: "Triton 3.6's compiler refuses it ('simultaneous multiple comparison is not supported'), 3.9's computes "
           "the `&` of its comparisons; write `(lo <= x) & (x < hi)`",
}

BLOCK_ANY = 100  # a block tensor whose rank the analysis does not know
_MAKERS = {"arange": 1, "zeros": None, "full": None, "zeros_like": 0, "full_like": 0, "rand": 0, "randn": 0,
           "randint": 0, "randint4x": 0, "rand4x": 0, "randn4x": 0, "cat": 0, "join": 0, "interleave": 0,
           "make_block_ptr": BLOCK_ANY, "histogram": 1}  # rank: an int; None: the shape argument's length; 0: the args'
_SCALARS = {"program_id", "num_programs", "cdiv", "constexpr", "static_range", "range", "multiple_of", "max_contiguous",
            "max_constancy", "device_print", "static_print", "static_assert", "device_assert", "debug_barrier",
            "make_tensor_descriptor", "split"}
_REDUCTIONS = {"sum", "max", "min", "argmax", "argmin", "reduce", "xor_sum", "prod", "reduce_or", "reduce_and"}
_SHAPED = {"reshape", "view", "broadcast_to"}  # rank from the shape argument


@dataclass(frozen=True)
class Gap:
    """One use of a construct the interpreter evaluates differently: what, where, and the expression."""

    construct: str
    function: str
    file: str
    line: int
    source: str

    def where(self) -> str:
        """``file:line``, the file relative to the working directory where it lies below it."""
        try:
            file = os.path.relpath(self.file)
        except ValueError:  # another drive
            file = self.file
        return f"{self.file if file.startswith('..') else file}:{self.line}"

    def describe(self) -> str:
        """'Python `and` on block tensors in <function> at <file>:<line>'."""
        what = "a chained comparison" if self.construct == CHAIN else f"Python `{self.construct}`"
        return f"{what} on block tensors in {self.function} at {self.where()}"


def python_function(fn: Any) -> Any:
    """The plain Python function under ``@triton.jit`` (and any ``@triton.autotune``/``@triton.heuristics``
    wrappers; the interpreter's InterpretedFunction too), or None."""
    seen = 0
    while fn is not None and not inspect.isfunction(fn) and seen < 8:
        fn, seen = getattr(fn, "fn", None), seen + 1
    return fn if inspect.isfunction(fn) else None


def _is_jitted(obj: Any) -> bool:
    return type(obj).__name__ in ("JITFunction", "InterpretedFunction", "Autotuner", "Heuristics") \
        and python_function(obj) is not None


def find(fn: Any) -> list[Gap]:
    """Every gap in jitted function ``fn`` and the jitted functions it calls (each once, in source order)."""
    py = python_function(fn)
    if py is None:
        return []
    return sorted(set(_analyse(py, ())[1]), key=lambda g: (g.file, g.line, g.construct))


@functools.lru_cache(maxsize=1024)
def _analyse(py: Any, kinds: tuple[int, ...]) -> tuple[int, tuple[Gap, ...]]:
    """(the rank of what ``py`` returns, 0 where not a block; its gaps) with its parameters of ranks ``kinds``."""
    try:
        lines, start = inspect.getsourcelines(py)
        file = inspect.getsourcefile(py) or "<unknown>"
    except (OSError, TypeError):
        return 0, ()
    source = textwrap.dedent("".join(lines))
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return 0, ()
    func = next((n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))), None)
    if func is None:
        return 0, ()
    walker = _Walker(py, file, start - 1, source)
    params = [a.arg for a in func.args.posonlyargs + func.args.args]
    for name, rank in zip(params, kinds, strict=False):
        walker.env[name] = rank
    walker.block(func.body)
    return walker.returns, tuple(walker.gaps)


class _Walker:
    """One pass over a function's statements in order, keeping each local name's rank (0: not a block)."""

    def __init__(self, py: Any, file: str, offset: int, source: str) -> None:
        self.py, self.file, self.offset, self.source = py, file, offset, source
        self.env: dict[str, int] = {}
        self.gaps: list[Gap] = []
        self.returns = 0
        self.calls = 0

    # statements ------------------------------------------------------------------------------------------------
    def block(self, body: Iterable[ast.stmt]) -> None:
        for stmt in body:
            self.stmt(stmt)

    def stmt(self, node: ast.stmt) -> None:
        if isinstance(node, ast.Assign):
            rank = self.expr(node.value)
            for target in node.targets:
                self.bind(target, node.value, rank)
        elif isinstance(node, ast.AnnAssign):
            rank = self.expr(node.value) if node.value is not None else 0
            self.bind(node.target, node.value, rank)
        elif isinstance(node, ast.AugAssign):
            rank = max(self.expr(node.value), self.expr(node.target))
            if isinstance(node.target, ast.Name):
                self.env[node.target.id] = rank
        elif isinstance(node, (ast.For, ast.While)):
            if isinstance(node, ast.For):
                self.expr(node.iter)
                self.bind(node.target, None, 0)
            else:
                self.expr(node.test)
            for _ in range(2):  # twice: a name a later statement makes a block is a block at the loop's top too
                before = dict(self.env)
                self.block(node.body)
                self.join(before)
            self.block(node.orelse)
        elif isinstance(node, ast.If):
            self.expr(node.test)
            before = dict(self.env)
            self.block(node.body)
            after_body, self.env = self.env, before
            self.block(node.orelse)
            self.join(after_body)
        elif isinstance(node, ast.With):
            for item in node.items:
                self.expr(item.context_expr)
            self.block(node.body)
        elif isinstance(node, ast.Return):
            if node.value is not None:
                self.returns = max(self.returns, self.expr(node.value))
        elif isinstance(node, (ast.Expr, ast.Assert)):
            self.expr(node.value if isinstance(node, ast.Expr) else node.test)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            return
        else:
            for child in ast.iter_child_nodes(node):
                if isinstance(child, ast.expr):
                    self.expr(child)
                elif isinstance(child, ast.stmt):
                    self.stmt(child)

    def join(self, other: dict[str, int]) -> None:
        for name, rank in other.items():
            self.env[name] = max(rank, self.env.get(name, 0))

    def bind(self, target: ast.expr, value: ast.expr | None, rank: int) -> None:
        if isinstance(target, ast.Name):
            self.env[target.id] = rank
        elif isinstance(target, (ast.Tuple, ast.List)):
            values = value.elts if isinstance(value, (ast.Tuple, ast.List)) and len(value.elts) == len(target.elts) \
                else [None] * len(target.elts)
            for t, v in zip(target.elts, values, strict=True):
                self.bind(t, v, self.expr(v) if v is not None else 0)

    # expressions -----------------------------------------------------------------------------------------------
    def expr(self, node: ast.expr | None) -> int:
        """The rank of ``node``'s value (0: not a block, or not known to be one); notes the gaps inside it."""
        if node is None:
            return 0
        if isinstance(node, ast.Name):
            return self.env.get(node.id, 0)
        if isinstance(node, ast.Constant):
            return 0
        if isinstance(node, ast.BoolOp):
            ranks = [self.expr(v) for v in node.values]
            if any(ranks[:-1]):
                self.gap(AND if isinstance(node.op, ast.And) else OR, node)
            return max(ranks)
        if isinstance(node, ast.UnaryOp):
            rank = self.expr(node.operand)
            if isinstance(node.op, ast.Not) and rank:
                self.gap(NOT, node)
            return rank
        if isinstance(node, ast.Compare):
            ranks = [self.expr(node.left), *(self.expr(c) for c in node.comparators)]
            if len(node.ops) > 1 and any(ranks[i] or ranks[i + 1] for i in range(len(node.ops) - 1)):
                self.gap(CHAIN, node)
            return max(ranks)
        if isinstance(node, ast.BinOp):
            return max(self.expr(node.left), self.expr(node.right))
        if isinstance(node, ast.IfExp):
            self.expr(node.test)
            return max(self.expr(node.body), self.expr(node.orelse))
        if isinstance(node, ast.Subscript):
            rank = self.expr(node.value)
            index = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
            for part in index:
                self.expr(part)
            if not rank:
                return 0
            added = sum(isinstance(p, ast.Constant) and p.value is None for p in index)
            return rank + added if rank != BLOCK_ANY else BLOCK_ANY
        if isinstance(node, ast.Attribute):
            rank = self.expr(node.value)
            return rank if node.attr == "T" else 0
        if isinstance(node, ast.Call):
            return self.call(node)
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.expr):
                self.expr(child)
        return 0

    def call(self, node: ast.Call) -> int:
        args = [self.expr(a) for a in node.args]
        kwargs = {k.arg: self.expr(k.value) for k in node.keywords}
        func = node.func
        receiver = self.expr(func.value) if isinstance(func, ast.Attribute) else 0
        name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
        target = self.resolve(func)
        if target is not None and _is_jitted(target):
            return self.callee(target, args)
        every = max([*args, *kwargs.values(), receiver, 0])
        if receiver:  # a method of a block: x.to(...), x.sum(axis=1), desc.load(...)
            if name in _REDUCTIONS:
                return self.reduced(receiver, node, positional_axis=0)
            return receiver
        if isinstance(func, ast.Attribute) and name == "load" and not self.from_triton(func):
            return BLOCK_ANY  # a tensor descriptor's load
        if not self.from_triton(func):
            return 0  # a Python builtin (min, range, len) or a function the analysis does not know
        if name in _SCALARS:
            return 0
        if name in _MAKERS:
            rank = _MAKERS[name]
            if rank is None:
                return _shape_rank(node.args[0] if node.args else _kw(node, "shape"))
            return rank if rank else every
        if name in _REDUCTIONS:
            return self.reduced(args[0] if args else kwargs.get("input", 0), node, positional_axis=1)
        if name in _SHAPED:
            shape = node.args[1] if len(node.args) > 1 else _kw(node, "shape")
            return _shape_rank(shape) if shape is not None else every
        return every  # elementwise: tl.load, tl.where, tl.maximum, tl.exp, libdevice.*, ...

    def reduced(self, rank: int, node: ast.Call, positional_axis: int) -> int:
        if not rank:
            return 0
        axis = node.args[positional_axis] if len(node.args) > positional_axis else _kw(node, "axis")
        if axis is None or (isinstance(axis, ast.Constant) and axis.value is None):
            return 0  # every axis: a scalar
        keep = _kw(node, "keep_dims")
        if isinstance(keep, ast.Constant) and keep.value is True:
            return rank
        return rank - 1 if rank not in (BLOCK_ANY, 1) else 0  # rank unknown: not known to be a block

    def callee(self, target: Any, args: list[int]) -> int:
        py = python_function(target)
        if py is None or py is self.py or self.calls > 256:
            return 0
        self.calls += 1
        rank, gaps = _analyse(py, tuple(args))
        self.gaps.extend(gaps)
        return rank

    def resolve(self, func: ast.expr) -> Any:
        """The object a call's function names, looked up in the function's globals; None where it cannot be."""
        parts = []
        while isinstance(func, ast.Attribute):
            parts.append(func.attr)
            func = func.value
        if not isinstance(func, ast.Name):
            return None
        namespace = dict(self.py.__globals__)
        if self.py.__closure__:
            namespace.update((name, cell.cell_contents) for name, cell in
                             zip(self.py.__code__.co_freevars, self.py.__closure__, strict=False) if _filled(cell))
        obj = namespace.get(func.id, getattr(namespace.get("__builtins__"), func.id, None))
        for part in reversed(parts):
            obj = getattr(obj, part, None)
        return obj

    def from_triton(self, func: ast.expr) -> bool:
        """Whether a call's function is Triton's (``tl.*``, ``triton.language.*``, ``libdevice.*``, a name imported
        from them)."""
        obj = self.resolve(func)
        module = getattr(obj, "__module__", None) or (obj.__name__ if inspect.ismodule(obj) else "")
        if module.startswith("triton"):
            return True
        root = func
        while isinstance(root, ast.Attribute):
            root = root.value
        base = self.resolve(root) if isinstance(root, ast.Name) else None
        return inspect.ismodule(base) and base.__name__.startswith("triton")

    def gap(self, construct: str, node: ast.expr) -> None:
        text = " ".join((ast.get_source_segment(self.source, node) or ast.unparse(node)).split())
        self.gaps.append(Gap(construct, self.py.__name__, self.file, node.lineno + self.offset,
                             text if len(text) <= 120 else text[:117] + "..."))


def _filled(cell: Any) -> bool:
    try:
        cell.cell_contents  # noqa: B018 - an empty cell raises
    except ValueError:
        return False
    return True


def _kw(node: ast.Call, name: str) -> ast.expr | None:
    return next((k.value for k in node.keywords if k.arg == name), None)


def _shape_rank(shape: ast.expr | None) -> int:
    if isinstance(shape, (ast.Tuple, ast.List)):
        return len(shape.elts)
    return BLOCK_ANY if shape is not None else 0
