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
gets no finding unless it has the gap. A tuple keeps its elements' kinds. The functions a function calls are
followed, with the kinds and the constant values of the arguments at each call (positional or keyword): jitted ones
however named (an alias, a ``tl.constexpr`` global, a partial, a function passed as a constexpr), and the lambdas and
plain Python functions the interpreter runs as Python (compiled Triton refuses them).

Read for a launch (:func:`find` with :func:`launch_constants`), a condition the launch's constexprs decide is read
one way only, as compiled Triton compiles it: a branch no launch with those values runs is no gap of that launch.
"""

from __future__ import annotations

import ast
import functools
import inspect
import operator
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


Kind = Any  # a value's kind: its rank (an int, 0: not a block, or not known to be one), or a tuple of kinds


def _flat(kind: Kind) -> int:
    """The largest rank in ``kind`` (a tuple's elements, each)."""
    if isinstance(kind, tuple):
        return max((_flat(k) for k in kind), default=0)
    return kind


def _join(a: Kind, b: Kind) -> Kind:
    if isinstance(a, tuple) and isinstance(b, tuple) and len(a) == len(b):
        return tuple(_join(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, tuple) or isinstance(b, tuple):
        return max(_flat(a), _flat(b))
    return max(a, b)


def find(fn: Any, constants: dict[str, Any] | None = None) -> list[Gap]:
    """Every gap in jitted function ``fn`` and the jitted functions it calls (each once, in source order). With a
    launch's ``constants`` (its constexpr arguments by name: :func:`launch_constants`), only what that launch runs:
    an ``if`` or ``while`` those decide, as compiled Triton decides it when it compiles, takes one way, and a
    function passed as a constexpr is followed; without them, every branch is read."""
    py = python_function(fn)
    if py is None:
        return []
    return sorted(set(_analyse(py, (), dict(constants or {}))[1]), key=lambda g: (g.file, g.line, g.construct))


def launch_constants(fn: Any, args: tuple, kwargs: dict[str, Any]) -> dict[str, Any]:
    """The constexpr parameters of jitted function ``fn`` as a launch with ``args`` and ``kwargs`` gives them (its
    defaults where it gives none): what decides, for that launch, which branches are compiled."""
    py = python_function(fn)
    if py is None:
        return {}
    try:
        from triton.runtime.jit import _normalize_ty
    except ImportError:  # pragma: no cover - a Triton without it: annotations read as written
        def _normalize_ty(ty: Any) -> str:
            return getattr(ty, "__name__", str(ty)).rsplit(".", 1)[-1]
    try:
        parameters = inspect.signature(py).parameters
    except (TypeError, ValueError):
        return {}
    out: dict[str, Any] = {}
    for i, (name, parameter) in enumerate(parameters.items()):
        if _normalize_ty(parameter.annotation) != "constexpr":
            continue
        if i < len(args):
            out[name] = _unwrap(args[i])
        elif name in kwargs:
            out[name] = _unwrap(kwargs[name])
        elif parameter.default is not inspect.Parameter.empty:
            out[name] = _unwrap(parameter.default)
    return out


def _constant_key(value: Any) -> Any:
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, tuple):
        return tuple(_constant_key(v) for v in value)
    return ("object", id(value))


class _Constants:
    """A function's constant parameters, hashable for the cache of what was read: a function or other object by
    identity (the cache keeps it, so no id is reused while the entry lives)."""

    __slots__ = ("values", "key")

    def __init__(self, values: dict[str, Any]) -> None:
        self.values = values
        self.key = tuple(sorted((k, _constant_key(v)) for k, v in values.items()))

    def __hash__(self) -> int:
        return hash(self.key)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Constants) and self.key == other.key


def _analyse(py: Any, kinds: tuple[tuple[str, Kind], ...], constants: dict[str, Any], depth: int = 0
             ) -> tuple[Kind, tuple[Gap, ...]]:
    """(the kind of what ``py`` returns; its gaps) with its parameters of ``kinds`` and ``constants``."""
    if depth > 32:
        return 0, ()  # a call chain this deep calls itself again (Triton refuses recursion)
    return _analysed(py, kinds, _Constants(constants), depth)


@functools.lru_cache(maxsize=4096)
def _analysed(py: Any, kinds: tuple[tuple[str, Kind], ...], constants: _Constants, depth: int
              ) -> tuple[Kind, tuple[Gap, ...]]:
    return _read(py, dict(kinds), constants.values, depth)


