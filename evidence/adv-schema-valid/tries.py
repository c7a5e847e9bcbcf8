"""Adversarial tries against bb243aa: reports.schema_check.valid() (the boolean fast path), the old problems() of
bb243aa^, jsonschema's Draft202012Validator, and reports.loading's _check_schema / load_run before and after.

Run from the repository root:  .venv/bin/python evidence/adv-schema-valid/tries.py

One line per try:  name | js | valid | old | load-new | load-old | verdict
  js        jsonschema: ok (no error) / bad (errors) / raise:Type
  valid     schema_check.valid() (bb243aa)
  old       not any(problems()) of bb243aa^'s schema_check.py
  load-new  reports.loading (bb243aa): ok (accepted) / refused (RunFileError) / raise:Type (anything else escapes)
  load-old  reports.loading of bb243aa^, same columns
  verdict   agree, or what disagrees: ACCEPTS-BROKEN (valid ok, jsonschema bad), REFUSES-GOOD (valid bad, jsonschema
            ok), OLD!=NEW (valid and the old problems() differ), LOADING-CHANGED (load-new != load-old)
Instances and schemas go through json.dumps/json.loads first, as a run file does (NaN becomes json's one NaN object).
"""

from __future__ import annotations

import copy
import json
import random
import re
import subprocess
import sys
import tempfile
import types
from pathlib import Path
from typing import Any

import jsonschema

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from reports import loading, schema_check  # noqa: E402
from reports.loading import REPORT_NEEDS, SCHEMA_PATH  # noqa: E402
from tests.report_helpers import bench, make_run  # noqa: E402

BASE = "bb243aa^"


def _old_module(name: str, path: str) -> types.ModuleType:
    """A module from the commit before the change, registered under ``name`` (dataclasses look it up)."""
    source = subprocess.run(["git", "-C", str(ROOT), "show", f"{BASE}:{path}"], capture_output=True, text=True,
                            check=True).stdout
    module = types.ModuleType(name)
    module.__file__ = str(ROOT / path)  # loading.py finds the schema beside itself
    sys.modules[name] = module
    exec(compile(source, f"{BASE}:{path}", "exec"), module.__dict__)
    return module


old_check = _old_module("old_schema_check", "reports/schema_check.py")
old_loading = _old_module("old_loading", "reports/loading.py")

RUN_SCHEMA = json.loads(SCHEMA_PATH.read_text())


def _json(value: Any) -> Any:
    return json.loads(json.dumps(value))


def _verdict(fn) -> str:
    try:
        return "ok" if fn() else "bad"
    except Exception as exc:  # what escapes is the finding
        return f"raise:{type(exc).__name__}"


def _load(fn) -> str:
    try:
        fn()
        return "ok"
    except (loading.RunFileError, old_loading.RunFileError):
        return "refused"
    except Exception as exc:
        return f"raise:{type(exc).__name__}"


def judge(schema: dict, data: Any) -> tuple[str, str, str]:
    js = _verdict(lambda: not any(True for _ in jsonschema.Draft202012Validator(schema).iter_errors(data)))
    new = _verdict(lambda: schema_check.valid(data, schema))
    old = _verdict(lambda: not any(True for _ in old_check.problems(data, schema)))
    return js, new, old


def fragment(schema: dict, instance: Any) -> tuple[str, ...]:
    schema, data = _json(schema), _json(instance)
    here = Path("fragment.json")
    load_new = _load(lambda: loading._check_schema(here, data, schema, "breaks the fragment"))
    load_old = _load(lambda: old_loading._check_schema(here, data, schema, "breaks the fragment"))
    return (*judge(schema, data), load_new, load_old)


def run_file(mutate) -> tuple[str, ...]:
    """A synthetic run file, mutated, judged against both schemas loading uses, and loaded by both loadings."""
    run = copy.deepcopy(GOOD)
    mutate(run)
    text = json.dumps(run)
    data = loading._compact(json.loads(text))
    verdicts = [judge(RUN_SCHEMA, data), judge(REPORT_NEEDS, data)]
    # a column is ok only where both schemas pass; the first non-ok wins
    merged = tuple(next((v[i] for v in verdicts if v[i] != "ok"), "ok") for i in range(3))
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "run.json"
        path.write_text(text)
        load_new = _load(lambda: loading.load_run(path))
        load_old = _load(lambda: old_loading.load_run(path))
    return (*merged, load_new, load_old)


