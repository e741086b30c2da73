"""One transport per destination per process, reused across sends (e.g. one S3 client),
and replaced when the destination's settings or credentials change, a rotated AWS secret
that its credentials come from included."""

import hashlib
import json
import threading
from dataclasses import dataclass

from omnium.clients import secrets_manager
from omnium.transports import registry


@dataclass(frozen=True)
class _Cached:
    fingerprint: str
    transport: object
    destination: object  # the Destination it was made for
    from_secret: bool  # its credentials come from AWS Secrets Manager: look again at each use


_lock = threading.Lock()
_cache: dict[int, _Cached] = {}


def _fingerprint(destination, secret_version: str | None) -> str:
    settings = json.dumps([destination.kind, destination.config, secret_version], sort_keys=True).encode()
    return hashlib.sha256(settings + bytes(destination.credentials_encrypted)).hexdigest()


def transport_for(destination):
    """The destination's transport; raises CredentialError (or SecretError) when its
    credentials cannot be had, and then sends nothing."""
    with _lock:
        cached = _cache.get(destination.pk)
    # The same Destination object as the last time: the sender loads one again only when its
    # row changed (sender._destination), so nothing to compare (the fingerprint's JSON and hash
    # were 2 % of a delivery worker's Python time in a fan-out).
    if cached and cached.destination is destination and not cached.from_secret:
        return cached.transport
    credentials, secret_version = destination.credentials_and_secret_version()
    fingerprint = _fingerprint(destination, secret_version)
    if cached and cached.fingerprint == fingerprint:
        with _lock:
            _cache[destination.pk] = _Cached(fingerprint, cached.transport, destination, cached.from_secret)
        return cached.transport
    transport = registry.transport_for(destination.kind, destination.config, credentials)
    with _lock:
        old = _cache.get(destination.pk)
        _cache[destination.pk] = _Cached(fingerprint, transport, destination, secret_version is not None)
    if old:
        old.transport.close()
    return transport


def credentials_refused(destination) -> None:
    """The server refused the destination's credentials: if they come from an AWS secret, read
    it again at the next send rather than after OMNIUM_SECRETS_CACHE_S (it may have been rotated)."""
    with _lock:
        cached = _cache.get(destination.pk)
    if cached is not None and cached.from_secret:
        secrets_manager.forget(secrets_manager.reference_in(destination.stored_credentials))


def cut(destination_id: int) -> bool:
    """Shut the sockets of the destination's send in progress (a pause must stop it now)."""
    with _lock:
        cached = _cache.get(destination_id)
    if cached is None:
        return False
    cached.transport.cut()
    return True
