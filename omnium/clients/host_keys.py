"""Fetching an SFTP server's host key for a person to confirm: never pinned without them.

The admin's "Fetch host key" asks the server for its key (key exchange only, no login; run by a
delivery worker, delivery.operations.probes) and shows its type and SHA256 fingerprint as
OpenSSH prints them; the page pins it only when the person confirms. When a key is pinned
already and the server offers another, both fingerprints are shown side by side.
"""

import binascii

import paramiko

from omnium.clients.models import MAX_CONNECT_TIMEOUT_S
from omnium.transports.sftp import fetch_host_key, fingerprint, parse_host_key, public_key_text


def offered_key(host: str, port: int, pinned_text: str = "") -> dict:
    """What the server offers, and how it compares with the key pinned now (if any)."""
    key = fetch_host_key(host, port, timeout=MAX_CONNECT_TIMEOUT_S)
    offered = {"key": public_key_text(key), "type": key.get_name(), "fingerprint": fingerprint(key)}
    pinned = _parsed(pinned_text)
    if pinned is not None:
        offered["pinned_fingerprint"] = fingerprint(pinned)
        offered["changed"] = pinned.asbytes() != key.asbytes()
    return offered


def _parsed(text: str) -> paramiko.PKey | None:
    try:
        return parse_host_key(text) if text.strip() else None
    except (ValueError, IndexError, binascii.Error, paramiko.SSHException):
        return None
