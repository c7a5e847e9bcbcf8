"""`compare` in a terminal: the verdict first, only the sections with something in them, nothing wider than the
terminal, test ids as they are; and in Markdown a test id is not escaped where nothing needs it."""

from __future__ import annotations

import sys

from reports.compare import compare, compare_markdown
from reports.loading import load_run
from tests.report_helpers import cli, make_run, write

ID = "suite/test_kernels.py::test_matches_reference[my_rope-fp16]"


def _pair(tmp_path):
    base = make_run(run_id="base-1", kernels=(("my_rope", "fp16"), ("softmax", "fp32")))
    cand = make_run(run_id="cand-1", started="2026-11-21T01:00:00+00:00",
                    kernels=(("my_rope", "fp16"), ("softmax", "fp32")))
    cand["tests"][0].update(outcome="failed", message="out: 12 of 64 elements wrong, worst at [3, 17] " + "x" * 150)
    return write(tmp_path / "base.json", base), write(tmp_path / "cand.json", cand)


def test_compare_in_a_terminal_gives_the_verdict_first_and_fits_its_width(tmp_path, capsys, monkeypatch):
    b, c = _pair(tmp_path)
    monkeypatch.setenv("COLUMNS", "80")
    monkeypatch.setattr(sys.stdout, "isatty", lambda: True)
    code, out, err = cli(capsys, "compare", b, c)
    assert code == 1, err
    lines = out.splitlines()
    assert lines[0] == "REGRESSION: 1 correctness regression(s) (1 test:" and ID in lines[1], lines[:3]
    assert max(map(len, lines)) <= 80, max(lines, key=len)
    assert "_none_" not in out and "none_" not in out
    assert "[my_rope-fp16]" in out.replace("\n", "") and "\\]" not in out
    assert "Nothing in: Checked less than the base, Compile changes" in " ".join(lines)
    assert "CORRECTNESS REGRESSIONS" in out and "SPEED IMPROVEMENTS" not in out


def test_a_test_id_in_the_markdown_is_not_escaped(tmp_path):
    b, c = _pair(tmp_path)
    base, cand = load_run(b), load_run(c)
    md = compare_markdown(base, cand, compare(base, cand), 0.01, 0.05)
    assert f"{ID}: passed -> failed" in md, md[:1500]
