"""The house's rules that code can check: no import cycle among the project's modules (counting function-local
imports, which only hide a cycle); the suite's state in one object, not in module globals; suite/'s top level kept
short; and the kernel modules found by discovery are kernel modules."""

from __future__ import annotations

import ast
from pathlib import Path

from tests.conftest import ROOT

PACKAGES = ("suite", "kernels", "reports", "hardware_profiles")


def import_graph(root=ROOT) -> dict[str, set[str]]:
    modules = {}
    for package in PACKAGES:
        for path in (root / package).rglob("*.py"):
            name = ".".join(path.relative_to(root).with_suffix("").parts)
            modules[name.removesuffix(".__init__")] = path
    graph = {}
    for name, path in modules.items():
        found = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                found |= {a.name for a in node.names}
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                found |= {node.module} | {f"{node.module}.{a.name}" for a in node.names}
        graph[name] = {m for m in found if m in modules and m != name}
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index, low, stack, on, found, counter = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_no_import_cycle():
    assert cycles(import_graph()) == []


# suite/'s subpackages, lowest first: a module imports from its own package and the ones below it, never above
# (suite.compat and the package's __init__ are below them all; the tests and __main__ above). docs/design.md draws it.
LAYERS = ("suite.session", "suite.workers", "suite.checks", "suite.tools", "suite.plugin")


def upward_imports(graph: dict[str, set[str]]) -> list[str]:
    def layer(module: str) -> int:
        for i, package in enumerate(LAYERS):
            if module == package or module.startswith(package + "."):
                return i
        return -1 if module in ("suite", "suite.compat") else len(LAYERS)

    return sorted(f"{a} -> {b}" for a, imported in graph.items() if a.startswith("suite")
                  for b in imported if b.startswith("suite") and layer(b) > layer(a))


def test_imports_go_down_the_layers():
    assert upward_imports(import_graph()) == []


def test_the_layer_check_sees_an_upward_import(tmp_path):
    """Planted: a worker module that imports the case harness, as crash.py once imported the plugin's options."""
    for package in PACKAGES:
        (tmp_path / package).mkdir()
    (tmp_path / "suite" / "workers").mkdir()
    (tmp_path / "suite" / "checks").mkdir()
    (tmp_path / "suite" / "checks" / "harness.py").write_text("from suite.workers import crash\n")
    (tmp_path / "suite" / "workers" / "crash.py").write_text("def f():\n    from suite.checks import harness\n")
    assert upward_imports(import_graph(tmp_path)) == ["suite.workers.crash -> suite.checks.harness"]


def test_the_check_sees_a_cycle_hidden_in_a_function(tmp_path):
    """Planted: two modules that import each other, one of them inside a function."""
    (tmp_path / "suite").mkdir()
    (tmp_path / "suite" / "a.py").write_text("from suite import b\n")
    (tmp_path / "suite" / "b.py").write_text("def f():\n    from suite import a\n    return a\n")
    for package in PACKAGES[1:]:
        (tmp_path / package).mkdir()
    assert cycles(import_graph(tmp_path)) == [["suite.a", "suite.b"]]


def test_the_validation_of_specs_needs_no_torch():
    """An xdist controller imports kernels._validation (through suite.session.known_issues) before it imports torch."""
    import subprocess
    import sys

    code = "import sys, kernels._validation, suite.session.known_issues; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert out.stdout.strip() == "False", out.stdout + out.stderr


# Module-level names of suite/ that may hold a mutable value, and why; everything else a process keeps while it runs is
# the session's (suite/session/stash.py: Session).
PROCESS_WIDE = {
    "suite.session.stash._session": "the one reference to this process's Session",
    "suite.compat._applied": "the patches applied to Triton's classes, which are patched for the whole process",
    "suite.tools.compile_matrix._memo": "a cache of compile records, a pure function of their key",
    "suite.tools.compile_matrix._refs": "a cache: where the compile process finds a spec",
    "suite.tools.compile_matrix._loaded": "the compile process's cache of the modules it imported",
}


def module_state(root=ROOT) -> list[str]:
    """Module-level names of suite/ bound to a mutable value (a call's result, a list, dict or set; ALL_CAPS names
    and __all__ are constants), and every name a ``global`` statement rebinds."""
    found = []
    for path in sorted((root / "suite").rglob("*.py")):
        module = ".".join(path.relative_to(root).with_suffix("").parts).removesuffix(".__init__")
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in tree.body:
            if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                mutable = (ast.Call, ast.List, ast.Dict, ast.Set, ast.ListComp, ast.DictComp, ast.SetComp)
                if isinstance(node.value, mutable):
                    found += [f"{module}.{t.id}" for t in targets
                              if isinstance(t, ast.Name) and not t.id.isupper() and t.id != "__all__"]
        found += [f"{module}.{name} (global)" for node in ast.walk(tree) if isinstance(node, ast.Global)
                  for name in node.names]
    return found


