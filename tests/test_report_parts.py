"""Parts of the report that said more than the runs did: a headline of "Correct" where no kernel ran."""

from __future__ import annotations

import json

from tests.report_helpers import cli, make_run, write


def test_the_headline_says_nothing_ran_where_no_kernel_ran(tmp_path, capsys):
    run = make_run(kernels=(("softmax", "fp16"),))
    for t in run["tests"]:
        t.update(outcome="skipped", message="out of memory: too large for this GPU")
    run["cases"], run["findings"] = [], []
    code, _, err = cli(capsys, "build", write(tmp_path / "run.json", run), "--out", tmp_path / "r")
    assert code == 0, err
    md = (tmp_path / "r" / "report.md").read_text()
    head = md.split("## ", 2)[1]
    assert "Correct" not in head and "**Nothing ran: no kernel's test, case or benchmark ran**" in head, head
    assert json.loads((tmp_path / "r" / "summary.json").read_text())["verdict"]["broken"] == []
