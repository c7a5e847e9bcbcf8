"""The suite's patches of Triton's internals (suite/compat.py): every one checks out on the installed Triton, a
Triton that moved a target fails naming the patch (a usage error at session start, never a wrong verdict), and the
version-specific interpreter fixes do what they are for."""

from __future__ import annotations

import importlib
import os
import types
from pathlib import Path

import numpy as np
import pytest
import torch
import triton
import triton.language as tl

from suite import compat

INTERPRETED = os.environ.get("TRITON_INTERPRET") == "1"
interpreter_only = pytest.mark.skipif(not INTERPRETED, reason="interpreter only")


@pytest.mark.parametrize("patch", compat.PATCHES, ids=lambda p: p.name)
def test_every_patch_checks_out_on_the_installed_triton(patch):
    if not patch.applies():
        pytest.skip(f"{patch.name} applies to Triton {patch.triton}, not {triton.__version__}")
    assert patch.check() == [], f"patch {patch.name!r} ({patch.where}) is broken on Triton {triton.__version__}"


def test_the_registry_is_well_formed():
    assert len(compat.BY_NAME) == len(compat.PATCHES), "patch names must be unique"
    for patch in compat.PATCHES:
        assert patch.targets and patch.where.startswith("suite/") and set(patch.backends) <= set(compat.ALL_BACKENDS)
        assert (Path(compat.__file__).resolve().parents[1] / patch.where).exists(), patch


def _plant_missing(monkeypatch, target: compat.Target) -> None:
    """Make ``target`` missing, as a Triton that renamed it would: its owner stands in without it."""
    module = importlib.import_module(target.module)
    parts = target.attribute.split(".")
    if len(parts) == 1:
        monkeypatch.delattr(module, parts[0])
        return
    owner = getattr(module, parts[0])
    for part in parts[1:-1]:
        owner = getattr(owner, part)
    keep = {k: getattr(owner, k) for k in dir(owner) if k != parts[-1] and not k.startswith("__")}
    stand_in = types.SimpleNamespace(**keep)
    if len(parts) == 2:
        monkeypatch.setattr(module, parts[0], stand_in)
    else:
        parent = getattr(module, parts[0])
        for part in parts[1:-2]:
            parent = getattr(parent, part)
        monkeypatch.setattr(parent, parts[-2], stand_in)


# A patch for other Triton versions only may name a target this one lacks: its missing target is planted where that
# Triton is installed.
TARGETS = [(p, t) for p in compat.PATCHES for t in p.targets if not t.optional and (p.applies() or not t.problem())]


@pytest.mark.parametrize(("patch", "target"), TARGETS, ids=[f"{p.name}:{t.attribute}" for p, t in TARGETS])
def test_a_missing_target_fails_naming_the_patch(monkeypatch, patch, target):
    _plant_missing(monkeypatch, target)
    problems = patch.check()
    assert any(target.name() in p for p in problems), problems
    with pytest.raises(compat.PatchBroken) as info:
        compat.require(patch.name)
    message = str(info.value)
    import hypothesis

    version = f"Triton {triton.__version__}" if patch.package == "triton" else f"Hypothesis {hypothesis.__version__}"
    assert f"patch {patch.name!r}" in message and version in message and target.name() in message


def test_a_hypothesis_that_stopped_reading_the_digest_fails_naming_the_patch(monkeypatch):
    """Planted: a Hypothesis whose function_digest no longer hashes _hypothesis_internal_add_digest (every kernel x
    dtype test would draw the same cases). The check reads the function's source."""
    from hypothesis.internal import reflection

    def function_digest(function):  # the shape Hypothesis's has, without the private name
        return b"digest"

    monkeypatch.setattr(reflection, "function_digest", function_digest)
    with pytest.raises(compat.PatchBroken, match="no longer reads _hypothesis_internal_add_digest"):
        compat.require("hypothesis-add-digest")


def test_a_changed_signature_fails_naming_the_patch(monkeypatch):
    from triton.runtime import interpreter

    def create_masked_load(self, pointers, mask, other, cache_policy, is_volatile):  # ptrs renamed
        raise AssertionError("not called")

    monkeypatch.setattr(interpreter.InterpreterBuilder, "create_masked_load", create_masked_load)
    with pytest.raises(compat.PatchBroken, match=r"patch 'memcheck-hooks'(.|\n)*create_masked_load takes \(self, "
                                                 r"pointers"):
        compat.verify("interpret")
    compat.verify("cuda")  # a GPU run applies no interpreter patch: nothing to refuse