GOOD = _json(make_run(kernels=(("softmax", "fp16"),), benchmarks=[bench("softmax", "fp16", {"M": 8}, 1.0, 0.5, 0.4)]))
NAN, INF = float("nan"), float("inf")


def setter(*path_and_value):
    *path, key, value = path_and_value

    def apply(run: dict) -> None:
        node = run
        for p in path:
            node = node[p]
        node[key] = value
    return apply


def rounds(attempts: Any) -> dict:
    return {"kernel_ms": [1.0], "baseline_ms": None, "attempts": attempts, "disturbed": False}


def with_numerics(parts: list) -> Any:
    return setter("environment", "numerics", {"profile": "mi300x", "arch": "gfx942", "vendor": "amd",
                                               "model": "mmasim", "modelled": [], "parts": parts})


def with_case_field(key: str, value: Any) -> Any:
    return setter("cases", 0, key, value)


RUN_TRIES = {
    # bool vs int, float vs int, NaN/inf against the real run-file schema and REPORT_NEEDS, through load_run
    "run: schema_version true (passes _parse's `in (1,)`)": setter("schema_version", True),
    "run: schema_version 1.0": setter("schema_version", 1.0),
    "run: cases[0].seed true": with_case_field("seed", True),
    "run: cases[0].seed 1.0": with_case_field("seed", 1.0),
    "run: cases[0].seed 1.5": with_case_field("seed", 1.5),
    "run: cases[0].seed NaN": with_case_field("seed", NAN),
    "run: cases[0].seed Infinity": with_case_field("seed", INF),
    "run: cases[0].error_ratio NaN (number)": with_case_field("error_ratio", NAN),
    "run: cases[0].error_ratio -Infinity": with_case_field("error_ratio", -INF),
    "run: cases[0].error_ratio true": with_case_field("error_ratio", True),
    "run: cases[0].error_ratio 'NaN' (not the enum's 'nan')": with_case_field("error_ratio", "NaN"),
    "run: cases[0].shape.M true": setter("cases", 0, "shape", "M", True),
    "run: cases[0].shape.M -0.0 (minimum 0)": setter("cases", 0, "shape", "M", -0.0),
    "run: cases[0].shape.M NaN (minimum 0)": setter("cases", 0, "shape", "M", NAN),
    "run: cases[0].shape [] (object expected)": setter("cases", 0, "shape", []),
    "run: cases[0].intermittent wrong true (minimum 1)": with_case_field("intermittent", {"wrong": True, "runs": 2}),
    "run: cases[0].intermittent wrong 1.0": with_case_field("intermittent", {"wrong": 1.0, "runs": 2.0}),
    "run: tests[0].timing.inputs_s false (minimum on bool)": setter("tests", 0, "timing", {"inputs_s": False}),
    "run: tests[0].timing.inputs_s NaN (minimum 0)": setter("tests", 0, "timing", {"inputs_s": NAN}),
    "run: tests[0].timing.inputs_s -Infinity": setter("tests", 0, "timing", {"inputs_s": -INF}),
    "run: shard.index true": setter("shard", {"index": True, "count": 2, "run_id": "r"}),
    "run: shard.index 1.0": setter("shard", {"index": 1.0, "count": 2, "run_id": "r"}),
    "run: environment.hypothesis_seed true": setter("environment", "hypothesis_seed", True),
    "run: environment [] (required on a non-object)": setter("environment", []),
    "run: command {} (items on a non-array)": setter("command", {"0": "pytest"}),
    "run: command [] (empty)": setter("command", []),
    "run: numerics parts [] (uniqueItems, empty)": with_numerics([]),
    "run: numerics parts ['dot','dot']": with_numerics(["dot", "dot"]),
    "run: numerics parts [NaN, NaN] (uniqueItems + NaN)": with_numerics([NAN, NAN]),
    "run: numerics vendor true (enum of strings)": setter("environment", "numerics", {
        "profile": "p", "arch": "a", "vendor": True, "model": "m", "modelled": []}),
    "run: vendor_sensitive pattern, trailing newline": with_case_field("vendor_sensitive", "vendor-sensitive: x\n"),
    "run: vendor_sensitive pattern, NBSP for the space": with_case_field("vendor_sensitive", "vendor-sensitive:\u00a0x"),
    "run: vendor_sensitive pattern, prefixed": with_case_field("vendor_sensitive", "xvendor-sensitive: x"),
    "run: vendor_sensitive pattern, fullwidth colon": with_case_field("vendor_sensitive", "vendor-sensitive\uff1a x"),
    "run: tests[0] key known both as property and extra": setter("tests", 0, "worker", "gw0"),
    "run: tests[0] extra key (additionalProperties false)": setter("tests", 0, "Worker", "gw0"),
    "run: outputs.y without max_abs_error (additionalProperties schema)": setter(
        "cases", 0, "outputs", "y", {"error_ratio": 1}),
    "run: outputs.y error_ratio true": setter("cases", 0, "outputs", "y", {"error_ratio": True, "max_abs_error": 0}),
    "run: benchmarks[0].rounds.attempts true": setter("benchmarks", 0, "rounds", rounds(True)),
    "run: benchmarks[0].rounds.attempts 0.0 (minimum 1)": setter("benchmarks", 0, "rounds", rounds(0.0)),
    "run: benchmarks[0].rounds.attempts 1.0": setter("benchmarks", 0, "rounds", rounds(1.0)),
    "run: benchmarks[0].rounds.kernel_ms [NaN, true]": setter("benchmarks", 0, "rounds", {
        **rounds(1), "kernel_ms": [NAN, True]}),
    "run: benchmarks[0].median_ms null": setter("benchmarks", 0, "median_ms", None),
    "run: benchmarks[0].median_ms 'nan' (run schema: number only)": setter("benchmarks", 0, "median_ms", "nan"),
    "run: benchmarks[0].baseline 1 (oneOf null|object)": setter("benchmarks", 0, "baseline", 1),
    "run: benchmarks[0].shape.M 2.0 / true": setter("benchmarks", 0, "shape", {"M": 2.0, "N": True}),
    "run: ceilings.matmul_tflops.fp16 NaN": setter("ceilings", "matmul_tflops", "fp16", NAN),
    "run: autotune.hits -0.0 / misses false": setter("autotune", {"hits": -0.0, "misses": False}),
}

