"""The harness's tests handed out longest module first (tests/durations.json), and that file refreshed.

pytest-xdist hands tests to its workers in collection order; on a 2-core machine a long module collected last (the
slow tests' fresh install, 35 s or more) runs while the other worker has nothing left. tests/conftest.py sorts the
collection by each module's measured time, longest first, keeping a module's tests together (module-scoped
fixtures are made once a worker) and in their own order. A module's time is two figures, its tests outside and
inside the slow mark (`pytest tests` and `pytest tests -m slow` are two runs); a module not listed counts as
DEFAULT_S. Refresh from the durations pytest prints (relative figures are enough: a shared machine's do)::

    pytest tests -n auto --durations=0 > all.log; pytest tests -m slow -n auto --durations=0 > slow.log
    python -m tests.durations all.log slow.log
"""

from __future__ import annotations

import json
import re
import sys
from collections import defaultdict
from pathlib import Path

FILE = Path(__file__).with_name("durations.json")
DEFAULT_S = 10.0
_LINE = re.compile(r"^([\d.]+)s (?:call|setup|teardown)\s+(\S+)", re.M)


def load(path: Path = FILE) -> dict[str, list[float]]:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return {}  # no figures: collection order, as pytest has it


def order(keys: list[tuple[str, bool]], durations: dict[str, list[float]]) -> list[int]:
    """The indices of ``keys`` ((module, slow) per test, in collection order) longest module first; ties and a
    module's own tests keep their order (a stable sort on the module's time, then its path)."""
    def cost(i: int) -> tuple[float, str]:
        module, slow = keys[i]
        figures = durations.get(module)
        return (-(figures[1 if slow else 0] if figures else DEFAULT_S), module)

    return sorted(range(len(keys)), key=cost)


def from_logs(all_log: str, slow_log: str) -> dict[str, list[float]]:
    per: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0])
    for column, text in enumerate((all_log, slow_log)):
        for match in _LINE.finditer(text):
            per[match.group(2).split("::")[0]][column] += float(match.group(1))
    return {m: [round(a, 1), round(b, 1)] for m, (a, b) in sorted(per.items(), key=lambda kv: -sum(kv[1]))}


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print("usage: python -m tests.durations ALL_LOG SLOW_LOG (pytest's --durations=0 output of "
              "`pytest tests` and of `pytest tests -m slow`)", file=sys.stderr)
        return 2
    figures = from_logs(*(Path(a).read_text() for a in argv))
    if not figures:
        print(f"no durations in {argv[0]} or {argv[1]}: run pytest with --durations=0", file=sys.stderr)
        return 1
    text = ",\n".join(f"{json.dumps(m)}: {json.dumps(v)}" for m, v in figures.items())
    FILE.write_text("{\n" + text + "\n}\n")
    print(f"{FILE}: {len(figures)} modules")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
