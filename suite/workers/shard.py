"""One arch's run split over several runners: ``--shard=I/N`` runs the I-th of N parts of the selected tests.

The parts are balanced by the tests' expected durations, the ones the scheduler orders by (suite/workers/schedule.py:
``suite/test_costs.json``, the nightly profile's own, or SUITE_TEST_COSTS; a test they do not list counts as the
median, and each part of a split test, ``[matmul-fp32-part1of3]``, is a test of its own): greedy, longest first, each
test to the part with the least expected time so far. Ties go by node id (a test) and by part number (a part), so
every runner, and every xdist worker on it, computes the same split from the same collection, whatever order it
collected in. What is not in this shard is deselected (pytest's ``pytest_deselected``), after ``-k``, ``-m`` and
``--kernels``: the shards of a run together hold exactly the tests the unsharded run would, each once.

Each shard's run file says which shard it is and the run it belongs to (``"shard": {"index": I, "count": N,
"run_id": ...}``), what it selected before the split (``selection``: --kernels, -k, -m, the kernel modules by name
and sha256, the Hypothesis profile) and what decided the split (``split_by``: the digest of the test durations it
used, or none); ``python -m reports build`` and ``compare`` merge the N files of one run back into one run, and refuse
a set whose shards disagree on either (their splits then hold other tests: some ran twice, some on no shard).
"""

from __future__ import annotations

import hashlib
import heapq
import json
from collections.abc import Iterable
from typing import Any

from suite.workers import schedule


def assign(nodeids: Iterable[str], costs: dict[str, float], count: int) -> dict[str, int]:
    """Node id -> its shard (zero-based) among ``count``. ``costs``: expected seconds per node id; a test it does
    not list counts as the median of those it does (0 where it lists none: then the split is by count alone,
    round-robin in node-id order)."""
    default = schedule._median(costs)
    ordered = sorted(set(nodeids), key=lambda n: (-costs.get(n, default), n))
    loads = [(0.0, i) for i in range(count)]  # (expected seconds so far, shard): the lightest first, then the lowest
    heapq.heapify(loads)
    out: dict[str, int] = {}
    for i, nodeid in enumerate(ordered):
        if not costs:  # nothing to weigh: round-robin keeps the counts even
            out[nodeid] = i % count
            continue
        load, shard = heapq.heappop(loads)
        out[nodeid] = shard
        heapq.heappush(loads, (load + costs.get(nodeid, default), shard))
    return out


def loads(assignment: dict[str, int], costs: dict[str, float], count: int) -> list[float]:
    """The expected seconds of each shard under ``assignment`` (unlisted tests at the median)."""
    default = schedule._median(costs)
    out = [0.0] * count
    for nodeid, shard in assignment.items():
        out[shard] += costs.get(nodeid, default)
    return out


def split(items: list, index: int, count: int, costs: dict[str, float]) -> tuple[list, list]:
    """(the items of shard ``index`` (one-based) of ``count``, in collection order; the others)."""
    where = assign((item.nodeid for item in items), costs, count)
    kept = [item for item in items if where[item.nodeid] == index - 1]
    dropped = [item for item in items if where[item.nodeid] != index - 1]
    return kept, dropped


def selection(options: Any, keyword: str, markexpr: str, profile: str,
              kernel_modules: list[dict[str, Any]]) -> dict[str, Any]:
    """What a shard selected before the split: every shard of a run must select alike, or their parts do not add up
    to one run (the reports refuse such a set, naming the difference)."""
    return {"kernels": ",".join(options.kernels) if options.kernels else None, "keyword": keyword or None,
            "markexpr": markexpr or None, "hypothesis_profile": profile,
            "kernel_modules": sorted(f"{m['module'].replace(chr(92), '/').rsplit('/', 1)[-1]} {m.get('sha256')}"
                                     for m in kernel_modules)}


# The CI's own id of the pipeline a shard ran in, where the environment gives one: the shards of one run come from one
# pipeline, and a shard of another night under a --run-id reused by hand does not (the reports refuse the set).
CI_RUN_VARIABLES = (("github", "GITHUB_RUN_ID", "GITHUB_RUN_ATTEMPT"), ("gitlab", "CI_PIPELINE_ID", None),
                    ("buildkite", "BUILDKITE_BUILD_ID", None))


def ci_run(environ: dict[str, str] | None = None) -> str | None:
    """'github 1234 attempt 1' (or gitlab's, buildkite's pipeline), None outside a CI that says which."""
    import os

    env = os.environ if environ is None else environ
    for name, run, attempt in CI_RUN_VARIABLES:
        if value := env.get(run, "").strip():
            again = env.get(attempt, "").strip() if attempt else ""
            return f"{name} {value}" + (f" attempt {again}" if again else "")
    return None


def split_by(costs: dict[str, float]) -> dict[str, Any]:
    """What decided the split: the test durations it weighed (their digest, so that runners with the same file
    anywhere agree), or none (collection order: a runner without the file splits otherwise)."""
    if not costs:
        return {"durations": None, "tests_listed": 0}
    digest = hashlib.sha256(json.dumps(sorted(costs.items())).encode()).hexdigest()
    return {"durations": f"sha256:{digest[:16]}", "tests_listed": len(costs)}


def run_id_note(given: str | None, environ: dict[str, str] | None = None) -> str:
    """What the session header adds to a shard's line where its run id is random (no --run-id, SUITE_RUN_ID or
    GitHub Actions run): shards run by hand so get one each, and the reports cannot tell they are one run."""
    import os

    env = os.environ if environ is None else environ
    if given or env.get("GITHUB_RUN_ID", "").strip().isdigit():
        return ""
    return ("; the run id is random (no --run-id): give every shard the same --run-id=ID, or merge their files "
            "with `reports build --merge-shards`")