def test_the_suite_keeps_its_state_in_the_session():
    assert [name for name in module_state() if name not in PROCESS_WIDE] == []


def test_the_state_check_sees_module_state(tmp_path):
    """Planted: a module-level clock, as the suite kept before, and a flag rebound through ``global``."""
    (tmp_path / "suite").mkdir()
    (tmp_path / "suite" / "timing.py").write_text("class Clock: ...\nclock = Clock()\nPHASES = ('a',)\n")
    (tmp_path / "suite" / "patch.py").write_text("_done = False\ndef install():\n    global _done\n    _done = True\n")
    assert module_state(tmp_path) == ["suite.patch._done (global)", "suite.timing.clock"]


def test_the_suite_top_level_is_short():
    """suite/'s top level: the tests (their ids are what run files and comparisons key on), compat.py and the entry
    points; everything else is in a subpackage named for its concern (docs/design.md)."""
    top = sorted(p.name for p in (ROOT / "suite").glob("*.py"))
    assert len(top) <= 14, top


def test_discovery_finds_kernel_modules_only():
    """Every module that discovery imports as a kernel module registers a kernel: a helper module added to kernels/
    without a leading '_' (or a new module of the spec API missing from API_MODULES) fails here."""
    import importlib.util

    from kernels import registry

    registry.load_builtin()
    registering = {f"kernels.{Path(registry.where(spec.name)).stem}" for spec in registry.all_specs()}
    assert [m for m in registry.builtin_modules() if m not in registering] == []
    for name in registry.API_MODULES:
        assert importlib.util.find_spec(f"kernels.{name}") is not None, name


def test_no_scripts_in_the_reports_package():
    """reports/ is the report builder: one-off scripts live with the evidence they made (evidence/)."""
    assert sorted(p.relative_to(ROOT).as_posix() for p in (ROOT / "reports").rglob("*.sh")) == []
    assert not (ROOT / "reports" / "runs").exists()


# --- the rules between the top-level folders (docs/design.md, "Which way imports go") ----------------------------
TOPS = ("suite", "kernels", "reports", "hardware_profiles", "triton_portability")
# What each top-level folder may import of the others and of the heavy libraries; anything else is a finding.
ALLOWED = {
    "kernels": {"torch", "triton", "numpy"},  # never pytest or Hypothesis, never the suite
    "reports": set(),  # run files only: never kernels, triton, torch or the suite (a report builds on a laptop)
    "hardware_profiles": set(),
    "suite": {"kernels", "hardware_profiles", "reports", "torch", "triton", "numpy", "pytest", "hypothesis"},
    "triton_portability": {"suite", "kernels", "reports", "hardware_profiles"},
}
WATCHED = set(TOPS) | {"torch", "triton", "numpy", "pytest", "hypothesis"}


def top_level_imports(root=ROOT) -> dict[tuple[str, str], set[str]]:
    """(importing folder, imported folder or library) -> the importing files (module-level and function-local)."""
    found: dict[tuple[str, str], set[str]] = {}
    for top in TOPS:
        for path in (root / top).rglob("*.py"):
            if "example" in path.relative_to(root).parts:
                continue
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                names = ([a.name for a in node.names] if isinstance(node, ast.Import) else
                         [node.module] if isinstance(node, ast.ImportFrom) and node.module and node.level == 0 else [])
                for name in names:
                    other = name.split(".")[0]
                    if other in WATCHED and other != top:
                        found.setdefault((top, other), set()).add(str(path.relative_to(root)))
    return found


def forbidden_top_level_imports(root=ROOT) -> list[str]:
    return sorted(f"{a} -> {b}: {', '.join(sorted(files))}" for (a, b), files in top_level_imports(root).items()
                  if b not in ALLOWED[a])


def suite_imports_of_reports(root=ROOT) -> set[str]:
    """The reports modules the suite imports: each standard library only (checked below), so that the suite and
    `reports compare` apply one rule and a copy of the suite without reports/ still runs (design.md names them)."""
    found = set()
    for path in (root / "suite").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "reports":
                found |= ({f"{node.module}.{a.name}" for a in node.names} if node.module == "reports"
                          else {node.module})
    return found


def test_imports_between_the_top_level_folders():
    assert forbidden_top_level_imports() == []


