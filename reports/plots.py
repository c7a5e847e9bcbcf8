"""Plots as PNG bytes (matplotlib, Agg backend, no pyplot state): efficiency bars and cascade plots."""

from __future__ import annotations

import io
import math
import textwrap
from typing import Any

import matplotlib

matplotlib.use("Agg")
from matplotlib.backends.backend_agg import FigureCanvasAgg  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

from reports.perf import pennycook  # noqa: E402
from reports.render import Figure as ReportFigure  # noqa: E402

MAX_CASCADES = 24


def _text(s: str) -> str:
    """Names from result files are plain text to matplotlib: no mathtext."""
    return s.replace("$", r"\$")


def _png(fig: Figure) -> bytes:
    buf = io.BytesIO()
    FigureCanvasAgg(fig).print_png(buf)
    return buf.getvalue()


def _values(row: list[float | None]) -> list[float]:
    return [math.nan if v is None else v for v in row]


def efficiency_bars(data: dict[str, Any]) -> ReportFigure:
    kernels, plats = data["kernels"], data["platforms"]
    panels = [("measured ceilings", data["measured"])]
    if any(v is not None for row in data["datasheet"] for v in row):
        panels.append(("datasheet peaks", data["datasheet"]))
    width = min(30.0, max(8.0, 0.35 * len(kernels) * max(1, len(plats)) + 2))
    fig = Figure(figsize=(width, 3.6 * len(panels) + 1.2), layout="constrained")
    bar = 0.8 / max(1, len(plats))
    for i, (name, rows) in enumerate(panels):
        ax = fig.add_subplot(len(panels), 1, i + 1)
        for j, label in enumerate(plats):
            xs = [k + (j - (len(plats) - 1) / 2) * bar for k in range(len(kernels))]
            ys = _values([row[j] for row in rows])
            ax.bar(xs, ys, width=bar, label=_text(label))
            missing = [x for x, y in zip(xs, ys, strict=True) if y == 0.0]
            ax.plot(missing, [0.02] * len(missing), "x", color="crimson", markersize=6)
        ax.axhline(1.0, color="grey", linewidth=0.8, linestyle="--")
        ax.set_ylabel(f"efficiency vs {name}")
        ax.set_xticks(range(len(kernels)), [_text(k) for k in kernels], rotation=45, ha="right", fontsize=8)
        ax.set_ylim(0, max([1.2] + [v * 1.1 for row in rows for v in row if v is not None and math.isfinite(v)]))
        ax.grid(axis="y", alpha=0.3)
        if i == 0:
            ax.legend(fontsize=8, ncols=min(4, len(plats)))
    fig.suptitle("Roofline efficiency at the largest benchmark shape (x: missing or wrong)")
    return ReportFigure("Efficiency per kernel per platform", _png(fig))


def cascade(data: dict[str, Any]) -> ReportFigure:
    """Sewall et al. 2020: per kernel, the platforms' efficiencies sorted best first and the PP of the first k."""
    kernels, plats = data["kernels"][:MAX_CASCADES], data["platforms"]
    cols = min(4, len(kernels))
    nrows = math.ceil(len(kernels) / cols)
    fig = Figure(figsize=(3.6 * cols, 3.0 * nrows + 0.8), layout="constrained")
    for i, name in enumerate(kernels):
        ax = fig.add_subplot(nrows, cols, i + 1)
        row = data["measured"][i]
        order = sorted(range(len(plats)), key=lambda j: -(row[j] if row[j] is not None else -1.0))
        effs = [row[j] for j in order]
        xs = list(range(1, len(order) + 1))
        ax.bar(xs, _values(effs), color="#8fb8de", label="efficiency")
        running = [pennycook(effs[:k]) for k in xs]
        ax.plot(xs, _values(running), "o-", color="#c0392b", label="PP of first k")
        ax.set_xticks(xs, [_text(plats[j]) for j in order], rotation=30, ha="right", fontsize=7)
        ax.set_ylim(0, max([1.05] + [v * 1.05 for v in effs if v is not None and math.isfinite(v)]))
        ax.set_title(_text(name), fontsize=9)
        if i == 0:
            ax.legend(fontsize=7)
    more = f" (first {MAX_CASCADES} of {len(data['kernels'])})" if len(data["kernels"]) > MAX_CASCADES else ""
    fig.suptitle(f"Cascade: efficiency vs measured ceilings, platforms best first, running PP{more}")
    return ReportFigure("Cascade plot per kernel (measured-ceiling efficiency, running PP)", _png(fig))


