"""The tolerance rule: bound growth with reduction length, special values, poisoned outputs."""

from __future__ import annotations

import math

import torch

from suite.checks.tolerance import SUBNORMAL_STEPS, bound, check_output


def test_bound_grows_with_sqrt_of_reduction_length():
    ref = torch.ones(4, dtype=torch.float64)
    b1 = bound(ref, ref, torch.float32, 1, safety=1.0)
    b4 = bound(ref, ref, torch.float32, 4, safety=1.0)
    b16 = bound(ref, ref, torch.float32, 16, safety=1.0)
    # u_out |ref| + sqrt(K) u_acc |mag|: the growing part doubles from K=4 to K=16.
    assert math.isclose(float(b16[0] - b4[0]), 2 * float(b4[0] - b1[0]), rel_tol=1e-6)


def test_output_rounding_dominates_half_precision():
    ref = torch.full((1,), 3.0, dtype=torch.float64)
    fp16 = float(bound(ref, ref, torch.float16, 1, safety=1.0)[0])
    # accumulator (fp32, K=1) + output rounding (fp16) + a few of fp16's smallest subnormal
    assert math.isclose(fp16, 3.0 * 2**-24 + 3.0 * 2**-11 + SUBNORMAL_STEPS * 2**-24, rel_tol=1e-9)


def test_subnormal_results_are_held_to_a_few_steps_not_to_their_values():
    """A chain of roundings in the subnormal range is off by more than one step (rmsnorm on fp32 subnormals: 1.6 steps
    on an H200) and passes; a result flushed to zero, or off by a tenth of its value, still fails."""
    step = 2.0**-149
    ref = torch.tensor([-1.286307319526454e-41, 3.1e-40, -7.7e-39], dtype=torch.float64)
    near = (ref + torch.tensor([1.6, -1.6, 1.6]) * step).to(torch.float32)
    assert check_output("y", near, ref, None, reduction_length=1, safety=1.0, keep_subnormals=True).passed
    flushed = torch.zeros(3, dtype=torch.float32)
    assert not check_output("y", flushed, ref, None, reduction_length=1, safety=1.0, keep_subnormals=True).passed
    off = (ref * 1.1).to(torch.float32)
    assert not check_output("y", off, ref, None, reduction_length=1, safety=1.0, keep_subnormals=True).passed
    for i in range(3):  # each element alone: the floor excuses no flush of a value drawn
        assert not check_output("y", flushed[i:i + 1], ref[i:i + 1], None, reduction_length=1, safety=1.0,
                                keep_subnormals=True).passed


def test_tf32_operand_rounding_widens_the_bound():
    ref = torch.ones(1, dtype=torch.float64)
    ieee = bound(ref, ref, torch.float32, 64, safety=1.0)
    tf32 = bound(ref, ref, torch.float32, 64, safety=1.0, operand_u=2**-11)
    assert float(tf32[0]) > 100 * float(ieee[0])


def test_error_ratio_and_pass_fail():
    ref = torch.tensor([1.0, 2.0, 3.0], dtype=torch.float64)
    good = check_output("y", ref.to(torch.float16), ref, None, reduction_length=1, safety=1.0)
    assert good.passed and good.error_ratio <= 1.0
    off = ref.clone()
    off[1] += 0.01
    bad = check_output("y", off.to(torch.float32), ref, None, reduction_length=1, safety=1.0)
    assert not bad.passed and bad.error_ratio > 1.0 and "at (1,)" in bad.detail


def test_nan_passes_only_where_the_reference_has_nan():
    ref = torch.tensor([1.0, float("nan")], dtype=torch.float64)
    assert check_output("y", torch.tensor([1.0, float("nan")]), ref, None, reduction_length=1, safety=1.0).passed
    poisoned = check_output("y", torch.tensor([float("nan"), float("nan")]), ref, None, reduction_length=1, safety=1.0)
    assert not poisoned.passed and "NaN where the reference is not" in poisoned.detail
    missing = check_output("y", torch.tensor([1.0, 0.0]), ref, None, reduction_length=1, safety=1.0)
    assert not missing.passed and "reference is NaN" in missing.detail


