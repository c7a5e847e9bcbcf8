"""Fail fast when a GPU env sees the wrong torch build: `python -m suite.tools.check_torch_build cuda|rocm`."""

from __future__ import annotations

import sys


def main(argv: list[str]) -> int:
    if len(argv) != 1 or argv[0] not in ("cuda", "rocm"):
        print("usage: python -m suite.tools.check_torch_build cuda|rocm", file=sys.stderr)
        return 2
    import torch

    want = argv[0]
    hip = getattr(torch.version, "hip", None)
    have = "rocm" if hip else "cuda" if torch.version.cuda else "cpu"
    print(f"torch {torch.__version__} from {torch.__file__}: {have} build")
    if have != want:
        print(f"error: the {want} env needs the runner's {want} build of torch, but sees a {have} build; "
              "install the runner's torch into the interpreter that tox uses (system_site_packages = true)",
              file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