def test_an_optional_target_may_be_missing_but_not_misshapen(monkeypatch):
    from triton.runtime import interpreter

    patch = compat.BY_NAME["interpreter-bf16-constants"]
    monkeypatch.delattr(interpreter.InterpreterBuilder, "get_bf16", raising=False)
    assert patch.check() == []
    monkeypatch.setattr(interpreter.InterpreterBuilder, "get_bf16", lambda self, value, rounding: None, raising=False)
    assert patch.check() == []  # begins with (self, value)
    monkeypatch.setattr(interpreter.InterpreterBuilder, "get_bf16", lambda self, v: None, raising=False)
    assert "get_bf16 takes (self, v)" in patch.check()[0]


BF16_PATCHES = ("interpreter-bf16-casts", "interpreter-bf16-arithmetic", "interpreter-bf16-dot",
                "interpreter-bf16-reductions")


@pytest.mark.parametrize("name", BF16_PATCHES)
def test_the_bf16_patches_are_registered_with_targets_that_exist(name):
    """The patches that compute bf16 as compiled Triton does (suite/checks/interpreter_bf16.py): each registered
    for the interpreter, every target there in the shape it relies on, and, on the interpreter, installed."""
    from suite.checks import interpreter

    assert name in interpreter.BF16_PATCHES and set(interpreter.BF16_PATCHES) == set(BF16_PATCHES)
    patch = compat.BY_NAME[name]
    assert patch.where == "suite/checks/interpreter_bf16.py" and patch.backends == ("interpret",), patch
    assert patch.applies("3.6.0", "interpret") and not patch.applies("3.6.0", "cuda")
    for target in patch.targets:
        assert target.problem() is None, target
        assert target.optional or target.resolve() is not None, target
    assert patch.check() == [], patch.check()
    if INTERPRETED:
        assert compat.applied(name)


@pytest.mark.parametrize("name", BF16_PATCHES)
def test_a_triton_that_stores_bf16_otherwise_fails_the_bf16_patches(monkeypatch, name):
    """The bf16 patches read the interpreter's bf16 as uint16 bit patterns: a Triton that stored bf16 as another numpy
    dtype would have them read its values as bits, so it is refused, naming the patch."""
    from triton.runtime import interpreter

    original = interpreter._get_np_dtype
    monkeypatch.setattr(interpreter, "_get_np_dtype",
                        lambda t: np.dtype(np.float32) if t == tl.bfloat16 else original(t))
    problems = compat.BY_NAME[name].check()
    assert problems and "not as uint16 bit patterns" in problems[0], problems
    with pytest.raises(compat.PatchBroken, match=f"patch '{name}'"):
        compat.require(name)


def test_version_gates():
    masks, index = compat.BY_NAME["interpreter-bool-masks"], compat.BY_NAME["interpreter-index-numpy24"]
    assert masks.applies("3.9.0", "interpret") and masks.applies("3.10.0+git1234", "interpret")
    assert not masks.applies("3.6.0", "interpret") and not masks.applies("3.9.0", "cuda")
    assert index.applies("3.6.0", "interpret") and not index.applies("3.9.0", "interpret")
    assert not compat.BY_NAME["do-bench-counting"].applies("3.6.0", "interpret")
    assert masks.applies("3.10.0.dev20261101", "interpret") and masks.applies("3.10.0rc1+git5f3e", "interpret")


def test_a_session_on_a_triton_that_moved_a_target_is_a_usage_error(run_suite, tmp_path):
    """End to end: a Triton without ``InterpreterBuilder.create_masked_store`` (planted by a plugin loaded before the
    suite's) stops the run before the first test, naming the patches and the version."""
    (tmp_path / "plant_break.py").write_text(
        "import os\nos.environ['TRITON_INTERPRET'] = '1'\n"
        "from triton.runtime import interpreter\n"
        "del interpreter.InterpreterBuilder.create_masked_store\n")
    env = {"PYTHONPATH": os.pathsep.join(filter(None, [str(tmp_path), os.environ.get("PYTHONPATH")]))}
    result = run_suite("-p", "plant_break", "--backend=interpret", "--kernels=vector_add", "-n", "0", env=env,
                       timeout=300)
    assert result.returncode == 4, result.output[-3000:]
    assert "patch 'memcheck-hooks'" in result.output and f"Triton {triton.__version__}" in result.output
    assert "InterpreterBuilder.create_masked_store is missing" in result.output


