#!/usr/bin/env bash
# The harness's bytecode sharing on the GPU image (PYTHONDONTWRITEBYTECODE=1 there): before/after, alternated.
cd "$(dirname "$0")/.."
{ echo "PYTHONDONTWRITEBYTECODE=${PYTHONDONTWRITEBYTECODE-unset}"; nvidia-smi -L; python -c 'import torch,triton,sys;print(sys.version,torch.__version__,triton.__version__)'; } > $OUT/machine.txt 2>&1
F="tests/test_parts.py tests/test_shard.py tests/test_verdicts.py tests/test_intermittent.py tests/test_gpu_share.py"
pyc() { find . -name __pycache__ -not -path './.venv*' | sort; }
pyc > $OUT/pycache-start.txt
cp tests/conftest.py /tmp/conftest-after.py
export TRITON_CACHE_DIR=/tmp/tc
python -m pytest -q -p no:cacheprovider tests/test_harness_bytecode.py > $OUT/bytecode-tests.log 2>&1
for round in 1 2; do
  for which in before after; do
    cp /tmp/conftest-$which.py tests/conftest.py 2>/dev/null || cp .gpu-carry/conftest-before.py tests/conftest.py
    s=$(date +%s.%N)
    python -m pytest $F -n 8 -p no:cacheprovider --durations=10 > $OUT/$which-$round.log 2>&1
    e=$(date +%s.%N)
    echo "$which round $round: $(tail -1 $OUT/$which-$round.log) wall $(python -c "print(round($e-$s,1))") s; __pycache__ dirs left: $(pyc | wc -l)" | tee -a $OUT/summary.txt
  done
done
cp /tmp/conftest-after.py tests/conftest.py
pyc > $OUT/pycache-end.txt
