import os, sys, tempfile, time
os.environ["TRITON_CACHE_DIR"] = tempfile.mkdtemp()
from kernels import registry
from suite.tools import compile_matrix as cm
name = sys.argv[1]
registry.load_builtin(); spec = {s.name: s for s in registry.all_specs()}[name]
t = time.perf_counter()
recs = cm.compile_kernel(spec, ("cuda", "sm_90", 32), "full")
tot = 0
for r in recs:
    tot += r.get("compile_seconds") or 0
    print(r["dtype"], r["config"], r["status"], r.get("compile_seconds"))
print("n", len(recs), "sum", round(tot, 2), "wall", round(time.perf_counter() - t, 2))
