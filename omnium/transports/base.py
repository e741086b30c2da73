"""The contract every push transport keeps, and the pieces the transports share.

A transport pushes one feed file to one destination. It is given bytes, a remote path, a
config dict (already validated against its ``config_schema``) and a credentials dict, and
it returns a ``Receipt`` or raises ``TransportError``. It knows nothing of Django.
"""

from __future__ import annotations

import contextvars
import posixpath
import re
import secrets
import socket
import sys
import threading
import time
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar

from . import address_policy
from .failures import Reason, reason_of_os_error, sentence
from .paths import unsafe_path_reason
from .watchdog import Watch, watchdog


class TransportError(Exception):
    """A push that did not land.

    ``permanent`` is True when sending the same file again cannot succeed until a person
    changes something (bad credentials, unknown or changed host key, missing bucket, HTTP 410
    or another 4xx); False when a later try may land (timeouts, refused or reset connections,
    5xx, 408, 429). ``retry_after`` is the destination's own hint in seconds, if it gave one;
    ``status`` its HTTP status, if it answered one. ``reason`` says what kind of failure it
    was (see ``failures.Reason``), ``seconds`` the timeout that ran out, if one did; together
    they make ``plain_sentence``. The message may quote a URL with its path and query: store
    or show it only through ``omnium.safe_errors``.
    """

    def __init__(self, message: str, *, permanent: bool = False, retry_after: float | None = None,
                 status: int | None = None, reason: Reason = Reason.OTHER, seconds: float | None = None):
        super().__init__(message)
        self.permanent = permanent
        self.retry_after = retry_after
        self.status = status
        self.reason = reason
        self.seconds = seconds

    @property
    def plain_sentence(self) -> str:
        return sentence(self.reason, seconds=self.seconds, status=self.status)


@dataclass(frozen=True)
class Receipt:
    """Proof that a file landed: ``text`` for people (an S3 ETag, "size=123 path=/x/y.json",
    "202 Accepted; x-request-id=...; empty body"), ``remote_bytes`` as the destination
    reported it, None if it did not."""

    text: str
    remote_bytes: int | None = None


@dataclass(frozen=True)
class FeedFile:
    """One version of one feed file, as a transport pushes it."""

    body: bytes
    path: str
    content_type: str
    version: int
    etag: str


# --- config schema ------------------------------------------------------------------------

_NOUNS = {str: "a string", int: "an integer", float: "a number", bool: "true or false"}


@dataclass(frozen=True)
class Setting:
    """One key of a transport's JSON config or credentials: its type, bounds and default.

    ``check`` adds a rule the type cannot express; it returns a message tail such as
    "must start with https://" or None when the value is fine. ``help`` and ``multiline``
    are for the admin's form, which is generated from these declarations.
    """

    kind: type
    required: bool = False
    default: Any = None
    minimum: float | None = None
    maximum: float | None = None
    choices: tuple[str, ...] | None = None
    check: Callable[[Any], str | None] | None = None
    help: str = ""
    multiline: bool = False

    def problem(self, value: Any) -> str | None:
        """What is wrong with ``value`` (a message tail), or None."""
        if not self._fits(value):
            return "must be " + self.describe()
        return self.check(value) if self.check else None

    def describe(self) -> str:
        if self.choices:
            return "one of: " + ", ".join(self.choices)
        noun = _NOUNS[self.kind]
        low, high = self.minimum, self.maximum
        if low is not None and high is not None:
            return f"{noun} between {low:g} and {high:g}"
        if low is not None:
            return f"{noun} of at least {low:g}"
        return f"{noun} of at most {high:g}" if high is not None else noun

    def _fits(self, value: Any) -> bool:
        # bool is an int in Python, but `"port": true` in a config is a mistake, not port 1.
        if isinstance(value, bool) != (self.kind is bool):
            return False
        accepted = (int, float) if self.kind is float else self.kind
        if not isinstance(value, accepted):
            return False
        if self.choices is not None and value not in self.choices:
            return False
        too_low = self.minimum is not None and value < self.minimum
        too_high = self.maximum is not None and value > self.maximum
        return not (too_low or too_high)


Schema = dict[str, Setting]

