"""Parts of the report that said more than the runs did: a headline of "Correct" where no kernel ran."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

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


def test_the_known_issues_table_lists_only_the_kernels_in_the_report(tmp_path, capsys):
    """A run file records the whole registry: the shipped kernels' entries were listed in a report of one's own
    kernel alone."""
    run = make_run(kernels=(("my_rope", "fp16"),))
    entry = {"backend": "cuda", "arch": "sm_90", "triton": "*", "dtype": "fp16", "reason": "r", "link": "l"}
    run["known_issues"] = [{**entry, "id": "mine", "kernel": "my_*"}, {**entry, "id": "shipped-1", "kernel": "matmul"},
                           {**entry, "id": "shipped-2", "kernel": "fp8_scaled_matmul"}]
    code, _, err = cli(capsys, "build", write(tmp_path / "run.json", run), "--out", tmp_path / "r")
    assert code == 0, err
    known = (tmp_path / "r" / "report.md").read_text().split("## Known issues")[1]
    assert "| mine " in known and "shipped-1" not in known and "shipped-2" not in known, known
    assert "2 registry entries for kernels not in these runs left out." in known
    assert [k["id"] for k in json.loads((tmp_path / "r" / "summary.json").read_text())["known_issues"]] == ["mine"]


def test_heatmap_cells_hold_their_whole_text():
    """The heatmap cut a cell's text at 26 characters ('BROKEN 18 failed tests, 3 fa...'): now it is wrapped, and
    each drawn text fits its cell."""
    pytest.importorskip("matplotlib")
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    from reports import plots
    from reports.loading import Run
    from reports.verdict import spots

    run = make_run(kernels=(("my_rope_with_a_long_name", "fp16"), ("softmax", "fp16")))
    for c in run["cases"]:
        if c["kernel"] == "my_rope_with_a_long_name":
            c["outcome"] = "failed"
    run["tests"][0]["outcome"] = "failed"
    plats, kernels, table, _ = spots([Run(Path("run.json"), run)])
    cells = [[table[(k, p)] for p in plats] for k in kernels]
    fig = plots.heatmap_figure(kernels, [f"{d} ({a})" for d, a in plats], cells)
    canvas = FigureCanvasAgg(fig)
    canvas.draw()
    renderer = canvas.get_renderer()
    ax = fig.axes[0]
    (x0, _), (x1, _) = ax.transData.transform([(0, 0), (1, 0)])
    texts = [t for t in ax.texts]
    whole = {cells[i][j].text() for i in range(len(kernels)) for j in range(len(plats))}
    assert {" ".join(t.get_text().split()) for t in texts} == whole and any(len(w) > 26 for w in whole), whole
    assert all(t.get_window_extent(renderer).width <= x1 - x0 for t in texts)
