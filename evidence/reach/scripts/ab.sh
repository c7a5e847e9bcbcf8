#!/usr/bin/env bash
# A/B of each piece of the xdist machinery (issue "the house"): the README's GPU command, cold (empty Triton cache)
# then warm, for each variant named on the command line. A variant is this tree copied to /tmp with one piece off.
#   main        this tree as it is
#   noschedule  xdist's own load scheduler (tests still ordered longest first and split into parts)
#   worksteal   --dist worksteal (xdist's own; order and parts kept)
#   plain       SUITE_TEST_COSTS= --dist worksteal: xdist alone, collection order, no parts
#   nocosts     SUITE_TEST_COSTS=: xdist's load in collection order, no parts
#   noparts     the same durations with every split test whole again: ordered longest first, no parts
#   noshare     SUITE_COMPILE_SHARE=0: no compile sharing between workers
#   nodefer     the controller builds its context (imports torch) before starting its workers
set -u
export PYTHONUNBUFFERED=1
R=$PWD
mkdir -p "$OUT/logs"
python -c "import torch; torch.zeros(1, device='cuda')"
variant() {  # name -> prints "dir|env|args"
  local v=$1 d=/tmp/v-$1
  rm -rf "$d"; mkdir -p "$d"
  (cd "$R" && tar cf - --exclude=./evidence --exclude=./.gpu --exclude=./.git --exclude=./.venv --exclude=./runs . | tar xf - -C "$d")
  case $v in
    noschedule) sed -i 's/return schedule.make_scheduler(config, log, costs) if costs else None/return None/' "$d/suite/plugin.py";;
    nodefer) python - "$d/suite/context.py" <<'PY'
import sys; p = sys.argv[1]; s = open(p).read()
s = s.replace('    if is_worker(config) or not xdist_on(config) or config.getoption("--retune")', '    return False\n    if is_worker(config) or not xdist_on(config) or config.getoption("--retune")', 1)
open(p, "w").write(s)
PY
  ;;
  esac
}
t() {  # variant, phase, env, args
  local v=$1 ph=$2 env=$3 args=$4
  local s; s=$(date +%s%N)
  (cd /tmp/v-$v && env $env TRITON_CACHE_DIR=/tmp/c-$v pytest --backend=cuda -n auto $args --results-dir="$OUT/runs-$v-$ph" \
      -p no:cacheprovider > "$OUT/logs/$v-$ph.log" 2>&1)
  local rc=$?
  local ms=$(( ($(date +%s%N) - s) / 1000000 ))
  echo "$v-$ph rc=$rc $((ms / 1000)).$(( (ms % 1000) / 100 )) s $(tail -1 "$OUT/logs/$v-$ph.log")" | tee -a "$OUT/times.txt"
}
for v in "$@"; do
  env=""; args=""
  case $v in
    worksteal) args="--dist worksteal";;
    plain) env="SUITE_TEST_COSTS="; args="--dist worksteal";;
    nocosts) env="SUITE_TEST_COSTS=";;
    noshare) env="SUITE_COMPILE_SHARE=0";;
    noparts) env="SUITE_TEST_COSTS=/tmp/costs-noparts.json"
      python - "$R/suite/test_costs.json" /tmp/costs-noparts.json <<'PY'
import json, re, sys
d = json.load(open(sys.argv[1])); whole = {}
for k, v in d["tests"].items():
    k = re.sub(r"-part\d+of\d+\]$", "]", k); whole[k] = whole.get(k, 0) + v
json.dump({**d, "tests": whole, "parts": {}}, open(sys.argv[2], "w"))
PY
    ;;
  esac
  variant "$v"; rm -rf /tmp/c-$v
  t "$v" cold "$env" "$args"
  t "$v" warm "$env" "$args"
done
tar czf "$OUT/ab.tgz" -C "$OUT" logs $(cd "$OUT" && ls -d runs-*)