# Every transport takes these (ARCHITECTURE rule 5: connect 10 s, whole send 60 s).
TIMEOUT_SETTINGS: Schema = {
    "connect_timeout": Setting(float, default=10.0, minimum=0.1, maximum=60,
                               help="Seconds to wait for the connection and the server's first answer."),
    "send_timeout": Setting(float, default=60.0, minimum=0.5, maximum=600,
                            help="Hard limit in seconds for a whole send, connect included."),
}


def validate(schema: Schema, values: Any) -> list[str]:
    """Every problem with ``values`` against ``schema`` as a sentence; empty when valid."""
    if not isinstance(values, dict):
        return ["settings must be a JSON object"]
    problems = [f"unknown setting {name!r}" for name in values if name not in schema]
    for name, setting in schema.items():
        value = values.get(name)
        if value is None or value == "":
            if setting.required:
                problems.append(f"{name} is required")
            continue
        problem = setting.problem(value)
        if problem:
            problems.append(f"{name} {problem}")
    return problems


def with_defaults(schema: Schema, values: dict) -> dict:
    defaults = {name: s.default for name, s in schema.items() if s.default is not None}
    return {**defaults, **{k: v for k, v in values.items() if v is not None}}


def join_remote(base: str, path: str) -> str:
    """``path`` under the destination's ``base`` folder or prefix.

    A feed path is relative and plain; anything that could climb out of ``base`` is
    refused, since paths end up in remote file systems we do not own.
    """
    parts = path.split("/")
    # Control characters would let a path smuggle extra FTP or header lines.
    has_control = any(ord(char) < 32 or ord(char) == 127 for char in path)
    if not path or path.startswith("/") or has_control or any(p in ("", ".", "..") for p in parts):
        raise TransportError(f"unsafe feed path {path!r}", permanent=True, reason=Reason.INVALID_SETTINGS)
    return posixpath.join(base, path) if base else path


def temporary_name(final: str) -> str:
    """A hidden name beside ``final`` to upload to before renaming over it: readers and
    folder listings that skip dot files never see the file while it grows."""
    folder, name = posixpath.split(final)
    return posixpath.join(folder, f".{name}.{secrets.token_hex(6)}.tmp")


_TEMPORARY_NAME = re.compile(r"\..+\.[0-9a-f]{12}\.tmp")


def is_temporary_name(name: str) -> bool:
    """True when the file name ``name`` has the shape ``temporary_name`` gives: the only
    files a clean-up of ours may ever remove from a folder we do not own."""
    return _TEMPORARY_NAME.fullmatch(name) is not None


# --- the hard deadline --------------------------------------------------------------------

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

    def __init__(self, seconds: float, *, sockets: SocketSet | None = None, still_ours=None):
        self.seconds = seconds
        self._still_ours = still_ours
        self._sockets = sockets if sockets is not None else SocketSet()
        self._expired = threading.Event()
        self._ends_at = 0.0
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
        return self._expired.is_set()

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
        refusal = address_policy.current().refusal_of_peer(address)
        if refusal is not None:
            self.refused_address = refusal
            raise AddressRefused(refusal)

    def _expire(self) -> None:
        self._expired.set()
        self._sockets.cut_all()


# --- the transport contract ---------------------------------------------------------------


