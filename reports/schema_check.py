"""A small JSON Schema checker for the keywords the run-file schema uses, so that `python -m reports` works where
jsonschema is not installed (GPU images often lack it). With jsonschema installed, loading.py uses jsonschema.

It knows: type, enum, const, required, properties, additionalProperties, items, oneOf, $ref (to #/$defs/...),
minimum, and the annotations ($schema, $id, $defs, title, description). A schema with any other keyword is
refused (UnsupportedSchema) rather than checked partly. Messages follow jsonschema's wording."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

ANNOTATIONS = frozenset({"$schema", "$id", "$defs", "title", "description"})
CHECKED = frozenset({"type", "enum", "const", "required", "properties", "additionalProperties", "items", "oneOf",
                     "$ref", "minimum", "uniqueItems", "pattern"})
_TYPES = {"object": dict, "array": list, "string": str, "null": type(None), "boolean": bool}


class UnsupportedSchema(Exception):
    """The schema uses a keyword this checker does not implement."""


class Problem:
    """One place where the instance breaks the schema: `path` as jsonschema's absolute_path, and a message."""

    def __init__(self, path: tuple, message: str, depth: int = 0) -> None:
        self.path, self.message, self.depth = path, message, depth


def _is(value: Any, name: str) -> bool:
    if name == "integer":
        return isinstance(value, int) and not isinstance(value, bool) or (isinstance(value, float) and value.is_integer())
    if name == "number":
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    return isinstance(value, _TYPES[name])


def _equal(a: Any, b: Any) -> bool:
    """JSON equality, as jsonschema's: true is not 1, also inside lists and objects; the same object (json's one NaN)
    equals itself."""
    if a is b:
        return True
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if isinstance(a, list) or isinstance(b, list):
        return (isinstance(a, list) and isinstance(b, list) and len(a) == len(b)
                and all(_equal(x, y) for x, y in zip(a, b, strict=True)))
    if isinstance(a, dict) or isinstance(b, dict):
        return (isinstance(a, dict) and isinstance(b, dict) and a.keys() == b.keys()
                and all(_equal(a[k], b[k]) for k in a))
    return a == b