DEFS_T = {"$defs": {"t": {"type": "array", "items": {"$ref": "#/$defs/t"}}}, "$ref": "#/$defs/t"}


def nested(depth: int) -> list:
    value: list = []
    for _ in range(depth):
        value = [value]
    return value


FRAGMENT_TRIES = {
    # equality: bool vs int inside containers (Python's == inside a list or dict takes true for 1)
    "const {'a': 1} vs {'a': true}": ({"const": {"a": 1}}, {"a": True}),
    "enum [[0]] vs [false]": ({"enum": [[0]]}, [False]),
    "const [1, [true]] vs [1, [1]]": ({"const": [1, [True]]}, [1, [1]]),
    "enum [1] vs true (scalar)": ({"enum": [1]}, True),
    "enum [true] vs 1.0 (scalar)": ({"enum": [True]}, 1.0),
    "const false vs 0": ({"const": False}, 0),
    "enum [1] vs 1.0": ({"enum": [1]}, 1.0),
    "const {'a': 1} vs {'a': 1.0}": ({"const": {"a": 1}}, {"a": 1.0}),
    "uniqueItems [[1], [true]]": ({"uniqueItems": True}, [[1], [True]]),
    "uniqueItems [{'a': 0}, {'a': false}]": ({"uniqueItems": True}, [{"a": 0}, {"a": False}]),
    "uniqueItems [1, true]": ({"uniqueItems": True}, [1, True]),
    "uniqueItems [1, 1.0]": ({"uniqueItems": True}, [1, 1.0]),
    "uniqueItems: 1 (truthy int) [2, 2]": ({"uniqueItems": 1}, [2, 2]),
    # NaN: json.loads gives one NaN object, which jsonschema's equal() takes as equal to itself (`is`)
    "uniqueItems [NaN, NaN]": ({"uniqueItems": True}, [NAN, NAN]),
    "uniqueItems [1.0, NaN, 1.0]": ({"uniqueItems": True}, [1.0, NAN, 1.0]),
    "enum [NaN] vs NaN": ({"enum": [NAN]}, NAN),
    "const [NaN] vs [NaN]": ({"const": [NAN]}, [NAN]),
    "type integer vs [NaN, Infinity]": ({"items": {"type": "integer"}}, [NAN, INF]),
    "type integer vs 1e308": ({"type": "integer"}, 1e308),
    "minimum 0 vs NaN": ({"minimum": 0}, NAN),
    "minimum 5 vs false (minimum on bool)": ({"minimum": 5}, False),
    "minimum 1 vs true": ({"type": "integer", "minimum": 1}, True),
    # oneOf
    "oneOf [integer, number] vs 1.0": ({"oneOf": [{"type": "integer"}, {"type": "number"}]}, 1.0),
    "nested oneOf vs 1 (inner two-match)": ({"oneOf": [{"oneOf": [{"type": "integer"}, {"type": "number"}]},
                                                       {"type": "string"}]}, 1),
    "nested oneOf vs 1.5": ({"oneOf": [{"oneOf": [{"type": "integer"}, {"type": "number"}]}, {"type": "string"}]}, 1.5),
    "oneOf []": ({"oneOf": []}, 1),
    "oneOf [true, string] (boolean subschema)": ({"oneOf": [True, {"type": "string"}]}, "x"),
    # $ref
    "$ref + sibling minimum": ({"$defs": {"n": {"type": "integer"}}, "$ref": "#/$defs/n", "minimum": 5}, 3),
    "$ref + sibling type (both apply)": ({"$defs": {"n": {"minimum": 0}}, "$ref": "#/$defs/n", "type": "string"}, 1),
    "$ref '#/$defs/a/properties/b' (last segment taken)": (
        {"$defs": {"a": {"properties": {"b": {"type": "integer"}}}, "b": {"type": "string"}},
         "$ref": "#/$defs/a/properties/b"}, "s"),
    "$ref '#/$defs/a~1b' (JSON-pointer escape)": (
        {"$defs": {"a/b": {"type": "integer"}, "a~1b": {}}, "$ref": "#/$defs/a~1b"}, "s"),
    "$ref '#/$defs/a%25' (percent-encoded)": ({"$defs": {"a%": {"type": "integer"}, "a%25": {}}, "$ref": "#/$defs/a%25"},
                                              "s"),
    "$ref under a nested $id with its own $defs": (
        {"$id": "https://e.invalid/root", "$defs": {"x": {"type": "string"}},
         "properties": {"a": {"$id": "https://e.invalid/inner", "$defs": {"x": {"type": "integer"}}, "$ref": "#/$defs/x"}}},
        {"a": "s"}),
    "$ref '#/properties/x' (passes check_supported)": (
        {"properties": {"x": {"type": "integer"}, "y": {"$ref": "#/properties/x"}}}, {"y": 1}),
    "$ref to a missing $defs entry": ({"properties": {"y": {"$ref": "#/$defs/nope"}}}, {"y": 1}),
    "recursive $ref, 40 deep": (DEFS_T, nested(40)),
    "recursive $ref, 40 deep, a leaf 1": (DEFS_T, [nested(39) + [1]]),
    # properties / additionalProperties / required / items on the wrong kinds
    "additionalProperties false, key in properties": ({"properties": {"a": {}}, "additionalProperties": False}, {"a": 1}),
    "additionalProperties schema, key in properties": (
        {"properties": {"a": {"type": "string"}}, "additionalProperties": {"type": "integer"}}, {"a": "s", "b": 1}),
    "additionalProperties schema, extra key breaks it": (
        {"properties": {"a": {"type": "string"}}, "additionalProperties": {"type": "integer"}}, {"a": "s", "b": "s"}),
    "additionalProperties {} (empty schema)": ({"additionalProperties": {}}, {"z": None}),
    "properties {'a': false} (boolean subschema)": ({"properties": {"a": False}}, {"a": 1}),
    "properties {'a': true} (boolean subschema)": ({"properties": {"a": True}}, {"a": 1}),
    "items false (boolean subschema)": ({"items": False}, [1]),
    "items true": ({"items": True}, [1]),
    "required on a list": ({"required": ["a"]}, ["a"]),
    "required on {} (empty)": ({"required": ["a"]}, {}),
    "items on an object": ({"items": {"type": "string"}}, {"0": 1}),
    "items on [] (empty)": ({"items": {"type": "string"}}, []),
    "type [] (empty list)": ({"type": []}, 1),
    "extra key before a broken property (order of checks)": (
        {"additionalProperties": False, "properties": {"a": {"$ref": "#/x"}}}, {"zz": 1, "a": 1}),
    "broken extra key before a failing property": (
        {"properties": {"a": {"type": "string"}}, "additionalProperties": {"$ref": "#/x"}}, {"zz": 1, "a": 1}),
    # pattern: Python's re in both checkers (not ECMA-262)
    "pattern ^\\d+$ vs Arabic-Indic digits": ({"pattern": "^\\d+$"}, "\u0663\u0664"),
    "pattern ^a$ vs 'a\\n'": ({"pattern": "^a$"}, "a\n"),
    "pattern on a non-string": ({"pattern": "^a$"}, 5),
    "pattern \\w vs 'é'": ({"pattern": "^\\w$"}, "\u00e9"),
    "pattern (?i) vs 'K' (Kelvin sign)": ({"pattern": "(?i)^k$"}, "\u212a"),
}


