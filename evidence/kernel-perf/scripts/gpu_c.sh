timeout 200 python scratch/sweep.py c_mm c_fp8 > $OUT/sweep-c.log 2>&1; echo c rc $?
timeout 150 python scratch/sweep.py layernorm_backward > $OUT/sweep-ln.log 2>&1; echo ln rc $?
grep -h 'speedup\|error' $OUT/sweep-c.log | cut -c1-250
grep -h '"best"' $OUT/sweep-ln.log
tail -2 $OUT/sweep-ln.log
