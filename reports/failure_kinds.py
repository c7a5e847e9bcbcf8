"""The kinds of failure a case can have, by one name each: the suite's harness and tests decide them, the run file
records them (a case record's ``failure``), and the reports read them.

A member is a ``str`` equal to the string a run file holds ("oom"): it compares, hashes, formats and serialises to JSON
as that string, so records, run files and comparisons with plain strings stay as they were. A record handed from a
pytest-xdist worker to the controller holds the plain string all the same (``str(kind)`` or ``.value``): execnet
serialises built-in types only. Defined as ``str, enum.Enum`` with ``__str__`` and ``__format__`` of the value (what
Python 3.11's ``enum.StrEnum`` does), the same on Python 3.10 and on later versions.

Not every kind reaches a run file: RECORDED are the kinds a case record's ``failure`` may hold, exactly the run-file
schema's enum (reports/schema/run.schema.json; tests/reports/test_failure_kinds.py holds the two alike). The others are
the suite's own judgements of a case it does not record as failed (OOM_HELD, NOT_CHECKABLE) and the reports' name for
a failed record without a ``failure`` field (WRONG).

Standard library only, importing nothing of the project: the suite imports this module (one more suite-to-reports
import, beside reports/floor_file.py and reports/gate.py; docs/design.md), so that what the harness writes and what
``compare`` reads are the same names."""

from __future__ import annotations

import enum


class FailureKind(str, enum.Enum):
    """How a case broke, other than (WRONG aside) by a wrong value every time it ran."""

    FAULT = "fault"  # a GPU fault: the launch left this process's GPU context unusable (a fresh worker goes on)
    OOM = "oom"  # out of memory that no sharing of the GPU explains: the kernel's (or its launcher's) own failure
    OOM_HELD = "oom_held"  # out of memory alone on the GPU, other processes holding what it needed: not run, counted
    TOO_LARGE = "too_large"  # out of memory alone on the GPU, past what the GPU holds: not run, never a wrong result
    TIMEOUT = "timeout"  # a hang ended by --case-timeout: the worker's watchdog ended it
    CRASH = "crash"  # the worker died during the test with no report (a segfault, an abort, os._exit)
    SPEC = "spec"  # a broken spec: its own code raised, returned other outputs than declared, or broke its contract
    MEMORY = "memory"  # an out-of-bounds access found by a memory checker, or a store into an output's guard region
    INTERPRETER = "interpreter"  # a construct the CPU interpreter cannot run (the message names it and what to do)
    NOT_CHECKABLE = "not_checkable"  # a construct the interpreter evaluates otherwise than a GPU: skipped, saying why
    INTERMITTENT = "intermittent"  # a wrong value in some of the case's runs and a right one in others
    WRONG = "wrong"  # a wrong value in every run: a failed case record without a ``failure`` field (compare's class)

    def __str__(self) -> str:
        return self.value

    def __format__(self, spec: str) -> str:
        return format(self.value, spec)


# The kinds a case record's ``failure`` may hold: the run-file schema's enum. TOO_LARGE is no longer written (such a
# case is listed in the run file's gpu_share, not recorded as failed) but older committed run files hold it.
RECORDED = frozenset(FailureKind) - {FailureKind.OOM_HELD, FailureKind.NOT_CHECKABLE, FailureKind.WRONG}
