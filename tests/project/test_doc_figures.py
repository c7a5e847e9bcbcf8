"""Figures in README.md and docs/*.md: those that describe the current code come from the code, checked here; those
that describe a measurement say when and where it was made. The rule, as this file holds the pages to it:

1. Counts. Every "N kernels", "all N dtypes", "N targets" and "N tests" outside a code block is the code's figure
   (the kernels registered by kernels/, the dtypes they declare, the compile matrix's targets, the tests of the main
   command on the interpreter), or its paragraph dates it (YYYY-MM-DD) or names its source (an evidence/ path or a
   run file): a figure of a past run. One that claims the whole ("all 18 kernels", "the suite's 18 kernels") and is
   not today's says "then" right after. Figures of the shipped data are read from it: an autotune cache's "N entries
   (M kernels", geometric mean and H100-vs-H200 gate figures (hardware_profiles/autotune/), the Hypothesis profiles'
   examples (suite/checks/strategies.py), the example report's slower-than-torch pairs (reports/example/); "N
   workers per GPU" is -n auto's (suite/workers/gpu_share.py).
2. Quoted outputs. A code block after `<!-- checked by tests/project/test_doc_figures.py (plant: NAME) -->` quotes failures
   of examples/leaky_relu.py with the bug NAME (PLANTS below) planted: each case it quotes is run again here and the
   message must read as quoted ("..." stands for text left out). One marked `(run: leaky_relu)` quotes a run of
   examples/leaky_relu.py: its test counts (collected, not run) and compile-matrix targets are the code's. One marked
   `(fixture: NAME)` quotes the failure of that spec of tests/fixtures/bring_your_own.py, run again here.
3. Measured figures. A number with a unit (x, %, s, ms, us, min, GB/s, TB/s) outside a code block has, in its
   paragraph or the one just before (a table's introduction), a date, an evidence/ path, a run file or a
   `<!-- checked by tests/... -->` marker; a paragraph whose figures are settings or definitions, not measurements
   (defaults, thresholds, the tolerance rule), says so: `<!-- not measured: WHY -->`.
4. Install commands. `pip install` in README.md and docs/*.md names only files, extras and distributions that exist:
   `-r` files under requirements/, the project's extras and name from pyproject.toml, third-party pins that
   requirements/ or .ci/run pin the same, and no `<...>` placeholder a user cannot paste.
"""

from __future__ import annotations

import functools
import re
from pathlib import Path

import pytest

from tests.conftest import ROOT, run_python

PAGES = sorted([ROOT / "README.md", *(ROOT / "docs").glob("*.md")])
IDS = [str(p.relative_to(ROOT)) for p in PAGES]
FENCE = re.compile(r"^ *```.*?^ *```", re.S | re.M)
DATE = re.compile(r"\b20\d\d-[01]\d-[0-3]\d\b")
SOURCE = re.compile(r"evidence/|\brun-\d{8}T\d{6}Z|<!-- checked by tests/")
NOT_MEASURED = re.compile(r"<!-- not measured: \S[^>]*-->")
CHECKED = "<!-- checked by tests/project/test_doc_figures.py"


def paragraphs(text: str) -> list[str]:
    """The page's paragraphs (blank-line separated; a table or a list without blank lines is one), code blocks
    blanked out."""
    return re.split(r"\n[ \t]*\n", FENCE.sub(lambda m: "\n" * m.group(0).count("\n"), text))


def sourced(paras: list[str], i: int) -> bool:
    return any(DATE.search(p) or SOURCE.search(p) for p in paras[max(i - 1, 0):i + 1])


# --- 1. Counts ------------------------------------------------------------------------------------------------------

WORDS = {w: n for n, w in enumerate("zero one two three four five six seven eight nine ten eleven twelve".split())}
COUNT = re.compile(r"\b(?:(all|the\s+suite's)\s+)?(\d+|" + "|".join(WORDS) + r")\s+(?:(?:shipped|built-in|registered|GPU)"
                   r"\s+)?(kernels|dtypes|targets|tests)\b(?!\s+compiled)", re.I)
PER_GPU = re.compile(r"\b(\d+)\s+(?:(?:pytest-)?xdist\s+)?(?:workers\s+)?(?:per|a)\s+(?:visible\s+)?GPU\b")
CACHE = re.compile(r"`((?:sm|gfx)_?\w+?\.json)`[^`]*?\b(\d+) entries(?: \((\d+) kernels)?")


@functools.cache
def code_counts() -> dict[str, int]:
    from hardware_profiles import loader
    from kernels import registry

    registry.load_builtin()
    specs = [registry.get(name) for name in registry._REGISTRY if registry.where(name).startswith("kernels/")]
    from suite.workers import gpu_share

    return {"kernels": len(specs), "dtypes": len({d for s in specs for d in s.dtypes}), "targets": len(loader.targets()),
            "workers per GPU": gpu_share.WORKERS_PER_GPU}


@functools.cache
def collected(*args: str) -> tuple[int, int]:
    """(selected, deselected) tests of `pytest --backend=interpret ARGS --collect-only -q` from the repository root."""
    proc = run_python("pytest", "-p", "no:cacheprovider", "--backend=interpret", *args, "--collect-only", "-q",
                      timeout=120)
    m = re.search(r"^(\d+)(?:/(\d+))? tests? collected(?: \((\d+) deselected\))?", proc.stdout, re.M)
    assert m, f"pytest --collect-only {' '.join(args)}: no count in its output\n{proc.stdout[-2000:]}{proc.stderr}"
    return int(m.group(1)), int(m.group(3) or 0)


