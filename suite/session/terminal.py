"""What the suite prints to a terminal: text from outside the suite (a kernel module's path, a launcher's exception
text, a known issue's id) with its control characters shown as escapes.

A carriage return overwrites the line it is on and an escape sequence clears the screen or recolours what follows: a
failure could print "No failures" over itself, a verdict could hide a failed test. Every control character but tab
and newline (C0, DEL, C1) and the invisible format characters that reorder or hide text (bidi overrides and
isolates, zero-width marks) are written as escapes (ESC as \\x1b), as the reports write a run file's strings
(reports/render.py's visible). Escaped where the text reaches the terminal: the session header, the failure lines,
the summary and the verdict (suite/plugin/hooks.py); the run file keeps the text exact.
"""

from __future__ import annotations

import re

CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200b-\u200f\u2028-\u202e\u2060-\u2069\ufeff]")


def visible(text: str) -> str:
    """``text`` with every control or invisible format character written as an escape: \\xNN below 256, \\uNNNN
    above."""
    return CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}" if ord(m.group()) < 0x100 else f"\\u{ord(m.group()):04x}",
                       text)
