"""Reading run files: JSON, the run-file schema, the fields the reports rely on; one clear error per bad file."""

from __future__ import annotations

import gzip
import json
import math
import os
import stat
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

from reports import schema_check

try:
    import jsonschema
except ImportError:  # GPU images often lack it: the built-in checker takes over (schema_check.py)
    jsonschema = None

SCHEMA_PATH = Path(__file__).resolve().parent / "schema" / "run.schema.json"
SUPPORTED_SCHEMA_VERSIONS = (1,)

_NUMBER = {"oneOf": [{"type": "number"}, {"enum": ["inf", "-inf", "nan"]}]}
_OPTIONAL_NUMBER = {"oneOf": [{"type": "null"}, _NUMBER]}
# What the reports read from the parts of a run file that the run-file schema leaves open
# (benchmark records, ceilings, autotune): checked here so that rendering can trust the types.
REPORT_NEEDS: dict[str, Any] = {
    "type": "object",
    "properties": {
        "benchmarks": {"type": "array", "items": {
            "type": "object",
            "required": ["kernel", "dtype", "shape", "samples_ms", "median_ms"],
            "properties": {
                "kernel": {"type": "string"}, "dtype": {"type": "string"},
                "shape": {"type": "object", "additionalProperties": {"type": "integer"}},
                "config": {"type": ["object", "null"]},
                "samples_ms": {"type": "array"},  # samples that are not positive numbers are left out as invalid
                "median_ms": _NUMBER,
                "efficiency_measured": _OPTIONAL_NUMBER, "efficiency_datasheet": _OPTIONAL_NUMBER,
                "speedup": _OPTIONAL_NUMBER, "correct": {"type": ["boolean", "null"]},
                "baseline": {"oneOf": [{"type": "null"}, {"type": "object", "properties": {
                    "name": {"type": ["string", "null"]}, "median_ms": _OPTIONAL_NUMBER,
                    "samples_ms": {"type": ["array", "null"]}}}]},
                "rounds": {"type": ["object", "null"], "properties": {
                    **{k: {"type": ["array", "null"], "items": _NUMBER}
                       for k in ("kernel_ms", "baseline_ms", "kernel_tail", "baseline_tail")},
                    "attempts": {"type": "integer", "minimum": 1}, "disturbed": {"type": "boolean"},
                    "disturbance": {"type": ["string", "null"]}}},
                "noise_floor": _OPTIONAL_NUMBER,
                "planted": {"type": ["object", "null"], "properties": {"fraction": _NUMBER}},
            }}},
        "ceilings": {"type": ["object", "null"], "properties": {
            "copy_gbps": _OPTIONAL_NUMBER,
            "noise_floor": {"type": ["object", "null"], "properties": {"platform": _OPTIONAL_NUMBER,
                                                                       "file": {"type": ["string", "null"]}}},
            "matmul_tflops": {"type": ["object", "null"], "additionalProperties": _OPTIONAL_NUMBER},
            "datasheet": {"type": ["object", "null"], "properties": {
                "bandwidth_tbs": _OPTIONAL_NUMBER,
                "tflops": {"type": ["object", "null"], "additionalProperties": _OPTIONAL_NUMBER}}}}},
        "autotune": {"type": ["object", "null"], "properties": {
            **{k: {"type": "integer", "minimum": 0} for k in ("hits", "nearest", "misses", "stale", "tuning_benchmarks")},
            "entries": {"type": "array"}}},
    },
}


MAX_RUN_FILE_BYTES = 256 * 2**20  # what one run file may hold, decompressed: a gzip bomb stops here
# What parsing a run file may cost, estimated from its text before it is parsed: a JSON value is at least a list or
# dict slot and a Python object (a float is 24 bytes, an empty dict 64): 256 MiB of "{}," parses to about 12 GB.
# The largest real run files (a nightly on two H200s: 9.4 MB, 282,000 values) estimate at about 10 MB.
MAX_PARSED_BYTES = 2**30
VALUE_BYTES, CONTAINER_BYTES = 32, 64


class RunFileError(Exception):
    """A run file that cannot be used; the message names the file and what is wrong."""


