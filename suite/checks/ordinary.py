"""What an ordinary failure of a kernel says: the messages a known issue's failure_pattern must not be found in.

A known issue covers the failures its failure_pattern is found in. A pattern found in an ordinary wrong value of its
kernel ('.'; the kernel's own name, since every message begins with the case line; 'reproduce with'; an error over
the bound) would take any wrong result of the kernel, an error of 50%, for the bug it describes. So would one found
in text of no failure in particular ('(?s).{1000}': any long message). Such an entry is refused when the known issues
are loaded (suite/plugin/context.py): a usage error naming the file or the module, the entry, and where the pattern
was found. The messages are written by the code that writes real ones (the case line, the tolerance's words, the
reproduction line with this run's options, the shrinking and heuristics notes), over every layout, value class,
output and dtype the entry names.
"""

from __future__ import annotations

import dataclasses
import fnmatch
import itertools
import json
import os
import re
import shlex
import string
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from kernels.spec import BACKENDS, Case
from suite.checks import launches
from suite.checks.caseloop import Rate, ShrinkBudget, intermittent_text
from suite.checks.tolerance import _FP64_HINT, _MAGNITUDE_HINT, over_bound
from suite.session import known_issues as known_mod
from suite.session import options

# Figures of an error over its bound (error, where, ratio, bound, got, reference, elements over, elements): outputs of
# one to four dims, and errors, bounds and values from fp32's subnormals to its largest: a pattern of figures
# describes a range of them, not a bug.
FIGURES = ((0.03717, (5,), 5.19, 0.007162, 0.47119998931884766, 0.5083636455237865, 7, 4096),
           (24.06, (2, 31), 1.27e5, 1.895e-4, -17.125, 6.93359375, 96, 96),
           (3.0, (0, 3, 7), 312.0, 0.009613, -4.0, -1.0, 1, 1),
           (6.1e-39, (1, 0, 2, 9), 1.07, 5.7e-39, 1.1754942e-38, 5.3e-39, 12345, 1048576),
           (2.5e33, (4095,), 4.5e12, 5.6e20, -3.4e38, -3.3999999999999997e38, 2, 65536),
           (9.8e-08, (63, 0), 1.8, 5.4e-08, 2.2e-07, 1.2e-07, 640, 65536),
           (1.4e-45, (0,), 2.0, 7.0e-46, 1.4e-45, 0.0, 3, 3),
           (8388608.0, (0, 0), 64.5, 130046.0, 16777216.0, 8388608.0, 1, 4),
           # and every power of ten between, each sign
           *((3.1 * 10.0**e, ((e + 50) % 97,) + (3,) * (e % 4), 1.3 * 10.0**(e % 13), 1.7 * 10.0**(e - 1),
              (-1)**e * 4.2 * 10.0**e, (-1)**(e + 1) * 1.1 * 10.0**e, 1 + e % 7, 4096) for e in range(-45, 39)))
# The ways a run is started, as its reproduction lines begin.
LAUNCHERS = (["pytest"], [".venv/bin/python", "-m", "pytest"], ["triton-portability"])
TEST_FILES = {"test_matches_reference": "suite/test_kernels.py", "test_properties": "suite/test_properties.py",
              "test_benchmark": "suite/test_benchmarks.py"}
FAMILY = {"interpret": "interpret", "cuda": "nvidia", "rocm": "amd"}
# Every printable character, in order, forty times, then each once between line breaks: a pattern found in it says
# nothing of what fails.
ANY_TEXT = "".join(c for c in string.printable if not c.isspace()) * 40 + "\n" + "\n".join(string.printable)
SAY_WHAT_FAILS = ("give what this bug's failure says and a wrong value's does not (e.g. 'NaN where the reference is "
                  "not', 'on the interpreter this kernel did bf16 arithmetic', a property's name)")


def _default_options() -> options.Options:
    return options.Options(backend="auto", results_dir=Path("runs"), write_results=False, repro=None, config=None,
                           kernel_modules=(), kernels=None, known_issues=known_mod.DEFAULT_PATH, retune=None,
                           autotune_dir=None, case_timeout=options.DEFAULT_CASE_TIMEOUT_S, case_timeout_given=False,
                           hypothesis_db=None)


