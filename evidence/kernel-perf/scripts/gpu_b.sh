timeout 330 python scratch/sweep.py matmul fp8 > $OUT/sweep-mm.log 2>&1; echo mm rc $?
timeout 230 python scratch/sweep.py dropout layernorm_backward > $OUT/sweep-mem.log 2>&1; echo mem rc $?
grep -h '"best"' $OUT/sweep-mem.log
grep -h 'speedup\|error\|Error' $OUT/sweep-mm.log | cut -c1-250
tail -3 $OUT/sweep-mem.log
