"""An HTTP connection pool whose replies count only when their headers arrived whole.

http.client reads header lines until a blank line *or the end of the stream*. A reply cut
after its status line (a deadline, a reset, a proxy giving up) therefore reads as a complete
"200 OK" with no headers and, lacking a Content-Length, an empty body read to the end of the
stream. A push must never take that for a receipt, so the sessions made here raise instead.
(A body shorter than its declared Content-Length is already refused by urllib3, which
enforces the length by default.)
"""

from __future__ import annotations

import http.client
import ssl

import certifi
import urllib3.connection
import urllib3.connectionpool
from urllib3.util import parse_url


class HeadersCut(http.client.HTTPException):
    """The reply ended before the blank line that ends its headers."""


class _LastLineSeen:
    """Wraps a reply stream and remembers the last line read from it."""

    def __init__(self, stream):
        self._stream = stream
        self.last_line: bytes | None = None

    def readline(self, limit: int = -1) -> bytes:
        self.last_line = self._stream.readline(limit)
        return self.last_line

    def __getattr__(self, name):
        return getattr(self._stream, name)


class WholeHeadersResponse(http.client.HTTPResponse):
    """An http.client reply that raises ``HeadersCut`` when its headers were ended by the end
    of the stream rather than by a blank line."""

    def begin(self) -> None:
        if self.headers is not None:
            return
        stream = self.fp
        self.fp = watched = _LastLineSeen(stream)
        try:
            super().begin()
        finally:
            self.fp = stream
        # The header loop stops at a blank line, or at b"" when the stream ended.
        if watched.last_line not in (b"\r\n", b"\n"):
            raise HeadersCut(f"the reply ended before its headers did (after status {self.status})")


class _Connection(urllib3.connection.HTTPConnection):
    response_class = WholeHeadersResponse


class _TLSConnection(urllib3.connection.HTTPSConnection):
    response_class = WholeHeadersResponse


class _Pool(urllib3.connectionpool.HTTPConnectionPool):
    ConnectionCls = _Connection


class _TLSPool(urllib3.connectionpool.HTTPSConnectionPool):
    ConnectionCls = _TLSConnection


def whole_replies_pool(url: str, tls: ssl.SSLContext | None = None) -> tuple[urllib3.connectionpool.HTTPConnectionPool, str]:
    """A pool of connections to `url`'s host (an http:// or https:// URL, as the webhook's
    settings are checked to be), and the target to request there (path and query). A reply
    whose headers were cut raises ``urllib3.exceptions.ProtocolError`` (caused by
    ``HeadersCut``); TLS is verified against certifi's certificates, as requests does, or as
    ``tls`` says (a CA of the receiver's, our client certificate). Raises
    ``urllib3.exceptions.LocationValueError`` for a URL that names no host."""
    parts = parse_url(url)
    if not parts.host:
        raise urllib3.exceptions.LocationValueError(f"no host in {url!r}")
    if parts.scheme == "https" and tls is not None:
        return _TLSPool(parts.host, parts.port, ssl_context=tls), parts.request_uri
    if parts.scheme == "https":
        return _TLSPool(parts.host, parts.port, cert_reqs="CERT_REQUIRED", ca_certs=certifi.where()), parts.request_uri
    return _Pool(parts.host, parts.port), parts.request_uri
