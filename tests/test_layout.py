"""The house's rules that code can check: no import cycle among the project's modules (counting function-local
imports, which only hide a cycle), and the kernel modules found by discovery are kernel modules."""

from __future__ import annotations

import ast

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


def test_the_check_sees_a_cycle_hidden_in_a_function(tmp_path):
    """Planted: two modules that import each other, one of them inside a function."""
    (tmp_path / "suite").mkdir()
    (tmp_path / "suite" / "a.py").write_text("from suite import b\n")
    (tmp_path / "suite" / "b.py").write_text("def f():\n    from suite import a\n    return a\n")
    for package in PACKAGES[1:]:
        (tmp_path / package).mkdir()
    assert cycles(import_graph(tmp_path)) == [["suite.a", "suite.b"]]


def test_the_validation_of_specs_needs_no_torch():
    """An xdist controller imports kernels._validation (through suite.plugin.known_issues) before it imports torch."""
    import subprocess
    import sys

    code = "import sys, kernels._validation, suite.plugin.known_issues; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert out.stdout.strip() == "False", out.stdout + out.stderr
