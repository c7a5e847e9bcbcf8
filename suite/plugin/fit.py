"""Every line and table the run prints at its end fitted to the terminal's width: a table's headers and cells wrapped
(fit_table), never inside a word where it can be helped; a line wrapped with its indent, a command to copy and a line
naming a test by its id kept whole (fit_lines, FittedWriter). The summary (suite/plugin/summary.py) writes through
it; the verdict (suite/plugin/glance.py) fits its own lines under its labels."""

from __future__ import annotations

import re
import textwrap
from typing import Any

MIN_WIDTH = 80


def width_of(config: Any) -> int:
    """The terminal's width, at least MIN_WIDTH."""
    try:
        return max(MIN_WIDTH, int(config.get_terminal_writer().fullwidth))
    except (AttributeError, TypeError, ValueError):
        return MIN_WIDTH


def fit_table(rows: list[list], headers: list[str], width: int) -> str:
    """A GitHub-style table no wider than ``width`` where it can be: headers wrap to their longest word, then the
    widest cells wrap at spaces, column by column, never inside a word (a kernel's name stays whole). A table whose
    words alone are wider than ``width`` is given at that."""
    import tabulate as tabulate_mod
    from tabulate import tabulate

    def render(rows: list[list], headers: list[str]) -> str:
        padding = tabulate_mod.MIN_PADDING
        tabulate_mod.MIN_PADDING = 0  # no blanks past a header's own width: the terminal's width is scarce
        try:
            return tabulate(rows, headers=headers, tablefmt="github", disable_numparse=True)
        finally:
            tabulate_mod.MIN_PADDING = padding

    def over(text: str) -> int:
        return max(len(line) for line in text.splitlines()) - width

    text = render(rows, headers)
    if over(text) <= 0:
        return text
    cells = [[str(c) for c in row] for row in rows]
    columns = len(headers)

    def widest(i: int, wrapped: list[list[str]], heads: list[str]) -> int:
        return max(len(line) for text in [heads[i], *(r[i] for r in wrapped)] for line in text.splitlines() or [""])

    def least(i: int) -> int:  # the longest word in the column: it is never broken
        return max(len(w) for text in [headers[i], *(r[i] for r in cells)] for w in text.split() or [""])

    # Headers first: no wider than their column's widest cell, or their longest word.
    heads = [_wrap(h, max(least(i) if h.split() else 0, max((len(r[i]) for r in cells), default=0)))
             for i, h in enumerate(headers)]
    wrapped = [row[:] for row in cells]
    limits = [widest(i, wrapped, heads) for i in range(columns)]

    def table() -> str:  # a cell left whole keeps its value (a number stays right-aligned)
        return render([[w if "\n" in w else c for c, w in zip(row, wrow, strict=True)]
                       for row, wrow in zip(rows, wrapped, strict=True)], heads)

    text = table()
    while (excess := over(text)) > 0:
        narrowable = [i for i in range(columns) if limits[i] > least(i)]
        if not narrowable:
            break
        i = max(narrowable, key=lambda j: limits[j])
        limits[i] = max(least(i), limits[i] - excess)
        heads[i] = _wrap(headers[i], limits[i])
        for r, row in zip(wrapped, cells, strict=True):
            r[i] = _wrap(row[i], limits[i])
        limits[i] = widest(i, wrapped, heads)
        text = table()
    broken: set[int] = set()
    while (excess := over(text)) > 0 and len(broken) < columns:  # words alone too wide (a long name, an issue id):
        # the widest breaks after '_', '-', ',', ':' or '=', the first column (the kernel's name) last
        i = min((j for j in range(columns) if j not in broken), key=lambda j: (j == 0, -limits[j]))
        broken.add(i)
        for r in wrapped:
            r[i] = "\n".join(piece for line in r[i].splitlines()
                              for piece in _wrap_at_underscores(line, max(8, limits[i] - excess)))
        limits[i] = widest(i, wrapped, heads)
        text = table()
    return text


def _wrap_at_underscores(text: str, width: int) -> list[str]:
    """``text`` in lines of at most ``width``, broken after a space, an underscore, a hyphen, a comma, a colon or an
    equals sign (a longer piece stays whole: a searched label, 'strided_rows:restride=aligned_slice', breaks at
    each)."""
    lines, line = [], ""
    for piece in re.split(r"(?<=[_ ,:=-])", text):
        if line and len((line + piece).rstrip()) > width:
            lines.append(line.rstrip())
            line = piece
        else:
            line += piece
    return [*lines, line.rstrip()] if line else lines


def spills_with_registers(headers: list[str], rows: list[list]) -> tuple[list[str], list[list]]:
    """The compile table's 'spills' column merged into 'max regs' ('255 (spills)'): one column less to fit."""
    if "spills" not in headers or "max regs" not in headers:
        return headers, rows
    s, r = headers.index("spills"), headers.index("max regs")
    merged = []
    for row in rows:
        row = list(row)
        if row[s] == "yes":
            row[r] = f"{row[r]} (spills)"
        merged.append([c for i, c in enumerate(row) if i != s])
    return [h for i, h in enumerate(headers) if i != s], merged


def _wrap(text: str, width: int) -> str:
    """``text`` in lines of at most ``width``: a list ('a, b: NO, c') breaks between its items, so that an item
    ('batch_invariant: stopped') stays on one line where it fits; an item too long breaks between words."""
    width = max(1, width)
    items = text.split(", ")
    lines, line = [], ""
    for i, item in enumerate(items):
        piece = item + ("," if i < len(items) - 1 else "")
        if len(piece) > width:
            words = textwrap.wrap(f"{line} {piece}" if line else piece, width, break_long_words=False,
                                  break_on_hyphens=False)
            lines += words[:-1]
            line = words[-1] if words else ""
        elif not line or len(line) + 1 + len(piece) <= width:
            line = f"{line} {piece}" if line else piece
        else:
            lines.append(line)
            line = piece
    return "\n".join([*lines, line] if line else lines) or text


class FittedWriter:
    """The terminal reporter's ``write_line`` and ``section``, each line wrapped to ``width`` (a table is fitted
    before, by fit_table). A command to copy (after 'reproduce with: ') is kept whole on a line of its own, and a line
    that names a test by its id is kept whole."""

    def __init__(self, tr: Any, width: int) -> None:
        self.tr = tr
        self.width = width

    def section(self, title: str, *args: Any, **kwargs: Any) -> None:
        self.tr.section(title, *args, **kwargs)

    def write_line(self, text: str, **markup: Any) -> None:
        for line in fit_lines(str(text), self.width):
            self.tr.write_line(line, **markup)


def fit_lines(text: str, width: int) -> list[str]:
    out: list[str] = []
    for line in text.splitlines() or [""]:
        # A table is fitted as a whole (fit_table); a line naming a test by its id (slow tests, tests an interrupted
        # run stopped, incidents) stays whole, to copy and to find, as a command does.
        if len(line) <= width or line.startswith("|") or ("::" in line and "reproduce with: " not in line):
            out.append(line)
            continue
        command = ""
        if "reproduce with: " in line:
            line, _, command = line.partition("reproduce with: ")
            line += "reproduce with:"
        indent = re.match(r"\s*", line).group(0)
        out += textwrap.wrap(line, width, subsequent_indent=indent + "  ", break_long_words=False,
                             break_on_hyphens=False) or [line]
        if command:
            out.append("  " + command)  # whole, to copy: the terminal folds it
    return out
