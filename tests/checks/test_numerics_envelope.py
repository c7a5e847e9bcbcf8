"""``--numerics``: the approximate fp32 instructions' error envelopes (suite/checks/numerics_envelope.py).

The planted cases are tests/fixtures/numerics_envelope.py's: ``tight_exp_sum`` and ``tight_softmax`` (tolerances
tuned to exactly rounded exponentials: vendor-sensitive where the model runs them at the envelope's ends, never
failed) and ``plain_softmax`` (the suite's default tolerance: not vendor-sensitive).
"""

from __future__ import annotations

import collections
import copy
import json
from pathlib import Path

import jsonschema
import numpy as np
import pytest

from suite.checks import numerics_envelope
from suite.session import stash
from suite.session.numerics_table import APPROX
from tests.conftest import SuiteRun, start_suite_run

FIXTURE = "--kernel-module=tests/fixtures/numerics_envelope.py"
KERNELS = ("tight_exp_sum", "tight_softmax", "plain_softmax")


def _suite(tmp_path_factory, profile: str | None) -> SuiteRun:
    flags = (f"--numerics={profile}",) if profile else ()
    return start_suite_run("suite/test_kernels.py", FIXTURE, f"--kernels={','.join(KERNELS)}", "-n", "0", *flags,
                           results_dir=tmp_path_factory.mktemp(profile or "plain") / "runs",
                           env={"SUITE_SHRINK_SECONDS": "3"})


@pytest.mark.parametrize("profile", [None, "h100_sxm", "mi300x"])
def test_a_verdict_inside_the_envelope_is_named_never_failed(tmp_path_factory, profile):
    run = _suite(tmp_path_factory, profile)
    data = run.run_data()
    assert {t["outcome"] for t in data["tests"]} == {"passed"}, run.output[-3000:]
    sensitive = collections.Counter(c["kernel"] for c in data["cases"] if c.get("vendor_sensitive"))
    if profile is None:
        assert not sensitive
        return
    assert sensitive["tight_exp_sum"] >= 3 and sensitive["tight_softmax"] >= 1, sensitive
    assert not sensitive["plain_softmax"]
    assert "envelopes" in data["environment"]["numerics"]["parts"]
    line = next(c["vendor_sensitive"] for c in data["cases"] if c["kernel"] == "tight_exp_sum"
                and c.get("vendor_sensitive"))
    instruction = APPROX["nvidia" if profile == "h100_sxm" else "amd"]["create_exp"].instruction
    assert line.startswith(f"vendor-sensitive: tl.exp within {profile}'s {instruction} bound of 2 ulp flips it")
    assert "passing case(s) vendor-sensitive" in run.output
    for c in data["cases"]:  # only cases judged near their bound run at the ends
        if c.get("vendor_sensitive"):
            assert 0.25 <= c["error_ratio"] <= 4
    schema = json.loads(Path("reports/schema/run.schema.json").read_text())
    jsonschema.validate(data, schema, cls=jsonschema.Draft202012Validator)
    bad = copy.deepcopy(data)
    next(c for c in bad["cases"] if c.get("vendor_sensitive"))["vendor_sensitive"] = "tl.exp flips it"
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(bad, schema, cls=jsonschema.Draft202012Validator)


def _moved(way: str, x: np.ndarray, name: str = "create_exp2", vendor: str = "nvidia") -> np.ndarray:
    args = (x,)
    out = np.exp2(x).astype(np.float32) if name == "create_exp2" else np.exp(x).astype(np.float32)
    return numerics_envelope.moved(name, args, out, 2, numerics_envelope.End(way), vendor)


def _ulps(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return a.view(np.int32).astype(np.int64) - b.view(np.int32).astype(np.int64)


def test_the_ends_move_each_result_its_bound_in_ulps():
    x = np.linspace(-20, 20, 1001, dtype=np.float32)
    centre = np.exp2(x.astype(np.float64)).astype(np.float32)
    assert set(_ulps(_moved("down", x), centre)[x != 0]) == {-2}
    assert set(_ulps(_moved("up", x), centre)[x != 0]) == {2}
    mixed = _ulps(_moved("mixed", x), centre)[x != 0]
    assert set(mixed) == {-2, 2} and 0.3 < (mixed > 0).mean() < 0.7


def test_exact_results_stay():
    x = np.array([0.0, -0.0, -np.inf, np.inf, np.nan, -200.0], dtype=np.float32)
    got = _moved("up", x)
    want = np.exp2(x)
    assert np.array_equal(got[:4], want[:4]) and np.isnan(got[4]) and got[5] == 0  # 2^-200 underflows: stays 0


def test_nvidia_exp_is_centred_on_the_rounded_product():
    x = np.array([-17.3, 9.87, 30.1], dtype=np.float32)
    product = (x * np.float32(np.log2(np.e))).astype(np.float64)
    emitted = np.exp2(product).astype(np.float32)
    assert set(_ulps(_moved("up", x, "create_exp"), emitted)) == {2}
    amd = _moved("up", x, "create_exp", "amd")
    assert np.all(amd >= _moved("up", x, "create_exp")) or np.all(_ulps(amd, emitted) >= 2)


def test_only_fp32_results_count_and_move():
    class Dtype:
        scalar = "fp32"

    def original(self, arg):
        return _Handle(np.exp2(arg.data))

    class _Handle:
        def __init__(self, data):
            self.data, self.dtype = data, Dtype

    wrapped = numerics_envelope._wrapped("create_exp2", original, 2, "nvidia", lambda d, t: _Handle(d))
    numerics_envelope.take_used()
    half = _Handle(np.array([1.5], dtype=np.float16))
    single = _Handle(np.array([1.5], dtype=np.float32))
    with numerics_envelope.at(numerics_envelope.End("up")):
        assert wrapped(None, half).data[0] == np.exp2(np.float16(1.5))
        assert wrapped(None, single).data[0] != np.exp2(np.float32(1.5))
        only_div = numerics_envelope.End("up", frozenset({"create_fdiv"}))
        with numerics_envelope.at(only_div):
            assert wrapped(None, single).data[0] == np.exp2(np.float32(1.5))
    assert numerics_envelope.take_used() == {"create_exp2": 2}  # the fp16 call is not counted
    assert stash.session().numerics_end is None