def count_of(noun: str) -> int:
    return collected()[0] if noun == "tests" else code_counts()[noun]


def cache_problems(text: str) -> list[str]:
    problems = []
    for m in CACHE.finditer(text):
        path = ROOT / "hardware_profiles" / "autotune" / m.group(1)
        if not path.exists():
            problems.append(f"`{m.group(1)}`: no such cache under hardware_profiles/autotune/")
            continue
        import json

        entries = json.loads(path.read_text())["entries"]
        kernels = {key.split("/")[0] for key in entries}
        if int(m.group(2)) != len(entries):
            problems.append(f"`{m.group(1)}`: '{m.group(2)} entries', the file holds {len(entries)}")
        if m.group(3) and int(m.group(3)) != len(kernels):
            problems.append(f"`{m.group(1)}`: '{m.group(3)} kernels', the file's entries are of {len(kernels)}")
    return problems


def count_problems(text: str, counts=count_of) -> list[str]:
    """Every count statement of ``text`` that is neither the code's figure nor a dated or sourced past one."""
    problems = cache_problems(text)
    paras = paragraphs(text)
    for i, para in enumerate(paras):
        cached = [m.span() for m in CACHE.finditer(para)]
        for m in COUNT.finditer(para):
            if any(a <= m.start() < b for a, b in cached):
                continue
            whole, number, noun = m.group(1), m.group(2).lower(), m.group(3).lower()
            if noun == "dtypes" and not whole:
                continue  # one kernel's dtypes ("three dtypes"): the spec's, checked where a page describes it
            n = WORDS.get(number, None) if not number.isdigit() else int(number)
            said = " ".join(m.group(0).split())
            if not whole and noun == "tests" and sourced(paras, i):
                continue  # the tests of one dated run: a subset or another backend's
            if n == counts(noun):
                continue
            if not sourced(paras, i):
                problems.append(f"'{said}': the code has {counts(noun)} {noun}; a figure of a past run needs its "
                                f"date or source in its paragraph")
            elif whole and not re.match(r"[^.;:]{0,40}\bthen\b", para[m.end():]):
                problems.append(f"'{said}': the code has {counts(noun)} {noun}; a past whole says so ('all {number} "
                                f"{noun} the suite then had')")
        for m in PER_GPU.finditer(para):
            if int(m.group(1)) != counts("workers per GPU") and not sourced(paras, i):
                problems.append(f"'{' '.join(m.group(0).split())}': -n auto starts {counts('workers per GPU')} workers "
                                f"per GPU (suite/workers/gpu_share.py); a figure of a past run needs its date or source")
    return problems


@pytest.mark.parametrize("page", PAGES, ids=IDS)
def test_counts_are_the_codes_or_dated(page):
    problems = count_problems(page.read_text())
    assert not problems, f"{page.relative_to(ROOT)}: " + "; ".join(problems)


def test_a_count_that_drifted_fails():
    """Planted: the kernel count of README and docs/performance.md before the 19th kernel, bare and dated."""
    counts = {"kernels": 19, "dtypes": 7, "targets": 6, "tests": 266}.__getitem__
    assert count_problems("It runs all 18 kernels (166 tests) in 40 s.\n", counts) == [
        "'all 18 kernels': the code has 19 kernels; a figure of a past run needs its date or source in its paragraph",
        "'166 tests': the code has 266 tests; a figure of a past run needs its date or source in its paragraph"]
    dated = "On 2026-11-24, all 18 kernels (166 tests) ran in 42 s.\n"
    assert count_problems(dated, counts) == ["'all 18 kernels': the code has 19 kernels; a past whole says so ('all 18 "
                                             "kernels the suite then had')"]
    assert count_problems("On 2026-11-24 all 18 kernels the suite then had (166 tests) ran.\n", counts) == []
    assert count_problems("Compiled for six targets and 19 kernels.\n```\n3 kernels\n```\n", counts) == []
    assert count_problems("Compiled for five targets.\n", counts)[0].startswith("'five targets': the code has 6")
    per_gpu = {"workers per GPU": 16}.get
    assert count_problems("`-n auto` starts 16 workers per visible GPU; 16 per GPU.\n", per_gpu) == []
    assert count_problems("`-n auto` starts 8 pytest-xdist workers per visible GPU.\n", per_gpu) == [
        "'8 pytest-xdist workers per visible GPU': -n auto starts 16 workers per GPU (suite/workers/gpu_share.py); a "
        "figure of a past run needs its date or source"]
    assert count_problems("On 2026-11-21, 8 workers per GPU.\n", per_gpu) == []


def test_the_code_counts_are_read_from_the_code():
    from hardware_profiles import loader
    from kernels.registry import builtin_modules

    counts = code_counts()
    assert counts["targets"] == len(loader.targets()) >= 6
    assert len(builtin_modules()) <= counts["kernels"]  # a module may register more than one spec
    assert counts["dtypes"] >= 3


