"""Issue 39, item 3: run files the reports cannot trust. A corrupt gzip or a JSON nested too deeply for Python is
left out with its reason while the good files still make a report; what is read is capped (a gzip bomb,
/dev/zero); strings from run files cannot put headings, links or remote images into report.md."""

from __future__ import annotations

import gzip
import json
import re
from pathlib import Path

import pytest

from reports import loading
from reports.render import md_paragraph, md_text
from tests.conftest import run_python
from tests.report_helpers import cli, make_run, write

GOOD = "20261121T000000Z-cuda-sm_90-aaaaaa"


def _bad_files(tmp_path: Path) -> dict[str, tuple[Path, str]]:
    good = json.dumps(make_run(run_id="20261121T000000Z-cuda-sm_90-cccccc")).encode()
    packed = gzip.compress(good)
    files = {
        "corrupt gzip": (packed[:10] + b"\xff" * 40 + packed[50:], "corrupt or truncated gzip data"),
        "truncated gzip": (packed[: len(packed) // 2], "corrupt or truncated gzip data"),
        "deep JSON": (b"[" * 200_000 + b"]" * 200_000, "nested too deeply"),
        "deep JSON object": (b'{"schema_version": 1, "x": ' + b'{"a": ' * 200_000 + b"1" + b"}" * 200_001,
                             "nested too deeply"),
    }
    out = {}
    for i, (what, (data, words)) in enumerate(files.items()):
        path = tmp_path / f"bad{i}.json"
        path.write_bytes(data)
        out[what] = (path, words)
    return out


def test_build_leaves_out_unreadable_files_and_reports_the_good_one(tmp_path, capsys):
    good = write(tmp_path / "good.json", make_run(run_id=GOOD))
    bad = _bad_files(tmp_path)
    code, out, err = cli(capsys, "build", good, *(p for p, _ in bad.values()), "--out", tmp_path / "r")
    assert code == 2 and "internal error" not in err, err
    md = (tmp_path / "r" / "report.md").read_text()
    assert GOOD in md
    for what, (path, words) in bad.items():
        line = next((x for x in err.splitlines() if str(path) in x), "")
        assert words in line and "left out of the report" in line, (what, err)
        assert f"{path}: not a run file: " in md and words in md.split(str(path))[1].split("\n")[0], what


@pytest.mark.parametrize("what", ["corrupt gzip", "deep JSON"])
def test_compare_names_the_unreadable_file(tmp_path, capsys, what):
    good = write(tmp_path / "good.json", make_run(run_id=GOOD))
    path, words = _bad_files(tmp_path)[what]
    code, out, err = cli(capsys, "compare", good, path)
    assert code == 2 and "internal error" not in err and f"error: {path}: not a run file: " in err and words in err


@pytest.fixture
def one_mib_cap(monkeypatch):
    monkeypatch.setattr(loading, "MAX_RUN_FILE_BYTES", 2**20)


def test_a_gzip_bomb_is_refused_once_it_decompresses_past_the_cap(tmp_path, capsys, one_mib_cap):
    bomb = tmp_path / "bomb.json.gz"
    bomb.write_bytes(gzip.compress(b" " * (64 * 2**20), 9))  # 64 KiB on disk, 64 MiB unpacked
    good = write(tmp_path / "good.json", make_run(run_id=GOOD))
    code, out, err = cli(capsys, "build", good, bomb, "--out", tmp_path / "r")
    assert code == 2 and f"error: {bomb}: not a run file: decompresses to more than 1 MiB" in err, err
    assert (tmp_path / "r" / "report.md").exists()


def test_a_gzip_within_the_cap_still_reads(tmp_path, one_mib_cap):
    path = tmp_path / "run.json.gz"
    path.write_bytes(gzip.compress(json.dumps(make_run(run_id=GOOD)).encode()))
    assert loading.load_run(path).run_id == GOOD


def test_an_endless_file_is_refused(tmp_path, capsys, one_mib_cap):
    """/dev/zero used to be read until MemoryError; it is a device, not a run file."""
    good = write(tmp_path / "good.json", make_run(run_id=GOOD))
    code, out, err = cli(capsys, "build", good, "/dev/zero", "--out", tmp_path / "r")
    assert code == 2 and "error: /dev/zero: not a run file: it is a device (a run file is a regular file)" in err, err


@pytest.mark.parametrize("read_as", ["run file", "noise-floor file"])
def test_a_named_pipe_is_refused_not_waited_on(tmp_path, read_as):
    """Issue 61, item 21: `reports build` on a named pipe waited for a writer for ever, and so did `compare
    --noise-floor`. Refused, as every file that is not a regular file, with the good files still reported."""
    import os

    good = write(tmp_path / "good.json", make_run(run_id=GOOD))
    fifo = tmp_path / "run-pipe.json"
    os.mkfifo(fifo)
    if read_as == "run file":
        args = ["build", str(good), str(fifo), "--out", str(tmp_path / "r")]
    else:
        other = write(tmp_path / "other.json", make_run(run_id="20261121T010000Z-cuda-sm_90-bbbbbb",
                                                          started="2026-11-21T01:00:00+00:00"))
        args = ["compare", str(good), str(other), "--noise-floor", str(fifo)]
    run = run_python("reports", *args, cwd=Path(__file__).resolve().parents[2], timeout=120)
    assert run.returncode == 2, run.stderr[-2000:]
    assert f"error: {fifo}: not a {read_as}: it is a FIFO (a {read_as} is a regular file)" in run.stderr, run.stderr
    assert read_as != "run file" or (tmp_path / "r" / "report.md").exists()


def test_a_plain_file_over_the_cap_is_refused(tmp_path, one_mib_cap):
    path = tmp_path / "big.json"
    path.write_bytes(b" " * (2**20 + 1))
    with pytest.raises(loading.RunFileError, match=re.escape(f"{path}: not a run file: more than 1 MiB")):
        loading.load_run(path)


# --- Markdown injection -------------------------------------------------------------------------------------------

EVIL = "# Injected heading\n![img](https://evil.example/p.png) [link](http://evil.example) www.evil.example"
EVIL_KERNEL = "![k](https://evil.example/k.png)"


def _links_or_headings(md: str) -> list[str]:
    """What in report.md would render as a link, an image, an autolink or a heading that the report did not make:
    an unescaped "](", a URL scheme or www. not escaped, a line that is a heading about the injected text."""
    own = r"(?!\(#)"  # the report's own links go to its sections: "](#verdict)"
    found = re.findall(r"(?<!\\)\]" + own + r"[(\[]", md) + re.findall(r"https?://|(?<![\\/])www\.evil", md)
    found += [line for line in md.splitlines() if re.match(r" {0,3}\[[^\]]*\]:", line)]  # a reference definition
    return found + [line for line in md.splitlines() if re.match(r"\s*#+ Injected", line)]


def test_strings_from_a_run_file_cannot_inject_markdown(tmp_path, capsys):
    run = make_run(run_id=GOOD, kernels=((EVIL_KERNEL, "fp16"), ("softmax", "fp16")))
    run["tests"][0].update(outcome="failed", message=EVIL)
    run["cases"][0].update(outcome="failed", message=EVIL)
    run["known_issues"] = [{"id": "ki-1", "backend": "cuda", "arch": "sm_90", "triton": "*", "kernel": EVIL_KERNEL,
                            "dtype": "fp16", "reason": EVIL, "link": "https://evil.example/issue"}]
    code, out, err = cli(capsys, "build", write(tmp_path / "evil.json", run), "--out", tmp_path / "r")
    assert code == 0, err
    md = (tmp_path / "r" / "report.md").read_text()
    assert "https\\://evil.example/k.png" in md and "Injected heading" in md  # shown, as text
    assert _links_or_headings(md) == []


def test_compare_markdown_escapes_run_file_strings(tmp_path, capsys):
    base = make_run(run_id=GOOD, kernels=((EVIL_KERNEL, "fp16"),))
    cand = make_run(run_id="20261121T010000Z-cuda-sm_90-bbbbbb", kernels=((EVIL_KERNEL, "fp16"),))
    cand["tests"][0].update(outcome="failed", message=EVIL)
    code, out, err = cli(capsys, "compare", write(tmp_path / "b.json", base), write(tmp_path / "c.json", cand))
    assert code == 1 and "Injected heading" in out, err
    assert _links_or_headings(out) == []


@pytest.mark.parametrize(("text", "shown"), [
    ("# heading", "\\# heading"), ("> quote", "\\> quote"), ("- item", "\\- item"), ("1. item", "1\\. item"),
    ("```", "\\```"), ("**bold** stays", "**bold** stays"), ("p < 0.01 -> ok", "p < 0.01 -> ok"),
    ("a\nb", "a b"), ("x[softmax-fp16] stays", "x[softmax-fp16] stays"), ("[a]: http://x", "\\[a]: http\\://x"),
    ("back\\slash", "back\\\\slash"), ("mail me@evil.example", "mail me\\@evil.example"),
    ("ftp://host/x", "ftp\\://host/x"), ("www.evil.example", "www\\.evil.example"),
])
def test_paragraph_escaping(text, shown):
    assert md_paragraph(text) == shown


def test_inline_text_keeps_line_starts():
    assert md_text("- 0.5") == "- 0.5" and md_text("# 3") == "# 3"


def test_a_report_without_matplotlib_is_written_without_plots_and_says_so(tmp_path):
    """An installed copy without matplotlib (it is the reports extra, not a dependency) ended `reports build` with
    'internal error ... No module named matplotlib'. Now the report is whole but for its plots, and says so."""
    import subprocess
    import sys

    from tests.conftest import ROOT

    run = sorted((ROOT / "evidence" / "reference").glob("run-*.json*"))[-1]
    blocked = ("import sys; sys.modules['matplotlib'] = None; from reports.__main__ import main; "
               f"sys.exit(main(['build', {str(run)!r}, '--out', {str(tmp_path / 'out')!r}]))")
    proc = subprocess.run([sys.executable, "-c", blocked], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "note: plots left out: matplotlib is not installed" in proc.stderr
    html = (tmp_path / "out" / "report.html").read_text()
    assert "plots left out: matplotlib is not installed" in html and "<img" not in html
    assert "install the suite with its reports extra" in (tmp_path / "out" / "report.md").read_text()


def test_a_small_gzip_of_many_values_is_refused_before_it_is_parsed(tmp_path, capsys, monkeypatch):
    """A 478 KB gzip parsed to 12.4 GB of RAM before it was refused: the bytes read were capped, not what parsing
    them makes. Here the same shape at a smaller scale (the cost cap lowered to match): refused by its estimated
    cost, json never called."""
    monkeypatch.setattr(loading, "MAX_PARSED_BYTES", 16 * 2**20, raising=False)
    bomb = tmp_path / "values.json.gz"
    bomb.write_bytes(gzip.compress(b"[" + b"{}," * 2**20 + b"{}]", 9))  # 9 KiB on disk, 3 MiB of JSON, 1M dicts
    assert bomb.stat().st_size < 20_000
    loads = json.loads
    monkeypatch.setattr(loading.json, "loads", lambda text, **k: pytest.fail("parsed") if len(text) > 2**20
                        else loads(text, **k))  # the good file is parsed as ever
    good = write(tmp_path / "good.json", make_run(run_id=GOOD))
    code, out, err = cli(capsys, "build", good, bomb, "--out", tmp_path / "r")
    assert code == 2 and f"error: {bomb}: not a run file: its 3 MiB of JSON hold so many values that parsing them " \
        "would take about 0.1 GiB of memory" in err, err
    assert (tmp_path / "r" / "report.md").exists()
    # a run file of ordinary size is far below the default cap
    text = (tmp_path / "good.json").read_text()
    assert 1000 * loading.parse_cost(text) < 2**30


def test_an_integer_too_long_to_convert_is_one_clear_line(tmp_path, capsys):
    path = tmp_path / "digits.json"
    path.write_text('{"schema_version": ' + "1" * 5000 + "}")
    code, _, err = cli(capsys, "compare", write(tmp_path / "good.json", make_run(run_id=GOOD)), path)
    assert code == 2 and f"error: {path}: not a run file: Exceeds the limit (4300 digits)" in err, err
