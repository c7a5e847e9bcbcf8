"""Per-phase figures of README's GPU command from the run files and logs that ab.sh left (python3 phases.py DIR...):
per run, pytest's count, when the workers were ready, how busy they were after, the tests' time summed (pytest's call
durations) and its "other", the time between a test's start and end outside its call (setup and teardown: the first
test of each worker waits there for the worker's GPU start-up), and how long workers waited between two tests in the
run's last seconds (the controller handing out tests)."""

from __future__ import annotations

import glob
import gzip
import json
import os
import re
import sys
from collections import defaultdict


def load(path: str) -> dict:
    raw = open(path, "rb").read()
    return json.loads(gzip.decompress(raw) if raw[:2] == b"\x1f\x8b" else raw)


def row(directory: str, name: str) -> str:
    files = glob.glob(os.path.join(directory, name, "run-*.json*"))
    log = os.path.join(directory, f"{name}.log")
    count = ""
    if os.path.exists(log):
        m = re.findall(r"(\d+ passed.*? in [\d.]+s)", open(log).read())
        count = m[-1] if m else ""
    d = load(files[0])
    t, w = d["timing"], d["timing"]["workers"]
    per = defaultdict(list)
    for test in d["tests"]:
        per[test["worker"]].append(test)
    firsts = {min(ts, key=lambda x: x["began_s"])["nodeid"] for ts in per.values()}
    outside = sum(x["ended_s"] - x["began_s"] - x["duration_s"] for x in d["tests"])
    first_wait = sum(x["ended_s"] - x["began_s"] - x["duration_s"] for x in d["tests"] if x["nodeid"] in firsts)
    end = w["last_test_ended_s"]
    gaps = [b["began_s"] - a["ended_s"] for ts in per.values()
            for a, b in zip(sorted(ts, key=lambda x: x["began_s"]), sorted(ts, key=lambda x: x["began_s"])[1:])
            if b["began_s"] > end - 4]
    r = w["ready_s"]
    return (f"| {name} | {count} | {r['first']:.1f}-{r['last']:.1f} (median {r['median']:.1f}) | {w['busy']:.0%} | "
            f"{t['tests_s']:.1f} | {t['compile_s']:.1f} | {t['other_s']:.1f} | {outside:.1f} ({first_wait:.1f}) | "
            f"{(sum(gaps) / len(gaps) if gaps else 0):.2f} |")


if __name__ == "__main__":
    print("| run | pytest's count | workers ready, s | busy after | tests summed, s | compile, s | other, s | "
          "outside the call, s (first tests) | wait between tests, last 4 s |")
    print("|---|---|---|---|---|---|---|---|---|")
    for directory in sys.argv[1:]:
        names = sorted({os.path.basename(os.path.dirname(p)) for p in glob.glob(os.path.join(directory, "*", "run-*"))},
                       key=lambda n: (not n[0].isdigit(), int(n.split("-")[0]) if n[0].isdigit() else 0, n))
        for name in names:
            print(row(directory, name))