def messages(spec: Any, dtypes: list[str], backends: list[str], opts: options.Options | None = None,
             module: str = "") -> Iterator[str]:
    """The messages of ordinary wrong values of ``spec``: each output over its bound, in each dtype and backend of
    ``dtypes`` and ``backends``, each layout and value class, as the reference test and a property say it, with and
    without what every failure of the kernel may carry (a non-default config, a split test's part,
    @triton.heuristics, --repro-runs, shrinking out of time, a tolerance hint), and a launch that raised.
    ``opts``: this run's options (its reproduction lines carry some); ``module``: the module that registered the
    kernel."""
    opts = opts or _default_options()
    if module and not module.startswith("kernels/") and module not in opts.kernel_modules:
        opts = dataclasses.replace(opts, kernel_modules=(*opts.kernel_modules, module))
    shape = {d.name: min(d.choices) if d.choices else max(d.min, 1) for d in spec.dims}
    pairs = list(itertools.product(dtypes, backends))
    outputs = spec.outputs or ("out",)
    this_run = shlex.split(os.environ.get(options.LAUNCHER_ENV, ""))
    launchers = [this_run, *LAUNCHERS] if this_run else list(LAUNCHERS)

    def line(case: Case, backend: str, nodeid: str, launcher: list[str], config: list[str] = ()) -> str:
        ctx = type("Ctx", (), {"options": opts, "backend": type("B", (), {"name": backend})})()
        prefix = options.repro_prefix(ctx, nodeid, launcher)
        return " ".join(shlex.quote(p) for p in [*prefix, *config, f"--repro={case.spec_string()}"])

    def plain(k: int, output: str, figures: tuple) -> str:  # the k-th dtype and backend, plain
        dtype, backend = pairs[k % len(pairs)]
        case = Case(kernel=spec.name, dtype=dtype, shape=shape, layout="contiguous", values="normal", seed=k)
        reference = f"suite/test_kernels.py::test_matches_reference[{spec.name}-{dtype}]"
        return (f"{case}\n{output}: {over_bound(*figures)}\nreproduce with: "
                f"{line(case, backend, reference, launchers[k % len(launchers)])}")

    for k in range(len(pairs)):  # every dtype and backend
        yield plain(k, outputs[0], FIGURES[0])
    for k, (output, figures) in enumerate(itertools.product(outputs, FIGURES[2:])):  # every figure
        yield plain(k, output, figures)
    # Each problem on its own, as a known issue's pattern is matched against it (harness.CaseResult.problems: an
    # output's error over its bound, its hints, or the case's one error): an anchored pattern (r'\Aout: ', 'over$')
    # is found in no whole message and in every one of these.
    for output, figures in itertools.product(outputs, FIGURES):
        for hint in ("", _MAGNITUDE_HINT, _FP64_HINT):
            yield f"{output}: {over_bound(*figures)}{hint}"
    yield "RuntimeError: the launch failed"
    # A property's failure on its own, as the hook matches it (suite/session/known_issues.py: problems_of): its first
    # line and its detail, without the reproduction line ('values\Z' would be found at its end alone).
    for k, (output, figures) in enumerate(itertools.product(outputs, FIGURES[:2])):
        dtype, backend = pairs[k % len(pairs)]
        case = Case(kernel=spec.name, dtype=dtype, shape=shape, layout="contiguous", values="normal", seed=k)
        yield f"property 'any_property' does not hold for {case}\n{output}: {over_bound(*figures)}"
        yield f"{case} (checking 'any_property'): RuntimeError: the launch failed"
    combos = itertools.product(spec.layouts or ("contiguous",), spec.value_classes or ("normal",), outputs)
    for n, (layout, values, output) in enumerate(combos):  # every layout, value class and test, with the notes
        dtype, backend = pairs[n % len(pairs)]
        family = FAMILY.get(backend, "interpret")
        other = {**spec.default_config_for(family), "num_warps": 3}  # no default config has 3 warps
        case = Case(kernel=spec.name, dtype=dtype, shape=shape, layout=layout, values=values, seed=n)
        for m, figures in enumerate(FIGURES[:2]):
            detail = f"{output}: {over_bound(*figures)}" + (_MAGNITUDE_HINT if m else _FP64_HINT if n == 0 else "")
            for test, path in TEST_FILES.items():
                nodeid = f"{path}::{test}[{spec.name}-{dtype}{'-part2of3' if m else ''}]"
                config = options.config_args(spec, other, family) if m else []
                repro = line(case, backend, nodeid, launchers[(n + m) % len(launchers)], config)
                what = f"property 'any_property' does not hold for {case}" if test == "test_properties" else str(case)
                if not m:
                    yield f"{what}\n{detail}\nreproduce with: {repro}"
                    continue
                shrink = ShrinkBudget(-1.0)
                shrink.failed(case, other, f"{repro} --repro-runs=3")
                notes = launches.heuristics_line({f"{spec.name}_kernel": {"BLOCK_SIZE": 64}})
                yield f"{what}\n{detail}{notes}\n({Rate(3, 3).text()})\nreproduce with: {repro}{shrink.note(repro)}"
                yield intermittent_text(what, Rate(2, 21), other, detail, repro)
                yield (f"{what}\nwith config {json.dumps(other, sort_keys=True)}: RuntimeError: the launch failed"
                       f"{notes}\nreproduce with: {repro}")


