"""`python -m reports` without jsonschema (GPU images often lack it): the built-in checker accepts what jsonschema
accepts and rejects what it rejects, at the same place, and the command line says which checker it used."""

from __future__ import annotations

import copy
import gzip
import json
import subprocess
import sys

import jsonschema
import pytest

from reports import loading, schema_check
from reports.loading import REPORT_NEEDS, SCHEMA_PATH
from tests.report_helpers import ROOT, XSS, bench, make_run, write
from tests.report_helpers import samples as fake_samples

SCHEMA = json.loads(SCHEMA_PATH.read_text())
COMMITTED = sorted((ROOT / "evidence").rglob("run-*.json*"))


def read_run(path):
    """A committed run file's text, gzipped or not."""
    return (gzip.decompress(path.read_bytes()) if path.suffix == ".gz" else path.read_bytes()).decode()


def builtin_paths(data: dict, schema: dict) -> set[tuple]:
    return {p.path for p in schema_check.problems(data, schema)}


def jsonschema_paths(data: dict, schema: dict) -> set[tuple]:
    return {tuple(e.absolute_path) for e in jsonschema.Draft202012Validator(schema).iter_errors(data)}


def test_the_schemas_use_only_keywords_the_builtin_checker_implements():
    schema_check.check_supported(SCHEMA)
    schema_check.check_supported(REPORT_NEEDS)
    with pytest.raises(schema_check.UnsupportedSchema, match="maxLength"):
        schema_check.check_supported({"properties": {"x": {"type": "string", "maxLength": 3}}})


# jsonschema, the reference implementation, reads a committed run file four times slower than the built-in checker
# (79 s against 19.5 s for the 162 files on 2026-11-29, most of this test file's time in CI). Every committed file is
# held to the schema by the built-in checker (reports.loading's own where jsonschema is absent); the two checkers are
# held to each other by the mutations below and, on committed files, by the newest run file of each evidence folder:
# every kind of run the evidence holds, each folder's latest form of it.
NEWEST_PER_FOLDER = sorted({path.relative_to(ROOT / "evidence").parts[0]: path
                            for path in sorted(COMMITTED, key=lambda p: p.name)}.values())


def _committed(path):
    return loading._compact(json.loads(read_run(path)))  # samples lists of plain numbers emptied, as loading does


@pytest.mark.parametrize("path", COMMITTED, ids=lambda p: str(p.relative_to(ROOT / "evidence")))
def test_committed_run_files_pass_the_schema(path):
    data = _committed(path)
    assert not builtin_paths(data, SCHEMA)
    assert not builtin_paths(data, REPORT_NEEDS)


@pytest.mark.parametrize("path", NEWEST_PER_FOLDER, ids=lambda p: str(p.relative_to(ROOT / "evidence")))
def test_committed_run_files_pass_both_checkers(path):
    data = _committed(path)
    assert not builtin_paths(data, SCHEMA) and not jsonschema_paths(data, SCHEMA)
    assert not builtin_paths(data, REPORT_NEEDS) and not jsonschema_paths(data, REPORT_NEEDS)


def test_the_cross_checked_sample_holds_every_evidence_folder():
    folders = {path.relative_to(ROOT / "evidence").parts[0] for path in COMMITTED}
    assert {path.relative_to(ROOT / "evidence").parts[0] for path in NEWEST_PER_FOLDER} == folders
    assert len(NEWEST_PER_FOLDER) == len(folders) >= 10


