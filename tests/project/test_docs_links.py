"""Every relative link in README.md, docs/*.md and the evidence READMEs points to a file or folder that exists, and
every #fragment to a heading of the page it names (GitHub's anchors), so moving a page or a folder cannot leave a
dead link behind."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.conftest import ROOT

PAGES = sorted([ROOT / "README.md", *(ROOT / "docs").glob("*.md"), *(ROOT / "evidence").glob("**/README.md")])
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")
FENCE = re.compile(r"^```.*?^```", re.S | re.M)


def anchors(page: Path) -> set[str]:
    """The anchors GitHub gives a page's headings: lower case, punctuation dropped, spaces to hyphens."""
    found = set()
    for heading in re.findall(r"^#+\s+(.+?)\s*$", FENCE.sub("", page.read_text()), re.M):
        slug = re.sub(r"[^\w\- ]", "", heading.lower()).replace(" ", "-")
        n = sum(a == slug or a.startswith(slug + "-") and a[len(slug) + 1:].isdigit() for a in found)
        found.add(f"{slug}-{n}" if n else slug)
    return found


def links(page: Path) -> list[str]:
    return [t for t in LINK.findall(FENCE.sub("", page.read_text())) if not re.match(r"[a-z]+:", t)]


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_relative_links_resolve(page):
    dead = []
    for target in links(page):
        path, _, fragment = target.partition("#")
        file = (page.parent / path).resolve() if path else page
        if not file.exists() or not file.is_relative_to(ROOT):
            dead.append(f"{target}: no such file")
        elif fragment and file.suffix == ".md" and fragment not in anchors(file):
            dead.append(f"{target}: no heading #{fragment} in {file.relative_to(ROOT)}")
    assert not dead, f"{page.relative_to(ROOT)}: " + "; ".join(dead)


def test_the_pages_are_found():
    assert ROOT / "README.md" in PAGES and len(PAGES) >= 5


# The project's own files and modules as the pages name them: a path in backticks or a code block, a `from ... import`
# or `python -m` of a project module. Moving a module must not leave a page naming its old place.
GUIDE_PAGES = sorted([ROOT / "README.md", *(ROOT / "docs").glob("*.md")])
PROJECT_PATH = re.compile(r"(?<![\w/.-])((?:suite|kernels|reports|hardware_profiles)/[\w/.-]*\.(?:py|json|ini))\b")
PROJECT_IMPORT = re.compile(r"^\s*from\s+((?:suite|kernels|reports|hardware_profiles)(?:\.\w+)*)\s+import\s+([\w, ]+)",
                            re.M)
PROJECT_MAIN = re.compile(r"python -m ((?:suite|kernels|reports|hardware_profiles)(?:\.\w+)*)")


def project_references(text: str) -> tuple[list[str], list[tuple[str, str]], list[str]]:
    paths = [p for p in PROJECT_PATH.findall(text)]
    imports = [(m, name.strip()) for m, names in PROJECT_IMPORT.findall(text) for name in names.split(",") if name.strip()]
    return paths, imports, PROJECT_MAIN.findall(text)


def missing_references(text: str, root: Path = ROOT) -> list[str]:
    import importlib
    import importlib.util

    paths, imports, mains = project_references(text)
    missing = [f"{p}: no such file" for p in paths if not (root / p).exists()]
    for module, name in imports:
        if importlib.util.find_spec(module) is None:
            missing.append(f"from {module} import {name}: no module {module}")
        elif not (hasattr(importlib.import_module(module), name) or importlib.util.find_spec(f"{module}.{name}")):
            missing.append(f"from {module} import {name}: {module} has no {name}")
    missing += [f"python -m {m}: no module {m}" for m in mains if importlib.util.find_spec(m) is None]
    return missing


@pytest.mark.parametrize("page", GUIDE_PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_the_project_files_and_modules_a_page_names_exist(page):
    missing = missing_references(page.read_text())
    assert not missing, f"{page.relative_to(ROOT)}: " + "; ".join(missing)


def test_a_page_naming_a_moved_module_fails():
    """Planted: the guide's snippet as it read before suite/ was layered, and a path to the old flat module."""
    text = "```python\nfrom suite import interpreter\n```\nsee `suite/harness.py` and `python -m suite.compile_matrix`\n"
    assert missing_references(text) == ["suite/harness.py: no such file", "from suite import interpreter: suite has no "
                                        "interpreter", "python -m suite.compile_matrix: no module suite.compile_matrix"]


# A newcomer reads README in two minutes and the tutorial in one sitting: details go to the reference pages.
SHORT_PAGES = {"README.md": 120, "docs/tutorial.md": 250}


@pytest.mark.parametrize("name, most", SHORT_PAGES.items(), ids=list(SHORT_PAGES))
def test_the_first_pages_stay_short(name, most):
    lines = len((ROOT / name).read_text().splitlines())
    assert lines <= most, f"{name}: {lines} lines, at most {most}: move details to docs/ (README's table of the docs)"