class Transport:
    """Pushes feed files to one destination.

    ``send(body, path, *, content_type, version, etag, still_ours=None) -> Receipt``
        Puts ``body`` at ``path`` (relative, below the destination's folder or prefix), so
        that a reader sees the previous complete file or the new complete file, never part
        of one. Returns a ``Receipt`` once the destination has confirmed it. Raises
        ``TransportError`` for every failure, with ``permanent`` set as documented there;
        nothing else escapes. The whole send, connect included, ends within
        ``config["send_timeout"]`` seconds (plus a moment to unwind); once that deadline
        has fired the send fails (transient), whatever ``push`` returned. Sending the same
        version twice is harmless. A ``path`` that is not a plain relative path (see
        ``paths``) is refused before anything is sent, as a permanent error. ``still_ours()``
        (the fence), when given, is asked just before the step that makes the file visible
        (``deadline.before_commit``: the rename, or the one PUT, POST or write); False makes
        the send a transient failure that leaves the destination as it was.

    ``config_schema`` / ``credentials_schema``
        What the JSON config and the credentials may hold (see ``Setting``);
        ``validate_config`` / ``validate_credentials`` turn them into sentences for a form.
        The constructor refuses invalid ones with a permanent TransportError.

    ``probe(steps, deadline)``
        A connection test's steps (see ``probes``): connect, log in, write a small test file
        under a name no feed file can have and remove it where the protocol allows.

    ``address_setting`` / ``address_of(config)``
        The setting that names the server, and the (host, port) it connects to (None: a
        fixed public service, e.g. Amazon S3), checked against ``address_policy`` on save.

    ``cut()``
        Stops a send in progress from another thread (it fails, transient).

    ``close()``
        Drops pooled connections. The transport may not be used afterwards.

    One instance serves one destination and is used by one sender at a time (ARCHITECTURE
    rule 4); it may keep connections open between sends. A subclass implements
    ``push(file, deadline)`` and maps its library's errors to ``TransportError``.
    """

    kind: ClassVar[str] = ""
    label: ClassVar[str] = ""
    config_schema: ClassVar[Schema] = TIMEOUT_SETTINGS
    credentials_schema: ClassVar[Schema] = {}
    address_setting: ClassVar[str] = "host"

    def __init__(self, config: dict, credentials: dict):
        problems = self.validate_config(config) + self.validate_credentials(credentials)
        if problems:
            raise TransportError(f"{self.kind}: " + "; ".join(problems), permanent=True,
                                 reason=Reason.INVALID_SETTINGS)
        self.config = with_defaults(self.config_schema, config)
        self.credentials = with_defaults(self.credentials_schema, credentials)
        self._sockets = SocketSet()

    @classmethod
    def validate_config(cls, config: dict) -> list[str]:
        return validate(cls.config_schema, config)

    @classmethod
    def validate_credentials(cls, credentials: dict) -> list[str]:
        return validate(cls.credentials_schema, credentials)

    @classmethod
    def address_of(cls, config: dict) -> tuple[str, int] | None:
        """(host, port) of a valid ``config``: its ``host`` and ``port`` settings by default."""
        settings = with_defaults(cls.config_schema, config)
        return settings["host"], settings["port"]

    def send(self, body: bytes, path: str, *, content_type: str, version: int, etag: str,
             still_ours=None) -> Receipt:
        unsafe = unsafe_path_reason(path)  # the real path, filter filled in: checked at every send
        if unsafe is not None:
            raise TransportError(f"{self.kind}: refused to send: {unsafe}", permanent=True,
                                 reason=Reason.INVALID_SETTINGS)
        file = FeedFile(bytes(body), path, content_type, version, etag)
        with Deadline(self.config["send_timeout"], sockets=self._sockets, still_ours=still_ours) as deadline:
            try:
                return self.push(file, deadline)
            except TransportError:
                raise
            except Exception as exc:
                # An error we did not map: retry it (sends are idempotent) and let the
                # destination turn red, rather than stop delivery on a guess.
                reason = reason_of_os_error(exc, connected=True)
                raise TransportError(f"{self.kind}: {type(exc).__name__}: {exc}", reason=reason) from exc

    def push(self, file: FeedFile, deadline: Deadline) -> Receipt:
        """Deliver ``file`` and return the destination's receipt, or raise TransportError.

        Runs inside ``deadline``: every socket opened here is cut when it expires. Use
        ``deadline.timeout(cap)`` for waits that should give up before it does.
        """
        raise NotImplementedError

    def probe(self, steps, deadline: Deadline) -> None:
        """The steps of a connection test (``probes.run_connection_test``), each inside
        ``steps.step(name)`` of a ``probes.ProbeSteps``."""
        raise NotImplementedError

    def cut(self) -> None:
        """Shut down the sockets of a send in progress, from any thread (a pause must stop a
        long upload now, not at its deadline). That send then fails with a transient error;
        the next one connects afresh."""
        self._sockets.cut_all()

    def close(self) -> None:
        pass

    def __enter__(self):
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()