def test_infinities_must_match_and_overflow_is_expected():
    ref = torch.tensor([float("inf"), 1e6], dtype=torch.float64)
    # 1e6 overflows fp16: the exact result rounds to inf in the output dtype.
    out = torch.tensor([float("inf"), float("inf")], dtype=torch.float16)
    assert check_output("y", out, ref, None, reduction_length=1, safety=1.0).passed
    wrong = check_output("y", torch.tensor([float("-inf"), 1e6]), ref, None, reduction_length=1, safety=1.0)
    assert not wrong.passed and "infinities differ" in wrong.detail


def test_integer_outputs_match_exactly():
    ref = torch.tensor([0.0, 5000.0, 7.0], dtype=torch.float64)
    assert check_output("i", torch.tensor([0, 5000, 7]), ref, None, reduction_length=10**6, safety=4.0).passed
    for wrong in ([1, 5000, 7], [0, 5001, 7]):
        result = check_output("i", torch.tensor(wrong), ref, None, reduction_length=10**6, safety=4.0)
        assert not result.passed and "integers differ" in result.detail


def test_int64_outputs_compare_as_integers_past_float64s_53_bits():
    """An int64 `x + y + 1` near 2**60 that is off by one passed: both sides were compared as float64."""
    ref = torch.tensor([2**60, -(2**61) + 3, 7], dtype=torch.int64)
    assert check_output("i", ref.clone(), ref, None, reduction_length=1, safety=4.0).passed
    off = ref.clone()
    off[0] += 1
    result = check_output("i", off, ref, None, reduction_length=1, safety=4.0)
    assert not result.passed and "1 of 3 integers differ" in result.detail and str(2**60 + 1) in result.detail
    narrow = check_output("i", ref.to(torch.int32)[2:], ref[2:], None, reduction_length=1, safety=4.0)
    assert narrow.passed  # an int32 output against an int64 reference of the same values


