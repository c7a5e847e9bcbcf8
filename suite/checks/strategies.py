"""Hypothesis strategies built from kernel specs, and the suite's Hypothesis profiles."""

from __future__ import annotations

from typing import TYPE_CHECKING

from hypothesis import HealthCheck, Phase, settings
from hypothesis import strategies as st

if TYPE_CHECKING:  # kernels.spec imports torch: the plugin loads this module in an xdist controller before it may
    from kernels.spec import Case, Dim, KernelSpec

PRIMES = (2, 3, 5, 7, 13, 31, 61, 127, 251, 509, 1021, 2039, 4093, 8191, 16381)
# Fixed seed of the validation profile: the same examples in every run, so two runs compare.
VALIDATION_SEED = 20261120

# print_blob off: a failure's own message carries its reproduction line (--repro=...), so Hypothesis's advice to add
# @reproduce_failure to the suite's test function (which the suite owns, not the kernel's author) is never printed.
# Phase.explain off: its "these lines were always and only run by failing test cases" names lines of the suite's own
# checking code (nothing of the kernel's), and it re-runs failing cases under a tracer: time, on the failing path.
_SEARCH = [Phase.explicit, Phase.reuse, Phase.generate, Phase.target, Phase.shrink]
_COMMON = dict(deadline=None, print_blob=False,
               suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much])
PROFILES = {
    # Fast local iteration: few random examples, failures remembered in the local database.
    "dev": settings(max_examples=10, phases=_SEARCH, **_COMMON),
    # CI: derandomized (same examples every run), bounded time, no database to read or write.
    "ci": settings(max_examples=20, derandomize=True, database=None, phases=_SEARCH, **_COMMON),
    # Nightly: many examples and large shapes on GPU runners.
    "nightly": settings(max_examples=200, phases=_SEARCH, **_COMMON),
    # Driver validation: derandomized, no shrinking surprises, fixed seed (applied per test).
    "validation": settings(max_examples=40, derandomize=True, database=None,
                           phases=[Phase.explicit, Phase.generate, Phase.target], **_COMMON),
}
LARGE_SHAPE_PROFILES = ("nightly",)


def register_profiles() -> None:
    for name, profile in PROFILES.items():
        settings.register_profile(name, profile)


def edge_values(dim: Dim, maximum: int) -> list[int]:
    """Sizes where masking bugs live: 1, around each block, primes, powers of two."""
    vals = {1, 2, maximum}
    for block in dim.blocks:
        vals.update({block - 1, block, block + 1, 2 * block + 1, 3 * block - 1})
    vals.update(PRIMES)
    vals.update(1 << i for i in range(1, maximum.bit_length()))
    return sorted(v for v in vals if dim.min <= v <= maximum)


def dim_max(dim: Dim, backend_name: str, large: bool) -> int:
    if backend_name == "interpret":
        return dim.interpret_max
    if large and dim.nightly_max:
        return dim.nightly_max
    return dim.gpu_max


def dim_strategy(dim: Dim, backend_name: str, large: bool) -> st.SearchStrategy[int]:
    if dim.choices:
        return st.sampled_from(dim.choices)
    maximum = dim_max(dim, backend_name, large)
    # Edges first: Hypothesis shrinks toward the start of a one_of.
    return st.one_of(st.sampled_from(edge_values(dim, maximum)), st.integers(dim.min, maximum))


# Triton 3.6's CPU interpreter converts fp32 subnormals to fp8 wrongly: there the subnormal value class is not drawn
# for them (docs/checks.md). bf16 is drawn: the suite converts it as a GPU does (suite/checks/interpreter_bf16.py).
INTERPRETER_NO_SUBNORMALS = ("fp8e4nv", "fp8e4b8", "fp8e5", "fp8e5b16")


def drawn_value_classes(spec: KernelSpec, dtype: str, backend_name: str) -> tuple[str, ...]:
    """The spec's value classes that this backend draws for ``dtype``."""
    classes = tuple(spec.value_classes)
    if backend_name == "interpret" and dtype in INTERPRETER_NO_SUBNORMALS:
        classes = tuple(v for v in classes if v != "subnormal") or classes
    return classes


def case_strategy(spec: KernelSpec, dtype: str, backend_name: str, large: bool = False) -> st.SearchStrategy[Case]:
    from kernels.spec import Case

    order = [d.name for d in spec.dims]
    shape = st.fixed_dictionaries({d.name: dim_strategy(d, backend_name, large) for d in spec.dims}).map(
        lambda drawn: {name: drawn[name] for name in order})  # spec order, for readable reproduction lines
    return st.builds(
        Case,
        kernel=st.just(spec.name),
        dtype=st.just(dtype),
        shape=shape,
        layout=st.sampled_from(spec.layouts),
        values=st.sampled_from(drawn_value_classes(spec, dtype, backend_name)),
        seed=st.integers(0, 2**31 - 1),
    )