def _mutations() -> dict[str, tuple[dict, tuple]]:
    good = make_run(benchmarks=[bench("softmax", "fp16", {"M": 8}, 1.0, 0.5, 0.4)])

    def mutate(fn) -> dict:
        run = copy.deepcopy(good)
        fn(run)
        return run

    return {
        "missing field": (mutate(lambda r: r.pop("environment")), ()),
        "wrong type": (mutate(lambda r: r["environment"].update(sm_count="132")), ("environment", "sm_count")),
        "bad enum": (mutate(lambda r: r["tests"][0].update(outcome="exploded")), ("tests", 0, "outcome")),
        "const": (mutate(lambda r: r.update(schema_version=2)), ("schema_version",)),
        "extra property": (mutate(lambda r: r.update(surprise=1)), ()),
        "oneOf number": (mutate(lambda r: r["cases"][0].update(error_ratio="big")), ("cases", 0, "error_ratio")),
        "negative shape": (mutate(lambda r: r["cases"][0]["shape"].update(M=-1)), ("cases", 0, "shape", "M")),
        "bool is no integer": (mutate(lambda r: r["cases"][0].update(seed=True)), ("cases", 0, "seed")),
        "vendor-sensitive unworded": (mutate(lambda r: r["cases"][0].update(vendor_sensitive="flips")),
                                      ("cases", 0, "vendor_sensitive")),
        "sample string": (mutate(lambda r: r["benchmarks"][0]["samples_ms"].append("fast")),
                          ("benchmarks", 0, "samples_ms", len(fake_samples(1.0, 0)))),
        "shard index 0": (mutate(lambda r: r.update(shard={"index": 0, "count": 2, "run_id": "n1"})),
                          ("shard", "index")),
        "shard without run id": (mutate(lambda r: r.update(shard={"index": 1, "count": 2})), ("shard",)),
        "shard count a string": (mutate(lambda r: r.update(shard={"index": 1, "count": "2", "run_id": "n1"})),
                                 ("shard", "count")),
        "kernel module's library": (mutate(lambda r: r.update(kernel_modules=[{**KERNEL_MODULE, "libraries": [
            {**KERNEL_MODULE["libraries"][0], "version": 18}]}])), ("kernel_modules", 0, "libraries", 0, "version")),
        "numerics part twice": (mutate(lambda r: r["environment"].update(numerics={
            "profile": "mi300x", "arch": "gfx942", "vendor": "amd", "model": "mmasim", "modelled": [],
            "parts": ["dot", "dot"]})), ("environment", "numerics", "parts")),
        "kernel module without hash": (mutate(lambda r: r.update(kernel_modules=[
            {k: v for k, v in KERNEL_MODULE.items() if k != "sha256"}])), ("kernel_modules", 0)),
    }


# What suite/session/provenance.py records of a --kernel-module (issue 39, item 16).
KERNEL_MODULE = {"module": "my_kernels.py", "file": "/src/my_kernels.py", "sha256": "ab" * 32,
                 "libraries": [{"module": "torchao", "distribution": "torchao", "version": "0.18.0",
                                "path": "/venv/lib/site-packages/torchao"},
                               {"module": "helper", "distribution": None, "version": None, "path": "/src/helper.py"}]}


def test_a_run_with_kernel_module_records_passes_both_checkers():
    run = make_run()
    run["kernel_modules"] = [KERNEL_MODULE]
    assert not builtin_paths(run, SCHEMA) and not jsonschema_paths(run, SCHEMA)


@pytest.mark.parametrize("name", list(_mutations()))
def test_both_checkers_reject_a_broken_run_at_the_same_place(name):
    data, where = _mutations()[name]
    found = builtin_paths(data, SCHEMA)
    assert found == jsonschema_paths(data, SCHEMA) and where in found
    assert not schema_check.valid(data, SCHEMA)  # the fast path that problems() and loading take first agrees


def test_a_shard_record_passes_both_checkers():
    data = make_run()
    data["shard"] = {"index": 2, "count": 3, "run_id": "gh-1234-1"}
    assert not builtin_paths(data, SCHEMA) and not jsonschema_paths(data, SCHEMA)


def test_a_checks_record_passes_both_checkers_and_a_bad_one_fails_both():
    data = make_run()
    data["checks"] = {"races": "off", "intermittent_runs": 3, "compile_matrix": "ci", "compile_targets": "own",
                      "config": {"BLOCK": 64}, "repro": "N=3;seed=1"}
    assert not builtin_paths(data, SCHEMA) and not jsonschema_paths(data, SCHEMA)
    data["checks"]["races"] = "sometimes"
    assert builtin_paths(data, SCHEMA) == jsonschema_paths(data, SCHEMA) != []