def test_the_suite_imports_of_reports_are_standard_library_only_and_named_in_the_design():
    design = (ROOT / "docs" / "design.md").read_text(encoding="utf-8")
    for module in sorted(suite_imports_of_reports()):
        path = ROOT / (module.replace(".", "/") + ".py")
        tree = ast.parse(path.read_text(encoding="utf-8"))
        imported = {a.name.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names} | {
            n.module.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module and not n.level}
        assert not imported & WATCHED - {"reports"}, (module, imported & WATCHED)
        assert path.name in design, f"docs/design.md does not name {path.name}, which the suite imports"


def test_the_top_level_check_sees_a_forbidden_import(tmp_path):
    """Planted: reports importing torch, kernels importing pytest, hardware_profiles importing the suite."""
    for top in TOPS:
        (tmp_path / top).mkdir()
    (tmp_path / "reports" / "build.py").write_text("import json\n\ndef f():\n    import torch\n")
    (tmp_path / "kernels" / "k.py").write_text("import pytest\nimport torch\n")
    (tmp_path / "hardware_profiles" / "loader.py").write_text("from suite.checks import harness\n")
    (tmp_path / "suite" / "a.py").write_text("from reports import build\nimport torch\n")
    assert forbidden_top_level_imports(tmp_path) == ["hardware_profiles -> suite: hardware_profiles/loader.py",
                                                     "kernels -> pytest: kernels/k.py",
                                                     "reports -> torch: reports/build.py"]


# --- docs/design.md names every module --------------------------------------------------------------------------
def modules_design_leaves_out(root=ROOT) -> list[str]:
    """Modules of suite/, reports/, triton_portability/, hardware_profiles/ and kernels' spec API (not the kernel
    modules, which design.md names as <kernel>.py) whose file name docs/design.md does not mention."""
    design = (root / "docs" / "design.md").read_text(encoding="utf-8")
    paths = [p for top in ("suite", "reports", "triton_portability", "hardware_profiles")
             for p in (root / top).rglob("*.py") if "example" not in p.relative_to(root).parts]
    paths += [p for p in (root / "kernels").glob("*.py") if p.name.startswith("_") or p.stem in SPEC_API]
    return sorted(str(p.relative_to(root)) for p in paths
                  if p.name != "__init__.py" and p.name not in design and p.stem not in design)


SPEC_API = ("spec", "registry", "inputs", "paths")


def test_the_design_names_every_module():
    assert modules_design_leaves_out() == []


def test_the_design_check_sees_a_module_it_does_not_name(tmp_path):
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "design.md").write_text("  suite/checks/harness.py   one case\n")
    for top in ("suite/checks", "reports", "triton_portability", "hardware_profiles", "kernels"):
        (tmp_path / top).mkdir(parents=True)
    (tmp_path / "suite" / "checks" / "harness.py").write_text("")
    (tmp_path / "suite" / "checks" / "new_rule.py").write_text("")
    (tmp_path / "kernels" / "matmul.py").write_text("")  # a kernel module: named as <kernel>.py
    assert modules_design_leaves_out(tmp_path) == ["suite/checks/new_rule.py"]


# --- functions short enough to read -----------------------------------------------------------------------------
LONGEST = 120  # lines, any function in suite/
LONGEST_TEST = 80  # the generic test functions: a case's life is a loop class on the checks floor


def long_functions(root=ROOT) -> list[str]:
    found = []
    for path in sorted((root / "suite").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                limit = LONGEST_TEST if node.name in ("test_matches_reference", "test_properties") else LONGEST
                if (length := node.end_lineno - node.lineno + 1) > limit:
                    found.append(f"{path.relative_to(root)}:{node.lineno} {node.name} {length} lines (at most {limit})")
    return found


def test_no_function_in_the_suite_is_too_long_to_read():
    assert long_functions() == []


def test_the_length_check_sees_a_long_function(tmp_path):
    (tmp_path / "suite").mkdir()
    body = "\n".join(f"    x{i} = {i}" for i in range(85))
    (tmp_path / "suite" / "test_kernels.py").write_text(f"def test_matches_reference():\n{body}\n")
    assert long_functions(tmp_path) == ["suite/test_kernels.py:1 test_matches_reference 86 lines (at most 80)"]


def test_no_test_module_imports_another():
    """A test module's helpers live on the checks floor, where both generic tests reach them."""
    graph = import_graph()
    tests = {m for m in graph if m.rsplit(".", 1)[-1].startswith("test_")}
    assert sorted(f"{a} -> {b}" for a in graph for b in graph[a] if a in tests and b in tests) == []