POOL = [True, False, 0, 1, 1.0, -1, -0.0, 0.5, 2**64, NAN, INF, -INF, "", "nan", "inf", "x", "vendor-sensitive: x",
        None, [], {}, [True], [1], [NAN, NAN], ["dot", "dot"], {"a": 1}, {"a": True}, {"M": True}]


def _paths(node: Any, path: tuple = ()) -> list[tuple]:
    found = [path] if path else []
    if isinstance(node, dict):
        for k, v in node.items():
            found += _paths(v, (*path, k))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            found += _paths(v, (*path, i))
    return found


def fuzz(n: int, seed: int = 0) -> tuple[str, list[str]]:
    """n random mutations of the run file (a value replaced from POOL, a key dropped, or a key added), each judged by
    jsonschema, valid() and the old problems() against both schemas; loading is not asked (it follows from the three)."""
    rng = random.Random(seed)
    seeds = {**GOOD, "shard": {"index": 1, "count": 2, "run_id": "r"},
             "environment": {**GOOD["environment"], "numerics": {"profile": "p", "arch": "a", "vendor": "amd",
                                                                  "model": "m", "modelled": [], "parts": ["dot"]}}}
    seeds["cases"][0]["vendor_sensitive"] = "vendor-sensitive: x"
    seeds["cases"][0]["intermittent"] = {"wrong": 1, "runs": 2}
    seeds["benchmarks"][0]["rounds"] = rounds(1)
    paths = _paths(seeds)
    tally = {"ok": 0, "bad": 0}
    odd = []
    for i in range(n):
        run = copy.deepcopy(seeds)
        path = rng.choice(paths)
        parent = run
        for p in path[:-1]:
            parent = parent[p]
        what = rng.random()
        if what < 0.1 and isinstance(parent, dict):
            del parent[path[-1]]
            how = f"drop {path}"
        elif what < 0.2 and isinstance(parent, dict):
            value = rng.choice(POOL)
            parent["zz"] = value
            how = f"add {(*path[:-1], 'zz')}={value!r}"
        else:
            value = rng.choice(POOL)
            parent[path[-1]] = value
            how = f"set {path}={value!r}"
        data = loading._compact(_json(run))
        verdicts = [judge(RUN_SCHEMA, data), judge(REPORT_NEEDS, data)]
        js, new, old = (next((v[k] for v in verdicts if v[k] != "ok"), "ok") for k in range(3))
        tally[js] = tally.get(js, 0) + 1
        if not js == new == old:
            odd.append(f"#{i} {how}: js {js}, valid {new}, old {old}")
    return f"js ok {tally['ok']}, js bad {tally['bad']}", odd


