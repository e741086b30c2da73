"""Every name that the demo, the benchmarks and the dev tools import from our own packages
exists where they import it from.

They run outside the test suite (`make demo`, `make bench`), so a name moved to another module
breaks them unseen: scripts/demo.py imported BUILD_COUNTER from omnium.feeds.tasks for a day
after it had moved to omnium.redis_keys, and `make demo` stopped at its imports.
"""

import ast
import importlib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
OURS = ("omnium", "devtools", "bench", "tests")
RUN_OUTSIDE_THE_TESTS = sorted(path for folder in ("scripts", "bench", "devtools") for path in (ROOT / folder).rglob("*.py"))


def names_imported_from_our_packages(path: Path) -> list[tuple[int, str, str]]:
    """(line, module, name) of each `from <our module> import <name>` in the file."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").split(".")[0] in OURS:
            found.extend((node.lineno, node.module, alias.name) for alias in node.names if alias.name != "*")
    return found


def is_importable(module: str, name: str) -> bool:
    """`from module import name` would succeed: an attribute of the module, or a submodule."""
    if hasattr(importlib.import_module(module), name):
        return True
    try:
        importlib.import_module(f"{module}.{name}")
    except ModuleNotFoundError:
        return False
    return True


@pytest.mark.parametrize("path", RUN_OUTSIDE_THE_TESTS, ids=lambda path: str(path.relative_to(ROOT)))
def test_every_name_imported_from_our_packages_is_there(path):
    missing = [f"line {line}: from {module} import {name}" for line, module, name in names_imported_from_our_packages(path)
               if not is_importable(module, name)]
    assert missing == [], f"{path.relative_to(ROOT)} imports names that are not there"


def test_the_check_sees_a_name_that_moved():
    assert is_importable("omnium.redis_keys", "BUILD_COUNTER")
    assert not is_importable("omnium.feeds.tasks", "BUILD_COUNTER")
