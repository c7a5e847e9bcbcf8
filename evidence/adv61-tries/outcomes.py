"""Reads a pytest log of the tries (-q, without -p no:... reporting) and prints one line a test: its outcome and the
first line of its failure. Usage: python evidence/adv61-tries/outcomes.py LOG"""
import re
import sys

text = open(sys.argv[1]).read()
outcome = dict(re.findall(r"^(PASSED|FAILED|XFAIL|XPASS|SKIPPED|ERROR) \S*\[([^\]]+)\]", text, re.M)[::-1])
outcome = {name: what for what, name in re.findall(r"^(PASSED|FAILED|XFAIL|XPASS|SKIPPED|ERROR) \S*\[([^\]]+)\]",
                                                   text, re.M)}
sections = re.split(r"^_{3,} (?:test_\w+)\[([^\]]+)\] _{3,}$", text, flags=re.M)
why = {}
for name, body in zip(sections[1::2], sections[2::2]):
    for line in body.splitlines():
        s = line.strip()
        if " seed=" in s and s.startswith(("a61", "E ")) and "{" in s:
            continue  # the case line
        if re.match(r"(E\s+)?(broken spec|\w+: error|\w+: \d+ |input|.*never written|.*NaN where|not the failure|"
                    r"a61\w+\[|.*Error|.*one program|.*not tested|.*intermittent)", s) and "reproduce" not in s:
            why[name] = s[:200]
            break
for name in sorted(outcome):
    print(f"{outcome[name]:7} {name:40} {why.get(name, '')}")
