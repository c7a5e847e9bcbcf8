#!/bin/bash
# The nightly profile timed end to end, as the nightly workflow runs it (pytest --backend=cuda -n auto
# --hypothesis-profile=nightly), from a cold Triton cache, with nvidia-smi sampled every 5 s.
#   NAME=<label> [KERNELS=a,b,c] [SHARD=I/N] [CACHE_DIR=dir] [LIMIT=570] bash evidence/nightly/scripts/whole.sh
# (from the repository root)
# KERNELS or SHARD: one part of the suite (a whole nightly does not fit one ten-minute call on one GPU).
# CACHE_DIR: a Triton cache the parts of one measurement share (emptied when FRESH=1), as one run's workers share one.
# LIMIT: seconds before the run is stopped with SIGINT (the run file is then "interrupted").
export PYTHONUNBUFFERED=1
cd "$(dirname "$0")/../../.."
name=${NAME:?NAME}; limit=${LIMIT:-570}; out=$OUT/$name
mkdir -p "$out"
nvidia-smi --query-gpu=index,name,memory.total --format=csv,noheader | tee "$out/gpus.txt"
echo "cores: $(nproc)  CUDA_VISIBLE_DEVICES=${CUDA_VISIBLE_DEVICES:-all}  kernels: ${KERNELS:-all}"
cache=${CACHE_DIR:-$(mktemp -d)}
[[ ${FRESH:-0} == 1 ]] && rm -rf "$cache"; mkdir -p "$cache"
echo "shard: ${SHARD:-whole}  Triton cache: $cache ($(find "$cache" -type f | wc -l) files at the start)" | tee -a "$out/gpus.txt"
nvidia-smi --query-gpu=timestamp,index,memory.used,utilization.gpu --format=csv,noheader -l 5 > "$out/smi.csv" 2>&1 &
smi=$!
start=$(date +%s.%N)
TRITON_CACHE_DIR=$cache timeout -s INT "$limit" python -m pytest --backend=cuda -n auto --hypothesis-profile=nightly \
  ${KERNELS:+--kernels=$KERNELS} ${SHARD:+--shard=$SHARD} --results-dir="$out" -p no:cacheprovider > "$out/log.txt" 2>&1
rc=$?
end=$(date +%s.%N)
kill $smi 2>/dev/null
python - "$out" "$rc" "$start" "$end" <<'PY'
import collections, glob, json, sys
out, rc, start, end = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4])
files = sorted(glob.glob(out + "/run-*.json"))
summary = {"exit": rc, "wall_s": round(end - start, 1)}
if files:
    d = json.load(open(files[-1]))
    t = d.get("timing") or {}
    summary.update(status=d["status"], run_file=files[-1].rsplit("/", 1)[-1],
                   tests=dict(collections.Counter(x["outcome"] for x in d["tests"])),
                   cases=dict(collections.Counter(f'{c["outcome"]}{"/" + c["failure"] if c.get("failure") else ""}'
                                                  for c in d["cases"])),
                   gpu_share={k: v for k, v in (d.get("gpu_share") or {}).items() if k != "too_large_cases"},
                   timing={k: v for k, v in t.items() if not isinstance(v, (dict, list))},
                   workers=t.get("workers"))
    summary["not_passed"] = [(x["nodeid"], (x.get("message") or "")[:300]) for x in d["tests"]
                             if x["outcome"] not in ("passed", "skipped", "xfailed")]
    summary["longest"] = sorted(((x.get("duration_s") or 0, x["nodeid"]) for x in d["tests"]), reverse=True)[:8]
    summary["over_120_s"] = sum((x.get("duration_s") or 0) > 120 for x in d["tests"])
    summary["longest_alone"] = sorted((d.get("gpu_share") or {}).get("alone_cases") or [],
                                      key=lambda c: -c.get("alone_s", 0))[:5]
    summary["unfinished"] = d.get("unfinished") or []
json.dump(summary, open(out + "/summary.json", "w"), indent=1)
print(json.dumps(summary, indent=1)[:6000])
PY
tail -25 "$out/log.txt"
gzip -n "$out"/run-*.json 2>/dev/null
exit 0