@dataclass
class Run:
    path: Path
    data: dict[str, Any]
    warnings: list[str] = field(default_factory=list)

    @property
    def run_id(self) -> str:
        return self.data["run_id"]

    @property
    def env(self) -> dict[str, Any]:
        return self.data["environment"]

    @property
    def platform(self) -> tuple[str, str]:
        """Runs are the same platform when device and arch agree (an H100 and an H200 are both sm_90). A run under
        ``--numerics=PROFILE`` is its own platform, "PROFILE (modelled)" on the device that ran it (the interpreter):
        never merged with the measured hardware it models, nor with the interpreter's own arithmetic."""
        modelled = self.env.get("numerics")
        if modelled:
            return (f"{modelled['profile']} (modelled)", self.env["arch"])
        return (self.env["device_name"], self.env["arch"])

    @property
    def label(self) -> str:
        return platform_label(self.platform)

    @property
    def incomplete(self) -> bool:
        return self.data["status"] != "complete"


def platform_label(platform: tuple[str, str]) -> str:
    device, arch = platform
    return f"{device} ({arch})"


def num(x: Any) -> float | None:
    """A number from a run file: JSON numbers, or the strings "inf", "-inf", "nan"; anything else is None."""
    if isinstance(x, bool) or x is None:
        return None
    if isinstance(x, (int, float)):
        return float(x)
    if isinstance(x, str) and x in ("inf", "-inf", "nan"):
        return float(x)
    return None


