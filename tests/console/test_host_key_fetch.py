"""Fetching an SFTP host key: the fingerprint as OpenSSH prints it, nothing pinned by the
fetch itself, and a changed key shown beside the pinned one."""

import base64
import hashlib

import pytest

from devtools.loopback.servers import other_host_keys
from omnium.clients.host_keys import offered_key
from omnium.clients.models import Client, Destination

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


def test_the_fetch_endpoint_pins_nothing(admin_client, sftp_server, db):
    destination = Destination.objects.create(
        client=Client.objects.create(name="c"), name="d", kind="sftp",
        config={**sftp_server.destination_config("/"), "host_key": other_host_keys()["changed"]})

    reply = admin_client.post("/admin/clients/destination/fetch-host-key/",
                              {"host": "127.0.0.1", "port": sftp_server.port, "pinned": destination.config["host_key"]})

    assert reply.json()["changed"] is True
    destination.refresh_from_db()
    assert destination.config["host_key"] != sftp_server.host_key
