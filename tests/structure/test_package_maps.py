"""Each package's `__init__.py` maps every one of its modules, so that a newcomer finds a
module from its package's first page (and a new module without a place fails here)."""

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
MAPPED = ["omnium/delivery", "omnium/delivery/engine", "omnium/delivery/worker", "omnium/delivery/operations",
          "omnium/pullapi", "omnium/feeds", "omnium/clients", "omnium/reports",
          "omnium/caching", "omnium/database", "omnium/encoding", "omnium/workers", "omnium/portal"]


def modules_of(package: Path) -> set[str]:
    modules = {path.stem for path in package.glob("*.py") if path.stem != "__init__"}
    packages = {path.parent.name for path in package.glob("*/__init__.py") if path.parent.name != "migrations"}
    return modules | packages


@pytest.mark.parametrize("package", MAPPED)
def test_the_package_map_names_every_module(package):
    directory = ROOT / package
    text = ast.get_docstring(ast.parse((directory / "__init__.py").read_text())) or ""
    unnamed = sorted(m for m in modules_of(directory) if f"`{m}`" not in text and f"`{m}/" not in text)
    assert unnamed == [], f"{package}/__init__.py does not name: {', '.join(unnamed)}"
