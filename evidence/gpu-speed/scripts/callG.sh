# Call G (H100): ncu on the fp8 and attention kernels (clock control off), then the README's GPU command with the
# final code and cache: cold with the controller importing torch first (-p nodefer, as before; it also warms the
# host's file cache) and cold with it deferred (the default), then warm twice deferred and once not.
W=$OUT/w; mkdir -p $W
pack() { tar czf $OUT/all.tar.gz -C $W . ; }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; nproc
NCU=/usr/local/cuda/bin/ncu; S="--section SpeedOfLight --section ComputeWorkloadAnalysis --section WarpStateStats --section LaunchStats --section Occupancy"
PYTHONPATH=. timeout 150 $NCU --clock-control none $S -k regex:'matmul_descriptor|gemm|sm90' python evidence/kernel-perf/scripts/profile.py fp8 > $W/ncu-fp8.txt 2>&1; echo "ncu fp8 rc $?"
PYTHONPATH=. timeout 150 $NCU --clock-control none $S -k regex:'attention|flash|fmha|attn|sdpa|cudnn' python evidence/kernel-perf/scripts/profile.py attention > $W/ncu-attention.txt 2>&1; echo "ncu attention rc $?"
grep -E "^  [a-zA-Z_].*\(|Compute \(SM\) Throughput|Duration|Registers Per|Achieved Occupancy|Issue Slots Busy|Warp Cycles Per Issued" $W/ncu-*.txt | cut -c1-150 | head -60
pack
TIMEFORMAT='wall %R s'
run() {  # name, cache dir, extra args
  local name=$1 cache=$2; shift 2
  export T0=$(date +%s.%N) TPLUG_FILE=$W/$name.marks
  { time TRITON_CACHE_DIR=$cache PYTHONPATH=.:evidence/gpu-speed/scripts timeout 120 pytest --backend=cuda \
      -p tplug -p no:cacheprovider --results-dir=$W/runs/$name "$@" > $W/$name.log 2>&1; } 2>> $W/times.txt
  echo "$name rc $? $(tail -1 $W/times.txt)"
  grep "^time in tests\|^timeline\|^autotune\|OOM\|too large" $W/$name.log | cut -c1-300; tail -1 $W/$name.log
  grep -m1 " main configure-last" $W/$name.marks; grep " gw.* configure-last" $W/$name.marks | sort -n | sed -n '1p;$p'
  pack
}
run cold-old /tmp/tc-old -n auto -p nodefer
run cold-new /tmp/tc-new -n auto
run warm-new-1 /tmp/tc-new -n auto
run warm-new-2 /tmp/tc-new -n auto
run warm-old /tmp/tc-old -n auto -p nodefer
ls -la $OUT
