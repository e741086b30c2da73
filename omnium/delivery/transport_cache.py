"""One transport per destination per process, reused across sends (e.g. one S3 client),
and replaced when the destination's settings or credentials change."""

import hashlib
import json
import threading

from omnium.transports import registry

_lock = threading.Lock()
_cache: dict[int, tuple[str, object]] = {}


def _fingerprint(destination) -> str:
    settings = json.dumps([destination.kind, destination.config], sort_keys=True).encode()
    return hashlib.sha256(settings + bytes(destination.credentials_encrypted)).hexdigest()


def transport_for(destination):
    fingerprint = _fingerprint(destination)
    with _lock:
        cached = _cache.get(destination.pk)
        if cached and cached[0] == fingerprint:
            return cached[1]
    transport = registry.transport_for(destination.kind, destination.config, destination.credentials)
    with _lock:
        old = _cache.get(destination.pk)
        _cache[destination.pk] = (fingerprint, transport)
    if old:
        old[1].close()
    return transport


def cut(destination_id: int) -> bool:
    """Shut the sockets of the destination's send in progress (a pause must stop it now)."""
    with _lock:
        cached = _cache.get(destination_id)
    if cached is None:
        return False
    cached[1]._sockets.cut_all()
    return True
