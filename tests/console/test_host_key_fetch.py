"""Fetching an SFTP host key: the fingerprint as OpenSSH prints it, nothing pinned by the
fetch itself, and a changed key shown beside the pinned one."""

import base64
import hashlib
import time

import pytest

from devtools.loopback.servers import other_host_keys
from omnium.clients.host_keys import offered_key
from omnium.clients.models import Client, Destination
from omnium.delivery.models import Probe

pytestmark = pytest.mark.servers


def _openssh_fingerprint(public_key: str) -> str:
    """What `ssh-keygen -lf` prints: SHA256 of the key blob, base64 without padding."""
    blob = base64.b64decode(public_key.split()[1])
    return "SHA256:" + base64.b64encode(hashlib.sha256(blob).digest()).decode().rstrip("=")


def test_fetch_shows_the_key_type_and_openssh_fingerprint(sftp_server):
    offered = offered_key("127.0.0.1", sftp_server.port)

    assert offered["key"] == sftp_server.host_key.strip()
    assert offered["fingerprint"] == f"ssh-ed25519 {_openssh_fingerprint(sftp_server.host_key)}"
    assert "changed" not in offered  # nothing pinned yet: nothing to compare


def test_a_changed_key_is_shown_beside_the_pinned_one(sftp_server):
    pinned = other_host_keys()["changed"]

    offered = offered_key("127.0.0.1", sftp_server.port, pinned)

    assert offered["changed"] is True
    assert offered["pinned_fingerprint"] == f"ssh-ed25519 {_openssh_fingerprint(pinned)}"
    assert offered["fingerprint"] == f"ssh-ed25519 {_openssh_fingerprint(sftp_server.host_key)}"


def probe_outcome(browser, reply, within_s: float = 20) -> dict:
    """Poll the status URL a fetch answered with, as the form's script does, until it has an outcome."""
    assert reply.status_code == 202, reply.content
    deadline = time.monotonic() + within_s
    while (probe := browser.get(reply.json()["status_url"]).json())["waiting"]:
        assert time.monotonic() < deadline, "no outcome"
        time.sleep(0.2)
    return probe


def test_the_fetch_runs_in_a_delivery_worker_and_pins_nothing(admin_client, sftp_server, delivery_worker):
    destination = Destination.objects.create(
        client=Client.objects.create(name="c"), name="d", kind="sftp",
        config={**sftp_server.destination_config("/"), "host_key": other_host_keys()["changed"]})

    reply = admin_client.post("/admin/clients/destination/fetch-host-key/",
                              {"host": "127.0.0.1", "port": sftp_server.port, "pinned": destination.config["host_key"]})

    offered = probe_outcome(admin_client, reply)
    assert offered["ok"] and offered["changed"] is True
    assert offered["fingerprint"] == f"ssh-ed25519 {_openssh_fingerprint(sftp_server.host_key)}"
    destination.refresh_from_db()
    assert destination.config["host_key"] != sftp_server.host_key
    assert Probe.objects.get().requested_by.username == "admin"


def test_a_silent_host_holds_no_request_and_its_failure_is_said_plainly(admin_client, silent_host, delivery_worker):
    started = time.monotonic()
    reply = admin_client.post("/admin/clients/destination/fetch-host-key/", {"host": "127.0.0.1", "port": silent_host.port})
    answered_in = time.monotonic() - started

    outcome = probe_outcome(admin_client, reply, within_s=30)

    assert answered_in < 1.0
    assert outcome["ok"] is False and outcome["error"]


@pytest.mark.django_db(transaction=True)
def test_fetches_are_limited_per_person_and_a_refused_one_says_why(admin_client, settings):
    settings.OMNIUM = {**settings.OMNIUM, "PROBES_AT_ONCE": 100, "PROBES_PER_PERSON_PER_MINUTE": 2}
    replies = [admin_client.post("/admin/clients/destination/fetch-host-key/", {"host": "203.0.113.9", "port": 22})
               for _ in range(3)]

    assert [reply.status_code for reply in replies] == [202, 202, 429]
    assert replies[-1].json()["error"] == "Not started: one person may start 2 tests a minute; try the rest in a minute."


@pytest.mark.django_db(transaction=True)
def test_someone_elses_fetch_cannot_be_read(admin_client, client, django_user_model, settings):
    reply = admin_client.post("/admin/clients/destination/fetch-host-key/", {"host": "203.0.113.9", "port": 22})
    colleague = django_user_model.objects.create_user("colleague", password="x", is_staff=True)
    client.force_login(colleague)

    assert client.get(reply.json()["status_url"]).status_code == 404
