"""Report sections as data, rendered to GitHub Markdown (tabulate) and to one self-contained HTML page."""

from __future__ import annotations

import base64
import contextlib
import html
import math
import re
import textwrap
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from tabulate import tabulate


@dataclass
class Table:
    headers: list[str]
    rows: list[list[Any]]
    title: str | None = None
    empty: str = "no data in these runs"  # what an empty table says: "none" for lists of problems
    folded: bool = False  # HTML: behind a <details> disclosure (detail that would crowd the page)


@dataclass
class Figure:
    title: str
    png: bytes


@dataclass
class Section:
    title: str
    notes: list[str] = field(default_factory=list)
    tables: list[Table] = field(default_factory=list)
    figures: list[Figure] = field(default_factory=list)
    lead: bool = False  # the first screen: rendered before the warnings and contents, text beside its figure

    @property
    def anchor(self) -> str:
        return re.sub(r"[^a-z0-9]+", "-", self.title.lower()).strip("-")



# Control characters (C0 but tab and newline, DEL, C1: a terminal's escape sequences, a carriage return that
# overwrites a line) and the invisible format characters that reorder or hide text (bidi overrides and isolates,
# zero-width marks): shown as escapes wherever a run file's string is printed or rendered.
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200b-\u200f\u2028-\u202e\u2060-\u2069\ufeff]")


def visible(text: str) -> str:
    """``text`` with every control or invisible format character written as an escape (ESC as \\x1b): a run file
    cannot move the cursor, clear a line or reorder what a terminal, the Markdown or the HTML page shows."""
    return _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}" if ord(m.group()) < 0x100 else
                        f"\\u{ord(m.group()):04x}", text)


def fmt(x: Any, digits: int = 3) -> str:
    """Numbers with a few significant digits; inf and NaN spelled out; None as a dash."""
    if x is None:
        return "-"
    if isinstance(x, bool):
        return "yes" if x else "no"
    if isinstance(x, float):
        if math.isnan(x):
            return "nan"
        if math.isinf(x):
            return "inf" if x > 0 else "-inf"
        return f"{x:.{digits}g}"
    return visible(str(x))


def pct(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:.1f}%"


def shape_text(shape: dict[str, Any]) -> str:
    return ",".join(f"{k}={v}" for k, v in shape.items()) or "-"


_HTML_START = re.compile(r"<(?=[A-Za-z/!?])|&(?=[A-Za-z#])")
# What in a run file's string would become Markdown rather than text: a backslash (it would escape what follows),
# the bracket that closes a link's or image's text ("](", "]["), and the bare URLs and e-mail addresses GitHub turns
# into links. Brackets alone ("test[softmax-fp16]", "test[softmax-fp16]: failed") stay as they are: a reference
# definition ("[a]: url") starts a line, and md_paragraph escapes a paragraph's opening bracket.
_MD_INLINE = re.compile(r"(?P<char>\\|\](?=[(\[])|(?<=[\w.+-])@(?=[\w-]))|(?<=[A-Za-z0-9])(?P<scheme>:)(?=//)"
                        r"|(?<![A-Za-z0-9])www(?P<dot>\.)")
# What at the start of a paragraph would open another block: a heading, quote, list, rule, fence or table, or a
# reference definition ("[a]: url").
_MD_BLOCK_START = re.compile(r"^(?:(?P<mark>[#>+\-=~`|\[])|(?P<em>[*_])(?!(?P=em))|(?P<n>\d{1,9})(?P<end>[.)]))")


# Set while a Markdown text is written for a terminal (`compare`'s output): a result file's strings are printed as
# they are, with no escapes, so that a test id copied from it ("test[leaky_relu-fp32]") is the test id; only a
# table's pipe is still escaped, as it would break the table.
_PLAIN: list[bool] = [False]


@contextlib.contextmanager
def plain() -> Iterator[None]:
    """Markdown for a terminal inside: md_text and md_paragraph leave a result file's strings as they are."""
    _PLAIN.append(True)
    try:
        yield
    finally:
        _PLAIN.pop()


def md_text(x: Any) -> str:
    """Text for Markdown: a result file's strings (a kernel named <script>, a message that holds "[link](url)",
    "![](http://image)" or a URL) are shown, never rendered, as the HTML page escapes them. Only what could open a
    tag, entity or link is escaped, so that 'p < 0.01' and '->' stay readable as text; a note's own **bold** is
    kept. Newlines become spaces: one string stays on its line. Inside :func:`plain`, nothing is escaped."""
    if _PLAIN[-1]:
        text = fmt(x)
        return " ".join(text.splitlines()) if "\n" in text or "\r" in text else text
    text = _HTML_START.sub(lambda m: "&lt;" if m.group() == "<" else "&amp;", fmt(x))
    text = " ".join(text.splitlines()) if "\n" in text or "\r" in text else text
    return _MD_INLINE.sub(lambda m: "\\" + m.group() if m.group("char") else
                          m.group().replace(":", "\\:").replace(".", "\\."), text)


