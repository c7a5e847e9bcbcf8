"""Command line: `python -m reports build RUN.json ... --out DIR`, `python -m reports compare BASE CAND`,
`python -m reports noise-floor RUN.json ... --out FILE`, `python -m reports replay DIR` and
`python -m reports history DIR|RUN.json ...`.

Exit codes: 0 fine; 1 the comparison found a regression (replay: an expectation failed); 2 bad input, a refused
comparison or one with nothing to compare (the message names the file and what is wrong); build and history write
their output from the usable files and exit 2 when they left one out.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import traceback
from pathlib import Path

import reports
from reports import loading
from reports.files import refuse_inputs, write_atomic
from reports.loading import RunFileError, load_runs
from reports.render import visible
from reports.shards import merge_shards

EXIT_OK, EXIT_REGRESSION, EXIT_USAGE = 0, 1, 2


def _number(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if value != value or value in (float("inf"), float("-inf")):
        raise argparse.ArgumentTypeError(f"not a finite number: {text!r}")
    return value


def _p_value(text: str) -> float:
    value = _number(text)
    if not 0 < value <= 1:
        raise argparse.ArgumentTypeError(f"a p-value lies in (0, 1], got {text}")
    return value


def _window(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number of nights: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"a window is at least 1 night, got {text}")
    return value


def _threshold(text: str) -> float:
    value = _number(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"a relative change threshold is >= 0 (0.05 = 5%), got {text}")
    return value


MERGE_HELP = ("shard files of one backend and arch under different run ids (--shard=I/N run without --run-id) that "
              "together make every shard once: merge them as one run")


class UsageError(SystemExit):
    """A command line argparse rejects (exit 2, as argparse exits), caught by main so that `compare --json` still
    prints JSON."""

    def __init__(self, message: str) -> None:
        super().__init__(EXIT_USAGE)
        self.message = message


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        self.print_usage(sys.stderr)
        print(f"{self.prog}: error: {message}", file=sys.stderr)
        raise UsageError(message)


def parser(prog: str | None = None) -> argparse.ArgumentParser:
    """``prog``: the command as typed (reports.command(): ``.venv/bin/python -m reports`` where that started it,
    ``python -m triton_portability.reports`` from an installed copy), in the usage, the errors and the description."""
    prog = prog or reports.command()
    p = _Parser(prog=prog, description=__doc__.replace("python -m reports", prog),
                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--debug", action="store_true", help="show the traceback of an internal error")
    sub = p.add_subparsers(dest="command", required=True)
    b = sub.add_parser("build", help="portability report from run files: report.md, report.html, summary.json")
    b.add_argument("runs", nargs="*", metavar="RUN.json")
    b.add_argument("--out", required=True, metavar="DIR", help="directory for the three files (created if missing)")
    b.add_argument("--history", action="append", default=[], metavar="DIR|RUN.json",
                   help="also a section with the nightly history of these earlier run files (repeatable; see history)")
    b.add_argument("--window", type=_window, default=30, help="history: the last N nights per platform (default 30)")
    b.add_argument("--merge-shards", action="store_true", help=MERGE_HELP)
    b.add_argument("--keep-superseded", action="store_true",
                   help="add up the results of every version of a changed --kernel-module (by default a module is "
                        "shown as its newest run tested it, and older runs of other code are named and left out)")
    c = sub.add_parser("compare", help="regressions between a base run and a candidate run of the same test set")
    c.add_argument("runs", nargs="*", metavar="RUN.json", help="BASE.json CAND.json")
    c.add_argument("--p-value", type=_p_value, default=0.01, help="Mann-Whitney U significance level (default 0.01)")
    c.add_argument("--threshold", type=_threshold, default=0.05,
                   help="smallest relative change of the median that counts (default 0.05 = 5%%)")
    c.add_argument("--allow-different-hardware", action="store_true")
    c.add_argument("--merge-shards", action="store_true", help=MERGE_HELP)
    c.add_argument("--allow-different-tests", action="store_true")
    c.add_argument("--out", metavar="FILE.md", help="also write the Markdown here (never over an input)")
    c.add_argument("--json", action="store_true", help="print the comparison as JSON (for scripts) instead of Markdown")
    floor = c.add_mutually_exclusive_group()
    floor.add_argument("--noise-floor", metavar="FILE.json",
                       help="noise floors to use instead of those recorded in the run files")
    floor.add_argument("--no-noise-floor", action="store_true", help="ignore recorded noise floors: the threshold alone")
    n = sub.add_parser("noise-floor", help="learn per-benchmark noise floors from A/A runs (identical software, one "
                                           "machine) for reports/noise/<arch>.json")
    n.add_argument("runs", nargs="*", metavar="RUN.json")
    n.add_argument("--out", required=True, metavar="FILE.json")
    h = sub.add_parser("history", help="per kernel x dtype x platform over a series of nightly runs: state and since "
                                       "when, flips, failing streaks with their toolchain changes, intermittent failures")
    h.add_argument("runs", nargs="*", metavar="DIR|RUN.json",
                   help="run files (.json or .json.gz), or directories of them (run-*.json*, recursively)")
    h.add_argument("--window", type=_window, default=30, help="the last N nights of each platform (default 30)")
    h.add_argument("--out", metavar="DIR", help="write history.md, history.html and history.json there")
    h.add_argument("--json", action="store_true", help="print the history as JSON (for bots) instead of Markdown")
    r = sub.add_parser("replay", help="driver-validation evidence: compare every pair under DIR (aa-*/ and planted-*/) "
                                      "both ways and check the expected verdicts")
    r.add_argument("directory", metavar="DIR")
    r.add_argument("--out", metavar="FILE.md", help="also write the summary here")
    r.add_argument("--json", metavar="FILE.json", help="also write the summary as JSON here")
    return p


def _build(args: argparse.Namespace) -> int:
    from reports.build import build, plots_available

    files, bad = build(args.runs, args.out, history=args.history, window=args.window,
                       keep_superseded=args.keep_superseded, merge_ids=args.merge_shards)
    if missing := plots_available():
        print(f"note: {missing}", file=sys.stderr)
    for exc in bad:
        print(visible(f"error: {exc} (left out of the report)"), file=sys.stderr)
    print("wrote " + ", ".join(str(f) for f in files))
    return EXIT_USAGE if bad else EXIT_OK


def _compare(args: argparse.Namespace) -> int:
    from reports import noise
    from reports.compare import compare, compare_json, compare_markdown, compare_terminal

    if len(args.runs) < 2:
        raise RunFileError(f"compare needs exactly two run files, BASE.json and CAND.json (a sharded run: every shard's "
                           f"file); got {len(args.runs)}")
    if args.out:
        refuse_inputs([Path(args.out)], [*args.runs, *([args.noise_floor] if args.noise_floor else [])])
    runs = merge_shards(load_runs(args.runs, by_start=False), args.merge_shards)
    if len(runs) != 2:
        raise RunFileError(f"compare needs exactly two runs, BASE and CAND; the {len(args.runs)} files given are "
                           f"{len(runs)} runs ({', '.join(r.run_id for r in runs)}): a sharded run is the files "
                           f"with one shard run id")
    base, cand = runs
    floor = noise.load(args.noise_floor) if args.noise_floor else None
    cmp = compare(base, cand, args.p_value, args.threshold, args.allow_different_hardware, args.allow_different_tests,
                  floor, recorded_floor=not args.no_noise_floor)
    text = compare_markdown(base, cand, cmp, args.p_value, args.threshold)
    if args.json:
        sys.stdout.write(json.dumps(compare_json(base, cand, cmp, args.p_value, args.threshold), indent=1) + "\n")
    elif sys.stdout.isatty():  # a person reads it: the verdict first, nothing wider than the terminal, no escape
        width = shutil.get_terminal_size().columns
        sys.stdout.write(compare_terminal(base, cand, cmp, args.p_value, args.threshold, width))
    else:  # piped (a CI job's summary, a file): Markdown whose run-file strings cannot open a tag, link or heading
        sys.stdout.write(text)
    if args.out:
        write_atomic(Path(args.out), text)
    if cmp.unusable:
        print(visible(f"error: {cmp.unusable}"), file=sys.stderr)
    return cmp.exit_code


def _noise_floor(args: argparse.Namespace) -> int:
    from reports import floor_file, noise

    refuse_inputs([Path(args.out)], args.runs)
    floor = noise.learn(load_runs(args.runs))
    if problems := sorted(floor_file.problems(floor), key=lambda p: not p.startswith("benchmark")):
        raise RunFileError(f"refusing to write {args.out}: {problems[0]}: the A/A runs moved too much to learn a "
                           "usable floor; repeat them on a quiet machine")
    write_atomic(Path(args.out), json.dumps(floor, indent=1) + "\n")
    values = sorted(b["floor"] for b in floor["benchmarks"].values())
    print(f"wrote {args.out}: {len(values)} benchmarks from {len(floor['learned_from'])} runs ({floor['pairs']} pairs); "
          f"floors {100 * values[0]:.1f}-{100 * values[-1]:.1f}% (median {100 * values[len(values) // 2]:.1f}%), "
          f"platform {100 * (floor['platform'] or 0):.1f}%")
    return EXIT_OK


def _replay(args: argparse.Namespace) -> int:
    from reports.validation import replay, replay_json, replay_markdown

    directory = Path(args.directory)
    if not directory.is_dir():
        raise RunFileError(f"{directory}: {'not a directory' if directory.exists() else 'no such directory'}; "
                           "replay takes the evidence directory that holds aa-N/ and planted-N/")
    result = replay(directory)
    refuse_inputs([Path(o) for o in (args.out, args.json) if o],
                  [r.path for p in result.pairs for r in (p.base, p.cand)])
    text = replay_markdown(result)
    sys.stdout.write(text)
    if args.out:
        write_atomic(Path(args.out), text)
    if args.json:
        write_atomic(Path(args.json), json.dumps(replay_json(result), indent=1) + "\n")
    return EXIT_OK if result.passed else EXIT_REGRESSION


def _history(args: argparse.Namespace) -> int:
    from reports import history

    if not args.runs:
        raise RunFileError("history needs run files: a directory of them, or RUN.json files")
    found = history.run_files(args.runs)
    if args.out:
        refuse_inputs([Path(args.out) / n for n in ("history.md", "history.html", "history.json")], found)
    h = history.history(args.runs, args.window)
    if args.out:
        print("wrote " + ", ".join(str(f) for f in history.write(h, args.out)), file=sys.stderr)
    if args.json:
        sys.stdout.write(json.dumps(h.as_json(), indent=1) + "\n")
    else:
        from reports.render import markdown

        sys.stdout.write(markdown(history.title(h), [], [history.section(h)]))
    for exc in h.left_out:
        print(visible(f"error: {exc} (left out of the history)"), file=sys.stderr)
    return EXIT_USAGE if h.left_out else EXIT_OK


COMMANDS = {"build": _build, "compare": _compare, "noise-floor": _noise_floor, "replay": _replay,
            "history": _history}


def _json_wanted(argv: list[str]) -> bool:
    return "compare" in argv and "--json" in argv


def _json_error(message: str) -> None:
    """`compare --json` on an unusable input: scripts still get a JSON object on stdout."""
    from reports.compare import JSON_FORMAT

    sys.stdout.write(json.dumps({"format": JSON_FORMAT, "verdict": f"CANNOT COMPARE: {message}", "exit_code": EXIT_USAGE,
                                 "failed": False, "unusable": message}, indent=1) + "\n")


def main(argv: list[str] | None = None, prog: str | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    try:
        args = parser(prog).parse_args(argv)
    except UsageError as exc:
        if _json_wanted(argv):
            _json_error(exc.message)
        return EXIT_USAGE
    code = _run(args)
    if loading.checked_without_jsonschema:
        print(loading.CHECKER_NOTE, file=sys.stderr)
    return code


def _run(args: argparse.Namespace) -> int:
    from reports.compare import CompareRefused

    try:
        return COMMANDS[args.command](args)
    except (RunFileError, CompareRefused) as exc:
        message = str(exc)
    except OSError as exc:
        message = f"cannot write {exc.filename or 'output'}: {exc.strerror or exc}"
    except Exception as exc:  # a bug in reports, not in the input: one line unless asked for the traceback
        if args.debug:
            traceback.print_exc()
        inputs = ", ".join(getattr(args, "runs", None) or [getattr(args, "directory", "")]) or "no files"
        message = (f"internal error in reports on {inputs}: {type(exc).__name__}: {exc} "
                   "(rerun with --debug for the traceback)")
    print(visible(f"error: {message}"), file=sys.stderr)  # a run file's strings: never a terminal's escape
    if args.command == "compare" and args.json:
        _json_error(message)
    return EXIT_USAGE


if __name__ == "__main__":
    sys.exit(main())
