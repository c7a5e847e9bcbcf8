#!/bin/bash
# README's GPU command on the final tree (abtrees/new) beside de6eba5 (abtrees/old), one machine, back to back:
# old:cold new:cold new:warm old:warm. Run files, logs and summary come back in $OUT (ab.tgz, summary.txt).
export PYTHONDONTWRITEBYTECODE=${PYTHONDONTWRITEBYTECODE:-1}
SEQ=${SEQ:-"old:cold new:cold new:warm old:warm"} EXTRA=0 bash abtrees/ab.sh
cp "$OUT/ab/machine.txt" "$OUT/machine.txt"
for d in "$OUT"/ab/*-new-warm "$OUT"/ab/*-old-warm; do cp "$d"/run-*.json "$OUT/$(basename "$d").json" 2>/dev/null; done
rm -rf "$OUT/ab"
ls -la "$OUT"