def _read(py: Any, kinds: dict[str, Kind], constants: dict[str, Any], depth: int) -> tuple[Kind, tuple[Gap, ...]]:
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
        lam = next((n for n in ast.walk(tree) if isinstance(n, ast.Lambda)), None)  # a lambda's source: its line
        if lam is None:
            return 0, ()
        func = ast.FunctionDef(name=py.__name__, args=lam.args, body=[ast.Return(lam.body, lineno=lam.lineno,
                                                                                   col_offset=lam.col_offset)],
                               decorator_list=[], lineno=lam.lineno, col_offset=lam.col_offset)
    walker = _Walker(py, file, start - 1, source, func)
    walker.depth = depth
    for name, kind in kinds.items():
        walker.env[name] = kind
    walker.consts.update((k, v) for k, v in walker.defaults.items() if k not in kinds)  # a parameter not given
    walker.consts.update((k, v) for k, v in constants.items() if k in walker.params)
    walker.block(func.body)
    return walker.returns, tuple(walker.gaps)


class _Walker:
    """One pass over a function's statements in order, keeping each local name's kind (its rank, 0: not a block; or
    a tuple of kinds) and the names whose value the launch's constants fix."""

    def __init__(self, py: Any, file: str, offset: int, source: str, func: ast.FunctionDef | ast.AsyncFunctionDef
                 ) -> None:
        self.py, self.file, self.offset, self.source = py, file, offset, source
        self.env: dict[str, Kind] = {}
        self.consts: dict[str, Any] = {}
        self.lambdas: dict[str, ast.Lambda] = {}
        self.gaps: list[Gap] = []
        self.returns: Kind = None
        self.calls = 0
        self.depth = 0
        args = func.args
        self.params = [a.arg for a in args.posonlyargs + args.args + args.kwonlyargs]
        self.locals = set(self.params) | {n.id for n in ast.walk(func) if isinstance(n, ast.Name)
                                          and isinstance(n.ctx, (ast.Store, ast.Del))}
        namespace = dict(py.__globals__)
        if py.__closure__:
            namespace.update((name, cell.cell_contents) for name, cell in
                             zip(py.__code__.co_freevars, py.__closure__, strict=False) if _filled(cell))
        self.namespace = namespace
        self.defaults: dict[str, Any] = {}
        try:
            for name, parameter in inspect.signature(py).parameters.items():
                if parameter.default is not inspect.Parameter.empty:
                    self.defaults[name] = parameter.default
        except (TypeError, ValueError):
            pass

    def value(self, node: ast.expr) -> Any:
        """``node``'s value where the launch's constants and the source fix it, else UNKNOWN."""
        return static_value(node, self.consts, self.namespace, self.locals - set(self.consts))

    # statements ------------------------------------------------------------------------------------------------
    def block(self, body: Iterable[ast.stmt]) -> bool:
        """Walk ``body``; whether it surely returns (what follows it in its function is not run)."""
        for stmt in body:
            if self.stmt(stmt):
                return True
        return False

    def stmt(self, node: ast.stmt) -> bool:
        if isinstance(node, ast.Assign):
            kind = self.expr(node.value)
            for target in node.targets:
                self.bind(target, node.value, kind)
        elif isinstance(node, ast.AnnAssign):
            kind = self.expr(node.value) if node.value is not None else 0
            self.bind(node.target, node.value, kind)
        elif isinstance(node, ast.AugAssign):
            kind = _join(self.expr(node.value), self.expr(node.target))
            if isinstance(node.target, ast.Name):
                self.env[node.target.id] = kind
                self.consts.pop(node.target.id, None)
        elif isinstance(node, (ast.For, ast.While)):
            if isinstance(node, ast.While) and self.value(node.test) is False:
                return self.block(node.orelse)
            changed = {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
            for name in changed:
                self.consts.pop(name, None)  # a name the loop assigns is not fixed in it
            if isinstance(node, ast.For):
                self.expr(node.iter)
                self.bind(node.target, None, 0)
            else:
                self.expr(node.test)
            for _ in range(2):  # twice: a name a later statement makes a block is a block at the loop's top too
                before = dict(self.env)
                self.block(node.body)
                self.join(before)
                for name in changed:
                    self.consts.pop(name, None)
            return self.block(node.orelse)
        elif isinstance(node, ast.If):
            decided = self.value(node.test)
            if decided is not UNKNOWN:  # a constexpr condition: only one way is compiled, and run
                return self.block(node.body if decided else node.orelse)
            self.expr(node.test)
            before, consts = dict(self.env), dict(self.consts)
            body_returns = self.block(node.body)
            after_body, body_consts = self.env, self.consts
            self.env, self.consts = before, consts
            else_returns = self.block(node.orelse)
            if body_returns and not else_returns:
                return False
            if else_returns and not body_returns:
                self.env, self.consts = after_body, body_consts
                return False
            self.join(after_body)
            self.consts = {k: v for k, v in self.consts.items() if k in body_consts and body_consts[k] is v}
            return body_returns and else_returns
        elif isinstance(node, ast.With):
            for item in node.items:
                self.expr(item.context_expr)
            return self.block(node.body)
        elif isinstance(node, ast.Return):
            if node.value is not None:
                kind = self.expr(node.value)
                self.returns = kind if self.returns is None else _join(self.returns, kind)
            return True
        elif isinstance(node, (ast.Expr, ast.Assert)):
            self.expr(node.value if isinstance(node, ast.Expr) else node.test)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            return False
        else:
            for child in ast.iter_child_nodes(node):
                if isinstance(child, ast.expr):
                    self.expr(child)
                elif isinstance(child, ast.stmt):
                    self.stmt(child)
        return False

    def join(self, other: dict[str, Kind]) -> None:
        for name, kind in other.items():
            self.env[name] = _join(kind, self.env.get(name, 0))

    def bind(self, target: ast.expr, value: ast.expr | None, kind: Kind) -> None:
        if isinstance(target, ast.Name):
            self.env[target.id] = kind
            self.lambdas.pop(target.id, None)
            fixed = self.value(value) if value is not None else UNKNOWN
            if fixed is UNKNOWN:
                self.consts.pop(target.id, None)
            else:
                self.consts[target.id] = fixed  # a constant, or a function named under another name
            if isinstance(value, ast.Lambda):
                self.lambdas[target.id] = value
        elif isinstance(target, (ast.Tuple, ast.List)):
            values = value.elts if isinstance(value, (ast.Tuple, ast.List)) and len(value.elts) == len(target.elts) \
                else [None] * len(target.elts)
            kinds = kind if isinstance(kind, tuple) and len(kind) == len(target.elts) else [None] * len(target.elts)
            for t, v, k in zip(target.elts, values, kinds, strict=True):
                self.bind(t, v, k if k is not None else (self.expr(v) if v is not None else 0))

    # expressions -----------------------------------------------------------------------------------------------
    def expr(self, node: ast.expr | None) -> Kind:
        """The kind of ``node``'s value (0: not a block, or not known to be one); notes the gaps inside it."""
        if node is None:
            return 0
        if isinstance(node, ast.Name):
            return self.env.get(node.id, 0)
        if isinstance(node, ast.Constant):
            return 0
        if isinstance(node, ast.BoolOp):
            ranks = [_flat(self.expr(v)) for v in node.values]
            if any(ranks[:-1]):
                self.gap(AND if isinstance(node.op, ast.And) else OR, node)
            return max(ranks)
        if isinstance(node, ast.UnaryOp):
            rank = _flat(self.expr(node.operand))
            if isinstance(node.op, ast.Not) and rank:
                self.gap(NOT, node)
            return rank
        if isinstance(node, ast.Compare):
            ranks = [_flat(self.expr(node.left)), *(_flat(self.expr(c)) for c in node.comparators)]
            if len(node.ops) > 1 and any(ranks[i] or ranks[i + 1] for i in range(len(node.ops) - 1)):
                self.gap(CHAIN, node)
            return max(ranks)
        if isinstance(node, ast.BinOp):
            return max(_flat(self.expr(node.left)), _flat(self.expr(node.right)))
        if isinstance(node, ast.IfExp):
            decided = self.value(node.test)
            if decided is not UNKNOWN:
                return self.expr(node.body if decided else node.orelse)
            self.expr(node.test)
            return _join(self.expr(node.body), self.expr(node.orelse))
        if isinstance(node, (ast.Tuple, ast.List)):
            return tuple(self.expr(e) for e in node.elts)
        if isinstance(node, ast.Subscript):
            kind = self.expr(node.value)
            index = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
            for part in index:
                self.expr(part)
            if isinstance(kind, tuple):  # an element of a tuple (a helper's returned pair)
                at = self.value(node.slice)
                return kind[at] if isinstance(at, int) and -len(kind) <= at < len(kind) else _flat(kind)
            if not kind:
                return 0
            added = sum(isinstance(p, ast.Constant) and p.value is None for p in index)
            return kind + added if kind != BLOCK_ANY else BLOCK_ANY
        if isinstance(node, ast.Attribute):
            kind = _flat(self.expr(node.value))
            return kind if node.attr == "T" else 0
        if isinstance(node, ast.Call):
            return self.call(node)
        if isinstance(node, ast.Lambda):
            return 0  # read where it is called
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.expr):
                self.expr(child)
        return 0

    def call(self, node: ast.Call) -> Kind:
        args: list[Kind] = []
        arg_nodes: list[ast.expr | None] = []
        for a in node.args:
            kind = self.expr(a.value if isinstance(a, ast.Starred) else a)
            if isinstance(a, ast.Starred) and isinstance(kind, tuple):  # f(*pair): the tuple's elements, in order
                args.extend(kind)
                arg_nodes.extend([None] * len(kind))
            else:
                args.append(_flat(kind) if isinstance(a, ast.Starred) else kind)
                arg_nodes.append(None if isinstance(a, ast.Starred) else a)
        kwargs = {k.arg: self.expr(k.value) for k in node.keywords}
        func = node.func
        receiver = _flat(self.expr(func.value)) if isinstance(func, ast.Attribute) else 0
        name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
        if isinstance(func, ast.Name) and func.id in self.lambdas:
            return self.lambda_call(self.lambdas[func.id], node, args, kwargs)
        target = self.resolve(func)
        if target is not None and _followed(target):
            return self.callee(target, node, args, kwargs, arg_nodes)
        every = max([*(_flat(a) for a in args), *(_flat(k) for k in kwargs.values()), receiver, 0])
        if receiver:  # a method of a block: x.to(...), x.sum(axis=1), desc.load(...)
            if name in _REDUCTIONS:
                return self.reduced(receiver, node, positional_axis=0)
            if name == "split":
                return self.split(receiver)
            return receiver
        if isinstance(func, ast.Attribute) and name == "load" and not self.from_triton(func):
            return BLOCK_ANY  # a tensor descriptor's load
        if not self.from_triton(func):
            return 0  # a Python builtin (min, range, len) or a function the analysis does not know
        if name == "split":
            return self.split(_flat(args[0]) if args else _flat(kwargs.get("a", 0)))
        if name in _SCALARS:
            return 0
        if name == "join":  # a new last axis of 2
            return every + 1 if every and every != BLOCK_ANY else every
        if name in _MAKERS:
            rank = _MAKERS[name]
            if rank is None:
                return _shape_rank(node.args[0] if node.args else _kw(node, "shape"))
            return rank if rank else every
        if name in _REDUCTIONS:
            return self.reduced(_flat(args[0]) if args else _flat(kwargs.get("input", 0)), node, positional_axis=1)
        if name in _SHAPED:
            shape = node.args[1] if len(node.args) > 1 else _kw(node, "shape")
            return _shape_rank(shape) if shape is not None else every
        return every  # elementwise: tl.load, tl.where, tl.maximum, tl.exp, libdevice.*, ...

    def reduced(self, rank: int, node: ast.Call, positional_axis: int) -> Kind:
        indices = _kw(node, "return_indices")
        pair = indices is not None and self.value(indices) is True  # (values, indices)
        kind = self._reduced(rank, node, positional_axis)
        return (kind, kind) if pair else kind

    def _reduced(self, rank: int, node: ast.Call, positional_axis: int) -> int:
        if not rank:
            return 0
        axis = node.args[positional_axis] if len(node.args) > positional_axis else _kw(node, "axis")
        if axis is None or self.value(axis) is None:
            return 0  # every axis: a scalar
        keep = _kw(node, "keep_dims")
        if keep is not None and self.value(keep) is True:
            return rank
        return rank - 1 if rank not in (BLOCK_ANY, 1) else 0  # rank unknown: not known to be a block

    @staticmethod
    def split(rank: int) -> Kind:
        """``tl.split``: two halves along the last axis, of one rank less."""
        half = rank - 1 if rank not in (BLOCK_ANY, 1, 0) else 0
        return (half, half)

    def callee(self, target: Any, node: ast.Call, args: list[Kind], kwargs: dict[str, Kind],
               given_args: list[ast.expr | None]) -> Kind:
        """A jitted function (or a partial of one, a Python function) called with arguments of these kinds: read
        with the kinds and the constant values of its parameters."""
        given_kwargs = {k.arg: k.value for k in node.keywords if k.arg is not None}
        fixed: dict[str, Any] = {}
        pre_args: list[Any] = []
        while isinstance(target, functools.partial):
            pre_args = [*target.args, *pre_args]
            fixed = {**target.keywords, **fixed}
            target = target.func
        py = python_function(target)
        if py is None or py is self.py or self.calls > 256:
            return 0
        self.calls += 1
        try:
            params = list(inspect.signature(py).parameters)
        except (TypeError, ValueError):
            return 0
        kinds: dict[str, Kind] = {}
        constants: dict[str, Any] = {}
        for name, value in zip(params, pre_args, strict=False):
            constants[name] = value
        for name, value in fixed.items():
            constants[name] = value
        for name, kind, arg in zip(params[len(pre_args):], args, given_args, strict=False):
            kinds[name] = kind
            self.constant(constants, name, arg)
        for name, kind in kwargs.items():
            if name is not None:
                kinds[name] = kind
                self.constant(constants, name, given_kwargs.get(name))
        return self.read(py, kinds, constants)

    def constant(self, constants: dict[str, Any], name: str, arg: ast.expr | None) -> None:
        if arg is None:
            return
        fixed = self.value(arg)
        if fixed is not UNKNOWN:
            constants[name] = fixed

    def read(self, py: Any, kinds: dict[str, Kind], constants: dict[str, Any]) -> Kind:
        kind, gaps = _analyse(py, tuple(sorted(kinds.items())), constants, self.depth + 1)
        self.gaps.extend(gaps)
        return kind if kind is not None else 0

    def lambda_call(self, lam: ast.Lambda, node: ast.Call, args: list[Kind], kwargs: dict[str, Kind]) -> Kind:
        """A lambda the function made and calls: its body read with the arguments' kinds, in this function's
        names."""
        params = [a.arg for a in lam.args.posonlyargs + lam.args.args]
        saved = dict(self.env), dict(self.consts)
        for name, kind in zip(params, args, strict=False):
            self.env[name] = kind
            self.consts.pop(name, None)
        for name, kind in kwargs.items():
            if name is not None:
                self.env[name] = kind
                self.consts.pop(name, None)
        self.locals |= set(params)
        try:
            return self.expr(lam.body)
        finally:
            self.env, self.consts = saved

    def resolve(self, func: ast.expr) -> Any:
        """The object a call's function names (a global, a closure's cell, a launch's constexpr, a local name for
        one), or None where it cannot be told."""
        found = self.value(func)
        return None if found is UNKNOWN else found

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


