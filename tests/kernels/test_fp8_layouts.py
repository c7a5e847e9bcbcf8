"""fp8_scaled_matmul draws an A whose row stride is wider than K (layout ``bf16_a_padded_rows``), so a launcher that
passes A's width for its row stride fails; it used to pass every run, A's rows being always packed.

The suite runs no fp8 dtype on the interpreter (its hardware profile has none: those tests are skipped), so these
run the cases through the harness directly, on the interpreter; on a GPU the suite draws the layout itself.
"""

from __future__ import annotations

import pytest

from kernels.fp8 import MATMUL_SPEC
from kernels.spec import Case
from suite.checks import interpreter, launches
from suite.checks.harness import run_case
from suite.session.backend import resolve

SHAPE = "M=33,N=17,K=40;layout={layout};values=normal;seed=1"


def _run(spec, layout: str):
    interpreter.install()
    launches.install()
    backend = resolve("interpret")
    case = Case.parse(spec.name, "fp8e4nv", SHAPE.format(layout=layout))
    return run_case(spec, case, backend, spec.default_config_for("interpret"))


def test_the_padded_layout_gives_a_a_row_stride_wider_than_k():
    assert "bf16_a_padded_rows" in MATMUL_SPEC.layouts
    case = Case.parse(MATMUL_SPEC.name, "fp8e4nv", SHAPE.format(layout="bf16_a_padded_rows"))
    a = MATMUL_SPEC.make_inputs(case, "cpu")["a"]
    assert a.shape == (33, 40) and a.stride() == (53, 1)


@pytest.mark.parametrize("layout", ["bf16", "bf16_a_padded_rows"])
def test_the_shipped_launcher_passes_on_both_layouts(layout: str):
    result = _run(MATMUL_SPEC, layout)
    assert result.passed, result.message()


def test_a_launcher_passing_a_s_width_for_its_row_stride_fails_on_padded_rows(monkeypatch: pytest.MonkeyPatch):
    from suite.checks import memcheck
    from tests.fixtures.planted_fp8 import SPEC as PLANTED

    assert _run(PLANTED, "bf16").passed  # packed rows: the planted bug is invisible there
    result = _run(PLANTED, "bf16_a_padded_rows")
    if memcheck.active() is not None:  # the interpreter's checker sees the reads of A's padding
        assert result.failure == "memory" and "reads argument 'a_ptr'" in result.message() \
            and "not an element of the tensor (padding or past the end)" in result.message(), result.message()
        monkeypatch.setattr(memcheck.active(), "check", lambda *args, **kwargs: None)
        result = _run(PLANTED, "bf16_a_padded_rows")
    # As on a GPU (no checker): the wrong rows give wrong values
    assert not result.passed and result.message().startswith("c: error") and "elements over" in result.message(), \
        result.message()
