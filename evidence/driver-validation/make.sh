#!/usr/bin/env bash
# Driver-validation evidence on one GPU: three A/A pairs and one planted pair of benchmark runs (-m perf, validation
# profile), each compared both ways with `python -m reports compare`, then replayed (`python -m reports replay`).
#
#   bash evidence/driver-validation/make.sh WORKDIR [--dry-run] [--tar FILE.tar.gz]
#
# Runs, in this order (what matters most first, should time run short):
#   aa-1       two runs with no noise floor (SUITE_NOISE_FLOOR=none); a floor is learned from them
#   planted-1  aa-1's second run as the baseline, and a run with SUITE_BENCH_PLANT=$PLANT (softmax 25% slower)
#   aa-2 aa-3  two runs each
# Every run after aa-1 records the floor learned from aa-1, as a validation records its arch's floor: no pair after
# aa-1 is judged by a floor learned from itself. FLOOR=repo instead has every run record the committed
# reports/noise/<arch>.json (evidence taken after a floor was learned from earlier runs). At the end: WORKDIR/noise-floor.json, learned from all six A/A runs,
# to commit as reports/noise/<arch>.json. A run starts only if the longest run so far still fits in BUDGET_S seconds
# (default 500) with RESERVE_S (default 40) left for the comparisons. Logs and timings: WORKDIR/logs/.
# --dry-run: the CPU interpreter, where benchmarks skip: the layout and the commands, not the verdicts.
set -uo pipefail
cd "$(dirname "$0")/../.."