def test_a_cache_figure_that_drifted_fails():
    assert cache_problems("The shipped `sm_90.json` was tuned: 124 entries (18 kernels x dtypes).") == []
    assert cache_problems("The shipped `sm_90.json`: 120 entries (17 kernels x dtypes).") == [
        "`sm_90.json`: '120 entries', the file holds 124", "`sm_90.json`: '17 kernels', the file's entries are of 18"]


# docs/options.md's table of Hypothesis profiles: examples per kernel x dtype are the profiles' max_examples.
PROFILE_ROW = re.compile(r"^\| `(\w+)`(?: \(default\))? \| [^|]+ \| (\d+)\b", re.M)


def profile_problems(text: str, profiles: dict) -> list[str]:
    table = text.split("| profile | for | examples per kernel x dtype |", 1)[1].split("\n\n", 1)[0]
    rows = PROFILE_ROW.findall(table)
    problems = [f"profile {name}: {n} examples, suite/checks/strategies.py says {profiles[name].max_examples}"
                for name, n in rows if name in profiles and int(n) != profiles[name].max_examples]
    if sorted(name for name, _ in rows) != sorted(profiles):
        problems.append(f"profiles {sorted(n for n, _ in rows)}: suite/checks/strategies.py has {sorted(profiles)}")
    return problems


def test_the_profiles_table_is_the_profiles():
    from suite.checks.strategies import PROFILES

    problems = profile_problems((ROOT / "docs" / "options.md").read_text(), PROFILES)
    assert not problems, "docs/options.md: " + "; ".join(problems)


def test_a_profile_figure_that_drifted_fails():
    from types import SimpleNamespace

    profiles = {"dev": SimpleNamespace(max_examples=10), "ci": SimpleNamespace(max_examples=20)}
    table = ("| profile | for | examples per kernel x dtype | randomness |\n|---|---|---|---|\n"
             "| `dev` | iterating | 10 | random |\n| `ci` (default) | CI | 25 | fixed |\n")
    assert profile_problems(table, profiles) == ["profile ci: 25 examples, suite/checks/strategies.py says 20"]
    assert profile_problems(table.replace("| `dev` | iterating | 10 | random |\n", ""), profiles) == [
        "profile ci: 25 examples, suite/checks/strategies.py says 20",
        "profiles ['ci']: suite/checks/strategies.py has ['ci', 'dev']"]


# The shipped caches' own figures (docs/autotuning.md, docs/validation.md): read from the files, not remembered.
GEOMEAN = re.compile(r"geometric\s+mean ([\d.]+)x over (?:the \d+ entries|the family default), (\d+) more than 5% faster")
OTHER = re.compile(r"(\d+) of the (\d+) chose another config than the H100")
GATE = re.compile(r"The H100's (\d+) winners judged by the H200's timings[^:]*:\s+(\d+) lose there by ([\d.]+)-([\d.]+)x"
                  r" \((\w+) (\w+) (\d+) x (\d+) the most: ([\d.]+) ms\s+against ([\d.]+) ms\)")


def _entries(name: str) -> dict:
    import json

    return json.loads((ROOT / "hardware_profiles" / "autotune" / name).read_text())["entries"]


def cache_stat_problems(text: str) -> list[str]:
    """A paragraph naming a shipped cache (`sm_90.json`) and its tuning's geometric mean, count of entries more than
    5% faster than the default, and how many chose another config than the H100's cache: each from the file."""
    import math

    problems = []
    for para in paragraphs(text):
        names = [n for n in re.findall(r"`((?:sm|gfx)_?\w+?(?:\.\w+)?\.json)`", para)
                 if (ROOT / "hardware_profiles" / "autotune" / n).exists()]
        m = GEOMEAN.search(para)
        if not names or not m:
            continue
        entries = _entries(names[0])
        speedups = [e["speedup_vs_default"] for e in entries.values() if e.get("speedup_vs_default")]
        mean = math.exp(sum(map(math.log, speedups)) / len(speedups))
        faster = sum(x > 1.05 for x in speedups)
        if m.group(1) != f"{mean:.{len(m.group(1).split('.')[1])}f}" or int(m.group(2)) != faster:
            problems.append(f"`{names[0]}`: '{m.group(0)}', the file gives {mean:.3f}x and {faster}")
        other = OTHER.search(para)
        if other:
            h100 = _entries("sm_90.json")
            n = sum(e["config"] != h100[k]["config"] for k, e in entries.items() if k in h100)
            if int(other.group(1)) != n or int(other.group(2)) != len(entries):
                problems.append(f"`{names[0]}`: '{other.group(0)}', the files give {n} of {len(entries)}")
    return problems


def gate_problems(text: str) -> list[str]:
    """validation.md's H100 winners judged by the H200's timings: as the gate (suite/checks/autotune.py) finds."""
    from suite.checks import autotune

    problems = []
    for m in GATE.finditer(text):
        caches = ROOT / "hardware_profiles" / "autotune"
        h100 = autotune.load(caches / "sm_90.json", "sm_90")
        h200 = autotune.load(caches / "sm_90.h200_sxm.json", "sm_90", "h200_sxm")
        records = autotune.gate_records(h100, h200.entries.values())
        losing = sorted((g for g in records if g["loses"] and g["loss"]), key=lambda g: g["loss"])
        worst = losing[-1]
        found = (len(records), len(losing), f"{losing[0]['loss']:.2f}", f"{worst['loss']:.2f}", worst["kernel"],
                 worst["dtype"], *(str(v) for v in worst["shape"].values()), f"{worst['cached_ms']:.4f}",
                 f"{worst['best_ms']:.4f}")
        said = (int(m.group(1)), int(m.group(2)), *m.groups()[2:])
        if said != found:
            problems.append(f"'{' '.join(m.group(0).split())}': the gate gives {found}")
    return problems