def _without_jsonschema(*argv: str) -> subprocess.CompletedProcess:
    code = ("import sys; sys.modules['jsonschema'] = None; from reports.__main__ import main; "
            "sys.exit(main(sys.argv[1:]))")
    return subprocess.run([sys.executable, "-c", code, *argv], cwd=ROOT, capture_output=True, text=True, timeout=300)


def test_reports_run_without_jsonschema_and_say_so(tmp_path):
    run = write(tmp_path / "run.json", make_run(kernels=((XSS, "fp16"),)))
    proc = _without_jsonschema("build", str(run), "--out", str(tmp_path / "r"))
    assert proc.returncode == 0, proc.stderr
    assert "jsonschema is not installed" in proc.stderr and "built-in schema checker" in proc.stderr
    assert (tmp_path / "r" / "report.html").exists()
    broken = make_run(run_id="other")
    broken["environment"]["sm_count"] = "many"
    proc = _without_jsonschema("compare", str(run), str(write(tmp_path / "bad.json", broken)))
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert proc.stderr.startswith(f"error: {tmp_path / 'bad.json'}: does not match the run-file schema at "
                                  "environment.sm_count: 'many' is not of type 'integer'")


def test_loading_uses_the_builtin_checker_where_jsonschema_is_missing(tmp_path, monkeypatch):
    monkeypatch.setattr(loading, "jsonschema", None)
    monkeypatch.setattr(loading, "checked_without_jsonschema", False)
    broken = make_run()
    broken["tests"][0]["outcome"] = "exploded"
    with pytest.raises(loading.RunFileError, match=r"at tests\[0\]\.outcome: 'exploded' is not one of"):
        loading.load_run(write(tmp_path / "bad.json", broken))
    assert loading.checked_without_jsonschema and loading.checker() == "built-in"


def test_a_valid_file_is_not_handed_to_jsonschema_and_a_broken_one_gets_its_message(tmp_path, monkeypatch):
    """loading takes the built-in checker's word for a valid file (about 5x faster on a nightly's run file) and asks
    jsonschema only for a file that is not, so that its message is jsonschema's."""
    asked = []
    real = jsonschema.Draft202012Validator
    monkeypatch.setattr(loading.jsonschema, "Draft202012Validator", lambda schema: asked.append(1) or real(schema))
    loading.load_run(write(tmp_path / "good.json", make_run()))
    assert not asked
    broken = make_run()
    broken["tests"][0]["outcome"] = "exploded"
    with pytest.raises(loading.RunFileError, match=r"at tests\[0\]\.outcome: 'exploded' is not one of"):
        loading.load_run(write(tmp_path / "bad.json", broken))
    assert asked


@pytest.mark.parametrize(("schema", "instance"), [
    ({"const": {"a": 1}}, {"a": True}),   # true is not 1 inside an object either
    ({"enum": [[0]]}, [False]),
    ({"uniqueItems": True}, [float("nan")] * 1),
])
def test_json_equality_holds_inside_lists_and_objects(schema, instance):
    """The built-in checker's equality is jsonschema's (evidence/adv-schema-valid/: Python's == took {"a": true} for
    {"a": 1} and [false] for [0])."""
    expected = not list(jsonschema.Draft202012Validator(schema).iter_errors(instance))
    assert schema_check.valid(instance, schema) is expected
    assert schema_check.valid([instance, instance], {"uniqueItems": True}) is False  # the same object twice


@pytest.mark.parametrize("schema", [
    {"items": False},
    {"properties": {"a": True}},
    {"$defs": {"a": {}}, "$ref": "#/$defs/a/properties/b"},
    {"$defs": {"a": {}}, "$ref": "#/$defs/b"},
    {"properties": {"a": {"$id": "https://example.com/x", "type": "string"}}},
])
def test_schema_constructs_the_builtin_checker_reads_otherwise_are_refused(schema):
    """Boolean subschemas, a $ref past #/$defs/NAME or to an undefined NAME, an $id below the root: jsonschema reads
    them otherwise than the built-in checker, whose word loading now takes for a valid file."""
    with pytest.raises(schema_check.UnsupportedSchema):
        schema_check.check_supported(schema)