usage() { echo "usage: $0 WORKDIR [--dry-run] [--tar FILE.tar.gz]" >&2; exit 2; }
[[ $# -ge 1 ]] || usage
work=$1; shift
dry=0; tarball=""
while [[ $# -gt 0 ]]; do
  case $1 in
    --dry-run) dry=1 ;;
    --tar) [[ $# -ge 2 ]] || usage; tarball=$2; shift ;;
    *) usage ;;
  esac
  shift
done
if [[ -e $work && -n "$(ls -A "$work" 2>/dev/null)" ]]; then
  echo "error: $work exists and is not empty; give a new directory" >&2; exit 2
fi
PY=${PYTHON:-$(command -v python3 || command -v python)}
PLANT=${PLANT:-softmax=0.25}
BUDGET_S=${BUDGET_S:-500}
RESERVE_S=${RESERVE_S:-40}
FLOOR=${FLOOR:-learn}
[[ $FLOOR == learn || $FLOOR == repo ]] || { echo "error: FLOOR=$FLOOR: expected learn or repo" >&2; exit 2; }
backend=cuda; extra=()
if [[ $dry == 1 ]]; then backend=interpret; extra=(--kernels=vector_add,softmax); fi
mkdir -p "$work/logs" "$work/aa-1" "$work/aa-2" "$work/aa-3" "$work/planted-1"
log="$work/logs/timings.tsv"
printf 'run\tseconds\texit\tnote\n' > "$log"
t0=$(date +%s)
longest=0
skipped=0

# run NAME PAIRDIR [VAR=VALUE ...]: one benchmark run whose run file lands in PAIRDIR
run() {
  local name=$1 dest=$2; shift 2
  local now; now=$(date +%s)
  if (( skipped || now - t0 + longest + RESERVE_S > BUDGET_S )); then
    skipped=1
    printf '%s\t-\t-\tskipped: %ss used, longest run %ss, budget %ss\n' "$name" $((now - t0)) "$longest" "$BUDGET_S" >> "$log"
    echo "== $name: skipped (budget)"
    return 1
  fi
  local tmp="$work/logs/$name.results"
  local start; start=$(date +%s.%N)
  env "$@" "$PY" -m pytest suite/test_benchmarks.py -m perf --backend=$backend --hypothesis-profile=validation \
    -p no:cacheprovider -q --results-dir="$tmp" ${extra[@]+"${extra[@]}"} > "$work/logs/$name.log" 2>&1
  local rc=$?
  local secs; secs=$(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN{printf "%.1f", b-a}')
  local whole=${secs%.*}
  (( whole > longest )) && longest=$whole
  local file; file=$(ls "$tmp"/run-*.json 2>/dev/null | head -1)
  if [[ -z $file ]]; then
    printf '%s\t%s\t%s\tno run file (see logs/%s.log)\n' "$name" "$secs" "$rc" "$name" >> "$log"
    echo "== $name: no run file, exit $rc; tail of logs/$name.log:"; tail -5 "$work/logs/$name.log"
    return 1
  fi
  mv "$file" "$dest/"
  rmdir "$tmp" 2>/dev/null
  printf '%s\t%s\t%s\t%s\n' "$name" "$secs" "$rc" "$(basename "$file")" >> "$log"
  echo "== $name: ${secs}s, exit $rc, $(basename "$file") -> ${dest#"$work"/}/"
  tail -1 "$work/logs/$name.log"
}

first=none
[[ $FLOOR == repo ]] && first=""  # empty: the suite reads reports/noise/<arch>.json
floor=$first
stop() {
  echo "error: $1: stopping (see $work/logs/aa-1-a.log)" >&2
  [[ -n $tarball ]] && tar -czf "$tarball" -C "$(dirname "$work")" "$(basename "$work")"
  exit 1
}
run aa-1-a "$work/aa-1" SUITE_NOISE_FLOOR="$first" || stop "the first run left no run file"
if [[ $dry == 0 ]]; then
  benchmarks=$("$PY" -c 'import json,sys; print(len(json.load(open(sys.argv[1]))["benchmarks"]))' "$work"/aa-1/run-*.json)
  [[ $benchmarks -gt 0 ]] || stop "the first run recorded no benchmark"
  echo "== aa-1-a recorded $benchmarks benchmarks"
fi
run aa-1-b "$work/aa-1" SUITE_NOISE_FLOOR="$first"
if [[ $FLOOR == learn ]]; then
  if "$PY" -m reports noise-floor "$work"/aa-1/run-*.json --out "$work/floor-aa-1.json" > "$work/logs/floor-aa-1.log" 2>&1; then
    floor="$work/floor-aa-1.json"
  fi
  echo "== noise floor for the later runs: $floor ($(tail -1 "$work/logs/floor-aa-1.log"))"
else
  echo "== noise floor for every run: the committed reports/noise/<arch>.json"
fi
cp "$(ls -t "$work"/aa-1/run-*.json 2>/dev/null | head -1)" "$work/planted-1/" 2>/dev/null
run planted-1 "$work/planted-1" SUITE_NOISE_FLOOR="$floor" SUITE_BENCH_PLANT="$PLANT"
run aa-2-a "$work/aa-2" SUITE_NOISE_FLOOR="$floor"
run aa-2-b "$work/aa-2" SUITE_NOISE_FLOOR="$floor"
run aa-3-a "$work/aa-3" SUITE_NOISE_FLOOR="$floor"
run aa-3-b "$work/aa-3" SUITE_NOISE_FLOOR="$floor"

echo
echo "== compare, both ways, as a user would (python -m reports compare BASE CAND)"
printf 'pair\tdirection\texit\tverdict\n' > "$work/logs/compare.tsv"
for dir in "$work"/aa-* "$work"/planted-*; do
  files=("$dir"/run-*.json)
  [[ ${#files[@]} == 2 && -f ${files[0]} ]] || { echo "$(basename "$dir"): incomplete, not compared"; continue; }
  # base first: the older run (aa; names sort by start time) or the run without the plant (planted)
  base=${files[0]}; cand=${files[1]}
  if "$PY" -c 'import json,sys; sys.exit(not any("planted" in b for b in json.load(open(sys.argv[1]))["benchmarks"]))' \
       "$base" 2>/dev/null; then base=${files[1]}; cand=${files[0]}; fi
  for direction in forward reverse; do
    if [[ $direction == reverse ]]; then a=$cand; b=$base; else a=$base; b=$cand; fi
    "$PY" -m reports compare "$a" "$b" --json --out "$dir/compare-$direction.md" > "$dir/compare-$direction.json" \
      2> "$work/logs/$(basename "$dir")-$direction.err"
    rc=$?
    verdict=$("$PY" -c 'import json,sys; print(json.load(open(sys.argv[1]))["verdict"])' "$dir/compare-$direction.json" \
              2>/dev/null || head -1 "$work/logs/$(basename "$dir")-$direction.err")
    printf '%s\t%s\t%s\t%s\n' "$(basename "$dir")" "$direction" "$rc" "$verdict" >> "$work/logs/compare.tsv"
  done
done
column -t -s $'\t' "$work/logs/compare.tsv" 2>/dev/null || cat "$work/logs/compare.tsv"

echo
echo "== replay (as recorded, and with leave-one-out noise floors)"
"$PY" -m reports replay "$work" --out "$work/replay.md" --json "$work/replay.json" > /dev/null 2> "$work/logs/replay.err"
replay_rc=$?
sed -n '/^## Verdict/,/^## Leave/p' "$work/replay.md" 2>/dev/null | head -40
cat "$work/logs/replay.err"
"$PY" -m reports noise-floor "$work"/aa-*/run-*.json --out "$work/noise-floor.json" 2>&1 | tail -1

echo
echo "== timings (s)"
column -t -s $'\t' "$log" 2>/dev/null || cat "$log"
echo "total: $(( $(date +%s) - t0 )) s"
if [[ -n $tarball ]]; then
  tar -czf "$tarball" -C "$(dirname "$work")" "$(basename "$work")" && echo "packed $work into $tarball"
  # Files of at most 15 MiB: split a larger archive (cat FILE.part-* > FILE restores it).
  if [[ $(stat -c %s "$tarball") -gt $((15 * 1024 * 1024)) ]]; then
    split -b 15M -d "$tarball" "$tarball.part-" && rm "$tarball" && ls -la "$tarball".part-*
  fi
fi
if [[ $dry == 1 ]]; then
  echo "dry run: layout and commands only (benchmarks skip on the interpreter); replay exit $replay_rc not checked"
  exit 0
fi
exit $replay_rc
