#!/bin/bash
# Issue 60 item 6: README's GPU command (`pytest --backend=cuda -n auto`) on one machine, back to back, on the tree
# staged as abtrees/old and two variants made from it here (run from the repository root on the device machine,
# with abtrees/ carried; evidence/gpu-speed/readme-command-ab/stage.sh staged abtrees/old and abtrees/ab.sh):
#   nco: abtrees/old with an ENV file `SUITE_COMPILE_ONCE=0` (ab.sh passes it to the run): compile_once.install
#        returns False, every process compiles what it misses in Triton's cache, as Triton does.
#   npf: abtrees/old less suite/workers/bytecode_modules.txt: bytecode.sources() finds no manifest, so
#        bytecode.Prefill starts no child (no `bytecode_prefill_s` in the run file); the workers still write and
#        read their bytecode in the suite's cache (SUITE_BYTECODE_DIR), each compiling the sources it imports.
# ab.sh runs as staged, with one line added (a copy, abtrees/ab-guarded.sh): no run starts once STOP_AFTER seconds
# have passed (the session's device time), the step written to summary.txt as not run.
set -e
echo "PYTHONDONTWRITEBYTECODE as found: ${PYTHONDONTWRITEBYTECODE-unset}" | tee "$OUT/env-found.txt"
export PYTHONDONTWRITEBYTECODE=${PYTHONDONTWRITEBYTECODE:-1}   # the GPU runners' image sets it: the bytecode cache's case
rm -rf abtrees/nco abtrees/npf
cp -r abtrees/old abtrees/nco
echo SUITE_COMPILE_ONCE=0 > abtrees/nco/ENV
echo "$(cat abtrees/old/TREE), ENV SUITE_COMPILE_ONCE=0" > abtrees/nco/TREE
cp -r abtrees/old abtrees/npf
rm abtrees/npf/suite/workers/bytecode_modules.txt
echo "$(cat abtrees/old/TREE), less suite/workers/bytecode_modules.txt (no prefill)" > abtrees/npf/TREE
sed 's|^for step in \$seq; do$|&\n  if [ "$SECONDS" -ge "${STOP_AFTER:-100000}" ]; then echo "$step: not run ($SECONDS s gone)" \| tee -a "$w/summary.txt"; continue; fi|' \
  abtrees/ab.sh > abtrees/ab-guarded.sh
grep -q 'not run (' abtrees/ab-guarded.sh
set +e
SEQ=${SEQ:-"old:cold nco:cold npf:cold nco:cold npf:cold old:cold old:warm npf:cold old:cold nco:cold"} \
  EXTRA=0 STOP_AFTER=${STOP_AFTER:-390} bash abtrees/ab-guarded.sh
cp "$OUT/ab/machine.txt" "$OUT/machine.txt"
mv "$OUT/ab" /tmp/ab-done   # ab.tgz holds it; only a few files come back
ls -la "$OUT"
