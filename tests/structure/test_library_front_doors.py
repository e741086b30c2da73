"""Libraries through their front doors (ARCHITECTURE rule 13): product code neither reads nor
replaces a dependency's private names, and patches none of its classes or modules.

A private name is one with a leading underscore that our own code does not define. Pure: it
reads the source of `omnium/`, runs none of it.
"""

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PRODUCT = ROOT / "omnium"

# Underscored names that their libraries document as public: Django's Model `_meta` API, and
# the methods of collections.namedtuple (urllib's SplitResult is one).
DOCUMENTED = {"_meta", "_replace", "_asdict", "_fields", "_make"}

def _is_private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def _names_defined(tree: ast.AST) -> set[str]:
    """Every name the source defines: functions, classes, parameters, variables, and attributes
    it assigns (`self._lock = …`)."""
    defined = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            defined.add(node.name)
        elif isinstance(node, ast.arg):
            defined.add(node.arg)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            defined.add(node.id)
        elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
            defined.add(node.attr)
        elif isinstance(node, ast.alias) and node.asname:
            defined.add(node.asname)
    return defined


def _library_names(tree: ast.AST) -> set[str]:
    """The names an import binds to something outside `omnium` (a module or one of its names)."""
    bound = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            bound.update((alias.asname or alias.name).split(".")[0] for alias in node.names
                         if not alias.name.startswith("omnium"))
        elif isinstance(node, ast.ImportFrom) and not node.level and not (node.module or "").startswith("omnium"):
            bound.update(alias.asname or alias.name for alias in node.names)
    return bound


def reaches_into_a_library(source: str, ours: set[str], where: str = "") -> list[str]:
    """What in `source` reads or replaces a library's private names, or patches one of its
    modules or classes; `ours` are the names our own code defines."""
    tree = ast.parse(source)
    library = _library_names(tree)
    found = []
    for node in ast.walk(tree):
        line = f"{where}:{getattr(node, 'lineno', '?')}"
        if isinstance(node, ast.ImportFrom) and not node.level and not (node.module or "").startswith("omnium"):
            private = [alias.name for alias in node.names if _is_private(alias.name)]
            if any(_is_private(part) for part in (node.module or "").split(".")) or private:
                found.append(f"{line} imports a private module or name: from {node.module} import {private or '…'}")
        elif isinstance(node, ast.Import):
            found += [f"{line} imports a private module: {alias.name}" for alias in node.names
                      if any(_is_private(part) for part in alias.name.split("."))]
        elif isinstance(node, ast.Attribute) and _is_private(node.attr) and node.attr not in DOCUMENTED:
            calls_a_parent = (isinstance(node.value, ast.Call) and isinstance(node.value.func, ast.Name)
                              and node.value.func.id == "super")
            if calls_a_parent:
                found.append(f"{line} calls a library class's private method: super().{node.attr}")
            elif node.attr not in ours:
                found.append(f"{line} uses a private name of a library object: .{node.attr}")
        if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                if isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) \
                        and target.value.id in library:
                    found.append(f"{line} patches a library's module or class: {target.value.id}.{target.attr} = …")
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "setattr" \
                and node.args and isinstance(node.args[0], ast.Name) and node.args[0].id in library:
            found.append(f"{line} patches a library's module or class: setattr({node.args[0].id}, …)")
    return found


def _product_sources() -> dict[str, str]:
    return {str(path.relative_to(ROOT)): path.read_text() for path in sorted(PRODUCT.rglob("*.py"))
            if "migrations" not in path.parts}


def test_product_code_uses_no_library_internals_and_patches_no_library():
    sources = _product_sources()
    ours = set().union(*(_names_defined(ast.parse(source)) for source in sources.values()))

    found = [finding for where, source in sources.items() for finding in reaches_into_a_library(source, ours, where)]

    assert found == []


@pytest.mark.parametrize("source, finding", [
    ("transport._quick_recv = lambda size: receive(size)", "private name of a library object: ._quick_recv"),
    ("connection._parser.set_pubsub_push_handler(print)", "private name of a library object: ._parser"),
    ("from celery.worker.strategy import _default", "imports a private module or name"),
    ("import kombu._internal", "imports a private module"),
    ("class Form:\n    def _update_errors(self, errors):\n        super()._update_errors(errors)",
     "calls a library class's private method: super()._update_errors"),
    ("from amqp.transport import TCPTransport\nTCPTransport.read_frame = None", "patches a library's module or class"),
    ("import redis\nsetattr(redis, 'Redis', object)", "patches a library's module or class"),
])
def test_the_check_finds_each_way_of_reaching_in(source, finding):
    found = reaches_into_a_library(source, ours=_names_defined(ast.parse(source)) - {"_quick_recv", "_parser"})

    assert any(finding in line for line in found), found


def test_the_check_leaves_our_own_private_names_and_documented_ones_alone():
    source = ("class Cache:\n    def __init__(self):\n        self._lock = None\n"
              "def use(cache, model, parts):\n    return cache._lock, model._meta.label, parts._replace(path='')")

    assert reaches_into_a_library(source, ours=_names_defined(ast.parse(source))) == []