def _followed(obj: Any) -> bool:
    """A function whose body the interpreter runs as Python: a jitted one, a partial of one, or a plain Python
    function of the kernel's own code (compiled Triton refuses the last two; the interpreter runs them)."""
    if isinstance(obj, functools.partial):
        return _followed(obj.func)
    py = python_function(obj)
    module = getattr(py, "__module__", None) or ""
    if py is None or module.startswith("triton"):
        return False  # Triton's own (tl.sum, tl.softmax): known by name
    if _is_jitted(obj):
        return True
    return inspect.isfunction(obj) and not module.startswith(("builtins", "numpy", "torch", "functools"))


class _Unknown:
    def __repr__(self) -> str:
        return "UNKNOWN"

    def __bool__(self) -> bool:
        raise TypeError("an unknown value has no truth")


UNKNOWN: Any = _Unknown()  # what static_value says of a value the source and the launch's constants do not fix
_BINARY = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.FloorDiv: operator.floordiv,
           ast.Div: operator.truediv, ast.Mod: operator.mod, ast.Pow: operator.pow, ast.LShift: operator.lshift,
           ast.RShift: operator.rshift, ast.BitAnd: operator.and_, ast.BitOr: operator.or_,
           ast.BitXor: operator.xor}
_COMPARE = {ast.Eq: operator.eq, ast.NotEq: operator.ne, ast.Lt: operator.lt, ast.LtE: operator.le,
            ast.Gt: operator.gt, ast.GtE: operator.ge, ast.Is: operator.is_, ast.IsNot: operator.is_not,
            ast.In: lambda a, b: a in b, ast.NotIn: lambda a, b: a not in b}
