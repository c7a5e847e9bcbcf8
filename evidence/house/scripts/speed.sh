#!/usr/bin/env bash
# The README's GPU command, this tree against the previous main (.gpu/old: 46f9558's code, the main before suite/ was layered), shell-timed:
# each cold from an empty Triton cache of its own, then warm twice, in ABBA order.
set -u
export PYTHONUNBUFFERED=1
R=$PWD
mkdir -p "$OUT/logs"
{ nvidia-smi -L; nproc; python -c "import torch, triton, numpy; print('torch', torch.__version__, 'triton', triton.__version__, 'numpy', numpy.__version__)"; } 2>&1 | tee "$OUT/logs/machine.txt"
python -c "import torch; torch.zeros(1, device='cuda')"   # torch's libraries into the page cache, off the clock
t() {
  local name=$1 dir=$2 cache=$3
  local s; s=$(date +%s%N)
  (cd "$dir" && TRITON_CACHE_DIR=$cache pytest --backend=cuda -n auto --results-dir="$OUT/runs-$name" -p no:cacheprovider \
      > "$OUT/logs/$name.log" 2>&1)
  local rc=$?
  local ms=$(( ($(date +%s%N) - s) / 1000000 ))
  echo "$name rc=$rc $((ms / 1000)).$(( (ms % 1000) / 100 )) s $(tail -1 "$OUT/logs/$name.log")" | tee -a "$OUT/logs/times.txt"
}
rm -rf /tmp/c-new /tmp/c-old
# .gpu/old travels without the hardware profiles and examples (unchanged since 46f9558).
cp -r "$R/hardware_profiles" "$R/examples" "$R/reports" "$R/.gpu/old/"
t new-cold "$R" /tmp/c-new
t old-cold "$R/.gpu/old" /tmp/c-old
t old-warm1 "$R/.gpu/old" /tmp/c-old
t new-warm1 "$R" /tmp/c-new
t new-warm2 "$R" /tmp/c-new
t old-warm2 "$R/.gpu/old" /tmp/c-old
# With SPEED_WORKSTEAL=1: this tree under xdist's own worksteal scheduler (no scheduler of the suite's), cold and warm.
if [[ ${SPEED_WORKSTEAL:-0} == 1 ]]; then
  rm -rf /tmp/c-ws
  ws() { local s; s=$(date +%s%N)
    TRITON_CACHE_DIR=/tmp/c-ws pytest --backend=cuda -n auto --dist worksteal --results-dir="$OUT/runs-$1" -p no:cacheprovider > "$OUT/logs/$1.log" 2>&1
    local rc=$? ms=$(( ($(date +%s%N) - s) / 1000000 ))
    echo "$1 rc=$rc $((ms / 1000)).$(( (ms % 1000) / 100 )) s $(tail -1 "$OUT/logs/$1.log")" | tee -a "$OUT/logs/times.txt"; }
  ws worksteal-cold; ws worksteal-warm
fi
tar czf "$OUT/speed.tgz" -C "$OUT" logs $(cd "$OUT" && ls -d runs-*)
cp "$OUT/logs/times.txt" "$OUT/times.txt"
