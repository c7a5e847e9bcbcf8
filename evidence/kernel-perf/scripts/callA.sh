#!/bin/bash
# Sweep 2 on an H100: layernorm_backward breakdown and reduction, softmax_online L2 reuse, gelu hints.
cd "$(dirname "$0")/.."
pack() { (cd $OUT && tar czf all.tar.gz --exclude=all.tar.gz . ) ; }
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.max.mem --format=csv > $OUT/gpu.txt 2>&1
timeout 220 python scratch/sweep2.py ln > $OUT/sweep2-ln.log 2>&1; echo "ln rc $?"; pack
timeout 260 python scratch/sweep2.py softmax > $OUT/sweep2-softmax.log 2>&1; echo "softmax rc $?"; pack
timeout 100 python scratch/sweep2.py gelu > $OUT/sweep2-gelu.log 2>&1; echo "gelu rc $?"; pack
grep -h '"best"\|est_new\|section' $OUT/sweep2-*.log | cut -c1-400
