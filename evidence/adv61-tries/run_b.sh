#!/bin/sh
# Runs each rule-B try alone (a refused pattern is a usage error for the whole module); prints one line a try.
PY=${PY:-/work/main/.venv/bin/python}
for t in $(sed -n 's/^    "\([a-z_]*\)": ([0-9],.*/\1/p' evidence/adv61-tries/b_known_issues.py); do
  out=$(A61B_TRY=$t nice -n 5 $PY -m pytest suite/test_kernels.py --backend=interpret \
        --kernel-module=evidence/adv61-tries/b_known_issues.py --kernels="a61b_$t" -q -p no:xdist \
        -p no:cacheprovider -k test_matches_reference --no-results 2>&1)
  last=$(printf '%s\n' "$out" | grep -E "passed|failed|xfailed|error|ERROR" | tail -1 | cut -c1-200)
  printf '%-28s %s\n' "$t" "$last"
done
