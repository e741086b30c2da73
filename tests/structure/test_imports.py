"""The import structure that ARCHITECTURE.md draws, checked on every run.

Every import counts, at module level or inside a function: a function-level import that
hides a cycle is the cycle. Pure: it reads the source, runs none of it.
"""

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PRODUCT, TOOLING = "omnium", "devtools"


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imported_names(path: Path, module: str) -> set[str]:
    """Every name an import statement may load: `from a import b` gives `a` and `a.b` (which
    of them is a module is decided by the caller)."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    names = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(anchor + ([base] if base else []))
            names.add(base)
            names.update(f"{base}.{alias.name}" for alias in node.names)
    return names


def import_graph(top: str) -> dict[str, set[str]]:
    """Module -> the modules of `omnium` and `devtools` it imports (not counting migrations)."""
    paths = [p for p in (ROOT / top).rglob("*.py") if "migrations" not in p.parts]
    modules = {_module_name(p): p for p in paths}
    known = set(modules) | {_module_name(p) for t in (PRODUCT, TOOLING) for p in (ROOT / t).rglob("*.py")}
    graph = {}
    for module, path in modules.items():
        names = _imported_names(path, module)
        # `from omnium import routing` loads omnium.routing; omnium itself is loaded by any import
        # of its modules, so it is no edge.
        parents_of_modules = {name.rpartition(".")[0] for name in names if name in known}
        graph[module] = {n for n in names if n in known and n != module and n not in parents_of_modules}
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one node (Tarjan)."""
    index, low, stack, on_stack, found = {}, {}, [], set(), []

    def visit(node):
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in graph.get(node, ()):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
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

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def package_of(module: str) -> str:
    """`omnium.delivery.engine.sender` -> `omnium.delivery`; a top-level module is its own unit."""
    return ".".join(module.split(".")[:2])


def package_graph(graph):
    packages = {}
    for module, targets in graph.items():
        edges = packages.setdefault(package_of(module), set())
        edges.update(package_of(t) for t in targets if package_of(t) != package_of(module))
    return packages


PRODUCT_GRAPH = import_graph(PRODUCT)


def test_no_module_imports_itself_back_through_others():
    assert cycles(PRODUCT_GRAPH) == []


def test_no_two_packages_import_each_other():
    assert cycles(package_graph(PRODUCT_GRAPH)) == []


@pytest.mark.parametrize("forbidden", ["omnium.delivery", "omnium.pullapi"])
def test_feeds_announces_versions_without_knowing_delivery_or_pullapi(forbidden):
    offenders = {m: sorted(t for t in ts if package_of(t) == forbidden)
                 for m, ts in PRODUCT_GRAPH.items() if package_of(m) in ("omnium.feeds", "omnium.games")}
    assert {m: t for m, t in offenders.items() if t} == {}


def test_the_product_never_imports_the_tooling():
    offenders = {m: sorted(t for t in ts if t.split(".")[0] == TOOLING) for m, ts in PRODUCT_GRAPH.items()}
    assert {m: t for m, t in offenders.items() if t} == {}


def test_transports_know_nothing_of_django_or_the_rest_of_omnium():
    allowed = {"omnium.transports", *HELPERS}
    for path in (ROOT / PRODUCT / "transports").rglob("*.py"):
        module = _module_name(path)
        names = _imported_names(path, module)
        assert not [n for n in names if n.split(".")[0] == "django"], module
        assert not [n for n in names if n.startswith("omnium.") and package_of(n) not in allowed], module


# Helper packages, below every part of the product: they may use the root's wiring (settings
# read through `conf`, `routing`) and each other, never a part (games, feeds, delivery…).
HELPERS = {"omnium.caching", "omnium.database", "omnium.encoding", "omnium.workers"}
ROOT_WIRING = {"omnium.conf", "omnium.routing", "omnium.redis_client", "omnium.safe_errors"}


@pytest.mark.parametrize("helper", sorted(HELPERS))
def test_helper_packages_import_no_part_of_the_product(helper):
    imported = {t for m, ts in PRODUCT_GRAPH.items() if package_of(m) == helper for t in ts}
    assert sorted(t for t in imported if package_of(t) not in HELPERS | ROOT_WIRING) == []


def test_the_checker_sees_a_cycle_and_a_function_level_import(tmp_path):
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert cycles(graph) == [["a", "b", "c"]]
    source = tmp_path / "m.py"
    source.write_text("def f():\n    from omnium.delivery import kicks\n")
    assert "omnium.delivery.kicks" in _imported_names(source, "omnium.x.m")