def json_safe(x: Any) -> Any:
    """For summary.json: inf and NaN become strings, the way run files write them."""
    if isinstance(x, float) and not math.isfinite(x):
        return "nan" if math.isnan(x) else ("inf" if x > 0 else "-inf")
    if isinstance(x, dict):
        return {str(k): json_safe(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [json_safe(v) for v in x]
    return x


_schema_cache: dict[str, Any] = {}


def _schema() -> dict[str, Any]:
    if "run" not in _schema_cache:
        try:
            _schema_cache["run"] = json.loads(SCHEMA_PATH.read_text())
        except (OSError, ValueError) as exc:
            raise RunFileError(f"{SCHEMA_PATH}: cannot read the run-file schema: {exc}") from None
    return _schema_cache["run"]


def checker() -> str:
    """Which schema checker loading uses: jsonschema where installed, else the built-in one."""
    return "jsonschema" if jsonschema is not None else "built-in"


CHECKER_NOTE = ("note: jsonschema is not installed; run files were checked with the reports' built-in schema checker "
                "(reports/schema_check.py: the keywords the run-file schema uses)")


def _where(absolute_path: Any) -> str:
    path = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in absolute_path)
    return path.lstrip(".") or "the top level"


checked_without_jsonschema = False  # set once a file was checked by the built-in checker: the CLI says so


def _check_schema(path: Path, data: dict[str, Any], schema: dict[str, Any], what: str) -> None:
    global checked_without_jsonschema
    try:
        schema_check.check_supported(schema)
        unsupported = None
    except schema_check.UnsupportedSchema as exc:
        unsupported = exc
    try:
        fast = unsupported is None and schema_check.valid(data, schema)
    except (TypeError, ValueError, RecursionError, schema_check.UnsupportedSchema):
        fast = False  # jsonschema, or the built-in checker's problems(), says what is wrong below
    if jsonschema is not None and fast:
        # The built-in checker implements every keyword the schema uses (check_supported) and is held to jsonschema
        # (tests/reports/test_schema_check.py); it finds a valid file valid about 5x faster (a nightly's run file
        # 0.4 s against 2.2 s): jsonschema is asked only where a file is not, for its messages.
        return
    if jsonschema is not None:
        validator = jsonschema.Draft202012Validator(schema)
        errors = sorted(validator.iter_errors(data), key=lambda e: (len(list(e.absolute_path)), str(e.absolute_path)))
        first = jsonschema.exceptions.best_match(errors) if errors else None
        where, message = (_where(first.absolute_path), first.message) if first else ("", "")
    else:
        if unsupported is not None:
            raise RunFileError(f"{SCHEMA_PATH}: {unsupported}") from None
        checked_without_jsonschema = True
        errors = list(schema_check.problems(data, schema))
        first = min(errors, key=lambda p: (len(p.path), p.depth, str(p.path))) if errors else None
        where, message = (_where(first.path), first.message) if first else ("", "")
    if errors:
        more = f" (and {len(errors) - 1} more problem{'s' if len(errors) > 2 else ''})" if len(errors) > 1 else ""
        raise RunFileError(f"{path}: {what} at {where}: {message[:300]}{more}")


def _plain_numbers(values: Any) -> bool:
    return isinstance(values, list) and all(type(v) in (int, float) for v in values)


def _compact(data: dict[str, Any]) -> dict[str, Any]:
    """The run as the schemas see it, with each benchmark's samples list emptied where it holds plain numbers only:
    the same verdict (the schema asks numbers of them), in a fraction of the time on runs with 10^5 samples."""
    benchmarks = data.get("benchmarks")
    if not isinstance(benchmarks, list):
        return data
    compact = []
    for b in benchmarks:
        if isinstance(b, dict) and _plain_numbers(b.get("samples_ms")):
            b = {**b, "samples_ms": []}
            if isinstance(b.get("baseline"), dict) and _plain_numbers(b["baseline"].get("samples_ms")):
                b["baseline"] = {**b["baseline"], "samples_ms": []}
        compact.append(b)
    return {**data, "benchmarks": compact}


def file_kind(mode: int) -> str:
    """What a file that is not a regular file is, from its mode: 'a FIFO', 'a device', ..."""
    for test, name in ((stat.S_ISLNK, "a symbolic link"), (stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a device"),
                       (stat.S_ISBLK, "a device"), (stat.S_ISSOCK, "a socket"), (stat.S_ISDIR, "a directory")):
        if test(mode):
            return name
    return "not a regular file"


def open_regular(p: Path) -> BinaryIO:
    """``p`` opened for reading where it is a regular file (after links); RunFileError saying what it is otherwise: a
    named pipe waited for a writer for ever, a device such as /dev/zero never ends. Opened without waiting, then
    asked, so nothing swapped in between is read."""
    if not stat.S_ISREG(mode := os.stat(p).st_mode):  # a socket cannot even be opened
        raise RunFileError(f"{p}: not a run file: it is {file_kind(mode)} (a run file is a regular file)")
    fd = os.open(p, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0))
    if not stat.S_ISREG(mode := os.fstat(fd).st_mode):
        os.close(fd)
        raise RunFileError(f"{p}: not a run file: it is {file_kind(mode)} (a run file is a regular file)")
    os.set_blocking(fd, True)
    return os.fdopen(fd, "rb")


def _read_capped(p: Path) -> bytes:
    """The file's bytes, gunzipped where it is gzip (committed evidence is stored so), never more than
    MAX_RUN_FILE_BYTES of either: a gzip bomb is refused after reading that much."""
    cap = MAX_RUN_FILE_BYTES
    with open_regular(p) as f:
        gzipped = f.read(2) == b"\x1f\x8b"
        f.seek(0)
        try:
            data = gzip.GzipFile(fileobj=f).read(cap + 1) if gzipped else f.read(cap + 1)
        except (EOFError, zlib.error, gzip.BadGzipFile) as exc:
            raise RunFileError(f"{p}: not a run file: corrupt or truncated gzip data "
                               f"({exc or type(exc).__name__})") from None
    if len(data) > cap:
        raise RunFileError(f"{p}: not a run file: {'decompresses to ' if gzipped else ''}more than {cap // 2**20} MiB "
                           "(reports.loading.MAX_RUN_FILE_BYTES); read no further")
    return data


def load_run(path: str | Path) -> Run:
    p = Path(path)
    if not p.exists():
        raise RunFileError(f"{p}: no such file")
    if p.is_dir():
        raise RunFileError(f"{p}: is a directory, not a run file")
    try:
        text = _read_capped(p).decode("utf-8")
    except OSError as exc:
        raise RunFileError(f"{p}: cannot read: {getattr(exc, 'strerror', None) or exc}") from None
    except UnicodeDecodeError:
        raise RunFileError(f"{p}: not a run file: not UTF-8 text (nor gzip of it)") from None
    except MemoryError:
        raise RunFileError(f"{p}: not a run file: too large to read into this machine's memory") from None
    try:
        return _parse(p, text)
    except RecursionError:
        raise RunFileError(f"{p}: not a run file: its JSON is nested too deeply to read") from None
    except MemoryError:
        raise RunFileError(f"{p}: not a run file: too large to read into this machine's memory") from None


def parse_cost(text: str) -> int:
    """An estimate of the memory parsing ``text`` takes: a value per comma (an upper bound: commas in strings count
    too) and an object per bracket or brace that opens a list or dict."""
    containers = text.count("{") + text.count("[")
    return VALUE_BYTES * (text.count(",") + 1) + CONTAINER_BYTES * containers


def _parse(p: Path, text: str) -> Run:
    if (cost := parse_cost(text)) > MAX_PARSED_BYTES:
        raise RunFileError(f"{p}: not a run file: its {len(text) // 2**20} MiB of JSON hold so many values that parsing "
                           f"them would take about {cost / 2**30:.1f} GiB of memory (more than "
                           f"{MAX_PARSED_BYTES // 2**30} GiB: reports.loading.MAX_PARSED_BYTES); read no further")
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise RunFileError(f"{p}: malformed JSON: {exc.msg} at line {exc.lineno}, column {exc.colno}") from None
    except ValueError as exc:  # an integer of more digits than Python converts (sys.get_int_max_str_digits)
        raise RunFileError(f"{p}: not a run file: {str(exc).split(';')[0]}") from None
    if not isinstance(data, dict):
        raise RunFileError(f"{p}: not a run file: expected a JSON object, found a JSON {type(data).__name__}")
    version = data.get("schema_version")
    if "schema_version" not in data:
        raise RunFileError(f"{p}: not a run file: no schema_version field")
    if version not in SUPPORTED_SCHEMA_VERSIONS:
        raise RunFileError(f"{p}: unknown schema_version {version!r}; these reports read version "
                           f"{', '.join(map(str, SUPPORTED_SCHEMA_VERSIONS))}")
    checked = _compact(data)
    _check_schema(p, checked, _schema(), "does not match the run-file schema")
    _check_schema(p, checked, REPORT_NEEDS, "has a field the reports cannot read")
    run = Run(p, data)
    if run.incomplete:
        run.warnings.append(f"run {run.run_id} ({p.name}) is incomplete: it died or was still going when copied; "
                            "its results are partial")
    return run


def load_some(paths: list[str | Path], by_start: bool = True) -> tuple[list[Run], list[RunFileError]]:
    """Load every file that can be used and say why each other one cannot (the same run given twice counts
    once). Runs are ordered by start time, or as given."""
    if not paths:
        raise RunFileError("no run files given: name at least one RUN.json")
    runs: list[Run] = []
    bad: list[RunFileError] = []
    seen: dict[str, Path] = {}
    for path in paths:
        try:
            run = load_run(path)
            if run.run_id in seen:
                raise RunFileError(f"{run.path}: run {run.run_id} was already given as {seen[run.run_id]}; "
                                   "name each run once")
        except RunFileError as exc:
            bad.append(exc)
            continue
        seen[run.run_id] = run.path
        runs.append(run)
    return (sorted(runs, key=lambda r: (r.data["started"], r.run_id)) if by_start else runs), bad


def run_files(paths: list[str | Path]) -> list[Path]:
    """Every run file named, a directory standing for the ``run-*.json`` and ``run-*.json.gz`` files under it."""
    files: list[Path] = []
    for p in map(Path, paths):
        if p.is_dir():
            files += sorted(f for f in p.rglob("run-*") if f.is_file() and f.name.endswith((".json", ".json.gz")))
        else:
            files.append(p)
    return files


def load_runs(paths: list[str | Path], by_start: bool = True) -> list[Run]:
    """Load and validate every file; the first unusable one is an error."""
    runs, bad = load_some(paths, by_start)
    if bad:
        raise bad[0]
    return runs


def platforms(runs: list[Run]) -> list[tuple[str, str]]:
    """Distinct platforms in first-seen order."""
    return list(dict.fromkeys(r.platform for r in runs))