@pytest.mark.parametrize("page", [ROOT / "docs" / "autotuning.md", ROOT / "docs" / "validation.md"],
                         ids=["docs/autotuning.md", "docs/validation.md"])
def test_the_caches_figures_are_the_files(page):
    text = page.read_text()
    problems = cache_stat_problems(text) + gate_problems(text)
    assert not problems, f"{page.relative_to(ROOT)}: " + "; ".join(problems)
    assert GEOMEAN.search(text) or GATE.search(text), f"{page.relative_to(ROOT)}: the checked figures are gone"


def test_a_cache_statistic_that_drifted_fails():
    """Planted: docs/autotuning.md's figures as they read before the retunes of 2026-11-26 and before fp8's of
    2026-11-27 night (the messages give the files' figures after them)."""
    assert cache_stat_problems("The shipped `sm_90.json`: geometric mean 1.140x over the 124 entries, 54 more than 5% "
                               "faster.") == ["`sm_90.json`: 'geometric mean 1.140x over the 124 entries, 54 more than 5% "
                                              "faster', the file gives 1.139x and 54"]
    assert cache_stat_problems("`sm_90.h200_sxm.json`: geometric mean 1.163x over the family default, 59 more than 5% "
                               "faster; 77 of the 124 chose another config than the H100") == [
        "`sm_90.h200_sxm.json`: '77 of the 124 chose another config than the H100', the files give 71 of 124"]
    assert gate_problems("The H100's 124 winners judged by the H200's timings of every config: 9 lose there by "
                         "1.05-1.13x (gelu bf16 16384 x 16384 the most: 0.2904 ms against 0.2573 ms)")[0].startswith(
        "'The H100's 124 winners judged by the H200's timings of every config: 9 lose")


# docs/reports.md reads the example report (reports/example/, rebuilt from evidence/reference/ and kept current by
# tests/reports/test_committed_runs.py): the pairs slower than torch it names are those of the report's summary.json.
SLOWER = re.compile(r"which (\d+) kernel x platform pairs are slower than\s+torch at their largest benchmark shape "
                    r"\(([^)]*)\)")


def slower_problems(text: str, summary: dict) -> list[str]:
    slower = summary["verdict"]["slower_than_torch"]
    speedups = {(s["kernel"], "H100" if "H100" in s["platform"] else "H200"): s["speedup"] for s in slower}
    problems = []
    for m in SLOWER.finditer(text):
        if int(m.group(1)) != len(slower):
            problems.append(f"'{m.group(1)} kernel x platform pairs': the example report has {len(slower)}")
        for part in re.split(r",\s+", m.group(2)):
            kernels = ["vector_add", "vector_add_int64"] if part.startswith("the two vector adds") else part.split()[:1]
            figures = re.findall(r"([\d.]+)x(?: on the (H100|H200))?", part)
            for n, (figure, platform) in enumerate(figures):
                platform = platform or ("H100", "H200")[n]
                for kernel in kernels:
                    actual = speedups.get((kernel, platform))
                    decimals = len(figure.split(".")[1])
                    if actual is None or round(actual, decimals) != float(figure):
                        problems.append(f"'{' '.join(part.split())}': {kernel} on the {platform} is "
                                        + (f"{actual:.{decimals}f}x" if actual else "not slower than torch")
                                        + " in the example report")
    return problems


def test_the_example_reports_figures_are_the_reports():
    import json

    text = (ROOT / "docs" / "reports.md").read_text()
    summary = json.loads((ROOT / "reports" / "example" / "summary.json").read_text())
    assert SLOWER.search(text), "docs/reports.md: the sentence naming the pairs slower than torch is gone"
    problems = slower_problems(text, summary)
    assert not problems, "docs/reports.md: " + "; ".join(problems)


def test_a_stale_example_report_figure_fails():
    summary = {"verdict": {"slower_than_torch": [
        {"kernel": "attention", "platform": "NVIDIA H100 80GB HBM3 (sm_90)", "speedup": 0.7496},
        {"kernel": "attention", "platform": "NVIDIA H200 (sm_90)", "speedup": 0.7666}]}}
    assert slower_problems("which 2 kernel x platform pairs are slower than torch at their largest benchmark shape "
                           "(attention 0.75x and 0.77x)", summary) == []
    assert slower_problems("which 3 kernel x platform pairs are slower than torch at their largest benchmark shape "
                           "(attention 0.73x and 0.77x, matmul 0.99x on the H200)", summary) == [
        "'3 kernel x platform pairs': the example report has 2",
        "'attention 0.73x and 0.77x': attention on the H100 is 0.75x in the example report",
        "'matmul 0.99x on the H200': matmul on the H200 is not slower than torch in the example report"]


