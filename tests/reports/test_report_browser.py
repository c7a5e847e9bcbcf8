"""report.html in a real browser (headless Chromium driven by Playwright): the verdict and its heatmap on the first
1280x800 screen, no console errors, every plot loaded, names from run files shown as text and never run, nothing
wider than the screen, the runs' fingerprints folded. Skips, saying why, where no browser is installed."""

from __future__ import annotations

import contextlib
import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from reports.__main__ import main
from tests.report_helpers import H200, XSS, bench, case, make_run, write

WIDTH, HEIGHT = 1280, 800
CANDIDATES = ("/usr/bin/chromium", "chromium", "chromium-browser", "google-chrome", "google-chrome-stable")


def browser() -> str | None:
    """SUITE_BROWSER, else the first Chromium-family executable found."""
    chosen = os.environ.get("SUITE_BROWSER")
    if chosen:
        return chosen
    for name in CANDIDATES:
        found = shutil.which(name)
        if found:
            return found
    return None


@pytest.fixture(scope="module")
def report(tmp_path_factory) -> Path:
    """Two platforms; a kernel named <script> with a failed case on one; an incomplete run (a warning)."""
    tmp = tmp_path_factory.mktemp("browser")
    h100 = make_run(kernels=(("softmax", "fp16"), (XSS, "fp32")),
                    benchmarks=[bench("softmax", "fp16", {"M": 8192}, 1.0, 0.8, 0.6, speedup=1.3),
                                bench(XSS, "fp32", {"M": 8192}, 1.0, 0.4, 0.3, speedup=0.7)])
    h100["cases"].append(case(XSS, "fp32", 7, outcome="failed", ratio=40.0))
    h200 = make_run(H200, run_id="20261121T010000Z-cuda-sm_90-bbbbbb", started="2026-11-21T01:00:00+00:00",
                    kernels=(("softmax", "fp16"),),
                    benchmarks=[bench("softmax", "fp16", {"M": 8192}, 1.0, 0.6, 0.4, speedup=1.1)])
    h200["status"], h200["finished"] = "incomplete", None
    out = tmp / "report"
    assert main(["build", str(write(tmp / "h100.json", h100)), str(write(tmp / "h200.json", h200)), "--out", str(out)]) == 0
    return out / "report.html"


def chromium_or_skip():
    sync_api = pytest.importorskip("playwright.sync_api",
                                   reason="playwright is not installed (pip install -r requirements/ci.txt)")
    executable = browser()
    if executable is None:
        pytest.skip(f"no Chromium to drive (looked for {', '.join(CANDIDATES)}; set SUITE_BROWSER, or "
                    "apt-get install chromium)")
    return sync_api, executable


@contextlib.contextmanager
def opened(report: Path) -> Iterator[tuple[Any, list[str], list[str]]]:
    """``report`` loaded in Chromium at WIDTH x HEIGHT: the page, and the console errors, page errors and dialogs it
    raised (lists that fill while the page is open)."""
    sync_api, executable = chromium_or_skip()
    errors: list[str] = []
    dialogs: list[str] = []
    with sync_api.sync_playwright() as p:
        chromium = p.chromium.launch(executable_path=executable)
        try:
            page = chromium.new_page(viewport={"width": WIDTH, "height": HEIGHT})
            page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
            page.on("pageerror", lambda e: errors.append(str(e)))
            page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
            page.goto(report.as_uri())
            page.wait_for_load_state("load")
            yield page, errors, dialogs
        finally:
            chromium.close()


@pytest.fixture(scope="module")
def green_report(tmp_path_factory) -> Path:
    """A green interpreter run as the README's quick start leaves one: known issues, fp8 kernels not run."""
    from tests.reports.test_reports import interpreter_run

    tmp = tmp_path_factory.mktemp("green")
    out = tmp / "report"
    assert main(["build", str(write(tmp / "run.json", interpreter_run(None))), "--out", str(out)]) == 0
    return out / "report.html"


def test_green_run_first_screen_says_correct_known_issues_and_not_run(green_report):
    """The first screen of a run with nothing broken says so in the browser: no 'Broken', the known issues named
    with pytest's count, the fp8 kernel not run with the reason."""
    with opened(green_report) as (page, _, _):
        verdict = page.locator("#verdict")
        box = verdict.locator("h2").bounding_box()
        assert box is not None and box["y"] + box["height"] <= HEIGHT, box
        text = verdict.locator(".text").inner_text()
        assert "Broken" not in text and "Correct: every case run passed" in text, text
        assert "Known issues: 2 xfailed test(s)" in text and "dropout-bf16-planted-rounding" in text, text
        assert "Not run: 1 kernel(s)" in text and "unsupported dtype on interpreter: fp8e4nv, fp8e5" in text, text


