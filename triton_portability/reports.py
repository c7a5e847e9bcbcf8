"""``python -m triton_portability.reports build|compare|noise-floor|replay|history ...``: the reports' command line
(reports/__main__.py), from an installed copy or a checkout alike (``python -m reports ...`` in a checkout)."""

from __future__ import annotations

import sys

import triton_portability  # noqa: F401 - the suite's packages importable under their own names


def main(argv: list[str] | None = None) -> int:
    import reports
    from reports.__main__ import main as run

    return run(argv, prog=reports.command("triton_portability.reports"))


if __name__ == "__main__":
    sys.exit(main())
