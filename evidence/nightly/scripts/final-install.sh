#!/bin/bash
# The second call of final-2/ (final.sh's venv did not see the image's packages, which live in a venv of their own):
# the suite's wheel (carried in .whl/) installed into the image's environment, run from another directory, and the
# report built from its run file with the installed copy's reports command.
repo=$PWD; python -m pip install -q --no-deps --no-index .whl/*.whl 2>&1 | tail -2
mkdir -p /tmp/elsewhere && cd /tmp/elsewhere && cp $repo/examples/leaky_relu.py .
(time triton-portability --backend=cuda --kernel-module=leaky_relu.py --kernels=leaky_relu -n 2 -p no:cacheprovider \
  --results-dir=$OUT/installed) > $OUT/installed.log 2>&1; echo "exit $?"; tail -n 25 $OUT/installed.log
python -c 'import triton_portability, kernels; print(kernels.__file__)'
python -m triton_portability.reports build $OUT/installed/run-*.json --out $OUT/report > $OUT/report.log 2>&1
echo "report exit $?"; tail -3 $OUT/report.log; ls $OUT/report
