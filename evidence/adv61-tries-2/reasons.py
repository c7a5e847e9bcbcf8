"""Each try's outcome and first line of reason from a pytest log: python reasons.py LOG."""
import re
import sys

text = open(sys.argv[1]).read()
for m in re.finditer(r"^_+ test_matches_reference\[(t2_\w+)-fp32\] _+\n(?:.*\n)(.*)", text, re.M):
    print(f"{m.group(1)}: FAILED: {m.group(2)[:150]}")
for m in re.finditer(r"^(PASSED|XFAIL|XPASS)\S* .*\[(t2_\w+)-fp32\]", text, re.M):
    print(f"{m.group(2)}: {m.group(1)}")
for m in re.finditer(r"(\d+ (?:passed|failed|xfailed)[^\n]*) in [\d.]+s", text):
    print(m.group(1))
