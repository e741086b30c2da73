"""The contract every push transport keeps, and the pieces the transports share.

A transport pushes one feed file to one destination. It is given bytes, a remote path, a
config dict (already validated against its ``config_schema``) and a credentials dict, and
it returns a ``Receipt`` or raises ``TransportError``. It knows nothing of Django.
"""

from __future__ import annotations

import posixpath
import re
import secrets
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar

from .deadline import Deadline, SocketSet
from .failures import Reason, TransportError, reason_of_os_error
from .paths import unsafe_path_reason
from .urls import address_of_url, unencrypted_protocol

__all__ = ["Deadline", "FeedFile", "Receipt", "Setting", "Transport", "TransportError"]


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


def pem_certificate_problem(value: str) -> str | None:
    """A ``check`` for settings holding a PEM certificate (a CA to trust, a client certificate)."""
    return None if "-----BEGIN CERTIFICATE-----" in value else "must be a PEM certificate"


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


def _refusal_of_path(kind: str, path: str) -> TransportError | None:
    """The permanent error of a path that is not a plain relative path, None for a good one."""
    unsafe = unsafe_path_reason(path)
    if unsafe is None:
        return None
    return TransportError(f"{kind}: refused to send: {unsafe}", permanent=True, reason=Reason.INVALID_SETTINGS)


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

    ``send_many(files, still_ours=None) -> list[Receipt | TransportError]``
        Pushes several ``FeedFile``s and returns each one's outcome, in order, as ``send``
        would have returned or raised it; nothing escapes. ``files_per_push`` says how many
        one call may carry: 1 (the default) sends them one by one through ``send`` and stops
        after the first failure (its outcome is the last). A transport whose destination
        takes several files in one round trip (Redis: one pipeline) sets it higher and
        implements ``push_many``: then one deadline covers them all, ``still_ours`` is asked
        once before any becomes visible, and a deadline that fires fails them all.

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

    ``credentials_bound_to`` / ``target_of(config)``
        The settings that say where the credentials go (host, port, URL, bucket, the user
        name, what proves the server is the right one). Changing any of them drops the stored
        credentials unless they are typed again (clients.models: a secret never follows a
        destination to a new address).

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
    credentials_bound_to: ClassVar[tuple[str, ...]] = ("host", "port")
    files_per_push: ClassVar[int] = 1

    def __init__(self, config: dict, credentials: dict):
        problems = self.validate_config(config) + self.validate_credentials(credentials)
        if problems:
            raise TransportError(f"{self.kind}: " + "; ".join(problems), permanent=True,
                                 reason=Reason.INVALID_SETTINGS)
        self.config = with_defaults(self.config_schema, config)
        self.credentials = with_defaults(self.credentials_schema, credentials)
        self._plaintext = self.plaintext(self.config)  # read by every send's deadline: once here
        self._sockets = SocketSet()

    @classmethod
    def validate_config(cls, config: dict) -> list[str]:
        return validate(cls.config_schema, config)

    @classmethod
    def validate_credentials(cls, credentials: dict) -> list[str]:
        return validate(cls.credentials_schema, credentials)

    @classmethod
    def credentials_replacing(cls, stored: dict, typed: dict, config: dict) -> dict:
        """What to store when ``typed`` credentials replace ``stored`` ones for the same target
        (``config``): what was typed. A kind whose receiver needs both for a while (a webhook
        secret being rotated) keeps some of the old."""
        return typed

    @classmethod
    def credentials_state(cls, credentials: dict) -> str | None:
        """A sentence on the stored credentials that a person may need (never a secret), or None."""
        return None

    @classmethod
    def target_of(cls, config: dict) -> dict:
        """The settings of ``config`` that its credentials are bound to, defaults filled in."""
        settings = with_defaults(cls.config_schema, config or {})
        return {name: settings.get(name) for name in cls.credentials_bound_to}

    @classmethod
    def address_of(cls, config: dict) -> tuple[str, int] | None:
        """(host, port) of a valid ``config``: its ``host`` and ``port`` settings, or where the
        URL its ``address_setting`` names connects (None when that is empty: a public service)."""
        settings = with_defaults(cls.config_schema, config)
        if cls.address_setting == "host":
            return settings["host"], settings["port"]
        return address_of_url(settings.get(cls.address_setting) or "")

    @classmethod
    def plaintext(cls, config: dict) -> str | None:
        """The unencrypted protocol a valid ``config`` sends with ("http:// (without TLS)", "FTP
        without TLS"), or None when it encrypts. The address policy keeps such sends off public
        addresses. By default read from the scheme of the URL ``address_setting`` names."""
        if cls.address_setting == "host":
            return None
        return unencrypted_protocol(with_defaults(cls.config_schema, config).get(cls.address_setting) or "")

    def deadline(self, still_ours=None) -> Deadline:
        """The hard deadline (and the address check) of one send, probe or clean-up."""
        return Deadline(self.config["send_timeout"], sockets=self._sockets, still_ours=still_ours,
                        plaintext=self._plaintext)

    def send(self, body: bytes, path: str, *, content_type: str, version: int, etag: str,
             still_ours=None) -> Receipt:
        refusal = _refusal_of_path(self.kind, path)  # the real path, filter filled in: checked at every send
        if refusal is not None:
            raise refusal
        file = FeedFile(bytes(body), path, content_type, version, etag)
        with self.deadline(still_ours) as deadline:
            try:
                return self.push(file, deadline)
            except TransportError:
                raise
            except Exception as exc:
                # An error we did not map: retry it (sends are idempotent) and let the
                # destination turn red, rather than stop delivery on a guess.
                reason = reason_of_os_error(exc, connected=True)
                raise TransportError(f"{self.kind}: {type(exc).__name__}: {exc}", reason=reason) from exc

    def send_many(self, files: list[FeedFile], still_ours=None) -> list[Receipt | TransportError]:
        if self.files_per_push == 1:
            return self._send_one_by_one(files, still_ours)
        outcomes: list[Receipt | TransportError | None] = [_refusal_of_path(self.kind, f.path) for f in files]
        pushed = [f for f, refused in zip(files, outcomes) if refused is None]
        try:
            with self.deadline(still_ours) as deadline:
                receipts = iter(self.push_many(pushed, deadline) if pushed else [])
        except TransportError as exc:
            receipts = iter([exc] * len(pushed))
        except Exception as exc:  # unmapped, as in send: retried, the destination turns red
            failure = TransportError(f"{self.kind}: {type(exc).__name__}: {exc}",
                                     reason=reason_of_os_error(exc, connected=True))
            receipts = iter([failure] * len(pushed))
        return [outcome if outcome is not None else next(receipts) for outcome in outcomes]

    def _send_one_by_one(self, files: list[FeedFile], still_ours) -> list[Receipt | TransportError]:
        outcomes = []
        for file in files:
            try:
                outcomes.append(self.send(file.body, file.path, content_type=file.content_type,
                                          version=file.version, etag=file.etag, still_ours=still_ours))
            except TransportError as exc:
                outcomes.append(exc)
                break
        return outcomes

    def push_many(self, files: list[FeedFile], deadline: Deadline) -> list[Receipt | TransportError]:
        """Deliver ``files`` in one go (``files_per_push`` > 1): each one's receipt, or the
        TransportError of that file alone; raise TransportError when none could land."""
        raise NotImplementedError

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