_STATIC_CALLS = {"int": int, "float": float, "bool": bool, "min": min, "max": max, "abs": abs, "len": len}


def static_value(node: ast.expr, known: dict[str, Any], namespace: dict[str, Any], local: set[str]) -> Any:
    """The value of ``node`` where the source and the launch fix it, else UNKNOWN: literals; names in ``known`` (a
    launch's constexpr values); other names that are not ``local`` (the function's parameters and assigned names)
    from ``namespace`` (its globals: a ``tl.constexpr`` global unwrapped, a module, a function); ``not``, ``and``,
    ``or``, comparisons, arithmetic, ``x if c else y``, indexing and attributes of such values; ``tl.constexpr(v)``
    and ``int``/``bool``/``min``/... of them. What compiled Triton decides at compile time (an ``if`` on a constexpr)
    and the interpreter decides alike."""
    try:
        return _static(node, known, namespace, local)
    except Exception:  # noqa: BLE001 - whatever the values make of an operator: not decided here
        return UNKNOWN


def _unwrap(value: Any) -> Any:
    return value.value if type(value).__name__ == "constexpr" and hasattr(value, "value") else value


def _static(node: ast.expr, known: dict[str, Any], namespace: dict[str, Any], local: set[str]) -> Any:
    def ev(n: ast.expr) -> Any:
        return _static(n, known, namespace, local)

    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.Name):
        if node.id in known:
            return _unwrap(known[node.id])
        if node.id in local:
            return UNKNOWN
        if node.id in namespace:
            return _unwrap(namespace[node.id])
        builtins = namespace.get("__builtins__")
        found = builtins.get(node.id, UNKNOWN) if isinstance(builtins, dict) else getattr(builtins, node.id, UNKNOWN)
        return found
    if isinstance(node, ast.Attribute):
        base = ev(node.value)
        return UNKNOWN if base is UNKNOWN else _unwrap(getattr(base, node.attr, UNKNOWN))
    if isinstance(node, ast.UnaryOp):
        value = ev(node.operand)
        if value is UNKNOWN:
            return UNKNOWN
        return {ast.Not: operator.not_, ast.USub: operator.neg, ast.UAdd: operator.pos,
                ast.Invert: operator.invert}[type(node.op)](value)
    if isinstance(node, ast.BoolOp):
        value = UNKNOWN
        for part in node.values:
            value = ev(part)
            if value is UNKNOWN:
                return UNKNOWN
            if bool(value) != isinstance(node.op, ast.And):
                return value  # `and` stops at the first false operand, `or` at the first true one
        return value
    if isinstance(node, ast.Compare):
        left = ev(node.left)
        for op, right_node in zip(node.ops, node.comparators, strict=True):
            right = ev(right_node)
            if left is UNKNOWN or right is UNKNOWN:
                return UNKNOWN
            if not _COMPARE[type(op)](left, right):
                return False
            left = right
        return True
    if isinstance(node, ast.BinOp):
        left, right = ev(node.left), ev(node.right)
        if left is UNKNOWN or right is UNKNOWN or type(node.op) not in _BINARY:
            return UNKNOWN
        return _BINARY[type(node.op)](left, right)
    if isinstance(node, ast.IfExp):
        test = ev(node.test)
        return UNKNOWN if test is UNKNOWN else ev(node.body if test else node.orelse)
    if isinstance(node, ast.Subscript):
        base, index = ev(node.value), ev(node.slice)
        return UNKNOWN if base is UNKNOWN or index is UNKNOWN else _unwrap(base[index])
    if isinstance(node, ast.Tuple):
        parts = [ev(e) for e in node.elts]
        return UNKNOWN if any(p is UNKNOWN for p in parts) else tuple(parts)
    if isinstance(node, ast.Call) and not node.keywords:
        func = ev(node.func)
        args = [ev(a) for a in node.args]
        if func is UNKNOWN or any(a is UNKNOWN for a in args):
            return UNKNOWN
        if inspect.isclass(func) and func.__name__ == "constexpr" and len(args) == 1:
            return args[0]
        if any(func is f for f in _STATIC_CALLS.values()):
            return func(*args)
    return UNKNOWN


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