STATE_COLOURS = {"broken": "#cf222e", "known issue": "#b392f0", "unchecked": "#f2cc60", "not run": "#eeeeee"}


CELL_CHARS = 22  # a heatmap cell's text is wrapped at this many characters, never cut


def cell_label(text: str) -> str:
    """A heatmap cell's whole text, wrapped onto lines of at most CELL_CHARS characters."""
    return "\n".join(textwrap.wrap(text, CELL_CHARS, break_on_hyphens=False)) or text


def heatmap_figure(kernels: list[str], platforms: list[str], spots: list[list[Any]]) -> Figure:
    """The heatmap's matplotlib figure (heatmap() renders it): each cell's text whole, wrapped, and the cells sized
    to hold it."""
    from matplotlib import colormaps
    from matplotlib.colors import to_rgb

    greens = colormaps["YlGn"]
    colours = [[to_rgb(STATE_COLOURS[s.state]) if s.state in STATE_COLOURS else
                to_rgb(greens(0.12 + 0.73 * min(1.0, s.efficiency))) if s.efficiency is not None else to_rgb("#dafbe1")
                for s in row] for row in spots]
    labels = [[cell_label(s.text()) for s in row] for row in spots]
    lines = max((label.count("\n") + 1 for row in labels for label in row), default=1)
    column = max(1.9, 0.075 * CELL_CHARS + 0.3)  # inches: the widest wrapped line at 7.5 pt, and a margin
    width = 2.6 + column * len(platforms)
    fig = Figure(figsize=(width, (0.16 + 0.13 * lines) * len(kernels) + 1.8), dpi=100, layout="constrained")
    ax = fig.add_subplot()
    ax.imshow(colours, aspect="auto", interpolation="nearest")
    for i, row in enumerate(spots):
        for j, s in enumerate(row):
            dark = s.state == "broken" or (s.state == "passed" and (s.efficiency or 0) > 0.6)
            ax.text(j, i, _text(labels[i][j]), ha="center", va="center", fontsize=7.5, linespacing=1.1,
                    color="white" if dark else "#1b1f24",
                    fontweight="bold" if s.state == "broken" or (s.speedup or 1.0) < 1.0 else "normal")
    ax.set_xticks(range(len(platforms)), [_text(p.replace(" (", "\n(")) for p in platforms], fontsize=8)
    ax.xaxis.tick_top()
    # A long kernel name wrapped, whole: cut, it would name another kernel; whole on one line, it squeezes the cells.
    ax.set_yticks(range(len(kernels)), [_text("\n".join(textwrap.wrap(k, 28)) or k) for k in kernels], fontsize=8)
    ax.set_xticks([x - 0.5 for x in range(1, len(platforms))], minor=True)
    ax.set_yticks([y - 0.5 for y in range(1, len(kernels))], minor=True)
    ax.grid(which="minor", color="white", linewidth=1.5)
    ax.tick_params(which="both", length=0)
    fig.suptitle("Correctness and efficiency: red broken, purple known issues, amber unchecked, green passed "
                 "(shade: efficiency vs measured ceilings; text: efficiency, speed-up over torch; bold: slower than "
                 "torch), grey not run (unsupported or skipped)", fontsize=8, wrap=True)
    return fig


def heatmap(kernels: list[str], platforms: list[str], spots: list[list[Any]]) -> ReportFigure:
    """Kernel x platform: red where broken, purple where only known issues fail, amber where unchecked (no Triton
    launch), grey where not run, else (passed) green shades by efficiency against the measured ceilings (pale where
    unknown); each cell says what it is."""
    fig = heatmap_figure(kernels, platforms, spots)
    return ReportFigure("Verdict: correctness and efficiency per kernel and platform", _png(fig))
