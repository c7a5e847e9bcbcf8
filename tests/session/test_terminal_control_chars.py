"""Issue 61, item 22: control characters from a known issue's id, a launcher's exception text or a kernel module's
path reached the terminal raw, in the session header, the failure lines and the verdict: an escape sequence that
clears the screen, a carriage return that overwrites a line. The terminal shows each as an escape (ESC as \\x1b, as
the reports do); the run file keeps the text exact (the reports escape it where they show it)."""

from __future__ import annotations

import shutil

from tests.fixtures.control_chars import ISSUE_ID, LAUNCHER_TEXT

RAW = ("\x1b", "\r", "\x07", "\u202e")


def test_the_terminal_shows_control_characters_as_escapes(run_suite, tmp_path):
    module = tmp_path / "ctl\x1b[35mmodule.py"
    shutil.copy("tests/fixtures/control_chars.py", module)
    run = run_suite("suite/test_kernels.py", f"--kernel-module={module}", "--kernels=ctl_raising_add,ctl_known_add",
                    "-k", "reference", "-n", "0", "-rA", env={"SUITE_SHRINK_SECONDS": "3"})
    assert run.returncode == 1, run.output[-3000:]
    assert not [line for line in run.output.splitlines() if any(c in line for c in RAW)], \
        [line for line in run.output.splitlines() if any(c in line for c in RAW)]
    assert "RuntimeError: boom\\x1b[2J\\x1b[H\\x0dNo failures\\x07" in run.output, run.output[-3000:]  # the failure
    assert "portability: kernel module " + str(tmp_path / "ctl\\x1b[35mmodule.py") in run.output  # the header
    verdict = run.output[run.output.index("= verdict ="):]
    assert "nan\\x1b[31m-for-large\\x1b[0m\\x0d\\u202ex" in verdict, verdict  # the known issue, by its id
    data = run.run_data()  # exact
    assert {k["id"] for k in data["known_issues"]} >= {ISSUE_ID}
    [failed] = [t for t in data["tests"] if t["outcome"] == "failed"]
    assert LAUNCHER_TEXT in failed["message"], failed["message"]
