# Call F (H100): attention retuned after its WS kernel, every kernel's benchmarks with that cache, then ncu on the
# fp8 and attention kernels (clock control off: the card's clocks are left as found).
W=$OUT/w; mkdir -p $W/autotune; cp hardware_profiles/autotune/*.json $W/autotune/
pack() { tar czf $OUT/all.tar.gz -C $W . ; }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; nproc
sha256sum $W/autotune/*.json > $W/before.sha256
TIMEFORMAT='wall %R s'
{ time timeout 200 python -m pytest --backend=cuda --retune=attention --co -q -p no:cacheprovider --autotune-dir=$W/autotune > $W/retune.log 2>&1; } 2>> $W/times.txt
echo "retune rc $? $(tail -1 $W/times.txt)"; head -1 $W/retune.log; grep "chose" $W/retune.log | cut -c1-220; sha256sum -c $W/before.sha256; pack
{ time timeout 200 python -m pytest --backend=cuda -m perf -p no:cacheprovider --autotune-dir=$W/autotune --results-dir=$W/bench > $W/perf.log 2>&1; } 2>> $W/times.txt
echo "perf rc $? $(tail -1 $W/times.txt)"; grep "^autotune" $W/perf.log; tail -1 $W/perf.log; pack
NCU=/usr/local/cuda/bin/ncu; S="--section SpeedOfLight --section ComputeWorkloadAnalysis --section WarpStateStats --section LaunchStats --section Occupancy"
timeout 120 $NCU --clock-control none $S -k regex:'matmul_descriptor|gemm|sm90' python evidence/kernel-perf/scripts/profile.py fp8 > $W/ncu-fp8.txt 2>&1; echo "ncu fp8 rc $?"
timeout 120 $NCU --clock-control none $S -k regex:'attention|flash|fmha|attn|sdpa|cudnn' --launch-skip 0 python evidence/kernel-perf/scripts/profile.py attention > $W/ncu-attention.txt 2>&1; echo "ncu attention rc $?"
grep -E "^  [a-zA-Z_].*\(|Compute \(SM\) Throughput|Memory Throughput|Duration|Registers Per|Achieved Occupancy|Issue Slots Busy|Warp Cycles Per Issued" $W/ncu-*.txt | cut -c1-160 | head -80
pack; ls -la $OUT
