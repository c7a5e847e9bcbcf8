#!/usr/bin/env bash
# On a fresh machine: the installed copy run from another directory, then the README's GPU command timed against the
# previous main (speed.sh).
set -u
R=$PWD
mkdir -p "$OUT/logs"
nvidia-smi --query-compute-apps=pid,name,used_memory --format=csv > "$OUT/logs/gpu-apps-before.txt" 2>&1
uptime >> "$OUT/logs/gpu-apps-before.txt"
rm -rf /tmp/site /tmp/their && mkdir -p /tmp/their && cp examples/leaky_relu.py /tmp/their/
python -m pip install -q --no-deps --no-build-isolation --target /tmp/site "$R" > "$OUT/logs/install.log" 2>&1
s=$(date +%s)
(cd /tmp/their && PYTHONPATH=/tmp/site timeout 120 python -m suite --backend=cuda --kernel-module=leaky_relu.py --kernels=leaky_relu -n 4 > "$OUT/logs/installed.log" 2>&1)
echo "installed rc=$? $(( $(date +%s) - s )) s | $(tail -1 "$OUT/logs/installed.log")" | tee "$OUT/checks.txt"
bash .gpu/speed.sh