def triggers(schema: Any, path: str = "#") -> list[str]:
    """Where a schema holds a construct that one of the disagreements above needs: const/enum with a list, object or
    float value (nested bool vs int, NaN), uniqueItems on an array whose items may be numbers, lists or objects, a $ref
    other than #/$defs/NAME, an $id below the root, a boolean subschema other than additionalProperties."""
    found = []
    if isinstance(schema, bool):
        return [f"{path}: boolean subschema"]
    if not isinstance(schema, dict):
        return found
    for key in ("const",):
        if key in schema and isinstance(schema[key], (list, dict, float)):
            found.append(f"{path}/const: {schema[key]!r}")
    if any(isinstance(e, (list, dict, float)) for e in schema.get("enum", ())):
        found.append(f"{path}/enum: {schema['enum']!r}")
    if schema.get("uniqueItems"):
        items = schema.get("items")
        if not (isinstance(items, dict) and (items.get("type") == "string"
                                             or all(isinstance(e, str) for e in items.get("enum", [0])))):
            found.append(f"{path}/uniqueItems over {items!r}")
    ref = schema.get("$ref")
    if ref is not None and not re.fullmatch(r"#/\$defs/[A-Za-z0-9_]+", ref):
        found.append(f"{path}/$ref: {ref!r}")
    if "$id" in schema and path != "#":
        found.append(f"{path}/$id")
    for key in ("properties", "$defs"):
        for name, sub in schema.get(key, {}).items():
            found += triggers(sub, f"{path}/{key}/{name}")
    if "items" in schema:
        found += triggers(schema["items"], f"{path}/items")
    if isinstance(schema.get("additionalProperties"), dict):
        found += triggers(schema["additionalProperties"], f"{path}/additionalProperties")
    for i, sub in enumerate(schema.get("oneOf", ())):
        found += triggers(sub, f"{path}/oneOf/{i}")
    return found


