"""Command line: `python -m reports build RUN.json ... --out DIR` and `python -m reports compare BASE CAND`.

Exit codes: 0 fine; 1 the comparison found a regression; 2 bad input or a refused comparison (the message
names the file and what is wrong).
"""

from __future__ import annotations

import argparse
import sys
import traceback
from pathlib import Path

from reports.loading import RunFileError, load_runs

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


def _threshold(text: str) -> float:
    value = _number(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"a relative change threshold is >= 0 (0.05 = 5%), got {text}")
    return value


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m reports", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--debug", action="store_true", help="show the traceback of an internal error")
    sub = p.add_subparsers(dest="command", required=True)
    b = sub.add_parser("build", help="portability report from run files: report.md, report.html, summary.json")
    b.add_argument("runs", nargs="*", metavar="RUN.json")
    b.add_argument("--out", required=True, metavar="DIR", help="directory for the three files (created if missing)")
    c = sub.add_parser("compare", help="regressions between a base run and a candidate run of the same test set")
    c.add_argument("runs", nargs="*", metavar="RUN.json", help="BASE.json CAND.json")
    c.add_argument("--p-value", type=_p_value, default=0.01, help="Mann-Whitney U significance level (default 0.01)")
    c.add_argument("--threshold", type=_threshold, default=0.05,
                   help="smallest relative change of the median that counts (default 0.05 = 5%%)")
    c.add_argument("--allow-different-hardware", action="store_true")
    c.add_argument("--allow-different-tests", action="store_true")
    c.add_argument("--out", metavar="FILE.md", help="also write the Markdown here")
    return p


def _build(args: argparse.Namespace) -> int:
    from reports.build import build

    files = build(args.runs, args.out)
    print("wrote " + ", ".join(str(f) for f in files))
    return EXIT_OK


def _compare(args: argparse.Namespace) -> int:
    from reports.compare import compare, compare_markdown

    if len(args.runs) != 2:
        raise RunFileError(f"compare needs exactly two run files, BASE.json and CAND.json; got {len(args.runs)}")
    base, cand = load_runs(args.runs, by_start=False)
    cmp = compare(base, cand, args.p_value, args.threshold, args.allow_different_hardware, args.allow_different_tests)
    text = compare_markdown(base, cand, cmp, args.p_value, args.threshold)
    sys.stdout.write(text)
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(text, encoding="utf-8")
    return EXIT_REGRESSION if cmp.failed else EXIT_OK


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    from reports.compare import CompareRefused

    try:
        return _build(args) if args.command == "build" else _compare(args)
    except (RunFileError, CompareRefused) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except OSError as exc:
        print(f"error: cannot write {exc.filename or 'output'}: {exc.strerror or exc}", file=sys.stderr)
        return EXIT_USAGE
    except Exception as exc:  # a bug in reports, not in the input: one line unless asked for the traceback
        if args.debug:
            traceback.print_exc()
        print(f"error: internal error in reports on {', '.join(args.runs) or 'no files'}: {type(exc).__name__}: {exc} "
              "(rerun with --debug for the traceback)", file=sys.stderr)
        return EXIT_USAGE


if __name__ == "__main__":
    sys.exit(main())