def test_report_first_screen_in_a_browser(report):
    with opened(report) as (page, errors, dialogs):
        verdict = page.locator("#verdict")
        heading, heatmap = verdict.locator("h2"), verdict.locator("img")
        for element in (heading, heatmap):
            box = element.bounding_box()
            assert box is not None and box["y"] >= 0 and box["y"] + box["height"] <= HEIGHT, box
        text = verdict.locator(".text").inner_text()
        assert "Broken: 1 kernel(s)" in text and XSS in text and "INCOMPLETE" in text
        assert page.evaluate("Array.from(document.images).every(i => i.complete && i.naturalWidth > 0)")
        assert page.evaluate("document.images.length") == 3  # the heatmap, efficiency bars, cascade plots
        assert page.evaluate("document.documentElement.scrollWidth") <= WIDTH
        assert XSS in page.inner_text("body") and page.evaluate("document.scripts.length") == 0
        fingerprints = page.locator("#runs details")
        assert fingerprints.count() == 1 and not fingerprints.locator("table").is_visible()
        fingerprints.locator("summary").click()
        assert fingerprints.locator("table").is_visible()
    assert not errors and not dialogs, errors + dialogs


@pytest.fixture(scope="module")
def history_report(tmp_path_factory) -> Path:
    """Today's run, and the nights before it as a history (tests/reports/test_history.py's series, a kernel named <script>
    failing in the last night)."""
    from tests.reports.test_history import series_dir

    tmp = tmp_path_factory.mktemp("history")
    nights = series_dir(tmp)
    (nights / "run-corrupt.json").unlink()
    last = make_run(run_id="night-xss", started="2026-11-17T02:17:00+00:00", kernels=((XSS, "fp32"),))
    last["tests"][0]["outcome"] = "failed"
    write(nights / "run-night-xss.json", last)
    out = tmp / "report"
    assert main(["build", str(write(tmp / "today.json", make_run(started="2026-11-18T02:17:00+00:00"))),
                 "--history", str(nights), "--out", str(out)]) == 0
    return out / "report.html"


def test_the_history_section_renders_in_a_browser(history_report):
    with opened(history_report) as (page, errors, dialogs):
        page.locator('nav.toc a[href="#nightly-history"]').click()
        section = page.locator("#nightly-history")
        assert section.locator("h2").is_visible() and section.locator("h2").inner_text() == "Nightly history"
        kernels = section.locator("table").first
        assert kernels.is_visible()
        rows = kernels.locator("tbody tr")
        assert rows.count() == 3
        first = rows.nth(0).inner_text()
        assert XSS in first and "failed" in first and "-----F" in first  # ran on the last night only
        softmax = rows.filter(has_text="softmax").inner_text()
        assert "PPFFPF-" in softmax and "not run" in softmax  # not in the last night's run
        assert "first bad #3 2026-11-13 02:17" in softmax and "triton 3.6.0 -> 3.7.0" in softmax
        assert rows.nth(0).locator("td").nth(2).get_attribute("class") == "bad"  # failed, in red
        nights = section.locator("details")
        assert nights.count() == 1 and not nights.locator("table").is_visible()
        nights.locator("summary").click()
        assert nights.locator("tbody tr").count() == 7
        assert page.evaluate("document.documentElement.scrollWidth") <= WIDTH
        assert page.evaluate("document.scripts.length") == 0
    assert not errors and not dialogs, errors + dialogs


def test_a_long_reproduction_line_wraps_in_its_cell(tmp_path):
    """The 'reproduce with' column overflowed: a failing case's reproduction line (a long command with no place to
    break in its test id) made its table wider than the screen. Its cell wraps it now
    (render.CSS: td max-width, overflow-wrap)."""
    chromium_or_skip()
    run = make_run(kernels=(("my_rope_" + "x" * 60, "fp16"),))
    bad = case("my_rope_" + "x" * 60, "fp16", 9, outcome="failed", ratio=40.0)
    bad["repro"] = bad["repro"] + " --kernel-module=" + "/home/someone/" + "deep/" * 30 + "my_rope.py"
    run["cases"].append(bad)
    out = tmp_path / "report"
    assert main(["build", str(write(tmp_path / "run.json", run)), "--out", str(out)]) == 0
    with opened(out / "report.html") as (page, errors, _):
        widths = page.evaluate("Array.from(document.querySelectorAll('table')).filter(t => t.querySelector('th') && "
                               "t.innerText.includes('reproduce with')).map(t => [t.scrollWidth, t.clientWidth])")
        assert widths and all(scroll <= client + 1 for scroll, client in widths), widths
        assert page.evaluate("document.documentElement.scrollWidth") <= WIDTH
    assert not errors, errors