# --- 2. Quoted outputs -------------------------------------------------------------------------------------------------

EXAMPLE = ROOT / "examples" / "leaky_relu.py"
ALLOC = '''

def leaky_relu_alloc(x: torch.Tensor, config: dict | None = None) -> torch.Tensor:
    out = torch.empty_like(x)
    leaky_relu(x, out, SLOPE, config)
    return out
'''
# name -> (what is replaced in examples/leaky_relu.py, by what), and whether the interpreter's memory check is on
PLANTS: dict[str, tuple[list[tuple[str, str]], bool]] = {
    "fp16-after-where": ([("y = tl.where(x >= 0, x, x * slope)", "y = tl.where(x >= 0, x, x * slope).to(tl.float16)")],
                         True),
    "fp16-store": ([("y.to(out_ptr.dtype.element_ty)", "y.to(tl.float16).to(out_ptr.dtype.element_ty)")], True),
    "grid-floor": ([('(triton.cdiv(x.numel(), meta["BLOCK"]),)', '(x.numel() // meta["BLOCK"],)')], True),
    "mask-le": ([("mask = offs < n", "mask = offs <= n")], True),
    "store-unmasked": ([("y.to(out_ptr.dtype.element_ty), mask=mask)", "y.to(out_ptr.dtype.element_ty))")], False),
    "alloc-launcher": ([("\n\ndef make_inputs", ALLOC + "\n\ndef make_inputs"),
                        ('run=lambda inp, out, cfg: leaky_relu(inp["x"], out["out"], SLOPE, cfg)',
                         'run=lambda inp, out, cfg: out["out"].copy_(leaky_relu_alloc(inp["x"], cfg))')], True),
}
MARKED = re.compile(r"^" + re.escape(CHECKED) + r"((?: \((?:plant|run|fixture): [\w-]+\))+) -->\n```[^\n]*\n(.*?)^```",
                    re.S | re.M)
CASE_LINE = re.compile(r"^(\w+)\[(\w+)\] (\{[^}]*\}) (\w+) (\w+) seed=(\d+)$")


def marked_blocks(text: str) -> list[tuple[str, str, str]]:
    """(plant|run, name, the block's text) of every block the page marks as checked here."""
    return [(kind, name, block) for marks, block in MARKED.findall(text)
            for kind, name in re.findall(r"\((plant|run|fixture): ([\w-]+)\)", marks)]


def quote_matches(actual: str, quoted: str) -> bool:
    return re.fullmatch(".*?".join(re.escape(part) for part in quoted.split("...")), actual, re.S) is not None


def quoted_cases(block: str) -> list[tuple[str, str, str, str]]:
    """(kernel, dtype, case text for --repro, the quoted message) of each case a block quotes."""
    import json

    lines = block.splitlines()
    found = []
    for i, line in enumerate(lines[:-1]):
        m = CASE_LINE.match(line)
        if m:
            shape = ",".join(f"{k}={v}" for k, v in json.loads(m.group(3)).items())
            message = []  # up to its reproduction line, the next case or a section of pytest's
            for follow in lines[i + 1:]:
                if follow.startswith(("reproduce with:", "___", "===")) or CASE_LINE.match(follow):
                    break
                message.append(follow)
            found.append((m.group(1), m.group(2), f"{shape};layout={m.group(4)};values={m.group(5)};seed={m.group(6)}",
                          "\n".join(message)))
    return found


def example_spec(path: Path, monkeypatch):
    """The spec a copy of an example registers, in a registry of its own (the copy registers 'leaky_relu' again)."""
    import runpy

    from kernels import registry

    monkeypatch.setattr(registry, "_REGISTRY", {})
    monkeypatch.setattr(registry, "_WHERE", {})
    return runpy.run_path(str(path))["SPEC"]


def planted_message(plant: str, dtype: str, case_text: str, tmp_path: Path, monkeypatch) -> str:
    """The message of one case of examples/leaky_relu.py with PLANTS[plant] planted, on the interpreter."""
    from kernels.spec import Case
    from suite.checks import interpreter, launches, memcheck
    from suite.checks.harness import run_case
    from suite.session.backend import resolve

    edits, memory_checked = PLANTS[plant]
    source = EXAMPLE.read_text()
    for old, new in edits:
        assert source.count(old) == 1, f"plant {plant}: {old!r} is not in {EXAMPLE.name} once; update PLANTS"
        source = source.replace(old, new)
    path = tmp_path / f"leaky_relu_{plant.replace('-', '_')}.py"
    path.write_text(source)
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    interpreter.install()
    launches.install()
    checker = memcheck.install()
    if not memory_checked:  # as with --no-memcheck
        monkeypatch.setattr(checker, "check", lambda *args, **kwargs: None)
    spec = example_spec(path, monkeypatch)
    result = run_case(spec, Case.parse(spec.name, dtype, case_text), resolve("interpret"),
                      spec.default_config_for("interpret"))
    assert not result.passed, f"plant {plant}: {dtype} {case_text} passed"
    return result.message()


QUOTED = [(page, kind, name, block) for page in PAGES for kind, name, block in marked_blocks(page.read_text())]