def _cases():
    """Outputs against references with every kind of difference the comparison reports, in several layouts."""
    g = torch.Generator().manual_seed(3)
    for i in range(40):
        shape = [(37,), (5, 9), (3, 4, 7), (), (64, 3)][i % 5]
        ref = torch.randn(shape, generator=g, dtype=torch.float64) * 10 ** (i % 4)
        dtype = [torch.float32, torch.float16, torch.bfloat16, torch.float64][i % 4]
        out = ref.to(dtype)
        flat = out.reshape(-1)
        n = flat.numel()
        if i % 3 == 1 and n > 3:
            flat[n // 2] += 0.5 * float(abs(ref.reshape(-1)[n // 2])) + 1  # wrong
            flat[n - 1] = float("nan")
        if i % 7 == 2 and n > 4:
            ref = ref.clone()
            ref.reshape(-1)[1] = float("nan")
            ref.reshape(-1)[3] = float("inf")
        if i % 5 == 4 and out.dim() == 2:
            out = out.t().contiguous().t()  # a strided output
        mag = None
        if i % 6 == 5 and ref.dim() == 2:
            mag = ref.abs().amax(dim=1, keepdim=True)  # a magnitude per row, broadcast
        yield out, ref, mag, 1 + i % 50
    ints = torch.arange(30).reshape(5, 6)
    wrong = ints.clone()
    wrong[2, 3] = 99
    yield wrong.to(torch.int32), ints.to(torch.float64), None, 1


def test_the_chunked_comparison_reports_what_the_whole_tensor_one_did(monkeypatch):
    """In chunks of 7 elements (so most outputs span several, with strided and broadcast operands), every verdict,
    ratio, error and message is the one the whole-tensor comparison gave."""
    from suite.checks import tolerance
    from tests.fixtures.whole_compare import whole_check_output

    monkeypatch.setattr(tolerance, "CHUNK_ELEMENTS", 7)
    seen_failures = 0
    for out, ref, mag, k in _cases():
        new = check_output("y", out, ref, mag, reduction_length=k, safety=2.0)
        old = whole_check_output("y", out, ref, mag, reduction_length=k, safety=2.0)
        assert (new.passed, new.error_ratio, new.max_abs_error, new.detail) == \
            (old.passed, old.error_ratio, old.max_abs_error, old.detail), (tuple(out.shape), out.dtype)
        seen_failures += not new.passed
    assert seen_failures >= 10


def test_a_chunked_comparison_finds_one_wrong_element_in_the_last_chunk(monkeypatch):
    from suite.checks import tolerance

    monkeypatch.setattr(tolerance, "CHUNK_ELEMENTS", 16)
    ref = torch.linspace(1, 2, 1000, dtype=torch.float64).reshape(10, 100)
    out = ref.to(torch.float32)
    out[9, 99] = 3.0
    r = check_output("y", out, ref, None, reduction_length=1, safety=1.0)
    assert not r.passed and "at (9, 99)" in r.detail and "1 of 1000 elements over" in r.detail


def test_never_written_hint_names_the_launch_before_initial_outputs():
    # A grid one program short: the last element keeps the poison (NaN here) and is marked unwritten.
    ref = torch.arange(8, dtype=torch.float64)
    out = ref.to(torch.float32)
    out[7] = math.nan
    unwritten = torch.zeros(8, dtype=torch.bool)
    unwritten[7] = True
    check = check_output("out", out, ref, None, reduction_length=1, safety=1.0, unwritten=unwritten)
    assert not check.passed
    assert "out: 1 of 8 elements never written (they still hold the poison; first at (7,)" in check.detail
    grid = check.detail.index("grid one program short")
    assert grid < check.detail.index("mask") < check.detail.index("initial_outputs"), check.detail


def test_magnitude_hint_names_the_kernels_rounding_before_loosening_the_tolerance():
    # A bf16 kernel that rounds through fp16 on the way (an fp16 subnormal loses bits): the error is a little over
    # the bound and within it at the output's scale, so the hint is given, its loosening last.
    ref = torch.tensor([-6.675720214843751e-07, 3.0, -2.5], dtype=torch.float64)
    out = ref.to(torch.float16).to(torch.bfloat16)
    check = check_output("out", out, ref, None, reduction_length=1, safety=4.0)  # the spec's default safety
    assert not check.passed and 1.0 < check.error_ratio < 2.0, check.detail
    assert "narrower dtype" in check.detail
    assert check.detail.index("narrower dtype") < check.detail.index("Tolerance(magnitude=...)"), check.detail


def test_magnitude_hint_is_absent_where_the_error_is_too_large_for_any_scale():
    ref = torch.tensor([1.0, 2.0, 3.0], dtype=torch.float64)
    out = (ref + torch.tensor([0.0, 0.5, 0.0], dtype=torch.float64)).to(torch.float32)
    check = check_output("out", out, ref, None, reduction_length=1, safety=1.0)
    assert not check.passed and "Tolerance(magnitude" not in check.detail


def test_the_chunked_comparison_names_the_first_of_several_wrong_elements(monkeypatch):
    """Several NaN, missing-NaN and infinity mismatches within one chunk and across chunks: the counts, and the
    first of each named, are the whole-tensor comparison's (a chunk's first is read on the device)."""
    from suite.checks import tolerance
    from tests.fixtures.whole_compare import whole_check_output

    monkeypatch.setattr(tolerance, "CHUNK_ELEMENTS", 7)
    ref = torch.linspace(1, 2, 40, dtype=torch.float64)
    out = ref.to(torch.float32)
    for i in (9, 11, 12, 30):
        out[i] = float("nan")
    for i in (16, 17, 33):
        ref[i] = float("nan")
    for i in (22, 23, 26):
        out[i] = float("inf") if i != 23 else -float("inf")
    new = check_output("y", out, ref, None, reduction_length=1, safety=1.0)
    old = whole_check_output("y", out, ref, None, reduction_length=1, safety=1.0)
    assert not new.passed and "4 NaN where the reference is not (first at (9,))" in new.detail, new.detail
    assert "3 non-NaN where the reference is NaN (first at (16,))" in new.detail, new.detail
    assert "3 infinities differ (first at (22,): got inf, expected" in new.detail, new.detail
    assert (new.passed, new.error_ratio, new.max_abs_error, new.detail) == \
        (old.passed, old.error_ratio, old.max_abs_error, old.detail)


def test_the_loose_tolerance_rule_reads_the_reference_in_chunks_as_it_did_whole(monkeypatch):
    """The rule judged on the output's device a chunk at a time (a host reference of 2 billion elements took minutes
    on one thread): the verdict and the element it names (the first largest |reference|, in a later chunk, with a tie
    after it) are those of one pass over the whole tensor."""
    from suite.checks import tolerance
    from suite.checks.tolerance import loose_bound

    ref = torch.linspace(-1, 1, 60, dtype=torch.float64).reshape(6, 10)
    ref[3, 4] = 9.0
    ref[5, 9] = -9.0  # a tie after the first
    ref[0, 0] = float("inf")  # not finite: never the scale
    strided = ref.t()  # read in place, not contiguous
    cases = [(ref, None, 4.0), (ref, None, 300.0), (strided, None, 300.0), (ref, ref.abs() * 1e6, 4.0),
             (ref, torch.full((6, 1), 1e6, dtype=torch.float64), 4.0), (torch.zeros(5, dtype=torch.float64), None, 4.0)]
    whole = [loose_bound(r, m, torch.bfloat16, 16, safety=s) for r, m, s in cases]
    monkeypatch.setattr(tolerance, "CHUNK_ELEMENTS", 7)
    chunked = [loose_bound(r, m, torch.bfloat16, 16, safety=s, device=torch.device("cpu")) for r, m, s in cases]
    assert chunked == whole
    assert whole[1] and "9 at (3, 4)" in whole[1] and whole[3] and whole[5] == "", whole


def test_an_output_with_unwritten_elements_is_judged_where_written_too():
    """A known issue of unwritten elements excused any other problem of the output: its written elements were never
    compared (evidence/adv-over-sample/). Both kinds of output say both problems, each a problem of its own."""
    from kernels._types import IndexOutput
    from suite.checks.ties import check_indices

    ref = torch.tensor([1.0, 2.0, 3.0, 4.0])
    out = torch.tensor([2.0, 2.0, 3.0, float("nan")])  # element 0 wrong, element 3 never written
    unwritten = torch.tensor([False, False, False, True])
    check = check_output("out", out, ref, None, reduction_length=1, safety=4.0, unwritten=unwritten)
    assert not check.passed and "never written" in check.detail and "and where written: error" in check.detail
    assert any("never written" in p for p in check.problems) and any("elements over" in p for p in check.problems)
    right = check_output("out", torch.tensor([1.0, 2.0, 3.0, 0.0]), ref, None, reduction_length=1,
                                   safety=4.0, unwritten=unwritten)
    assert "where written" not in right.detail and not right.passed  # unwritten alone: as before

    source = {"x": torch.tensor([[5.0, 1.0, 7.0, 3.0]])}
    want = torch.tensor([[2, 0]])
    got = torch.tensor([[3, -1]])  # index 3 names 3.0, not 7.0; the second never written
    idx = check_indices("idx", IndexOutput("x", -1, True), source, got, want, torch.tensor([[False, True]]))
    assert not idx.passed and "never written" in idx.detail and "where written" in idx.detail, idx.detail
