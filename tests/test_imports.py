"""The package's import graph, built with ast (no module is imported): no import cycle at all,
counting the imports inside functions; every function-level import of our own modules says why
(start-up speed is the only reason left for one: see README, How it works); the rooms keep their
direction (readers and the context analysis import no rule code, reporters never import the
pipeline); and no top-level `rules` package can be imported next to the catalogue folder."""

from __future__ import annotations

import ast
import functools
import io
import tokenize
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "auditor"


def module_files(package: Path) -> dict[str, Path]:
    """Dotted module name -> file, for every .py under `package` (a package is its __init__)."""
    out = {}
    for path in sorted(package.rglob("*.py")):
        parts = path.relative_to(package.parent).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


def _type_checking(node: ast.AST) -> bool:
    return isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)


def imports(tree: ast.Module) -> list[tuple[ast.Import | ast.ImportFrom, bool]]:
    """Every import statement with whether it runs inside a function; those under
    `if TYPE_CHECKING:` never run and are left out."""
    found: list[tuple[ast.Import | ast.ImportFrom, bool]] = []

    def walk(node: ast.AST, in_function: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if _type_checking(child):
                continue
            if isinstance(child, (ast.Import, ast.ImportFrom)):
                found.append((child, in_function))
            walk(child, in_function or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)))

    walk(tree, False)
    return found


def targets(module: str, is_package: bool, node: ast.Import | ast.ImportFrom, known: set[str]) -> set[str]:
    """The modules of `known` an import statement in `module` loads (a package's __init__ included)."""
    if isinstance(node, ast.Import):
        names = [alias.name for alias in node.names]
    else:
        base = node.module or ""
        if node.level:
            parts = module.split(".") if is_package else module.split(".")[:-1]
            parts = parts[:len(parts) - (node.level - 1)]
            base = ".".join([*parts, *([base] if base else [])])
        names = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in known else base for alias in node.names]
    out = set()
    for name in names:
        while name and name not in known:
            name = name.rpartition(".")[0]
        if name:
            out.add(name)
    return out - {module}


def import_graph(package: Path) -> tuple[dict[str, set[str]], dict[str, Path]]:
    files = module_files(package)
    known = set(files)
    graph: dict[str, set[str]] = {name: set() for name in files}
    for name, path in files.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node, _ in imports(tree):
            graph[name] |= targets(name, path.name == "__init__.py", node, known)
    return graph, files


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan, iteratively)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    found: list[list[str]] = []
    counter = 0
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, edges = work[-1]
            for target in edges:
                if target not in index:
                    index[target] = low[target] = counter
                    counter += 1
                    stack.append(target)
                    on_stack.add(target)
                    work.append((target, iter(sorted(graph[target]))))
                    break
                if target in on_stack:
                    low[node] = min(low[node], index[target])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        found.append(sorted(component))
    return found


def comment_lines(source: str) -> set[int]:
    return {token.start[0] for token in tokenize.generate_tokens(io.StringIO(source).readline)
            if token.type == tokenize.COMMENT}


def unexplained_imports(path: Path, root: Path = ROOT, own: str = "auditor") -> list[str]:
    """Function-level imports of `own`'s modules with no comment on their lines, nor on the line
    just before them or before the run of import statements they open a function body with."""
    source = path.read_text(encoding="utf-8")
    tree = ast.parse(source)
    comments = comment_lines(source)
    parents = {child: parent for parent in ast.walk(tree) for child in ast.iter_child_nodes(parent)}
    bad = []
    for node, in_function in imports(tree):
        if not in_function:
            continue
        module = (node.module or "") if isinstance(node, ast.ImportFrom) else node.names[0].name
        if not (getattr(node, "level", 0) or module == own or module.startswith(own + ".")):
            continue
        first = node
        body = getattr(parents[node], "body", [])
        position = body.index(node) if node in body else 0
        while position > 0 and isinstance(body[position - 1], (ast.Import, ast.ImportFrom)) \
                and body[position - 1].end_lineno == first.lineno - 1:
            position -= 1
            first = body[position]
        lines = set(range(node.lineno, node.end_lineno + 1)) | {node.lineno - 1, first.lineno - 1}
        if not lines & comments:
            bad.append(f"{path.relative_to(root)}:{node.lineno}: {ast.unparse(node)}")
    return bad