def beside(problem: str) -> Iterator[str]:
    """Ordinary wrong values of ``problem``'s own case: its first line (the case, or a property's line naming it)
    with each output's error over its bound (``problem``'s output, figures from FIGURES) and a launch that raised. A
    known issue's pattern found in one of these describes the case (a dim past its smallest, a seed), not the
    problem: it would excuse any wrong value there (suite/session/known_issues.py: KnownIssue.describes)."""
    head, _, body = problem.partition("\n")
    # A property's first line names the property, then the case: what the property says is the problem, not the case
    # (a pattern naming the property describes it), so the ordinary messages beside it carry the case alone.
    head = re.sub(r"^property '[^']*' does not hold for ", "", head)
    head = re.sub(r" \(checking '[^']*'\): .*$", "", head)  # a property's run that failed: the case, then the problem
    output = body.split(": ", 1)[0] if ": " in body.split("\n", 1)[0] else "out"
    yield f"{head}\nRuntimeError: the launch failed"
    for figures in FIGURES:
        yield f"{head}\n{output}: {over_bound(*figures)}"
    for hint in (_MAGNITUDE_HINT, _FP64_HINT):
        yield f"{head}\n{output}: {over_bound(*FIGURES[0])}{hint}"


def too_broad(pattern: str, specs: list, kernel: str, dtype: str, backend: str, opts: options.Options | None = None,
              where: dict[str, str] | None = None) -> str | None:
    """Why ``pattern`` would cover any wrong result of a kernel its entry names (``kernel``, ``dtype`` and
    ``backend``: the entry's globs), or any message at all; None where it says something only a failure of its own
    says. ``where``: kernel name -> the module that registered it."""
    if not pattern:
        return None  # '' is refused as matching every failure, where the entry is read
    compiled = re.compile(pattern)
    for spec in specs:
        if not fnmatch.fnmatchcase(spec.name, kernel):
            continue
        dtypes = fnmatch.filter(spec.dtypes, dtype) or list(spec.dtypes[:1])
        backends = fnmatch.filter(BACKENDS, backend) or list(BACKENDS[:1])
        for message in messages(spec, dtypes, backends, opts, (where or {}).get(spec.name, "")):
            if found := compiled.search(message):
                return (f"{pattern!r} is found in an ordinary wrong-value message of kernel {spec.name!r} (at "
                        f"{found.group(0)[:40]!r} in {_line_of(message, found.start())!r}), so it would take any "
                        f"wrong result of the kernel for this bug: {SAY_WHAT_FAILS}")
    if found := compiled.search(ANY_TEXT):
        return (f"{pattern!r} is found in text of no failure in particular (at {found.group(0)[:40]!r} in a run of "
                f"every printable character), so it would take a message of any other failure for this bug: "
                f"{SAY_WHAT_FAILS}")
    return None


def _line_of(message: str, at: int) -> str:
    """The line of ``message`` that holds position ``at``, cut to 100 characters around it."""
    start = message.rfind("\n", 0, at) + 1
    end = message.find("\n", at)
    line = message[start:end if end >= 0 else None]
    at -= start
    if len(line) <= 100:
        return line
    return ("..." if at > 50 else "") + line[max(0, at - 50):at + 50] + ("..." if at + 50 < len(line) else "")


def check_file(issues: list[known_mod.KnownIssue], path: Path | str, specs: list, opts: options.Options | None = None,
               where: dict[str, str] | None = None) -> None:
    """No entry of the known-issue file is found in an ordinary wrong value of a registered kernel it names
    (KnownIssueError naming the file and the entry)."""
    for i, issue in enumerate(issues):
        if problem := too_broad(issue.failure_pattern, specs, issue.kernel, issue.dtype, issue.backend, opts, where):
            raise known_mod.KnownIssueError(f"{path}: known_issues[{i}] ({issue.id!r}): field 'failure_pattern' "
                                            f"{problem}")


def check_modules(specs: list, opts: options.Options | None = None, where: dict[str, str] | None = None) -> None:
    """No known issue a kernel module declares is found in an ordinary wrong value of its kernel (KnownIssueError
    naming the module, the kernel and the entry)."""
    for spec in specs:
        for i, issue in enumerate(spec.known_issues):
            if problem := too_broad(issue.failure_pattern, [spec], spec.name, issue.dtype, issue.backend, opts, where):
                raise known_mod.KnownIssueError(f"{(where or {}).get(spec.name, spec.name)}: kernel {spec.name!r} "
                                                f"known_issues[{i}] ({issue.id!r}): failure_pattern {problem}")
