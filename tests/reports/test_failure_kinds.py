"""The failure kinds (reports/failure_kinds.py) and the run file's schema name the same kinds, and a case record the
suite writes holds a plain string that any serialiser takes."""

from __future__ import annotations

import json

from reports.failure_kinds import RECORDED, FailureKind
from reports.loading import SCHEMA_PATH

SCHEMA = json.loads(SCHEMA_PATH.read_text())
ITEMS = SCHEMA["properties"]


def test_the_schemas_failure_enum_is_exactly_the_recorded_kinds():
    """A kind the code writes that the schema lacks fails every run file holding it; a kind the schema lists that
    the enumeration lacks is one the reports no longer know. The kinds left out of RECORDED are named here, so a new
    kind goes into the schema unless it is put among them on purpose."""
    schema_kinds = ITEMS["cases"]["items"]["properties"]["failure"]["enum"]
    assert sorted(schema_kinds) == sorted(k.value for k in RECORDED)
    assert set(FailureKind) - RECORDED == {FailureKind.OOM_HELD, FailureKind.NOT_CHECKABLE, FailureKind.WRONG}


def test_an_incidents_kind_is_a_failure_kind():
    assert set(ITEMS["incidents"]["items"]["properties"]["kind"]["enum"]) <= {k.value for k in RECORDED}


def test_a_kind_is_its_string_wherever_it_goes():
    kind = FailureKind.OOM_HELD
    assert kind == "oom_held" and FailureKind("oom_held") is kind and "oom_held" in {kind}
    assert str(kind) == f"{kind}" == "oom_held" and type(str(kind)) is str
    assert json.dumps({"failure": kind}) == '{"failure": "oom_held"}'


def test_a_case_record_holds_the_plain_string_a_worker_can_send():
    """pytest-xdist's workers send their records through execnet, which serialises built-in types only: a member
    itself would fail the test that recorded it."""
    import execnet.gateway_base

    from kernels.spec import Case
    from suite.checks.harness import CaseResult, record

    result = CaseResult(Case(kernel="vector_add", dtype="fp32", shape={"N": 5}), False, float("inf"),
                        error="broken spec: planted", failure=FailureKind.SPEC)
    rec = record(result, "suite/test_kernels.py::test_matches_reference[vector_add-fp32]", "--repro=...")
    assert rec["failure"] == "spec" and type(rec["failure"]) is str
    execnet.gateway_base.dumps(rec)
