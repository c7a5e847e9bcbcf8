"""The suite's test ids and test records, read one way: by the run's verdict and summary (suite/plugin/glance.py,
summary.py), the split tests and the schedule (suite/workers/parts.py, schedule.py), and by the reports.

A test id is pytest's node id, as the run file's ``tests[].nodeid`` records it::

    suite/test_kernels.py::test_matches_reference[matmul-fp32-part2of5]
    module               ::function              [kernel-dtype-partNofM]

- the kernel x dtype tests (``test_matches_reference``, ``test_properties``, ``test_benchmark``): ``[kernel-dtype]``;
  a part of a split test (suite/workers/parts.py) adds ``-partNofM`` (1-based);
- the compile matrix: ``[kernel-target]`` (``test_compiles_on_target[matmul-sm_90]``) or ``[kernel]``;
- the hazards: ``[kind]`` (``test_inputs_are_the_same_on_every_device[normal]``) or no parameter at all.

A reproduction line names its test by such an id, followed by ``--repro=CASE`` (repro_test_id).

Standard library only: the suite imports this module (glance, summary, parts, schedule, suite/tools/export.py), a
fourth import of reports/ by the suite after floor_file (suite/tools/bench.py) and gate (suite/checks/autotune.py,
suite/plugin/hooks.py), so that the terminal's verdict and the reports read a run file's tests alike. It imports
nothing of the suite, kernels, torch or triton (docs/design.md).
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

# A part of a split test: the whole test's parameter, then -partNofM (suite/workers/parts.py writes it: part_param).
PART = re.compile(r"^(?P<whole>.*)-part(?P<part>\d+)of(?P<parts>\d+)$")
# What a dtype's name looks like ('fp32', 'bf16', 'fp8e4nv', 'int8'), where a target's does not ('sm_90', 'gfx942'):
# a pattern, not the suite's list (kernels/_types.py DTYPE_NAMES), so that run files of a suite with more dtypes read.
DTYPE = re.compile(r"(fp|bf|int|uint|float|bool)\w*")

# A test record's outcome: pytest's, and xpassed-strict for a strict known issue's test that passed
# (reports/schema/run.schema.json).
OUTCOMES = ("passed", "failed", "skipped", "xfailed", "xpassed", "xpassed-strict")
# The outcomes that fail a run (pytest's exit code 1); "error" is pytest's, which the run file does not record but a
# record that says it fails all the same.
FAILING = ("failed", "error", "xpassed-strict")
# The outcomes of a test that ran (not skipped).
RAN = ("passed", "failed", "xfailed", "xpassed", "xpassed-strict")
NO_REASON = "no reason given"


@dataclass(frozen=True)
class NodeId:
    """One test id, read (parse). A part of a split test reads as its whole test does but for ``param``, ``part``
    and ``parts``: kernel and dtype are the whole test's."""

    nodeid: str  # as given
    module: str  # 'suite/test_kernels.py' ('' where the id names no file)
    function: str  # 'test_matches_reference'
    param: str | None  # what the brackets hold, as written: 'matmul-fp32-part2of5'; None without brackets
    whole_param: str | None  # the whole test's: 'matmul-fp32'
    kernel: str | None  # the whole test's parameter before its last '-' ('matmul'), or all of it ('normal')
    variant: str | None  # after its last '-': a dtype ('fp32') or a target ('sm_90'); None where there is none
    whole: str  # the whole test's id: '...::test_matches_reference[matmul-fp32]'
    part: int = 1  # 1-based, as the id writes it; a whole test is part 1 of 1
    parts: int = 1

    @property
    def dtype(self) -> str | None:
        """The variant where it is a dtype ('fp32'); None for a target ('sm_90') or none."""
        return self.variant if self.variant is not None and is_dtype(self.variant) else None

    @property
    def kernel_dtype(self) -> tuple[str, str] | None:
        """(kernel, dtype) of a kernel x dtype test ('[matmul-fp32]', a part's too); None for any other test."""
        return (self.kernel, self.dtype) if self.kernel and self.dtype else None

    @property
    def is_part(self) -> bool:
        return self.param != self.whole_param


def parse(nodeid: str) -> NodeId:
    """Read a test id. The parameter is what the first '[' and the id's final ']' enclose (a function's name has no
    '['); an id without both reads as a test with no parameter, named by what precedes its first '['. Never raises:
    an id it cannot read is a test named by it, with no kernel."""
    nodeid = str(nodeid)
    head, bracket, rest = nodeid.partition("[")
    param = rest[:-1] if bracket and rest.endswith("]") else None
    module, _, _ = head.partition("::")
    function = head.rsplit("::", 1)[-1]
    module = module if "::" in head else ""
    if param is None:
        return NodeId(nodeid, module, function, None, None, None, None, nodeid)
    whole_param, part, parts = param, 1, 1
    if m := PART.match(param):
        whole_param, part, parts = m["whole"], int(m["part"]), int(m["parts"])
    kernel, dash, variant = whole_param.rpartition("-")
    if not dash:
        kernel, variant = whole_param, ""
    whole = nodeid if whole_param == param else f"{head}[{whole_param}]"
    return NodeId(nodeid, module, function, param, whole_param, kernel or None, variant or None, whole, part, parts)


def part_param(param: str, part: int, parts: int) -> str:
    """The parameter of part ``part`` (zero-based) of ``parts`` of the test whose parameter is ``param``:
    'matmul-fp32-part1of3' (``param`` itself where the test is not split)."""
    return f"{param}-part{part + 1}of{parts}" if parts > 1 else param


def part_ids(whole: str, parts: int) -> list[str]:
    """The ids of the ``parts`` parts of the test ``whole`` (itself alone where it is not split, or has no parameter
    to split by)."""
    n = parse(whole)
    if parts <= 1 or n.param is None:
        return [whole]
    head = whole.partition("[")[0]
    return [f"{head}[{part_param(n.param, i, parts)}]" for i in range(parts)]


def is_dtype(name: str) -> bool:
    return bool(DTYPE.fullmatch(name))


def repro_test_id(line: Any) -> str | None:
    """The test id a reproduction line runs, read as the shell reads the line: its first word naming a test ('::'),
    whatever started it (``pytest``, ``python -m pytest``, ``triton-portability``):
    ``pytest 'suite/test_kernels.py::test_matches_reference[matmul-fp32]' --backend=cuda '--repro=M=1;...'`` ->
    ``suite/test_kernels.py::test_matches_reference[matmul-fp32]``. None where it names none."""
    try:
        words = shlex.split(str(line or ""))
    except ValueError:  # an unclosed quote: a line cut short
        return None
    return next((w for w in words if "::" in w and not w.startswith("-")), None)


def outcome(record: Mapping[str, Any]) -> str:
    """A test record's outcome (OUTCOMES); '' for a record that has none."""
    return str(record.get("outcome") or "")


def failing(record: Mapping[str, Any]) -> bool:
    """Whether a test record fails the run (FAILING)."""
    return outcome(record) in FAILING


def skip_reason(record: Mapping[str, Any]) -> str:
    """Why a test was skipped, as its skip said it: the message's first line, without pytest's 'Skipped: ' ('fp8e4nv
    is not supported on interpreter (interpreter profile)'); what follows it (a case, its reproduction line) is the
    run file's. NO_REASON where the message says nothing."""
    text = str(record.get("message") or "").strip()
    text = text.removeprefix("Skipped:").strip()
    return (text.splitlines()[0].strip() if text else "") or NO_REASON
