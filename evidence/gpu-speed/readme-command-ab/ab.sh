#!/bin/bash
# README's GPU command on two trees, alternating, on one machine (run from the repository root on the device machine,
# with the trees staged under abtrees/old and abtrees/new). Everything lands under $OUT/ab, packed into $OUT/ab.tgz;
# $OUT/summary.txt holds one line per run.
#   SEQ   the runs, tree:mode, in order (default: old:cold new:cold old:warm new:warm old:warm new:warm)
#   EXTRA 1: after the runs, per tree, one process collecting with -X importtime and one under cProfile (warm);
#         2: one more warm run of the new tree with its controller under cProfile (ab/controller-new.prof)
# cold: an empty Triton cache of the tree's own (TRITON_CACHE_DIR), no __pycache__ in the tree and an empty bytecode
# cache of the tree's own (SUITE_BYTECODE_DIR, where the tree has one: suite/workers/bytecode.py); tritoncold: the
# Triton cache alone emptied; warm: the caches and bytecode the tree's previous run left. Torch's libraries are read
# once before the first timed run (the page cache is warm for every run). After each run, summary.txt says what
# Triton's cache holds (distinct kernels and C modules) beside the run's count of kernels compiled.
export PYTHONUNBUFFERED=1
root=$(pwd); w=$OUT/ab; mkdir -p "$w"
seq=${SEQ:-"old:cold new:cold old:warm new:warm old:warm new:warm"}
{ nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader | head -1; echo "cores: $(nproc)"
  python -c "import torch, triton, numpy, hypothesis, pytest, xdist; print('torch', torch.__version__, 'triton', triton.__version__, 'numpy', numpy.__version__, 'hypothesis', hypothesis.__version__, 'pytest', pytest.__version__, 'xdist', xdist.__version__)"
  for t in abtrees/*/; do echo "$t $(cat $t/TREE 2>/dev/null)"; done
  echo "PYTHONDONTWRITEBYTECODE=${PYTHONDONTWRITEBYTECODE-unset} PYTHONPYCACHEPREFIX=${PYTHONPYCACHEPREFIX-unset}"
  lscpu | grep -E "^Model name|^Thread|^Core|^Socket|^CPU\(s\)"; } 2>&1 | tee "$w/machine.txt"
python -c "import torch; torch.zeros(1, device='cuda'); torch.cuda.synchronize()"   # torch's libraries into the page cache
n=0
for step in $seq; do
  tree=${step%%:*}; mode=${step##*:}; n=$((n + 1)); name=$n-$tree-$mode
  cache=/tmp/triton-cache-$tree; pyc=/tmp/bytecode-$tree
  if [ "$mode" = cold ]; then rm -rf "$cache" "$pyc"; find "$root/abtrees/$tree" -name __pycache__ -prune -exec rm -rf {} +; fi
  if [ "$mode" = tritoncold ]; then rm -rf "$cache"; fi
  cd "$root/abtrees/$tree" || exit 1
  t0=$EPOCHREALTIME
  # a tree's ENV file (stage.sh leaves none): variables for its runs alone, e.g. SUITE_COMPILE_ONCE=0
  env $(cat ENV 2>/dev/null) TRITON_CACHE_DIR=$cache SUITE_BYTECODE_DIR=$pyc python -m pytest --backend=cuda -n auto \
    --results-dir="$w/$name" > "$w/$name.log" 2>&1
  rc=$?
  t1=$EPOCHREALTIME
  printf '%s: exit %s, shell %s s; %s\n' "$name" "$rc" "$(awk "BEGIN{printf \"%.1f\", $t1 - $t0}")" "$(tail -n 1 "$w/$name.log" | tr -d '=')" \
    | tee -a "$w/summary.txt"
  grep -E "^timeline|^  [0-9]+ worker|ready" "$w/$name.log" | head -3
  # what the cache holds after the run: distinct kernels (a .cubin each) and C modules (a .so each, Triton's driver
  # module and launchers); a run's "kernels compiled" over the distinct kernels is what several workers compiled twice
  echo "$name: cache: $(find "$cache" -name '*.cubin' | wc -l) kernels, $(find "$cache" -name '*.so' | wc -l) C modules; $(tr -s '\n ' '  ' < "$w/$name.log" | grep -oE '[0-9]+ kernels compiled, [0-9]+ from the cache[^;]*' | head -1)" \
    | tee -a "$w/summary.txt"
  cd "$root"
done
if [ "${EXTRA:-1}" = 1 ]; then
  for tree in old new; do
    cd "$root/abtrees/$tree" || exit 1
    TIMEFORMAT="$tree: collect-only in one process: %R s wall, %U s user, %S s sys"
    { time python -X importtime -m pytest --backend=cuda -p no:cacheprovider --collect-only -q --no-results \
      > "$w/collect-$tree.log" 2> "$w/importtime-$tree.txt"; } 2>> "$w/summary.txt"
    tail -n 1 "$w/summary.txt"; tail -n 1 "$w/collect-$tree.log"
    python -m cProfile -o "$w/collect-$tree.prof" -m pytest --backend=cuda -p no:cacheprovider --collect-only -q \
      --no-results > /dev/null 2>&1
    cd "$root"
  done
fi
du -sh /tmp/bytecode-* 2>/dev/null | tee -a "$w/summary.txt"
if [ "${EXTRA:-1}" = 2 ]; then
  cd "$root/abtrees/new" || exit 1
  TRITON_CACHE_DIR=/tmp/triton-cache-new SUITE_BYTECODE_DIR=/tmp/bytecode-new python -m cProfile \
    -o "$w/controller-new.prof" -m pytest --backend=cuda -n auto --results-dir="$w/profiled-new-warm" \
    > "$w/profiled-new-warm.log" 2>&1
  echo "profiled-new-warm: exit $?; $(tail -n 1 "$w/profiled-new-warm.log" | tr -d '=')" | tee -a "$w/summary.txt"
  cd "$root"
fi
cp "$w/summary.txt" "$OUT/summary.txt"
cd "$OUT" && tar czf ab.tgz ab && ls -la "$OUT"
