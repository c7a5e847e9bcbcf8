"""What a failing case record says fails, so that `compare` can tell the same failure from a different one.

A case's failure is its *kind*: the record's `failure` class (reports/failure_kinds.py; WRONG where it has none: a
wrong value in every run),
the outputs whose error ratio is over 1 (or not a number), and, for a wrong value, each check the message names (in
its order) with the output it is about and the element it names first:

- `never written`, `integers differ`, `NaN where the reference is not`, `non-NaN where the reference is NaN`,
  `infinities differ`: the first such element (`first at (i, j)`);
- `over the bound`: the element of the largest error over its bound (`error ... at (i, j) is ...x the bound`);
- `shape differs`: no element.

The element is left out for an intermittent failure (which run was wrong, and where, varies by nature) and for
every class other than a wrong value (fault, oom, too_large, timeout, crash, spec, memory, interpreter: the class
alone, since their messages hold addresses, process ids and sizes). A wrong value whose message names none of the
checks (an exception, such as a config that does not fit) is its message's first line with the numbers left out.
Counts (`3 of 1000 elements over`) and error sizes are not part of the kind: they move with the inputs."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any

from reports.failure_kinds import FailureKind
from reports.loading import num

_AT = r"(\([\d, ]*\))"
CHECKS = (
    ("never written", re.compile(r"elements never written \(.*?first at " + _AT)),
    ("integers differ", re.compile(r"integers differ \(first at " + _AT)),
    ("NaN where the reference is not", re.compile(r"(?<!non-)NaN where the reference is not \(first at " + _AT)),
    ("non-NaN where the reference is NaN", re.compile(r"non-NaN where the reference is NaN \(first at " + _AT)),
    ("infinities differ", re.compile(r"infinities differ \(first at " + _AT)),
    ("over the bound", re.compile(r"error \S+ at " + _AT + r" is \S+x the bound")),
    ("shape differs", re.compile(r"shape \([\d, ]*\) != reference")),
)
WRONG = FailureKind.WRONG  # the class of a wrong value in every run: a failed case record without a `failure` field
POSITIONED = (WRONG,)  # the classes whose elements are part of the kind


@dataclass(frozen=True)
class Failure:
    kind: str  # the record's failure class, or WRONG
    outputs: tuple[str, ...]  # the outputs over their bound, sorted
    checks: tuple[tuple[str, str, str | None], ...]  # (output, check, element), in the message's order

    def text(self) -> str:
        head = "wrong value" if self.kind == WRONG else self.kind
        parts = [" ".join(p for p in (out, check, f"at {at}" if at else "") if p) for out, check, at in self.checks]
        if not parts and self.outputs:
            parts = [f"outputs {', '.join(self.outputs)}"]
        return f"{head}: {'; '.join(parts)}" if parts else head


def _bad_outputs(record: dict[str, Any]) -> tuple[str, ...]:
    outputs = record.get("outputs") if isinstance(record.get("outputs"), dict) else {}
    bad = []
    for name, check in outputs.items():
        ratio = num(check.get("error_ratio")) if isinstance(check, dict) else None
        if ratio is None or not math.isfinite(ratio) or ratio > 1.0:
            bad.append(str(name))
    return tuple(sorted(bad))


def _output_before(message: str, at: int, names: list[str]) -> str:
    """The output whose 'name: ' comes last before position ``at`` of the message ('' if none)."""
    best, where = "", -1
    for name in names:
        for m in re.finditer(r"(?<![\w.])" + re.escape(name) + ": ", message[:at]):
            if m.start() > where:
                best, where = name, m.start()
    return best


def failure(record: dict[str, Any]) -> Failure:
    """The kind of a failed (or xfailed) case record's failure."""
    kind = record.get("failure") or WRONG
    if kind not in (WRONG, FailureKind.INTERMITTENT):
        return Failure(str(kind), (), ())
    outputs = _bad_outputs(record)
    message = str(record.get("message") or "")
    names = sorted({*outputs, *(record.get("outputs") or {})})
    found = []
    for check, pattern in CHECKS:
        for m in pattern.finditer(message):
            at = m.group(1) if pattern.groups and kind in POSITIONED else None
            found.append((m.start(), _output_before(message, m.start(), names), check, at))
    checks = tuple((out, check, at) for _, out, check, at in sorted(found))
    if not checks and message.strip():
        line = message.strip().splitlines()[0]
        line = re.sub(r"^intermittent \([^)]*\): ", "", line)
        checks = (("", re.sub(r"0x[0-9a-fA-F]+|\d+(?:\.\d+)?(?:e[+-]?\d+)?", "#", line)[:160], None),)
    return Failure(str(kind), outputs, checks)
