"""The hard deadline of one whole send, and the sockets it cuts when it fires.

Library timeouts restart with every read (requests, botocore, paramiko, ftplib, redis-py), so
they are no deadline: a host that trickles a byte a second never trips them. This module is
the limit every transport's send runs under (ARCHITECTURE rule 5).
"""

from __future__ import annotations

import contextvars
import socket
import sys
import threading
import time
import weakref

from . import address_policy
from .failures import Reason, TransportError
from .watchdog import Watch, watchdog

_CURRENT_DEADLINE: contextvars.ContextVar[Deadline | None] = contextvars.ContextVar(
    "omnium_transport_deadline", default=None
)
_hook_lock = threading.Lock()
_hook_installed = False


def _note_new_socket(event: str, args: tuple) -> None:
    # boto3, requests, redis-py, ftplib and paramiko hide their sockets; the audit events
    # for a new socket (plain or TLS) and for its connect are the one public place where all
    # of them pass: the deadline tracks the socket, and the address policy sees the address
    # really connected to (after DNS, so a name that resolves elsewhere later is still caught).
    if event == "socket.__new__":
        deadline = _CURRENT_DEADLINE.get()
        if deadline is not None:
            deadline.track(args[0])
    elif event == "socket.connect":
        deadline = _CURRENT_DEADLINE.get()
        if deadline is not None:
            deadline.check_peer(args[1])


class AddressRefused(ConnectionRefusedError):
    """Raised inside a library's connect: an OSError, so the library gives up on that address
    as it would on any refused one; the deadline remembers why, and the send fails permanently."""


def _install_socket_audit() -> None:
    global _hook_installed
    with _hook_lock:
        if not _hook_installed:
            sys.addaudithook(_note_new_socket)
            _hook_installed = True


class SocketSet:
    """The sockets a transport has opened, held weakly so closed ones simply drop out.

    It lives as long as the transport, because pooled connections (S3, webhook, Redis)
    opened during one send are reused by later sends and must be cut by their deadlines.
    """

    def __init__(self):
        self._sockets: weakref.WeakSet = weakref.WeakSet()
        self._lock = threading.Lock()

    def add(self, sock: socket.socket) -> None:
        with self._lock:
            self._sockets.add(sock)

    def cut_all(self) -> None:
        with self._lock:
            sockets = list(self._sockets)
        for sock in sockets:
            # shutdown, not close: closing from this thread would free the descriptor number
            # while the sending thread still uses it; shutdown wakes its blocked read or write
            # and leaves the closing to the library that owns the socket.
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


class Deadline:
    """A hard limit on the wall-clock time of one whole send.

    Library timeouts restart with every read, so a host that trickles a byte a second never
    trips them. Inside ``with Deadline(...)``, every socket the thread opens is tracked; a
    watchdog timer shuts them all down when the time is up, which wakes the blocked library
    call (paramiko's reader thread too: it sees end-of-file and ends the session); the timers
    of every send share one thread (watchdog.py). Leaving
    the block after the deadline fired raises a transient
    ``TransportError("deadline exceeded after N s")``, whether the library raised or
    returned: a cut socket reads as a clean end of stream, so an HTTP client that had the
    status line "200 OK" takes the cut for the end of the reply and returns success.
    """

    def __init__(self, seconds: float, *, sockets: SocketSet | None = None, still_ours=None,
                 plaintext: str | None = None):
        self.seconds = seconds
        self._plaintext = plaintext  # the unencrypted protocol the send speaks, if it does
        self._still_ours = still_ours
        self._sockets = sockets if sockets is not None else SocketSet()
        self._expired = threading.Event()
        self._ends_at = float("inf")  # set when entered
        self._watch: Watch | None = None
        self._token: contextvars.Token | None = None
        self.refused_address: str | None = None

    def __enter__(self) -> Deadline:
        _install_socket_audit()
        self._ends_at = time.monotonic() + self.seconds
        self._watch = watchdog.watch(self.seconds, self._expire)
        self._token = _CURRENT_DEADLINE.set(self)
        return self

    def __exit__(self, exc_type, exc, tb) -> bool:
        self._watch.cancel()
        _CURRENT_DEADLINE.reset(self._token)
        if self.refused_address is not None and exc is not None:
            raise TransportError(f"refused to connect: {self.refused_address}", permanent=True,
                                 reason=Reason.ADDRESS_REFUSED) from exc
        if self.expired:
            raise self.exceeded() from exc
        return False

    @property
    def expired(self) -> bool:
        """True once the deadline has passed, whether or not the watchdog's thread has run yet to
        cut the sockets: on a busy machine it can wake late, and a library's own timeout of the
        same length (redis-py's socket timeout) then ended the send first and named itself."""
        return self._expired.is_set() or time.monotonic() >= self._ends_at

    def remaining(self) -> float:
        return max(0.0, self._ends_at - time.monotonic())

    def timeout(self, cap: float) -> float:
        """How long one operation may wait: ``cap``, but never past the deadline."""
        self.check()
        return max(0.01, min(cap, self.remaining()))

    def check(self) -> None:
        if self.expired:
            raise self.exceeded()

    def before_commit(self, kind: str) -> None:
        """Called just before the step that makes the file visible (a rename over the final
        name, the single PUT, POST or write): refuse it when the deadline fired or when the
        caller no longer holds the destination (it froze, and another sender took over)."""
        self.check()
        if self._still_ours is not None and not self._still_ours():
            raise TransportError(f"{kind}: stopped before making the file visible: another sender has this destination now")

    def exceeded(self) -> TransportError:
        return TransportError(f"deadline exceeded after {self.seconds:g} s", permanent=False,
                              reason=Reason.DEADLINE, seconds=self.seconds)

    def track(self, sock: socket.socket) -> None:
        # A library that retries after the cut must not get a fresh connection.
        self.check()
        self._sockets.add(sock)

    def check_peer(self, address) -> None:
        refusal = address_policy.current().refusal_of_peer(address, self._plaintext)
        if refusal is not None:
            self.refused_address = refusal
            raise AddressRefused(refusal)

    def _expire(self) -> None:
        self._expired.set()
        self._sockets.cut_all()


def outside_any_deadline(function, *args):
    """``function(*args)`` as if no send were in progress: its sockets are neither tracked nor
    judged by the address policy. Only for the worker's own infrastructure that a send needs,
    never for an address a person typed: the cloud's metadata or container endpoint that hands
    the worker its AWS role lives at an address no destination may reach."""
    return contextvars.Context().run(function, *args)