@pytest.mark.parametrize("page,plant,block", [(p, n, b) for p, k, n, b in QUOTED if k == "plant"],
                         ids=[f"{p.relative_to(ROOT)}-{n}" for p, k, n, _ in QUOTED if k == "plant"])
def test_quoted_failures_are_what_the_planted_bug_prints(page, plant, block, tmp_path, monkeypatch):
    assert plant in PLANTS, f"{page.relative_to(ROOT)}: no plant {plant!r}; the plants: {', '.join(PLANTS)}"
    cases = quoted_cases(block)
    assert cases, f"{page.relative_to(ROOT)}: the block of plant {plant} quotes no case line"
    for kernel, dtype, case_text, quoted in cases:
        assert kernel == "leaky_relu", f"{page.relative_to(ROOT)}: plant {plant} quotes kernel {kernel}"
        actual = planted_message(plant, dtype, case_text, tmp_path, monkeypatch)
        assert quote_matches(actual, quoted), (f"{page.relative_to(ROOT)}, plant {plant}, {dtype} {case_text}:\n"
                                               f"quoted: {quoted}\nprinted: {actual}")


FIXTURE = ROOT / "tests" / "fixtures" / "bring_your_own.py"


@pytest.mark.parametrize("page,name,block", [(p, n, b) for p, k, n, b in QUOTED if k == "fixture"],
                         ids=[f"{p.relative_to(ROOT)}-{n}" for p, k, n, _ in QUOTED if k == "fixture"])
def test_quoted_fixture_failures_are_what_the_fixture_prints(page, name, block, monkeypatch):
    """A block marked `(fixture: NAME)` quotes the failure of the spec NAME of tests/fixtures/bring_your_own.py, on a
    small case of its first dtype, layout and value class."""
    import runpy

    from kernels import registry
    from kernels.spec import Case
    from suite.checks import interpreter, launches, memcheck
    from suite.checks.harness import run_case
    from suite.session.backend import resolve

    monkeypatch.setenv("TRITON_INTERPRET", "1")
    interpreter.install()
    launches.install()
    memcheck.install()
    monkeypatch.setattr(registry, "_REGISTRY", {})
    monkeypatch.setattr(registry, "_WHERE", {})
    runpy.run_path(str(FIXTURE))
    assert name in registry._REGISTRY, f"{page.relative_to(ROOT)}: {FIXTURE.name} registers no {name}"
    spec = registry._REGISTRY[name]
    shape = ",".join(f"{d.name}={max(d.min, 8)}" for d in spec.dims)
    case = Case.parse(name, spec.dtypes[0], f"{shape};layout={spec.layouts[0]};values={spec.value_classes[0]};seed=0")
    result = run_case(spec, case, resolve("interpret"), spec.default_config_for("interpret"))
    quoted = block.strip()
    assert not result.passed and quote_matches(result.message(), quoted), (
        f"{page.relative_to(ROOT)}, {name}:\nquoted: {quoted}\nprinted: {result.message()}")


def run_problems(block: str, selected: int, deselected: int, targets: list[str], dtypes: tuple[str, ...],
                 cases: int = 0) -> list[str]:
    """What a quoted run of examples/leaky_relu.py says that the code does not: its test counts, targets, dtypes,
    and the ``cases`` a dtype that failed none of them ran (the profile's examples and the spec's own)."""
    problems = []
    for m in re.finditer(r"VERDICT: \w+: \d+ of (\d+) tests", block):
        if int(m.group(1)) != selected:
            problems.append(f"'{m.group(0)}': the command runs {selected} tests")
    last = re.search(r"^=+ (.*\bin [\d.]+s) =+$", block, re.M)
    if last:
        said = dict((k, int(n)) for n, k in re.findall(r"(\d+) (passed|failed|skipped|deselected|xfailed)",
                                                       last.group(1)))
        ran = sum(n for k, n in said.items() if k != "deselected")
        if ran != selected or said.get("deselected", deselected) != deselected:  # xdist's summary omits it
            problems.append(f"'{last.group(1)}': the command selects {selected} tests and deselects {deselected}")
    quoted_targets = sorted(set(re.findall(r"^\| leaky_relu \| ((?:sm|gfx)_?\w+) ", block, re.M)))
    if quoted_targets and quoted_targets != sorted(targets):
        problems.append(f"compile matrix targets {quoted_targets}: the code's are {sorted(targets)}")
    quoted_dtypes = set(re.findall(r"^\| leaky_relu \| (fp\w+|bf\w+) +\| \d", block, re.M))
    if quoted_dtypes - set(dtypes):
        problems.append(f"dtypes {sorted(quoted_dtypes)}: the spec's are {list(dtypes)}")
    for dtype, passed in re.findall(r"^\| leaky_relu \| (\w+) +\| (\d+) +\| 0 +\| 0 +\| [\d.]+ +\|$", block, re.M):
        if cases and int(passed) != cases:
            problems.append(f"leaky_relu {dtype}: {passed} cases passed, none failed: the profile runs {cases}")
    return problems


RUNS = {"leaky_relu": ("--kernel-module=examples/leaky_relu.py", "--kernels=leaky_relu")}


@pytest.mark.parametrize("page,run,block", [(p, n, b) for p, k, n, b in QUOTED if k == "run"],
                         ids=[f"{p.relative_to(ROOT)}-{n}" for p, k, n, _ in QUOTED if k == "run"])
