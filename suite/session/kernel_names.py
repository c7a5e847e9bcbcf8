"""``--kernel-module`` and ``--kernels`` checked before the workers start, without importing torch, Triton or a kernel
module: a module that is not there, or a kernel name no module could register, is a usage error that says where it
looked and which name is nearest (difflib), seconds before xdist's workers would have started.

A kernel's name is only certain once its module ran (``kernels.registry``), and running it needs the backend. So
``--kernels`` is judged here against every string literal of the kernel modules' sources (``literal_names``): a
pattern that matches none of them can match no registered name unless a module builds its names at run time; the
controller then loads the registry before its workers start (``suite/plugin/context.py: defers``), where the
registry's own check decides.
"""

from __future__ import annotations

import ast
import difflib
import fnmatch
import importlib.util
import os
import pkgutil
from pathlib import Path

import pytest

from suite.session import reading

BUILTIN_DIR = Path(__file__).resolve().parents[2] / "kernels"


def nearest(name: str, names: list[str] | set[str], n: int = 3) -> list[str]:
    """The names closest to ``name`` (difflib's ratio, 0.6 and up), closest first."""
    return difflib.get_close_matches(name, sorted(names), n=n, cutoff=0.6)


def did_you_mean(name: str, names: list[str] | set[str]) -> str:
    """'; did you mean 'x' (or 'y')?' for the nearest names, else ''."""
    near = nearest(name, names)
    if not near:
        return ""
    return f"; did you mean {near[0]!r}" + (f" (or {', '.join(repr(n) for n in near[1:])})" if near[1:] else "") + "?"


def locate(target: str, base: str | None = None) -> Path | None:
    """The source file of a ``--kernel-module`` (a path to a .py file, relative ones from ``base``, or a dotted module
    name importable from the current directory), found without importing the module itself (a dotted name's parent
    packages are imported). None where it is found but has no source file. pytest.UsageError naming the option,
    where it looked and the nearest names, where it is not there."""
    option = f"--kernel-module={target}"
    if target.endswith(".py"):
        path = Path(base or "", target)  # a relative path from ``base`` (where the run started), as the registry reads it
        if path.is_file():
            return path
        try:
            what = reading.kind(path.stat().st_mode)
        except OSError:
            what = None
        if what is not None:  # there, but a FIFO would hang the import ('no such file; did you mean' itself)
            raise pytest.UsageError(f"{option}: it is {what}, not a file of Python source")
        where = path.parent
        if not where.is_dir():
            raise pytest.UsageError(f"{option}: no such file: the directory {where.resolve()} does not exist")
        files = [p.name for p in where.glob("*.py")]
        shown = Path(target).parent  # the suggestions as the option would be written
        near = [str(shown / n) if str(shown) != "." else n for n in nearest(path.name, files)]
        raise pytest.UsageError(f"{option}: no such file in {where.resolve()}"
                                + (f"; did you mean {', '.join(near)}?" if near else
                                   f" (it holds {len(files)} .py file(s), none of a name like it)"))
    parent, _, leaf = target.rpartition(".")
    try:
        found = importlib.util.find_spec(target)
    except (ImportError, ValueError):
        found = None
    if found is not None:
        return Path(found.origin) if found.origin and found.origin.endswith(".py") else None
    searched: list[str] = []
    if parent:
        try:
            package = importlib.util.find_spec(parent)
        except (ImportError, ValueError):
            package = None
        if package is None or package.submodule_search_locations is None:
            raise pytest.UsageError(
                f"{option}: no package {parent!r} importable from the current directory ({os.getcwd()}) or the "
                f"import path; give a dotted module name importable from there, or a path ending in .py")
        searched = list(dict.fromkeys(str(Path(p).resolve()) for p in package.submodule_search_locations))
    else:
        searched = [os.getcwd()]
    names = [m.name for m in pkgutil.iter_modules(searched)]
    near = [f"{parent}.{n}" if parent else n for n in nearest(leaf, names)]
    raise pytest.UsageError(f"{option}: no module of that name (searched {', '.join(searched)})"
                            + (f"; did you mean {', '.join(near)}?" if near else ".")
                            + " Give a dotted module name importable from the current directory, or a path ending "
                              "in .py")


def builtin_files() -> list[Path]:
    """The shipped kernel modules' sources (as kernels.registry.builtin_modules discovers them, or more)."""
    return sorted(p for p in BUILTIN_DIR.glob("*.py") if not p.name.startswith("_"))


def literal_names(files: list[Path]) -> set[str]:
    """Every string literal in these sources that could be a kernel's name (a superset of the names they register
    literally); an unreadable file gives none."""
    names: set[str] = set()
    for path in files:
        try:
            tree = ast.parse(path.read_text(encoding="utf-8"))
        except (OSError, SyntaxError, ValueError, UnicodeDecodeError):
            continue
        names |= {node.value for node in ast.walk(tree)
                  if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.isidentifier()}
    return names


def unmatched(patterns: tuple[str, ...], names: set[str]) -> list[str]:
    """The ``--kernels`` patterns that match none of ``names``."""
    return [p for p in patterns if not fnmatch.filter(names, p)]


def check_before_workers(modules: tuple[str, ...], patterns: tuple[str, ...] | None) -> bool:
    """Each ``--kernel-module`` is there (else a usage error now); True where every ``--kernels`` pattern matches a
    name the modules' sources spell out, so the registry's check can wait for the workers to start."""
    files = builtin_files()
    for module in modules:
        if (path := locate(module)) is not None:
            files.append(path)
    return not patterns or not unmatched(patterns, literal_names(files))