# --- the interpreter fixes ------------------------------------------------------------------------------------

@interpreter_only
@pytest.mark.parametrize("name", ["interpreter-bool-masks", "interpreter-index-numpy24", "interpreter-patch-once",
                                  "interpreter-lazy-tuple-types", "interpreter-np-dtype-cache",
                                  "interpreter-unasserted-overflow"])
def test_the_interpreter_fixes_for_this_triton_are_installed_at_session_start(name):
    assert (name in compat._applied) == compat.BY_NAME[name].applies(), (name, triton.__version__)


@triton.jit
def _scalar_masked_row(x_ptr, target_ptr, out_ptr, n, ignore_index, BLOCK: tl.constexpr):
    """A block mask and-ed with a scalar comparison, as cross_entropy's ``(cols < n_cols) & valid``."""
    target = tl.load(target_ptr)
    valid = target != ignore_index
    cols = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + cols, mask=(cols < n) & valid, other=-1.0)
    tl.store(out_ptr + cols, x, mask=(cols < n) & valid)


class _StrictCore:
    """Triton 3.9's C++ interpreter core as to masks (python/src/interpreter.cc, ``require_dtype<bool>(mask,
    "mask")``): a mask that is not numpy bool is refused. The rest is the installed core's."""

    def __init__(self, core):
        self._core = core

    def __getattr__(self, name):
        return getattr(self._core, name)

    def load(self, ptr, mask, other, dtype):
        if mask.dtype != np.bool_:
            raise ValueError("mask has unsupported dtype")
        return self._core.load(ptr, mask, other, dtype)

    def store(self, ptr, value, mask):
        if mask.dtype != np.bool_:
            raise ValueError("mask has unsupported dtype")
        return self._core.store(ptr, value, mask)


def _strict_interpreter(monkeypatch):
    from triton.runtime import interpreter

    monkeypatch.setattr(interpreter, "_interpreter", _StrictCore(interpreter._interpreter))
    if "interpreter-bool-masks" not in compat._applied:  # a Triton before 3.7: the fix is not installed
        compat._bool_masks(monkeypatch.setattr)


def _run_scalar_masked(target: int) -> torch.Tensor:
    x = torch.arange(1.0, 9.0)
    out = torch.full((8,), 7.0)
    _scalar_masked_row[(1,)](x, torch.tensor([target]), out, 6, -100, BLOCK=8)
    return out


@interpreter_only
def test_a_mask_and_ed_with_a_scalar_comparison_runs_on_a_core_that_takes_only_bool_masks(monkeypatch):
    _strict_interpreter(monkeypatch)
    assert _run_scalar_masked(3).tolist() == [1, 2, 3, 4, 5, 6, 7, 7]
    assert _run_scalar_masked(-100).tolist() == [7] * 8  # not valid: nothing read, nothing written


@interpreter_only
def test_without_the_bool_mask_fix_such_a_core_refuses_the_mask(monkeypatch):
    """The fix is what makes the test above pass: the interpreter itself hands the core an integer mask."""
    _strict_interpreter(monkeypatch)
    monkeypatch.setattr(compat, "as_bool_mask", lambda mask: mask)
    with pytest.raises(Exception, match="mask has unsupported dtype"):
        _run_scalar_masked(3)


@triton.jit
def _loop_bound_from_argument(x_ptr, out_ptr, K, BLOCK_K: tl.constexpr):
    acc = tl.zeros([BLOCK_K], dtype=tl.float32)
    for start in range(0, K, BLOCK_K):  # K's handle is a one-element array: range() takes its __index__
        offs = start + tl.arange(0, BLOCK_K)
        acc += tl.load(x_ptr + offs, mask=offs < K, other=0.0)
    tl.store(out_ptr, tl.sum(acc, axis=0))


class _Numpy24Array(np.ndarray):
    """numpy >= 2.4 as to int(): only a 0-dimensional array converts to a Python scalar."""

    def __int__(self):
        if self.ndim:
            raise TypeError("only 0-dimensional arrays can be converted to Python scalars")
        return int(self.item())