def test_quoted_runs_have_the_codes_counts(page, run, block, monkeypatch):
    from hardware_profiles import loader

    assert run in RUNS, f"{page.relative_to(ROOT)}: no run {run!r}; the runs: {', '.join(RUNS)}"
    selected, deselected = collected(*RUNS[run])
    from suite.checks.strategies import PROFILES

    spec = example_spec(EXAMPLE, monkeypatch)
    cases = PROFILES["ci"].max_examples + len(spec.examples)  # the quoted runs are of the default profile
    problems = run_problems(block, selected, deselected, [arch for _, arch, _ in loader.targets()], spec.dtypes, cases)
    assert not problems, f"{page.relative_to(ROOT)}, run {run}: " + "; ".join(problems)


SPEC_LINE = re.compile(r"The spec: (\w+) dim `(\w+)` \(up to (\d+) on the interpreter, 2\^(\d+) on a GPU, drawn near its "
                       r"blocks (\d+) and (\d+)\),\s+(\w+)\s+dtypes,\s+(\w+)\s+value\s+classes")


def spec_line_problems(text: str, spec) -> list[str]:
    """The guide's one-line summary of examples/leaky_relu.py's spec, against the spec."""
    m = SPEC_LINE.search(text)
    if m is None:
        return ["the line 'The spec: one dim `N` (up to ... on the interpreter, ...), N dtypes, N value classes' is gone"]
    [dim] = spec.dims if len(spec.dims) == 1 else [None]
    said = (WORDS.get(m.group(1)), m.group(2), int(m.group(3)), 1 << int(m.group(4)), (int(m.group(5)), int(m.group(6))),
            WORDS.get(m.group(7)), WORDS.get(m.group(8)))
    actual = (len(spec.dims), dim and dim.name, dim and dim.interpret_max, dim and dim.gpu_max, dim and tuple(dim.blocks),
              len(spec.dtypes), len(spec.value_classes))
    return [] if said == actual else [f"'{' '.join(m.group(0).split())}': the spec has {actual} (dims, name, "
                                      f"interpret_max, gpu_max, blocks, dtypes, value classes)"]


def test_the_guides_summary_of_the_example_spec_is_the_spec(monkeypatch):
    spec = example_spec(EXAMPLE, monkeypatch)
    problems = spec_line_problems((ROOT / "docs" / "adding-a-kernel.md").read_text(), spec)
    assert not problems, "docs/adding-a-kernel.md: " + "; ".join(problems)
    drifted = "The spec: one dim `N` (up to 4096 on the interpreter, 2^20 on a GPU, drawn near its blocks 128 and " \
              "1024), three dtypes, four value classes"
    assert spec_line_problems(drifted, spec) == [f"'{drifted}': the spec has (1, 'N', 5000, 1048576, (128, 1024), 3, 4) "
                                                 "(dims, name, interpret_max, gpu_max, blocks, dtypes, value classes)"]


def test_the_guide_and_readme_mark_their_quoted_outputs():
    marked = {(p.name, k, n) for p, k, n, _ in QUOTED}
    assert ("README.md", "plant", "fp16-after-where") in marked and ("README.md", "run", "leaky_relu") in marked
    guide = {n for p, k, n in marked if p == "adding-a-kernel.md"}
    assert {"leaky_relu", "fp16-store", "grid-floor", "mask-le", "store-unmasked", "alloc-launcher",
            "broken_libdevice_gap"} <= guide, guide


def test_a_stale_quote_fails():
    """Planted: the guide's 'A wrong value' as it read before the inputs changed; a quoted run with an old count."""
    printed = ("out: error 7.939e-07 at (0,) is 194x the bound 4.089e-09 (got -0.008575439453125, reference "
               "-0.008574645519256591); 1 of 1 elements over")
    assert quote_matches(printed, "out: error 7.939e-07 at (0,) is 194x the bound ...; 1 of 1 elements over")
    assert not quote_matches(printed, "out: error 1.955e-05 at (0,) is 26.6x the bound 7.348e-07 (got 1.541015625, "
                                      "reference 1.5409960746765137); 1 of 1 elements over")
    stale = ("VERDICT: PASSED: 13 of 13 tests passed\n== 13 passed, 7 skipped in 20.1s ==\n| leaky_relu | sm_75  | 6 \n"
             "| leaky_relu | fp32  | 10     | 0      | 0       | 0.17              |\n")
    assert run_problems(stale, 13, 0, ["sm_80"], ("fp32",), 20) == [
        "'13 passed, 7 skipped in 20.1s': the command selects 13 tests and deselects 0",
        "compile matrix targets ['sm_75']: the code's are ['sm_80']",
        "leaky_relu fp32: 10 cases passed, none failed: the profile runs 20"]


# --- 3. Measured figures --------------------------------------------------------------------------------------------

UNIT = re.compile(r"(?<![\w.#/=^-])\d+(?:\.\d+)?(?:(?:-| to )\d+(?:\.\d+)?)?"
                  r"(?:x\b|\s?%|\s?(?:ms|s|us|µs|min|minutes|seconds|GB/s|TB/s)(?![\w/]))")


