"""fp8_quant_rowwise's own property (kernels/fp8.py: dequantized_error), checked in float64 on the case's device a
block of rows at a time, fails the quantizations it exists for, naming the element or row where it went wrong, also
past the first block, and passes the right one. On the host here; on the GPU too where one is present."""

from __future__ import annotations

import pytest
import torch

from kernels import fp8
from kernels.spec import Case

DEVICES = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])


def _case(m: int = 10, k: int = 300, flavour: str = "fp8e4nv") -> Case:
    return Case.parse(fp8.QUANT_SPEC.name, flavour, f"M={m},K={k};layout=bf16;values=normal;seed=3")


def _run(plant=None):
    """A quantization: torch's reference (right), with ``plant(q, scale)`` applied to its outputs."""
    def run(inputs: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        q, scale = fp8.quantize_rowwise_reference(inputs["x"], inputs["fp8"].dtype)
        if plant is not None:
            q, scale = plant(q.clone(), scale.clone())
        return {"q": q, "scale": scale}
    return run


def _two_codes_off(row: int, col: int):
    """One element written two fp8 codes away from the right one: more than an ulp off (one code off can be within
    the relative half ulp the property allows, near the top of a binade)."""
    def plant(q, scale):
        bits = q.view(torch.uint8)
        bits[row, col] = bits[row, col] + 2 if bits[row, col] % 128 < 100 else bits[row, col] - 2
        return q, scale
    return plant


def _half_range(row: int | None):
    """The scale of amax / (fp8 max / 2) (of one row, or of all): right within an ulp, but half the range unused."""
    def plant(q, scale):
        rows = slice(None) if row is None else slice(row, row + 1)
        scale[rows] *= 2
        q[rows] = (q[rows].float() / 2).to(q.dtype)
        return q, scale
    return plant


@pytest.fixture(params=[1 << 24, 300], ids=["one-block", "row-blocks"])
def blocks(request, monkeypatch):
    """The check whole, and a row at a time (blocks of 300 elements): a verdict past the first block names its row."""
    monkeypatch.setattr(fp8, "CHECK_ELEMENTS", request.param)
    return request.param


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("flavour", ["fp8e4nv", "fp8e4b8"])
def test_the_right_quantization_holds(device, flavour, blocks):
    assert fp8._check_dequantized(_case(flavour=flavour), device, _run()) is None


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("where", [(0, 5), (7, 123)])
def test_an_element_two_codes_off_fails_where_it_is(device, where, blocks):
    message = fp8._check_dequantized(_case(), device, _run(_two_codes_off(*where)))
    assert message is not None and message.endswith(f"at {where}: beyond half an fp8 ulp"), message


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("row", [None, 8])
def test_a_scale_that_leaves_half_the_range_unused_fails_on_its_row(device, row, blocks):
    message = fp8._check_dequantized(_case(), device, _run(_half_range(row)))
    assert message == f"row {row or 0}: largest |x| quantized to 224.0, not fp8e4nv max 448.0", message


def test_the_check_stays_on_the_cases_device(monkeypatch):
    """No copy of x, q or scale to the host: on the GPU that copy and the host's float64 arithmetic took the nightly's
    largest cases 94-113 s."""
    seen: list[str] = []
    original = torch.Tensor.cpu

    def cpu(self, *args, **kwargs):
        seen.append(str(self.shape))
        return original(self, *args, **kwargs)

    monkeypatch.setattr(torch.Tensor, "cpu", cpu)
    assert fp8._check_dequantized(_case(), "cpu", _run()) is None
    assert seen == [], seen
