"""The vulnerability audit (scripts/audit_packages.py, issue 31) never passes having checked
nothing: an unreadable advisory database fails `make audit` and is said aloud by `make test`,
and pip-audit runs strict, so a package it could not look up fails the audit."""

import importlib.util
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def load_audit_script():
    spec = importlib.util.spec_from_file_location("audit_packages", ROOT / "scripts" / "audit_packages.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class NotFound(BaseHTTPRequestHandler):
    """As PyPI's JSON API answers on a mirror that serves packages but not their advisories."""

    def do_GET(self):
        self.send_error(404, "Not Found")

    def log_message(self, *args):
        pass


@pytest.fixture
def api_answering_404():
    server = ThreadingHTTPServer(("127.0.0.1", 0), NotFound)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}" + "/pypi/{name}/{version}/json"
    server.shutdown()
    server.server_close()


@pytest.fixture
def closed_port():
    server = ThreadingHTTPServer(("127.0.0.1", 0), NotFound)
    port = server.server_address[1]
    server.server_close()
    return f"http://127.0.0.1:{port}" + "/pypi/{name}/{version}/json"


def test_an_advisory_api_that_answers_404_is_unreachable_and_says_so(api_answering_404, closed_port):
    audit = load_audit_script()
    assert "answered 404" in audit.why_unreachable(api_answering_404.format(name="django", version="5.2"))
    assert "could not be reached" in audit.why_unreachable(closed_port.format(name="django", version="5.2"))


def test_make_audit_fails_and_make_test_goes_on_aloud_when_no_advisory_can_be_read(api_answering_404, capsys):
    audit = load_audit_script()
    audit.ADVISORY_API = api_answering_404
    assert audit.main([]) == 1
    assert audit.main(["--unless-unreachable"]) == 0
    said = capsys.readouterr().err
    assert said.count("VULNERABILITY AUDIT NOT RUN") == 2
    assert "answered 404" in said and "make audit" in said


def test_a_package_the_audit_could_not_look_up_fails_it(tmp_path, capfd):
    """pip-audit without --strict says "No known vulnerabilities found" and exits 0 when it
    looked up nothing; ours must fail, on a machine with PyPI's API and on one without."""
    lock = tmp_path / "requirements.lock"
    lock.write_text("omnium-no-such-package-on-pypi==1.0 \\\n    --hash=sha256:" + "0" * 64 + "\n")
    assert load_audit_script().pip_audit(lock) != 0
    said = capfd.readouterr()
    assert "omnium-no-such-package-on-pypi: Dependency not found on PyPI and could not be audited" in said.err


def test_the_lock_names_the_package_the_probe_asks_about():
    audit = load_audit_script()
    assert audit.locked_version("django").startswith("5.2.")
