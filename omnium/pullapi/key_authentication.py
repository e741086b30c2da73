"""API key authentication for the pull API, following DRF's BaseAuthentication contract.

`authenticate(request)` returns None when the request carries no key at all (so another
authenticator, the staff session, may try), `(PullClient, KnownKey)` for a valid key, and
raises AuthenticationFailed (401) for a key that is malformed, unknown, revoked, expired or sent in
the address without permission. Keys come from `Authorization: Bearer …`, `X-Api-Key`, or,
for keys flagged for legacy clients, the `key` query parameter. All of it is in memory.

A valid key is served before any failure count is consulted, so other people's failures never
refuse it; failures are counted per (client address, key prefix) (`failed_keys`).
"""

from rest_framework import exceptions
from rest_framework.authentication import BaseAuthentication

from omnium.clients import key_format
from omnium.pullapi import failed_keys, key_use
from omnium.pullapi.catalogue import holder
from omnium.pullapi.change_notices import ensure_current
from omnium.pullapi.client_ip import client_ip

QUERY_PARAMETER = "key"


class TooManyFailedKeys(exceptions.Throttled):
    default_detail = "Too many failed attempts with this key from your address."


class ApiKeyAuthentication(BaseAuthentication):
    def authenticate(self, request):
        meta = request.META
        presented, in_query = _presented_key(meta, request)
        if presented is None:
            return None
        known = _known_key(presented)
        if known is not None and (known.query_string_allowed or not in_query):
            return known.client, known
        self._fail(meta, presented, "Unknown, revoked or expired API key." if known is None else
                   "This key may not be sent in the address; send it in the Authorization header.")

    def authenticate_header(self, request):
        return 'Bearer realm="omnium"'

    def _fail(self, meta, presented: str, detail: str):
        address, prefix = client_ip(meta), _prefix(presented)
        wait = failed_keys.blocked(address, prefix) or failed_keys.note_failure(address, prefix)
        if wait is not None:
            raise TooManyFailedKeys(wait=wait)
        raise exceptions.AuthenticationFailed(detail)


def valid_header_key(meta):
    """The catalogue's entry for the valid key a request brings in a header; None when it brings
    none there or one to refuse (refusals are ApiKeyAuthentication's, which counts them)."""
    presented = header_key(meta)
    return None if presented is None else _known_key(presented)


def _known_key(presented: str):
    """The catalogue's entry for a valid key (not expired), or None (constant-time comparison).
    A valid key's use is noted for its last-used time (`key_use`)."""
    if not key_format.looks_like_key(presented):
        return None
    ensure_current()
    known = holder.snapshot.keys.get(key_format.lookup_id(presented))
    if known is None or known.expired() or not key_format.matches(presented, known.key_hash):
        return None
    key_use.note(known.key_id)
    return known


def _prefix(presented: str) -> str:
    """What failures are counted under: the lookup id of a real key (a guess at it), else one
    shared name (arbitrary text or made-up prefixes must not make arbitrary Redis keys)."""
    if key_format.looks_like_key(presented):
        lookup_id = key_format.lookup_id(presented)
        if lookup_id in holder.snapshot.keys:
            return lookup_id
    return failed_keys.NO_SUCH_KEY


def header_key(meta) -> str | None:
    """The key a request brings in a header (`Authorization: Bearer …` or `X-Api-Key`), or None.
    `meta` is a request's META or its WSGI environ (keyed_requests decides on it)."""
    header = meta.get("HTTP_AUTHORIZATION")
    if header:
        scheme, _, value = header.partition(" ")
        if scheme.lower() == "bearer" and value.strip():
            return value.strip()
    key = meta.get("HTTP_X_API_KEY")
    return key.strip() if key else None


def _presented_key(meta, request) -> tuple[str | None, bool]:
    key = header_key(meta)
    if key is not None:
        return key, False
    if meta.get("QUERY_STRING"):  # parse the query only when there is one
        query = request.query_params
        if QUERY_PARAMETER in query:
            return query[QUERY_PARAMETER], True
    return None, False
