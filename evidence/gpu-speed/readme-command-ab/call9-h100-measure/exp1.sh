#!/bin/bash
# Call 9: what a cold run's compile and start-up are made of (run from the repo root, abtrees carried, with
# abtrees/new the tree of e655f17, abtrees/cm.py and abtrees/logc/logcompiles.py copied from this folder).
export PYTHONUNBUFFERED=1
mkdir -p /tmp/abroot && cp -r abtrees /tmp/abroot/ && cd /tmp/abroot/abtrees/new || exit 1
W=$OUT/x; mkdir -p $W
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; nproc; cat TREE; env | grep -E "^PYTHON|^OMP|^MKL"; } > $W/machine.txt
python -c "import torch; torch.zeros(1, device='cuda')"
# (b) cold imports, no bytecode: alone, then 16 at once
TIMEFORMAT="%R %U %S"
{ time python -c "import torch, triton, hypothesis, numpy" ; } 2> $W/import-alone.txt
for i in $(seq 16); do { time python -c "import torch, triton, hypothesis, numpy" ; } 2> $W/import-16-$i.txt & done; wait
# (d) CUDA context: alone, 16 at once
python -c "import torch,time; t=time.perf_counter(); torch.empty(1,device='cuda'); torch.cuda.synchronize(); print('ctx', round(time.perf_counter()-t,3))" > $W/ctx-alone.txt
for i in $(seq 16); do python -c "import torch,time; t=time.perf_counter(); torch.empty(1,device='cuda'); torch.cuda.synchronize(); print('ctx', round(time.perf_counter()-t,3))" > $W/ctx-16-$i.txt & done; wait
# triton's driver module from an empty cache (the time includes torch's import without bytecode: see README)
TRITON_CACHE_DIR=/tmp/tc-drv python -c "import time, triton; from triton.runtime.driver import driver; t=time.perf_counter(); driver.active.utils; print('driver utils', round(time.perf_counter()-t,3))" > $W/driver.txt 2>&1
# (a) compile contention: the compile matrix's full sweep of matmul for sm_90, alone then 16 at once
PYTHONPATH=. TRITON_CACHE_DIR=/tmp/cc-alone python ../cm.py matmul > $W/cm-alone.txt 2>&1
for i in $(seq 16); do PYTHONPATH=. TRITON_CACHE_DIR=/tmp/cc-$i python ../cm.py matmul > $W/cm-16-$i.txt 2>&1 & done; wait
# (c) README's command, cold, every compile logged
LOGCOMPILES=$W/log PYTHONPATH=/tmp/abroot/abtrees/logc TRITON_CACHE_DIR=/tmp/tc SUITE_BYTECODE_DIR=/tmp/bc \
  python -m pytest --backend=cuda -n auto -p logcompiles --results-dir=$W/run > $W/run.log 2>&1
echo "run exit $?"; tail -n 2 $W/run.log
cat $W/log/*.jsonl > $W/compiles.jsonl; rm -rf $W/log
cd $OUT && tar czf x.tgz x && ls -la $OUT
