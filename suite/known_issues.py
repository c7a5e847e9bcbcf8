"""Known-issue registry: expected failures keyed by backend, arch, Triton version, kernel, dtype.

Entries are strict: a case that is expected to fail and passes shows as XPASS and
fails the run until its entry is removed, so a fixed bug never hides.
"""

from __future__ import annotations

import fnmatch
import json
from dataclasses import dataclass
from pathlib import Path

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import Version

DEFAULT_PATH = Path(__file__).resolve().parent / "known_issues.json"
FIELDS = {"id": str, "backend": str, "arch": str, "triton": str, "kernel": str, "dtype": str, "reason": str, "link": str}
# Optional: which test functions the entry applies to (glob); the reference test by default.
OPTIONAL = {"test": "test_matches_reference"}


class KnownIssueError(ValueError):
    pass


@dataclass(frozen=True)
class KnownIssue:
    id: str
    backend: str
    arch: str
    triton: str
    kernel: str
    dtype: str
    reason: str
    link: str
    test: str = OPTIONAL["test"]

    def matches(self, backend: str, arch: str, triton_version: str, kernel: str, dtype: str,
                test: str = OPTIONAL["test"]) -> bool:
        pairs = ((test, self.test), (backend, self.backend), (arch, self.arch), (kernel, self.kernel), (dtype, self.dtype))
        return (all(fnmatch.fnmatchcase(value, pattern) for value, pattern in pairs)
                and Version(triton_version.split("+")[0]) in SpecifierSet(self.triton or ">=0"))

    def as_record(self) -> dict[str, str]:
        return dict(self.__dict__)


def load(path: Path | str = DEFAULT_PATH) -> list[KnownIssue]:
    path = Path(path)
    try:
        data = json.loads(path.read_text())
    except OSError as exc:
        raise KnownIssueError(f"{path}: cannot read known-issue file: {exc.strerror}") from None
    except json.JSONDecodeError as exc:
        raise KnownIssueError(f"{path}: not valid JSON: {exc}") from None
    entries = data.get("known_issues") if isinstance(data, dict) else None
    if not isinstance(entries, list):
        raise KnownIssueError(f"{path}: expected an object with a list 'known_issues'")
    issues, seen = [], set()
    for i, entry in enumerate(entries):
        where = f"{path}: known_issues[{i}]"
        if not isinstance(entry, dict):
            raise KnownIssueError(f"{where}: expected an object")
        for name, typ in FIELDS.items():
            if not isinstance(entry.get(name), typ):
                raise KnownIssueError(f"{where}: field {name!r} must be a string, got {entry.get(name)!r}")
        unknown = set(entry) - set(FIELDS) - set(OPTIONAL)
        if unknown:
            allowed = sorted(FIELDS) + sorted(OPTIONAL)
            raise KnownIssueError(f"{where}: unknown field(s) {sorted(unknown)}; allowed: {allowed}")
        if not isinstance(entry.get("test", ""), str):
            raise KnownIssueError(f"{where}: field 'test' must be a string (a test function name or glob)")
        try:
            SpecifierSet(entry["triton"])
        except InvalidSpecifier:
            raise KnownIssueError(f"{where}: field 'triton' is not a version specifier: {entry['triton']!r}") from None
        if entry["id"] in seen:
            raise KnownIssueError(f"{where}: duplicate id {entry['id']!r}")
        seen.add(entry["id"])
        issues.append(KnownIssue(**entry))
    return issues


def find(issues: list[KnownIssue], backend: str, arch: str, triton_version: str, kernel: str,
         dtype: str, test: str = OPTIONAL["test"]) -> KnownIssue | None:
    return next((k for k in issues if k.matches(backend, arch, triton_version, kernel, dtype, test)), None)