def _numpy24_arguments(monkeypatch):
    from triton.runtime import interpreter

    convert = interpreter._implicit_cvt

    def implicit_cvt(arg):
        out = convert(arg)
        if isinstance(arg, int) and not isinstance(arg, bool):
            out.handle.data = out.handle.data.view(_Numpy24Array)
        return out

    monkeypatch.setattr(interpreter, "_implicit_cvt", implicit_cvt)
    if "interpreter-index-numpy24" not in compat._applied and compat.BY_NAME["interpreter-index-numpy24"].applies():
        compat._index_squeezes(monkeypatch.setattr)


def _sum_to(k: int) -> float:
    out = torch.empty(1)
    _loop_bound_from_argument[(1,)](torch.arange(float(k)), out, k, BLOCK_K=4)
    return out.item()


@interpreter_only
def test_a_loop_bound_taken_from_an_argument_runs_under_numpy_2_4(monkeypatch):
    _numpy24_arguments(monkeypatch)
    assert _sum_to(10) == 45.0


@interpreter_only
def test_without_the_index_fix_triton_3_6_fails_under_numpy_2_4(monkeypatch):
    from triton.runtime import interpreter

    if not compat.BY_NAME["interpreter-index-numpy24"].applies():
        pytest.skip(f"Triton {triton.__version__}'s interpreter squeezes on its own")
    _numpy24_arguments(monkeypatch)
    monkeypatch.setattr(interpreter, "_patch_lang_tensor", interpreter._patch_lang_tensor.__wrapped__)
    with pytest.raises(Exception, match="only 0-dimensional arrays"):
        _sum_to(10)


@pytest.mark.parametrize(("module", "patch"), [("suite.checks.launches", "launch-interception"),
                                             ("suite.checks.memcheck", "memcheck-hooks"),
                                             ("suite.tools.loaded_registers", "loaded-registers-cache")])
def test_each_hook_checks_its_own_patch_before_it_hooks(monkeypatch, module, patch):
    """Not only at session start: installing the hooks themselves (a tool that imports them alone) refuses a Triton
    that moved their targets, naming the patch."""
    from suite.session import stash

    mod = importlib.import_module(module)
    monkeypatch.setattr(compat, "_applied", set())  # as in a process that has not hooked yet
    monkeypatch.setattr(stash.session(), "checker", None)
    _plant_missing(monkeypatch, compat.BY_NAME[patch].targets[0])
    with pytest.raises(compat.PatchBroken, match=f"patch {patch!r}"):
        if module.endswith("loaded_registers"):
            mod.loaded(None, "fp32", {}, {}, None)
        else:
            mod.install()


# --- interpreter-patch-once --------------------------------------------------------------------------------------

@triton.jit
def _twice_plus_one(x):
    return x * 2 + 1


