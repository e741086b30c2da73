"""What a production host installs is what the tests ran on, file for file: requirements.lock
pins every package the product needs (requirements.txt and what those need) with the hashes of
their files, and `make install` installs it with --require-hashes before the tools."""

import re
from importlib import metadata
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PIN = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)(?:\[[^\]]*\])?==([^\s\\;]+)", re.M)


def pins(text: str) -> dict[str, str]:
    return {_normal(name): version for name, version in PIN.findall(text)}


def _normal(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def locked_entries() -> list[str]:
    """Each package's block of requirements.lock: its pin, its hashes, the comment of who needs it."""
    return re.split(r"\n(?=[A-Za-z0-9])", (ROOT / "requirements.lock").read_text().split("\n\n")[-1])


def test_every_product_requirement_is_locked_at_its_pinned_version():
    wanted, locked = pins((ROOT / "requirements.txt").read_text()), pins((ROOT / "requirements.lock").read_text())
    assert {name: (version, locked.get(name)) for name, version in wanted.items() if locked.get(name) != version} == {}, \
        "requirements.txt changed since the lock was made: run `make lock`"


def test_every_locked_package_carries_the_hashes_of_its_files():
    entries = [entry for entry in locked_entries() if PIN.match(entry)]
    assert len(entries) > 30
    assert [entry.split()[0] for entry in entries if "--hash=sha256:" not in entry] == []


def test_no_test_or_demo_tool_is_locked_for_production():
    locked = pins((ROOT / "requirements.lock").read_text())
    tools = pins((ROOT / "requirements-dev.txt").read_text())
    assert sorted(set(tools) & set(locked)) == []


def test_the_packages_the_tests_run_on_are_the_locked_ones():
    locked = pins((ROOT / "requirements.lock").read_text())
    installed = {name: metadata.version(name) for name in locked}
    assert {name: (version, installed[name]) for name, version in locked.items() if installed[name] != version} == {}


def test_make_install_checks_the_hashes():
    makefile = (ROOT / "Makefile").read_text()
    assert "pip install --quiet --require-hashes -r requirements.lock" in makefile
