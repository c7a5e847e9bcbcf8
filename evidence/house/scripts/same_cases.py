"""The interpreter suite before and after the layering: the same tests, outcomes, case counts, compiles, findings and
code-path coverage? Usage: python same_cases.py BEFORE.json[.gz] AFTER.json[.gz]"""
import collections
import gzip
import json
import sys


def load(path):
    with (gzip.open if path.endswith(".gz") else open)(path, "rt") as f:
        return json.load(f)


def cases_by_test(run):
    out = collections.defaultdict(list)
    for c in run["cases"]:
        out[c["nodeid"]].append((json.dumps(c["shape"], sort_keys=True), c["layout"], c["values"], c["seed"]))
    return out


a, b = load(sys.argv[1]), load(sys.argv[2])
print("tests (node id, outcome) identical:", sorted((t["nodeid"], t["outcome"]) for t in a["tests"])
      == sorted((t["nodeid"], t["outcome"]) for t in b["tests"]), len(a["tests"]), len(b["tests"]))
print("test outcomes:", dict(collections.Counter(t["outcome"] for t in a["tests"])),
      dict(collections.Counter(t["outcome"] for t in b["tests"])))
print("cases:", len(a["cases"]), len(b["cases"]), "outcomes", dict(collections.Counter(c["outcome"] for c in a["cases"])),
      dict(collections.Counter(c["outcome"] for c in b["cases"])))
print("compile records:", len(a["compiles"]), len(b["compiles"]), "findings:", len(a["findings"]), len(b["findings"]))
ca = {(c["kernel"], c["dtype"]): c for c in a["coverage"]}
cb = {(c["kernel"], c["dtype"]): c for c in b["coverage"]}
print("coverage entries:", len(ca), len(cb), "same paths taken and none unexercised alike:",
      ca.keys() == cb.keys() and all(set(ca[k]["paths"]) == set(cb[k]["paths"])
                                     and ca[k]["unexercised"] == cb[k]["unexercised"] for k in ca))
pa, pb = cases_by_test(a), cases_by_test(b)
differ = sorted(n for n in pa if pa[n] != pb.get(n))
print(f"tests whose drawn cases differ: {len(differ)} of {len(pa)}")
for n in differ:
    print(f"  {n}: {len(pa[n])} / {len(pb[n])} cases")