def unsourced_figures(text: str) -> list[str]:
    """The numbers with a unit of ``text`` outside code blocks whose paragraph (or the one before it) has no date,
    no source and no marker."""
    paras = paragraphs(text)
    return [m.group(0) for i, p in enumerate(paras) if not sourced(paras, i) and not NOT_MEASURED.search(p)
            for m in UNIT.finditer(re.sub(r"<!--.*?-->", "", p))]


@pytest.mark.parametrize("page", PAGES, ids=IDS)
def test_measured_figures_carry_a_date_or_source(page):
    bare = unsourced_figures(page.read_text())
    assert not bare, (f"{page.relative_to(ROOT)}: {bare}: give each its date and source (an evidence/ path or run "
                      f"file), or mark the paragraph '<!-- not measured: why -->' if they are settings")


def test_checked_markers_name_tests_that_exist():
    named = {m for page in PAGES for m in re.findall(r"<!-- checked by (tests/[\w/]+\.py)", page.read_text())}
    assert "tests/project/test_doc_figures.py" in named
    assert all((ROOT / m).is_file() for m in named), sorted(m for m in named if not (ROOT / m).is_file())


def test_a_bare_measured_figure_fails():
    assert unsourced_figures("The run took 42.4 s and was 1.08-1.17x faster, 94% busy.\n") == ["42.4 s", "1.08-1.17x",
                                                                                               "94%"]
    assert unsourced_figures("On 2026-11-24 the run took 42.4 s.\n") == []
    assert unsourced_figures("The run took 42.4 s ([log](../evidence/gpu-speed/x.log)).\n") == []
    assert unsourced_figures("Measured 2026-11-24:\n\n| a | 3.1x |\n") == []
    assert unsourced_figures("Default 300 s.\n<!-- not measured: defaults -->\n") == []
    assert unsourced_figures("```\ntook 9 s\n```\nsm_90 and 16 x 262144 and fp8e4nv\n") == []


# --- 4. Install commands ------------------------------------------------------------------------------------------------

PIP = re.compile(r"pip install ([^\n`#;&|)]+)")


def install_problems(text: str, root: Path = ROOT) -> list[str]:
    pyproject = (root / "pyproject.toml").read_text()  # read by pattern: tomllib is Python 3.11+
    name = re.search(r'^\[project\]\n(?:.*\n)*?name = "([^"]+)"', pyproject, re.M).group(1)
    section = re.search(r"^\[project\.optional-dependencies\]\n(.*?)(?=^\[|\Z)", pyproject, re.M | re.S)
    extras = set(re.findall(r"^([\w-]+) = \[", section.group(1), re.M)) if section else set()
    pinned = "\n".join(p.read_text() for p in [*(root / "requirements").glob("*.txt"), root / ".ci" / "run"])
    problems = []
    for m in PIP.finditer(text):
        args = [a.strip("\"'") for a in m.group(1).split()]
        said = f"pip install {m.group(1).strip()}"
        for i, arg in enumerate(args):
            if "<" in arg or (">" in arg and "=" not in arg):
                problems.append(f"'{said}': '{arg}' is a placeholder, not something pip takes")
                break
            elif args[i - 1:i] == ["-r"]:
                if not (root / arg).is_file():
                    problems.append(f"'{said}': no requirements file {arg}")
            elif arg.startswith("-") or arg == "@":
                continue
            elif extra := re.search(r"\[([\w,-]+)\]$", arg):
                missing = set(extra.group(1).split(",")) - extras
                if missing:
                    problems.append(f"'{said}': pyproject.toml declares no extra {sorted(missing)} "
                                    f"(its extras: {sorted(extras)})")
            elif args[i + 1:i + 2] == ["@"] and arg != name:
                problems.append(f"'{said}': the distribution is {name}, not {arg}")
            elif "==" in arg and arg not in pinned:
                problems.append(f"'{said}': {arg} is pinned nowhere in requirements/ or .ci/run")
    return problems


@pytest.mark.parametrize("page", PAGES, ids=IDS)
def test_install_commands_name_what_exists(page):
    problems = install_problems(page.read_text())
    assert not problems, f"{page.relative_to(ROOT)}: " + "; ".join(problems)


def test_a_wrong_install_command_fails():
    text = ('pip install "git+<this repository\'s URL>"\npip install "./clone[plots]"\n'
            "pip install -r requirements/cpu.txt\npip install --no-deps liger-kernel==0.8.4\n"
            'pip install "triton-suite @ git+https://example.org/x.git"\n')
    assert install_problems(text) == [
        "'pip install \"git+<this repository's URL>\"': 'git+<this' is a placeholder, not something pip takes",
        "'pip install \"./clone[plots]\"': pyproject.toml declares no extra ['plots'] (its extras: ['dev', 'reports'])",
        "'pip install -r requirements/cpu.txt': no requirements file requirements/cpu.txt",
        "'pip install --no-deps liger-kernel==0.8.4': liger-kernel==0.8.4 is pinned nowhere in requirements/ or .ci/run",
        "'pip install \"triton-suite @ git+https://example.org/x.git\"': the distribution is triton-portability-suite, "
        "not triton-suite"]
    assert install_problems('pip install "./triton-portability-suite[reports]"\npip install -r requirements/ci.txt\n'
                            "pip install --no-deps liger-kernel==0.8.5\n") == []