def md_paragraph(x: Any) -> str:
    """md_text for a paragraph of its own: a heading, quote, list, rule or fence it starts with is shown as text."""
    if _PLAIN[-1]:
        return md_text(x).lstrip()
    return _MD_BLOCK_START.sub(lambda m: f"{m.group('n')}\\{m.group('end')}" if m.group("n") else "\\" + m.group(),
                               md_text(x).lstrip(), count=1)


def _md_cell(x: Any) -> str:
    # A pipe from a result file would break the Markdown table.
    return md_text(x).replace("|", "\\|")


def _md_section(s: Section) -> list[str]:
    out = [f"## {md_text(s.title)}", ""]
    for note in s.notes:
        out += [md_paragraph(note), ""]
    for t in s.tables:
        if t.title:
            out += [f"### {md_text(t.title)}", ""]
        if t.rows:
            rows = [[_md_cell(c) for c in row] for row in t.rows]
            out += [tabulate(rows, headers=[_md_cell(h) for h in t.headers], tablefmt="github",
                             disable_numparse=True), ""]
        else:
            out += [f"_{md_text(t.empty)}_", ""]
    if s.figures:
        out += [md_text(f"_{len(s.figures)} plot(s) in report.html: " + "; ".join(f.title for f in s.figures) + "_"),
                ""]
    return out


def markdown(title: str, warnings: list[str], sections: list[Section]) -> str:
    out = [f"# {md_text(' '.join(title.split()))}", ""]
    lead = [s for s in sections if s.lead]
    for s in lead:
        out += _md_section(s)
    for w in warnings:
        out += [f"> **Warning:** {md_text(w)}", ""]
    out += ["Sections: " + " · ".join(f"[{md_text(s.title)}](#{s.anchor})" for s in sections), ""]
    for s in sections:
        if not s.lead:
            out += _md_section(s)
    return "\n".join(out).rstrip() + "\n"


CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:2em auto;max-width:1400px;padding:0 1em;
color:#1b1f24;line-height:1.4}
h1{font-size:1.6em}h2{border-bottom:1px solid #d0d7de;padding-bottom:.2em;margin-top:2em}h3{font-size:1.05em}
table{border-collapse:collapse;margin:.6em 0 1.2em;font-size:.85em;display:block;overflow-x:auto}
th,td{border:1px solid #d0d7de;padding:3px 8px;text-align:left;vertical-align:top}
td{max-width:56ch;overflow-wrap:anywhere}
th{background:#f6f8fa;position:sticky;top:0}tr:nth-child(even) td{background:#fbfcfd}
.warn{background:#fff8c5;border:1px solid #d4a72c;padding:.5em 1em;margin:.5em 0;border-radius:4px}
.nodata{color:#57606a;font-style:italic}.toc a{margin-right:1em}
td.bad{background:#ffebe9 !important}td.ok{background:#dafbe1 !important}
img{max-width:100%;border:1px solid #d0d7de;margin:.5em 0}figcaption{font-size:.85em;color:#57606a}
details{margin:.4em 0 1em}summary{cursor:pointer;font-weight:600;font-size:.95em}
.lead h2{margin-top:.6em}.lead .body{display:flex;flex-wrap:wrap;gap:1.5em;align-items:flex-start}
.lead .text{flex:1 1 24em;min-width:20em}.lead .text p{margin:.3em 0}.lead figure{margin:0;flex:0 1 auto}
.lead figure img{max-height:calc(100vh - 190px);max-width:100%;width:auto;margin:0}
"""
_BAD = re.compile(r"\b(failed|WRONG|BROKEN|REGRESSION|INVALID|INCOMPLETE|missing)\b")
_OK = re.compile(r"^(ok\b|passed\b|holds\b|\d+/0/0$)")


def _td(value: Any) -> str:
    text = fmt(value)
    cls = ' class="bad"' if _BAD.search(text) else ' class="ok"' if _OK.search(text) else ""
    return f"<td{cls}>{html.escape(text)}</td>"


_STRONG = re.compile(r"\*\*(.+?)\*\*")


def _note(text: str) -> str:
    """A note as HTML: escaped, with the notes' own **bold** kept."""
    return _STRONG.sub(r"<strong>\1</strong>", html.escape(visible(text)))


def _e(text: Any) -> str:
    return html.escape(visible(str(text)))


def _html_table(t: Table) -> list[str]:
    e = _e
    out = []
    if t.title and not t.folded:
        out.append(f"<h3>{e(t.title)}</h3>")
    if not t.rows:
        return out + [f'<p class="nodata">{e(t.empty)}</p>']
    out.append("<table><thead><tr>" + "".join(f"<th>{e(fmt(h))}</th>" for h in t.headers) + "</tr></thead><tbody>")
    out += ["<tr>" + "".join(_td(c) for c in row) + "</tr>" for row in t.rows]
    out.append("</tbody></table>")
    if t.folded:
        out = [f"<details><summary>{e(t.title or 'details')}</summary>", *out, "</details>"]
    return out


def _figure(f: Figure) -> str:
    e = _e
    data = base64.b64encode(f.png).decode("ascii")
    return (f'<figure><img alt="{e(f.title)}" src="data:image/png;base64,{data}">'
            f"<figcaption>{e(f.title)}</figcaption></figure>")


def _html_section(s: Section) -> list[str]:
    e = _e
    text = [f"<p>{_note(n)}</p>" for n in s.notes] + [line for t in s.tables for line in _html_table(t)]
    if s.lead:
        return [f'<section id="{s.anchor}" class="lead"><h2>{e(s.title)}</h2><div class="body"><div class="text">',
                *text, "</div>", *(_figure(f) for f in s.figures), "</div></section>"]
    return [f'<section id="{s.anchor}"><h2>{e(s.title)}</h2>', *text, *(_figure(f) for f in s.figures), "</section>"]


def html_page(title: str, warnings: list[str], sections: list[Section]) -> str:
    e = _e
    out = ["<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
           '<meta name="viewport" content="width=device-width,initial-scale=1">',
           f"<title>{e(title)}</title><style>{CSS}</style></head><body>", f"<h1>{e(title)}</h1>"]
    for s in sections:
        if s.lead:
            out += _html_section(s)
    out += [f'<div class="warn"><strong>Warning:</strong> {e(w)}</div>' for w in warnings]
    out.append('<nav class="toc">' + "".join(f'<a href="#{s.anchor}">{e(s.title)}</a>' for s in sections) + "</nav>")
    for s in sections:
        if not s.lead:
            out += _html_section(s)
    out.append("</body></html>")
    return "\n".join(out) + "\n"


# ---- a terminal: the verdict first, nothing wider than the terminal ------------------------------------------------


def _wrapped(text: str, width: int, indent: str = "") -> list[str]:
    text = _STRONG.sub(r"\1", visible(" ".join(str(text).split())))
    return textwrap.wrap(text, width, subsequent_indent=indent or "  ", break_on_hyphens=False) or [""]


def _terminal_table(t: Table, width: int) -> list[str]:
    """The table as tabulate's plain grid where it fits ``width``; else one block a row, a 'header: value' line each
    (wrapped): never a line wider than the terminal."""
    rows = [[" ".join(fmt(c).split()) for c in row] for row in t.rows]
    heads = [fmt(h) for h in t.headers]
    out = [visible(t.title)] if t.title else []
    grid = tabulate(rows, headers=heads, tablefmt="simple", disable_numparse=True).splitlines()
    if max(map(len, grid)) <= width:
        return out + grid
    for i, row in enumerate(rows, 1):
        out.append(f"{i}.")
        for h, v in zip(heads, row, strict=False):
            if v not in ("", "-"):
                out += _wrapped(f"{h}: {v}" if h else v, width, "      ")
    return out


def terminal(first: list[str], warnings: list[str], sections: list[Section], width: int) -> str:
    """Sections for a person at a terminal: ``first`` (the verdict) before anything else, the warnings, then only
    the sections with something in them (the empty ones named on one line), every line at most ``width``."""
    width = max(40, width)
    out = [line for text in first for line in _wrapped(text, width)]
    out += [line for w in warnings for line in _wrapped(f"warning: {w}", width)]
    empty = []
    for s in sections:
        tables = [t for t in s.tables if t.rows]
        if not tables and not s.lead:
            empty.append(s.title)
            continue
        out += ["", visible(s.title).upper()[:width]]
        if not s.lead:
            out += [line for n in s.notes for line in _wrapped(n, width)]
        for t in tables:
            out += _terminal_table(t, width)
    if empty:
        out += [""] + _wrapped("Nothing in: " + ", ".join(empty) + ".", width)
    return "\n".join(out) + "\n"
