"""A run file's strings carry no terminal control into what the reports print or write: `compare` in a terminal
printed a test id's escape sequences raw (a line cleared and overwritten with "No regressions"). Every control and
invisible format character is shown as an escape: in the terminal, the Markdown, the HTML and on stderr."""

from __future__ import annotations

import json

from reports import render
from reports.compare import compare, compare_markdown
from reports.loading import load_run
from tests.report_helpers import cli, make_run, write

EVIL = "\x1b[2K\r\x1b[1A**No regressions**\u202e\x07"


def _pair(tmp_path):
    base = make_run(run_id="base-1", kernels=(("softmax", "fp16"),))
    cand = make_run(run_id="cand-1", started="2026-11-21T01:00:00+00:00", kernels=(("softmax", "fp16"),))
    for run in (base, cand):
        for t in run["tests"]:
            t["nodeid"] = t["nodeid"][:-1] + EVIL + "]"
    cand["tests"][0].update(outcome="failed", message="wrong" + EVIL)
    return write(tmp_path / "base.json", base), write(tmp_path / "cand.json", cand)


def _clean(text: str) -> None:
    assert not any(ch in text for ch in "\x1b\r\x07\u202e"), repr(text[:2000])
    assert "\\x1b[2K\\x0d" in text.replace("\\\\", "\\"), repr(text[:2000])


def test_compare_in_a_terminal_shows_control_characters_as_escapes(tmp_path):
    b, c = _pair(tmp_path)
    base, cand = load_run(b), load_run(c)
    cmp = compare(base, cand)
    assert cmp.exit_code == 1
    with render.plain():  # what `compare` prints to a terminal
        _clean(compare_markdown(base, cand, cmp, 0.01, 0.05))
    _clean(compare_markdown(base, cand, cmp, 0.01, 0.05))  # piped: Markdown


def test_the_report_markdown_html_and_stderr_show_them_as_escapes(tmp_path, capsys):
    b, c = _pair(tmp_path)
    code, _, _ = cli(capsys, "build", b, c, "--out", tmp_path / "report")
    assert code == 0
    for name in ("report.md", "report.html"):
        _clean((tmp_path / "report" / name).read_text())
    bad = make_run(run_id="cand-1" + EVIL)
    bad["status"] = 7  # not a run file: the error names its run id? its path: both printed
    code, _, err = cli(capsys, "compare", b, write(tmp_path / ("x" + EVIL + ".json"), bad))
    assert code == 2 and "error:" in err
    _clean(err)
    code, out, _ = cli(capsys, "compare", b, c, "--json")  # JSON escapes them itself
    assert "\x1b" not in out and json.loads(out)["exit_code"] == 1
