"""Why a push failed, in categories a person can act on, and one plain sentence for each.

Each transport sets ``TransportError.reason`` where it maps its library's errors; what the
library said stays in the error's message as the technical detail. The status screens and the
alerts show ``sentence(error)`` first and the detail underneath, so "SSHException: No existing
session" becomes "Connected, but the server did not answer within 10 s."
"""

from __future__ import annotations

import errno
import socket
import ssl
from enum import StrEnum
from http import HTTPStatus


class Reason(StrEnum):
    UNRESOLVED = "unresolved"  # the host name does not resolve
    REFUSED = "refused"  # nothing listens at that address and port
    UNREACHABLE = "unreachable"  # no TCP connection within the connect timeout
    NO_ANSWER = "no_answer"  # connected, then silence until a timeout
    AUTH_REFUSED = "auth_refused"  # the server refused our login or keys
    HOST_KEY_CHANGED = "host_key_changed"  # SFTP: not the key that was pinned
    TLS_REFUSED = "tls_refused"  # the server's certificate is not trusted
    PERMISSION_DENIED = "permission_denied"  # logged in, but may not write there
    MISSING_TARGET = "missing_target"  # the bucket or folder does not exist
    DISK_FULL = "disk_full"  # the server has no room (or quota) left
    HTTP_STATUS = "http_status"  # an HTTP receiver answered with a failure status
    DEADLINE = "deadline"  # the whole send did not finish in time and was cut
    CONNECTION_LOST = "connection_lost"  # the server closed or reset the connection mid-way
    INVALID_SETTINGS = "invalid_settings"  # the destination's settings or the path are unusable
    ADDRESS_REFUSED = "address_refused"  # the host is on a network we never send to (address_policy)
    OTHER = "other"


_SENTENCES = {
    Reason.UNRESOLVED: "Could not resolve the host name: check the host or URL.",
    Reason.REFUSED: "Could not connect: the server refused the connection (wrong port, or the service is down).",
    Reason.UNREACHABLE: "Could not connect within {seconds} s: nothing answered at that address.",
    Reason.NO_ANSWER: "Connected, but the server did not answer within {seconds} s.",
    Reason.AUTH_REFUSED: "The server refused our login: check the user name and credentials.",
    Reason.HOST_KEY_CHANGED: "The server's host key is not the one pinned: nothing is sent until a person "
                             "confirms the new key.",
    Reason.TLS_REFUSED: "The server's TLS certificate is not trusted.",
    Reason.PERMISSION_DENIED: "Logged in, but the server does not let us write there (permission denied on "
                              "the path).",
    Reason.MISSING_TARGET: "The bucket or folder does not exist.",
    Reason.DISK_FULL: "The server's disk is full (or our quota is used up).",
    Reason.HTTP_STATUS: "The receiver answered HTTP {status}.",
    Reason.DEADLINE: "The send did not finish within {seconds} s and was cut: the server stopped answering "
                     "or was too slow.",
    Reason.CONNECTION_LOST: "The server closed the connection before the send finished.",
    Reason.INVALID_SETTINGS: "The destination's settings cannot work as they are.",
    Reason.ADDRESS_REFUSED: "The destination's address is a loopback, private, link-local or metadata address, "
                            "which we do not send to: use a public address, or allow its network.",
    Reason.OTHER: "The send failed.",
}


def sentence(reason: Reason | str, *, seconds: float | None = None, status: int | None = None) -> str:
    """One plain sentence for a failure of this kind."""
    template = _SENTENCES.get(_known_reason(reason))
    return template.format(seconds=f"{seconds:g}" if seconds is not None else "a few",
                           status=_status_words(status))


def _known_reason(reason: Reason | str) -> Reason:
    try:
        return Reason(reason)
    except ValueError:
        return Reason.OTHER


def _status_words(status: int | None) -> str:
    if status is None:
        return "with a failure"
    try:
        return f"{status} {HTTPStatus(status).phrase}"
    except ValueError:
        return str(status)


_FULL = (errno.ENOSPC, errno.EDQUOT)
_DENIED = (errno.EACCES, errno.EPERM, errno.EROFS)


def reason_of_os_error(exc: BaseException | None, *, connected: bool) -> Reason:
    """The category of a socket or file error found anywhere in ``exc``'s cause chain.

    ``connected``: whether the TCP connection was up when it happened, which turns a timeout
    from "could not connect" into "connected, no answer"."""
    for error in _causes(exc):
        if isinstance(error, socket.gaierror):
            return Reason.UNRESOLVED
        if isinstance(error, ConnectionRefusedError):
            return Reason.REFUSED
        if isinstance(error, ssl.SSLCertVerificationError):
            return Reason.TLS_REFUSED
        if isinstance(error, ssl.SSLError):  # its errno is OpenSSL's (1 for most), not the system's EPERM
            return Reason.OTHER
        if isinstance(error, TimeoutError | socket.timeout):
            return Reason.NO_ANSWER if connected else Reason.UNREACHABLE
        if isinstance(error, ConnectionError | EOFError):
            return Reason.CONNECTION_LOST
        if isinstance(error, OSError) and error.errno in _FULL:
            return Reason.DISK_FULL
        if isinstance(error, OSError) and error.errno in _DENIED:
            return Reason.PERMISSION_DENIED
    return Reason.OTHER


def _causes(exc: BaseException | None):
    seen = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        yield exc
        exc = exc.__cause__ or exc.__context__


class TransportError(Exception):
    """A push that did not land.

    ``permanent`` is True when sending the same file again cannot succeed until a person
    changes something (bad credentials, unknown or changed host key, missing bucket, HTTP 410
    or another 4xx); False when a later try may land (timeouts, refused or reset connections,
    5xx, 408, 429). ``retry_after`` is the destination's own hint in seconds, if it gave one;
    ``status`` its HTTP status, if it answered one. ``reason`` says what kind of failure it
    was (see ``failures.Reason``), ``seconds`` the timeout that ran out, if one did; together
    they make ``plain_sentence``. ``host``: the server that answered or failed, where the
    transport knows it and its message may not say it. The message may quote a URL with its
    path and query: store or show it only through ``omnium.safe_errors``.
    """

    def __init__(self, message: str, *, permanent: bool = False, retry_after: float | None = None,
                 status: int | None = None, reason: Reason = Reason.OTHER, seconds: float | None = None,
                 host: str | None = None):
        super().__init__(message)
        self.host = host
        self.permanent = permanent
        self.retry_after = retry_after
        self.status = status
        self.reason = reason
        self.seconds = seconds

    @property
    def plain_sentence(self) -> str:
        return sentence(self.reason, seconds=self.seconds, status=self.status)