@triton.jit
def _helpers_per_program(x_ptr, y_ptr, total_ptr, N, BLOCK: tl.constexpr):
    """A helper of the module's own, called twice, and Triton's own tl.sum (a helper whose module holds tl.core)."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < N
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    y = _twice_plus_one(_twice_plus_one(x))
    tl.store(y_ptr + offs, y, mask=mask)
    tl.atomic_add(total_ptr, tl.sum(tl.where(mask, y, 0.0), axis=0))


def _count_language_patching(monkeypatch, patch_once: bool) -> tuple[int, torch.Tensor, torch.Tensor]:
    """How often the interpreter patched the language for one launch of 4 programs (each calling two helpers of its
    module's and tl.sum), with or without the patch, and the launch's outputs."""
    from triton.runtime import interpreter

    original = interpreter._patch_lang
    while hasattr(original, "__wrapped__"):  # the interpreter's own, under the suite's patch where installed
        original = original.__wrapped__
    calls = []

    def counting(fn):
        calls.append(fn)
        return original(fn)

    monkeypatch.setattr(interpreter, "_patch_lang", counting)
    monkeypatch.setattr(interpreter.GridExecutor, "__call__", interpreter.GridExecutor.__call__)  # undone after
    if patch_once:
        compat._patch_once(monkeypatch.setattr)
    x = torch.arange(100, dtype=torch.float32)
    y, total = torch.empty_like(x), torch.zeros(1)
    _helpers_per_program[(4,)](x, y, total, 100, BLOCK=32)
    return len(calls), y, total


@interpreter_only
def test_the_language_is_patched_once_per_launch_not_at_every_helper_call(monkeypatch):
    import triton.language.core as core

    untouched = core.tensor.__add__
    with monkeypatch.context() as m:
        every_call, y_before, total_before = _count_language_patching(m, patch_once=False)
    with monkeypatch.context() as m:
        once, y, total = _count_language_patching(m, patch_once=True)
    expected = (torch.arange(100, dtype=torch.float32) * 2 + 1) * 2 + 1
    assert torch.equal(y, expected) and torch.equal(y_before, expected)
    assert total.item() == total_before.item() == expected.sum().item()
    # without: the launch's own, then per program its two helper calls and tl.sum's helpers; with: the launch's own
    # and tl.sum's module (tl.core) once
    assert every_call >= 1 + 4 * 3 and once == 2, (every_call, once)
    assert core.tensor.__add__ is untouched  # the launch's patches were restored as before


@interpreter_only
def test_outside_a_launch_the_interpreter_patches_the_language_as_before(monkeypatch):
    """Outside a launch (a helper called from Python) the interpreter's own patching runs, every time."""
    from triton.runtime import interpreter

    calls = []
    monkeypatch.setattr(interpreter, "_patch_lang", lambda fn: calls.append(fn) or compat._KeptScope())
    compat._patch_once(monkeypatch.setattr)
    interpreter._patch_lang(_twice_plus_one.fn)
    interpreter._patch_lang(_twice_plus_one.fn)
    assert len(calls) == 2


# --- interpreter-lazy-tuple-types, interpreter-np-dtype-cache ------------------------------------------------------

@triton.jit
def _pair(x):
    return x + 1, x * 2


@triton.jit
def _tuples_per_program(x_ptr, y_ptr, N, BLOCK: tl.constexpr):
    """Tensors (each with a tuple for its shape) and a helper returning a tuple, unpacked."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < N
    a, b = _pair(tl.load(x_ptr + offs, mask=mask, other=0.0))
    tl.store(y_ptr + offs, a * b, mask=mask)


def _launch_counting_tuple_types(monkeypatch, lazy: bool) -> tuple[int, torch.Tensor]:
    """How many tuple types one launch of 4 programs built, with the lazy types or Triton's own, and its output."""
    import triton.language.core as core

    built = core._type_for_tuple_values
    calls = []
    monkeypatch.setattr(core, "_type_for_tuple_values", lambda *a, **k: calls.append(1) or built(*a, **k))
    if lazy:
        compat._lazy_tuple_types(monkeypatch.setattr)
    else:  # Triton's __init__, and no class-level type (the instance's, set in __init__, is read)
        monkeypatch.setattr(core.tuple, "__init__", getattr(core.tuple.__init__, "__wrapped__", core.tuple.__init__))
        if isinstance(vars(core.tuple).get("type"), compat._LazyTupleType):
            monkeypatch.delattr(core.tuple, "type")
    x = torch.arange(100, dtype=torch.float32)
    y = torch.empty_like(x)
    _tuples_per_program[(4,)](x, y, 100, BLOCK=32)
    return len(calls), y


@interpreter_only
def test_tuple_types_are_built_when_read_and_the_launch_computes_the_same(monkeypatch):
    with monkeypatch.context() as m:
        eager, y_eager = _launch_counting_tuple_types(m, lazy=False)
    with monkeypatch.context() as m:
        lazy, y_lazy = _launch_counting_tuple_types(m, lazy=True)
    x = torch.arange(100, dtype=torch.float32)
    assert torch.equal(y_eager, (x + 1) * (x * 2)) and torch.equal(y_lazy, y_eager)
    # a type per tensor made, against the few read (Triton 3.6: 1 in 10 or fewer; 3.9 reads more of them: 1 in 6)
    assert eager >= 4 * 10 and lazy * 4 <= eager, (eager, lazy)


def test_a_lazy_tuple_type_is_the_type_triton_builds(monkeypatch):
    import triton.language.core as core

    compat._lazy_tuple_types(monkeypatch.setattr)
    values = [core.constexpr(3), core.constexpr(5)]
    pair = core.tuple(values)
    assert "type" not in vars(pair)  # not built yet
    assert str(pair.type) == str(core._type_for_tuple_values(values)) and "type" in vars(pair)
    pair._setitem(0, core.constexpr(7))  # Triton's own code assigns the type: the instance's from then on
    assert str(pair.type) == str(core._type_for_tuple_values([core.constexpr(7), core.constexpr(5)]))
    given = core.tuple_type([core.constexpr_type(1)], ["a"])
    assert core.tuple([core.constexpr(1)], given).type is given
    assert core.tuple([core.constexpr(1)], [core.constexpr_type(1)]).type.types == [core.constexpr_type(1)]


def test_the_cached_numpy_dtypes_are_the_interpreters(monkeypatch):
    from triton.runtime import interpreter

    original = getattr(interpreter._get_np_dtype, "__wrapped__", interpreter._get_np_dtype)
    monkeypatch.setattr(interpreter, "_get_np_dtype", original)
    compat._np_dtype_cache(monkeypatch.setattr)
    scalars = [tl.int1, tl.int8, tl.uint8, tl.int16, tl.uint16, tl.int32, tl.uint32, tl.int64, tl.uint64, tl.float16,
               tl.bfloat16, tl.float32, tl.float64, tl.float8e5, tl.float8e4nv, tl.float8e4b15, tl.pointer_type(tl.float32)]
    for ty in [*scalars, *(tl.block_type(t, [4, 8]) for t in scalars)]:
        for _ in range(2):  # the second from the cache
            assert interpreter._get_np_dtype(ty) == original(ty), ty
    for unknown in (tl.void, tl.block_type(tl.void, [4])):
        with pytest.raises(KeyError):
            original(unknown)
        with pytest.raises(KeyError):
            interpreter._get_np_dtype(unknown)


# --- interpreter-unasserted-overflow ----------------------------------------------------------------------------

@triton.jit
def _scaled_offsets(x_ptr, y_ptr, N, SCALE, BLOCK: tl.constexpr):
    """int32 offsets times SCALE: with a large SCALE the product overflows int32 (the lanes past N stay masked)."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < N
    big = offs * SCALE
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=mask, other=0.0) + (big % 7).to(tl.float32), mask=mask)


def _launch_counting_asserts(monkeypatch, patched: bool, scale: int, debug: bool = False) -> tuple[int, torch.Tensor]:
    from triton.language.semantic import TritonSemantic
    from triton.runtime import interpreter

    original = TritonSemantic.binary_op_sanitize_overflow_impl
    while hasattr(original, "__wrapped__"):  # Triton's own, under the suite's patch where installed
        original = original.__wrapped__
    monkeypatch.setattr(TritonSemantic, "binary_op_sanitize_overflow_impl", original)
    if patched:
        compat._unasserted_overflow(monkeypatch.setattr)
    asserts = []
    device_assert = TritonSemantic.device_assert
    monkeypatch.setattr(TritonSemantic, "device_assert", lambda self, *a: asserts.append(a) or device_assert(self, *a))
    if debug:
        monkeypatch.setattr(interpreter.interpreter_builder, "options", interpreter.InterpreterOptions(debug=True))
    x = torch.arange(100, dtype=torch.float32)
    y = torch.empty_like(x)
    _scaled_offsets[(4,)](x, y, 100, scale, BLOCK=32)
    return len(asserts), y


@interpreter_only
def test_an_overflow_check_nothing_asserts_is_not_computed(monkeypatch):
    with monkeypatch.context() as m:
        built, y_before = _launch_counting_asserts(m, patched=False, scale=3)
    with monkeypatch.context() as m:
        none, y = _launch_counting_asserts(m, patched=True, scale=3)
    assert built >= 4 and none == 0, (built, none)  # per program: offsets' + and *, each handed to device_assert
    assert torch.equal(y, y_before)
    # An overflowing product (offset 99 * 2**26 > 2**31) is not asserted either way with debug off: the same output.
    with monkeypatch.context() as m:
        _, wrapped_before = _launch_counting_asserts(m, patched=False, scale=1 << 26)
    with monkeypatch.context() as m:
        _, wrapped = _launch_counting_asserts(m, patched=True, scale=1 << 26)
    assert torch.equal(wrapped, wrapped_before)


@interpreter_only
def test_with_debug_on_the_overflow_check_is_tritons(monkeypatch):
    with monkeypatch.context() as m:
        asserted, _ = _launch_counting_asserts(m, patched=True, scale=3, debug=True)
    assert asserted >= 4
    with monkeypatch.context() as m, pytest.raises(Exception, match="int32 overflow detected for operation mul"):
        _launch_counting_asserts(m, patched=True, scale=1 << 26, debug=True)