def proposed_equal(a: Any, b: Any) -> bool:
    """The smallest fix for the equality findings: JSON equality all the way down, as jsonschema's _utils.equal (true
    is not 1 inside lists and objects either; json's one NaN object equals itself)."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(map(proposed_equal, a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(proposed_equal(v, b[k]) for k, v in a.items())
    return a is b or a == b


def with_proposed_equal() -> list[str]:
    """The equality tries again, valid() using proposed_equal (schema_check._equal swapped for the call)."""
    names = [n for n in FRAGMENT_TRIES if n.startswith(("const", "enum", "uniqueItems"))]
    real, schema_check._equal = schema_check._equal, proposed_equal
    try:
        lines = []
        for name in names:
            schema, data = (_json(x) for x in FRAGMENT_TRIES[name])
            js, new, _ = judge(schema, data)
            lines.append(f"{name}: js {js}, valid {new}{'' if js == new else '  <- still differs'}")
        return lines
    finally:
        schema_check._equal = real


def verdict(row: tuple[str, ...]) -> str:
    js, new, old, load_new, load_old = row
    found = []
    if new == "ok" and js != "ok":
        found.append("ACCEPTS-BROKEN")
    if new == "bad" and js == "ok":
        found.append("REFUSES-GOOD")
    if new.startswith("raise") and not js.startswith("raise"):
        found.append("CRASHES")
    if new != old:
        found.append("OLD!=NEW")
    if load_new != load_old:
        found.append("LOADING-CHANGED")
    return ", ".join(found) or "agree"


def main() -> int:
    rows = [(name, run_file(fn)) for name, fn in RUN_TRIES.items()]
    rows += [(f"frag: {name}", fragment(*case)) for name, case in FRAGMENT_TRIES.items()]
    width = max(len(name) for name, _ in rows)
    print(f"{'try':{width}} | js | valid | old | load-new | load-old | verdict")
    counts: dict[str, int] = {}
    for name, row in rows:
        v = verdict(row)
        for part in v.split(", "):
            counts[part] = counts.get(part, 0) + 1
        print(f"{name:{width}} | " + " | ".join(row) + f" | {v}")
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 300
    summary, odd = fuzz(n)
    print(f"fuzz: {n} random mutations of the run file against both schemas: {summary}; "
          f"js/valid/old disagree on {len(odd)}")
    for line in odd[:20]:
        print("  ", line)
    if odd:
        rows.append(("fuzz", ("bad", "ok", "ok", "?", "?")))
    print(f"{len(rows)} tries (+ the fuzz line); " + ", ".join(f"{k}: {n}" for k, n in sorted(counts.items())))
    real = [name for name, row in rows if name.startswith(("run:", "fuzz")) and verdict(row) != "agree"]
    print("real-schema tries that disagree:", real or "none")
    for name, schema in (("run.schema.json", RUN_SCHEMA), ("REPORT_NEEDS", REPORT_NEEDS)):
        print(f"{name}: constructs that a disagreement needs:", triggers(schema) or "none")
    print("with the proposed _equal (jsonschema's equality, recursive):")
    for line in with_proposed_equal():
        print("  ", line)
    print("a trigger test on a fragment that has them:", triggers(FRAGMENT_TRIES["items false (boolean subschema)"][0]),
          triggers({"uniqueItems": True, "const": {"a": 1}, "$ref": "#/$defs/a~1b"}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
