"""One line a rule-D try from a run file: each part's outcome, and which end-of-test rule a failure names.
Usage: python evidence/adv61-tries/d_outcomes.py RUNFILE"""
import collections
import json
import sys

data = json.load(open(sys.argv[1]))
parts = collections.defaultdict(list)
for t in data["tests"]:
    nodeid = t["nodeid"]
    name = nodeid.split("[")[1].split("-")[0]
    part = nodeid.split("-")[-1].rstrip("]") if "part" in nodeid else "whole"
    msg = t.get("message") or ""
    said = [w for w, k in (("one program", "grid of one program"), ("path", "are taken by no case"),
                           ("skip said", "besides, this part was skipped")) if k in msg]
    parts[name].append(f"{part}:{t['outcome']}" + (f"({', '.join(said)})" if said else ""))
for name in sorted(parts):
    print(f"{name:20} {' '.join(parts[name])}")
