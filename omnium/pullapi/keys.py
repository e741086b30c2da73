"""API key authentication for the pull API, following DRF's BaseAuthentication contract.

`authenticate(request)` returns None when the request carries no key at all (so another
authenticator, the staff session, may try), `(PullClient, KnownKey)` for a valid key, and
raises AuthenticationFailed (401) for a key that is malformed, unknown, revoked or sent in
the address without permission. Keys come from `Authorization: Bearer …`, `X-Api-Key`, or,
for keys flagged for legacy clients, the `key` query parameter. All of it is in memory.
"""

from rest_framework import exceptions
from rest_framework.authentication import BaseAuthentication

from omnium.clients import keys
from omnium.pullapi import failed_keys
from omnium.pullapi.catalogue import holder
from omnium.pullapi.change_notices import ensure_current

QUERY_PARAMETER = "key"


class TooManyFailedKeys(exceptions.Throttled):
    default_detail = "Too many failed key attempts from your address."


class ApiKeyAuthentication(BaseAuthentication):
    def authenticate(self, request):
        meta = request._request.META
        presented, in_query = _presented_key(meta, request._request)
        if presented is None:
            return None
        address = meta.get("REMOTE_ADDR", "")
        wait = failed_keys.blocked(address)
        if wait is not None:
            raise TooManyFailedKeys(wait=wait)
        ensure_current()
        known = holder.snapshot.keys.get(keys.lookup_id(presented)) if keys.looks_like_key(presented) else None
        if known is None or not keys.matches(presented, known.key_hash):
            self._fail(address, "Unknown or revoked API key.")
        if in_query and not known.query_string_allowed:
            self._fail(address, "This key may not be sent in the address; send it in the Authorization header.")
        return known.client, known

    def authenticate_header(self, request):
        return 'Bearer realm="omnium"'

    def _fail(self, address: str, detail: str):
        wait = failed_keys.note_failure(address)
        if wait is not None:
            raise TooManyFailedKeys(wait=wait)
        raise exceptions.AuthenticationFailed(detail)


def _presented_key(meta, django_request) -> tuple[str | None, bool]:
    header = meta.get("HTTP_AUTHORIZATION")
    if header:
        scheme, _, value = header.partition(" ")
        if scheme.lower() == "bearer" and value.strip():
            return value.strip(), False
    key = meta.get("HTTP_X_API_KEY")
    if key:
        return key.strip(), False
    if meta.get("QUERY_STRING"):  # parse the query only when there is one
        query = django_request.GET
        if QUERY_PARAMETER in query:
            return query[QUERY_PARAMETER], True
    return None, False
