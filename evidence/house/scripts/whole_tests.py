import json, sys, collections, re, gzip
def load(p): return json.load((gzip.open if p.endswith(".gz") else open)(p, "rt"))
def whole(r):
    out = collections.defaultdict(list)
    for c in r["cases"]:
        base = re.sub(r"-part\d+of\d+\]$", "]", c["nodeid"])
        out[base].append((json.dumps(c["shape"], sort_keys=True), c["layout"], c["values"], c["seed"]))
    return {k: sorted(v) for k, v in out.items()}
a, b = whole(load(sys.argv[1])), whole(load(sys.argv[2]))
d = [k for k in a if a[k] != b.get(k)]
print(f"whole tests {len(a)}; their case sets differ in {len(d)}:", [k.split('[')[1] for k in d])