def _repr(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 120 else text[:117] + "..."


def keywords(schema: Any, root: Any = None) -> set[str]:
    """Every keyword used anywhere in a schema (for the refusal of unknown ones); a subschema that is not an object
    (true, false), a $ref other than #/$defs/NAME of a NAME the root defines, and an $id below the root count as
    keywords this checker lacks (jsonschema would read them otherwise than this checker)."""
    if not isinstance(schema, dict):
        return {f"the subschema {json.dumps(schema)}"}
    top = root is None
    root = schema if top else root
    found: set[str] = set()
    ref = schema.get("$ref")
    if ref is not None and not (isinstance(ref, str) and re.fullmatch(r"#/\$defs/[A-Za-z0-9_]+", ref)
                                and ref.split("/")[-1] in (root.get("$defs") or {})):
        found.add(f"$ref {ref!r}")
    if "$id" in schema and not top:
        found.add("$id below the root")
    for key, sub in schema.items():
        found.add(key)
        if key in ("properties", "$defs"):
            for s in sub.values():
                found |= keywords(s, root)
        elif key == "items" or (key == "additionalProperties" and not isinstance(sub, bool)):
            found |= keywords(sub, root)
        elif key == "oneOf":
            for s in sub:
                found |= keywords(s, root)
    return found


def check_supported(schema: dict) -> None:
    unknown = keywords(schema) - CHECKED - ANNOTATIONS
    if unknown:
        raise UnsupportedSchema(f"the built-in schema checker does not implement {', '.join(sorted(unknown))}; "
                                "install jsonschema")


def valid(instance: Any, schema: dict, root: dict | None = None) -> bool:
    """Whether ``problems`` would find nothing, without building a message: each keyword as ``problems`` checks it,
    stopping at the first that fails (a run file of the nightly's is about 430,000 checks: 0.8 s with the generators
    of ``problems``, which ``problems`` now skips where this says the instance is valid)."""
    root = schema if root is None else root
    if "$ref" in schema:
        ref = schema["$ref"]
        if not ref.startswith("#/$defs/"):
            raise UnsupportedSchema(f"$ref {ref!r}: only #/$defs/... references are implemented")
        if not valid(instance, root["$defs"][ref.split("/")[-1]], root):
            return False
    if "type" in schema:
        names = schema["type"] if isinstance(schema["type"], list) else [schema["type"]]
        if not any(_is(instance, n) for n in names):
            return False
    if "const" in schema and not _equal(instance, schema["const"]):
        return False
    if "enum" in schema and not any(_equal(instance, e) for e in schema["enum"]):
        return False
    if "minimum" in schema and _is(instance, "number") and instance < schema["minimum"]:
        return False
    if "oneOf" in schema and sum(1 for s in schema["oneOf"] if valid(instance, s, root)) != 1:
        return False
    if isinstance(instance, dict):
        if any(name not in instance for name in schema.get("required", ())):
            return False
        props = schema.get("properties", {})
        extra = schema.get("additionalProperties", True)
        for name, value in instance.items():
            if name in props:
                if not valid(value, props[name], root):
                    return False
            elif extra is False:
                return False
            elif isinstance(extra, dict) and not valid(value, extra, root):
                return False
    if "pattern" in schema and isinstance(instance, str) and not re.search(schema["pattern"], instance):
        return False
    if schema.get("uniqueItems") and isinstance(instance, list) and any(
            _equal(a, b) for i, a in enumerate(instance) for b in instance[i + 1:]):
        return False
    if isinstance(instance, list) and isinstance(schema.get("items"), dict):
        items = schema["items"]
        if not all(valid(value, items, root) for value in instance):
            return False
    return True


def problems(instance: Any, schema: dict, root: dict | None = None, path: tuple = ()) -> Iterator[Problem]:
    """Every place where ``instance`` breaks ``schema``; none, at once, where ``valid`` says it holds."""
    root = schema if root is None else root
    if valid(instance, schema, root):
        return
    if "$ref" in schema:
        ref = schema["$ref"]
        if not ref.startswith("#/$defs/"):
            raise UnsupportedSchema(f"$ref {ref!r}: only #/$defs/... references are implemented")
        yield from problems(instance, root["$defs"][ref.split("/")[-1]], root, path)
    if "type" in schema:
        names = schema["type"] if isinstance(schema["type"], list) else [schema["type"]]
        if not any(_is(instance, n) for n in names):
            shown = ", ".join(repr(n) for n in names)
            yield Problem(path, f"{_repr(instance)} is not of type {shown}")
            return
    if "const" in schema and not _equal(instance, schema["const"]):
        yield Problem(path, f"{_repr(schema['const'])} was expected")
    if "enum" in schema and not any(_equal(instance, e) for e in schema["enum"]):
        yield Problem(path, f"{_repr(instance)} is not one of {_repr(schema['enum'])}")
    if "minimum" in schema and _is(instance, "number") and instance < schema["minimum"]:
        yield Problem(path, f"{_repr(instance)} is less than the minimum of {schema['minimum']}")
    if "oneOf" in schema:
        passing = [s for s in schema["oneOf"] if valid(instance, s, root)]
        if len(passing) != 1:
            what = "is not valid under any of the given schemas" if not passing else "is valid under each of " + \
                ", ".join(json.dumps(s, sort_keys=True) for s in passing)
            yield Problem(path, f"{_repr(instance)} {what}")
    if isinstance(instance, dict):
        for name in schema.get("required", []):
            if name not in instance:
                yield Problem(path, f"{name!r} is a required property")
        props = schema.get("properties", {})
        for name, value in instance.items():
            if name in props:
                for p in problems(value, props[name], root, (*path, name)):
                    yield Problem(p.path, p.message, p.depth + 1)
        extra = schema.get("additionalProperties", True)
        unexpected = [k for k in instance if k not in props]
        if extra is False and unexpected:
            listed = ", ".join(repr(k) for k in unexpected)
            yield Problem(path, f"Additional properties are not allowed ({listed} "
                                f"{'was' if len(unexpected) == 1 else 'were'} unexpected)")
        elif isinstance(extra, dict):
            for name in unexpected:
                for p in problems(instance[name], extra, root, (*path, name)):
                    yield Problem(p.path, p.message, p.depth + 1)
    if "pattern" in schema and isinstance(instance, str) and not re.search(schema["pattern"], instance):
        yield Problem(path, f"{_repr(instance)} does not match {_repr(schema['pattern'])}")
    if schema.get("uniqueItems") and isinstance(instance, list) and any(
            _equal(a, b) for i, a in enumerate(instance) for b in instance[i + 1:]):
        yield Problem(path, f"{_repr(instance)} has non-unique elements")
    if isinstance(instance, list) and isinstance(schema.get("items"), dict):
        for i, value in enumerate(instance):
            for p in problems(value, schema["items"], root, (*path, i)):
                yield Problem(p.path, p.message, p.depth + 1)
