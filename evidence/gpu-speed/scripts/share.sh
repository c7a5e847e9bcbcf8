# One compile per kernel variant per run (suite/compile_share.py) and the loaded-register check in the worker:
# the suite cold and warm with the default workers, cold with sharing off (same session, for the difference), and
# cold with twice the default workers. CPU time (user+sys of pytest and its workers) beside each wall time.
set -x
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv; nproc
TIMEFORMAT='wall %R s, user %U s, sys %S s'
run() {  # name, cache dir, extra args
  local name=$1 cache=$2; shift 2
  { time TRITON_CACHE_DIR=$cache timeout 170 python -m pytest --backend=cuda -p no:cacheprovider \
      --results-dir=$OUT/$name "$@" > $OUT/$name.log 2>&1; } 2> $OUT/$name.time
  echo "$name rc $? $(cat $OUT/$name.time)"
  grep -A4 "^time in tests" $OUT/$name.log | cut -c1-400; tail -1 $OUT/$name.log
}
run cold /tmp/tc-a -n auto
run warm /tmp/tc-a -n auto
SUITE_COMPILE_SHARE=0 run cold-unshared /tmp/tc-b -n auto
run cold32 /tmp/tc-c -n 32
# The loaded-register check can fail: the offline record of one config against the kernel loaded with another.
TRITON_CACHE_DIR=/tmp/tc-a python - <<'PY' 2>&1 | tail -3
from kernels import registry
from suite import compile_matrix, loaded_registers
from suite.backend import resolve
backend = resolve("cuda"); registry.load_builtin(); spec = registry.get("matmul")
cfg = {"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 64, "GROUP_M": 8, "num_warps": 8, "num_stages": 3}
offline = compile_matrix.compile_one(spec, "fp16", cfg, ("cuda", backend.arch, 32))
for other in (cfg, {**cfg, "num_warps": 4, "num_stages": 4}):
    v = loaded_registers.loaded(spec, "fp16", {"M": 512, "N": 512, "K": 512}, other, backend)["variants"]
    print("planted" if other != cfg else "same", "offline", offline["registers"], offline["shared_bytes"], "loaded", v,
          "holds", v[0]["n_regs"] == offline["registers"] and v[0]["shared"] == offline["shared_bytes"])
PY
