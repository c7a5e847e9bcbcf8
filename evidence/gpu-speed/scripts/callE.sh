# Call E: the README's GPU command with the controller starting its workers before it imports torch (new), against
# the controller importing first (-p nodefer, as before), alternating, each cold from its own empty Triton cache,
# then warm twice each; then -n 32 (twice the default) cold.
W=$OUT/w; mkdir -p $W
pack() { tar czf $OUT/all.tar.gz -C $W . ; }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; nproc
python -c "from suite import backend; print('probe', backend.probe('cuda'), backend.torch_build_unimported())"
TIMEFORMAT='wall %R s'
run() {  # name, cache dir, extra args
  local name=$1 cache=$2; shift 2
  export T0=$(date +%s.%N) TPLUG_FILE=$W/$name.marks
  { time TRITON_CACHE_DIR=$cache PYTHONPATH=.:evidence/gpu-speed/scripts timeout 120 pytest --backend=cuda \
      -p tplug -p no:cacheprovider --results-dir=$W/runs/$name "$@" > $W/$name.log 2>&1; } 2>> $W/times.txt
  echo "$name rc $? $(tail -1 $W/times.txt)"
  grep "^time in tests\|^timeline\|^autotune\|OOM\|too large\|pinned" $W/$name.log | cut -c1-300; tail -1 $W/$name.log
  grep -m1 " main configure-last" $W/$name.marks; grep " gw.* configure-last" $W/$name.marks | sort -n | sed -n '1p;$p'
  pack
}
run cold-new /tmp/tc-new -n auto
run cold-old /tmp/tc-old -n auto -p nodefer
run warm-new-1 /tmp/tc-new -n auto
run warm-old-1 /tmp/tc-old -n auto -p nodefer
run warm-new-2 /tmp/tc-new -n auto
run warm-old-2 /tmp/tc-old -n auto -p nodefer
run cold-new-n32 /tmp/tc-n32 -n 32
ls -la $OUT