def reachable(graph: dict[str, set[str]], start: str) -> set[str]:
    seen: set[str] = set()
    todo = [start]
    while todo:
        node = todo.pop()
        for target in graph[node]:
            if target not in seen:
                seen.add(target)
                todo.append(target)
    return seen


# -- the checks, on this package --------------------------------------------------------------------

@functools.cache
def package_graph() -> tuple[dict[str, set[str]], dict[str, Path]]:
    return import_graph(PACKAGE)


def test_no_import_cycle_even_counting_imports_inside_functions():
    graph, _ = package_graph()
    assert cycles(graph) == []


def test_every_function_level_import_of_our_modules_says_why():
    _, files = package_graph()
    bad = [line for path in files.values() for line in unexplained_imports(path)]
    assert bad == [], "say on the line before why it is not a module-level import:\n" + "\n".join(bad)


# The rooms before the rules: readers, the context analysis, the shared node helpers, reading and
# discovery. (python.walker and python.scan run the rules, so they are not among them.)
RULE_FREE = ("auditor.readers", "auditor.analysis", "auditor.read", "auditor.discover", "auditor.python.syntax",
             "auditor.python.names", "auditor.python.tree", "auditor.python.positions", "auditor.context")


@pytest.mark.parametrize("room", RULE_FREE)
def test_readers_and_the_analysis_import_no_rule_code(room):
    graph, _ = package_graph()
    for module in (m for m in graph if m == room or m.startswith(room + ".")):
        rule_code = sorted(m for m in reachable(graph, module) if m.startswith("auditor.checks"))
        assert rule_code == [], f"{module} reaches {rule_code}"


def test_reporters_import_the_report_model_never_the_pipeline():
    graph, _ = package_graph()
    for module in (m for m in graph if m.startswith("auditor.report")):
        pipeline = sorted(m for m in reachable(graph, module) if m.startswith("auditor.pipeline"))
        assert pipeline == [], f"{module} reaches {pipeline}"


def test_no_top_level_rules_package_beside_the_catalogue():
    """rules/ is data (the catalogue, shipped as auditor/rules); `import rules` must find nothing."""
    assert not (ROOT / "rules" / "__init__.py").exists() and not (ROOT / "rules.py").exists()
    assert not list((ROOT / "rules").glob("*.py"))
    assert not (PACKAGE / "rules" / "__init__.py").exists()


# -- the checks can fail ------------------------------------------------------------------------------

def _package(tmp_path: Path, files: dict[str, str]) -> Path:
    root = tmp_path / "auditor"
    for name, text in {"__init__.py": "", **files}.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root


def test_a_cycle_through_a_function_level_import_is_found(tmp_path):
    package = _package(tmp_path, {
        "a.py": "from auditor.b import f\n",
        "b.py": "def f():\n    from auditor import a  # late, to dodge the cycle\n",
        "pkg/__init__.py": "",
        "pkg/c.py": "from . import d\n",
        "pkg/d.py": "from .c import x\n",
        "e.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from auditor.a import f\n",
        "f.py": "from auditor.e import g\n",
    })
    graph, _ = import_graph(package)
    assert sorted(cycles(graph)) == [["auditor.a", "auditor.b"], ["auditor.pkg.c", "auditor.pkg.d"]]


def test_a_function_level_import_without_a_reason_is_found(tmp_path):
    package = _package(tmp_path, {"m.py": (
        "import json\n"
        "def plain():\n    import os\n    from auditor import x\n"
        "def explained():\n    # libcst: only when checking\n    from auditor.y import z\n    from auditor import w\n"
        "def inline():\n    from auditor.v import u  # rich: only for the text report\n"
        "def other_package():\n    from typer import Exit\n")})
    assert unexplained_imports(package / "m.py", tmp_path) == ["auditor/m.py:4: from auditor import x"]
