"""Push by HTTP POST, signed the Standard Webhooks way (webhook-id, -timestamp, -signature)."""

from __future__ import annotations

import base64
import binascii
import email.utils
import hashlib
import hmac
import re
import ssl
import tempfile
import time
from collections.abc import Mapping
from http import HTTPStatus
from pathlib import Path
from urllib.parse import urlsplit

import certifi
import urllib3

from .base import (
    TIMEOUT_SETTINGS,
    Deadline,
    FeedFile,
    Receipt,
    Setting,
    Transport,
    TransportError,
    pem_certificate_problem,
    with_defaults,
)
from .failures import Reason, reason_of_os_error
from .http_replies import whole_replies_pool
from .probes import ProbeSteps
from .urls import userinfo_problem

SECRET_PREFIX = "whsec_"
RETRY_AFTER_BOUNDS = (1.0, 300.0)
RECEIPT_READ_LIMIT = 1 << 20  # a receipt digests the reply; a huge reply is not our business
# Reply headers by which a receiver names what it took; the receipt keeps them.
RECEIPT_HEADERS = ("x-request-id", "request-id", "x-correlation-id", "etag", "location")
RECEIPT_VALUE_LIMIT = 100
USER_AGENT = "Omnium webhooks"


def secret_bytes(secret: str) -> bytes:
    """The signing key inside a "whsec_<base64>" secret."""
    return base64.b64decode(secret.removeprefix(SECRET_PREFIX), validate=True)


def _secret_problem(secret: str) -> str | None:
    try:
        ok = secret.startswith(SECRET_PREFIX) and len(secret_bytes(secret)) >= 16
    except (binascii.Error, ValueError):
        ok = False
    return None if ok else "must be 'whsec_' followed by at least 16 bytes in base64"


# Headers a receiver's gateway may ask for beside ours; ours (what is signed, and what says what
# the body is) cannot be replaced by one of them.
OUR_HEADERS = frozenset({"content-type", "content-length", "host", "user-agent", "transfer-encoding",
                         "webhook-id", "webhook-timestamp", "webhook-signature",
                         "omnium-path", "omnium-version", "omnium-etag", "omnium-test"})
HEADER_NAME = re.compile(r"^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")  # an RFC 9110 token


def header_lines(text: str) -> dict[str, str]:
    """``Name: value`` lines as a dict (blank lines skipped); ValueError naming a bad line."""
    headers = {}
    for line in text.splitlines():
        if not line.strip():
            continue
        name, colon, value = line.partition(":")
        name, value = name.strip(), value.strip()
        if not colon or not HEADER_NAME.match(name):
            raise ValueError(f"{line.strip()[:40]!r} is not 'Name: value'")
        if name.lower() in OUR_HEADERS:
            raise ValueError(f"{name} is set by Omnium (signed, or describing the body)")
        if not value or any(ord(char) < 32 or ord(char) == 127 for char in value):
            raise ValueError(f"{name}'s value is empty or holds a control character")
        headers[name] = value
    return headers


def _headers_problem(text: str) -> str | None:
    try:
        header_lines(text)
    except ValueError as exc:
        return f"must be 'Name: value' lines: {exc}"
    return None


def _token_problem(token: str) -> str | None:
    return "must be one line without spaces" if not token.isprintable() or " " in token.strip() else None


def _private_key_problem(value: str) -> str | None:
    return None if re.search(r"-----BEGIN [A-Z ]*PRIVATE KEY-----", value) else "must be a PEM private key"


def tls_context(ca_cert: str | None, client_cert: str | None, client_key: str | None) -> ssl.SSLContext:
    """Verifying the receiver against ``ca_cert`` (instead of certifi's CAs) when given, and
    presenting ``client_cert`` with ``client_key`` (mutual TLS) when given. OpenSSL reads a
    certificate chain from files only: the pair is written to a private temporary folder for
    the moment it is read, then removed."""
    context = ssl.create_default_context(cafile=None if ca_cert else certifi.where(), cadata=ca_cert or None)
    if client_cert:
        with tempfile.TemporaryDirectory(prefix="omnium-tls-") as folder:  # mode 0700
            chain = Path(folder) / "client.pem"
            chain.touch(mode=0o600)
            chain.write_text(client_key.strip() + "\n" + client_cert.strip() + "\n")
            try:
                context.load_cert_chain(chain)
            except ssl.SSLError as exc:
                raise TransportError(f"webhook client certificate unusable: {exc.reason or exc}", permanent=True,
                                     reason=Reason.INVALID_SETTINGS) from None
    return context


def _whole_number(text: str) -> int | None:
    return int(text) if text.isascii() and text.isdigit() else None


def _url_problem(url: str) -> str | None:
    if not url.startswith(("http://", "https://")):
        return "must start with http:// or https://"
    return userinfo_problem(url)


def sign(secret: str, message_id: str, timestamp: int, body: bytes) -> str:
    """The "v1,<base64 HMAC-SHA256>" signature of ``id.timestamp.body``."""
    signed = f"{message_id}.{timestamp}.".encode() + body
    digest = hmac.new(secret_bytes(secret), signed, hashlib.sha256).digest()
    return "v1," + base64.b64encode(digest).decode()


def verify_signature(secret: str, headers: Mapping[str, str], body: bytes, tolerance: float = 300) -> bool:
    """True when ``headers`` carry a v1 signature of ``body`` made with ``secret`` and a
    timestamp within ``tolerance`` seconds of now (the window limits replays)."""
    found = {name.lower(): value for name, value in headers.items()}
    msg_id = found.get("webhook-id", "")
    timestamp = _whole_number(found.get("webhook-timestamp", ""))
    if not msg_id or timestamp is None or abs(time.time() - timestamp) > tolerance:
        return False
    expected = sign(secret, msg_id, timestamp, body)
    offered = found.get("webhook-signature", "").split()  # several, while a secret rotates
    return any(hmac.compare_digest(candidate, expected) for candidate in offered)


def message_id_for(file: FeedFile) -> str:
    """``msg_<version>_<sha256 of the path, 32 hex>``. The same for every try of the same
    version, so a receiver can drop a repeat; a new version is a new message (Standard
    Webhooks: unique per message, kept on retries). And since the id is signed, it signs the
    version and the path that the omnium-version and omnium-path headers repeat in the clear."""
    return f"msg_{file.version}_{_path_digest(file.path)}"


def _path_digest(path: str) -> str:
    return hashlib.sha256(path.encode()).hexdigest()[:32]


def file_headers_signed(headers: Mapping[str, str]) -> bool:
    """Whether omnium-version and omnium-path are the ones the signed webhook-id names (check
    the signature first, with ``verify_signature``): a receiver that orders by version may
    then trust them."""
    found = {name.lower(): value for name, value in headers.items()}
    version, path = found.get("omnium-version", ""), found.get("omnium-path", "")
    return _whole_number(version) is not None and hmac.compare_digest(
        found.get("webhook-id", ""), f"msg_{version}_{_path_digest(path)}")


TEST_PATH = ".omnium-connection-test"  # hidden: no feed file's path can be this


def test_message() -> FeedFile:
    # A new version each time: a receiver that drops repeats by webhook-id must see every test.
    return FeedFile(b'{"omnium_test": true}', TEST_PATH, "application/json", time.time_ns(), "connection-test")


def _host_of(url: str) -> str:
    return urlsplit(url).netloc.rpartition("@")[2]


class WebhookTransport(Transport):
    """POSTs the file to ``url``. Only a 2xx reply counts as delivered; redirects are not
    followed (they would turn the POST into a GET)."""

    kind = "webhook"
    label = "HTTP webhook"
    config_schema = {
        **TIMEOUT_SETTINGS,
        "url": Setting(str, required=True, check=_url_problem, help="The receiver's URL; https:// unless on a private network."),
        "headers": Setting(str, check=_headers_problem, multiline=True,
                           help="More headers the receiver (or its API gateway) wants, one 'Name: value' a line. "
                                "Put secret ones under the credentials."),
        "basic_username": Setting(str, help="HTTP Basic authentication: the user name (its password under the "
                                            "credentials)."),
        "ca_cert": Setting(str, check=pem_certificate_problem, multiline=True,
                           help="PEM certificate of a CA to trust for the receiver instead of the public ones."),
        "client_cert": Setting(str, check=pem_certificate_problem, multiline=True,
                               help="Mutual TLS: our PEM certificate (chain) that the receiver asks for; its "
                                    "private key under the credentials."),
        "secret_overlap_hours": Setting(int, default=24, minimum=0, maximum=24 * 30,
                                        help="When a new secret is typed, the old one signs beside it this long "
                                             "(two signatures in webhook-signature), so the receiver can switch "
                                             "to the new secret without missing a file. 0: at once."),
    }
    address_setting = "url"
    # A new CA to trust could put another party in the receiver's place: the secrets go with it.
    credentials_bound_to = ("url", "ca_cert")
    credentials_schema = {
        "secret": Setting(str, required=True, check=_secret_problem,
                          help="Signing secret (Standard Webhooks): 'whsec_' and base64. Give it to the receiver. "
                               "A new one typed here signs beside the old one for the overlap below."),
        "bearer_token": Setting(str, check=_token_problem,
                                help="Sent as 'Authorization: Bearer <token>', if the receiver wants one."),
        "basic_password": Setting(str, help="HTTP Basic authentication: the password of the user name above."),
        "client_key": Setting(str, check=_private_key_problem, multiline=True,
                              help="Mutual TLS: the PEM private key of the client certificate."),
        "secret_headers": Setting(str, check=_headers_problem, multiline=True,
                                  help="Headers whose values are secret (an API key), one 'Name: value' a line."),
    }
    # Kept by Omnium beside the secret while a rotation overlaps (never typed): the old secret,
    # and until when (a Unix time) it signs too.
    ROTATION = ("previous_secret", "previous_secret_until")

    @classmethod
    def validate_credentials(cls, credentials: dict) -> list[str]:
        typed = {name: value for name, value in credentials.items() if name not in cls.ROTATION}
        previous = credentials.get("previous_secret")
        problem = _secret_problem(previous) if previous else None
        return super().validate_credentials(typed) + ([f"previous_secret {problem}"] if problem else [])

    @classmethod
    def credentials_replacing(cls, stored: dict, typed: dict, config: dict) -> dict:
        """A new secret typed: the stored one keeps signing beside it for the overlap."""
        hours = with_defaults(cls.config_schema, config)["secret_overlap_hours"]
        old = stored.get("secret")
        if old == typed.get("secret"):
            return {**stored, **typed}  # the same secret again: an overlap under way goes on
        if not hours or not old:
            return typed
        return {**typed, "previous_secret": old, "previous_secret_until": time.time() + hours * 3600}

    @classmethod
    def credentials_state(cls, credentials: dict) -> str | None:
        until = credentials.get("previous_secret_until") or 0
        if not credentials.get("previous_secret") or until <= time.time():
            return None
        when = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(until))
        return f"Rotating: the previous secret signs beside the current one until {when}."

    def _tls_context(self) -> ssl.SSLContext | None:
        ca, cert, key = self.config.get("ca_cert"), self.config.get("client_cert"), self.credentials.get("client_key")
        if bool(cert) != bool(key):
            raise TransportError("webhook: mutual TLS needs both the client certificate and its private key",
                                 permanent=True, reason=Reason.INVALID_SETTINGS)
        return tls_context(ca, cert, key) if ca or cert else None

    def _receivers_headers(self) -> dict[str, str]:
        """The headers the receiver asked for: plain and secret ones, and its authentication."""
        headers = {**header_lines(self.config.get("headers", "")),
                   **header_lines(self.credentials.get("secret_headers", ""))}
        token, user = self.credentials.get("bearer_token"), self.config.get("basic_username")
        password = self.credentials.get("basic_password")
        asked = [name for name, given in (("a bearer token", token), ("Basic authentication", user or password))
                 if given]
        if len(asked) > 1 or (asked and any(name.lower() == "authorization" for name in headers)):
            raise TransportError("webhook: " + " and ".join(asked or ["an Authorization header"])
                                 + " both set the Authorization header: keep one", permanent=True,
                                 reason=Reason.INVALID_SETTINGS)
        if token:
            headers["Authorization"] = f"Bearer {token.strip()}"
        elif user or password:
            if not (user and password):
                raise TransportError("webhook: Basic authentication needs both the user name and the password",
                                     permanent=True, reason=Reason.INVALID_SETTINGS)
            pair = base64.b64encode(f"{user}:{password}".encode()).decode()
            headers["Authorization"] = f"Basic {pair}"
        return headers

    def signing_secrets(self, now: float) -> list[str]:
        """The secret, and the previous one while its overlap lasts."""
        previous, until = self.credentials.get("previous_secret"), self.credentials.get("previous_secret_until") or 0
        return [self.credentials["secret"]] + ([previous] if previous and now < until else [])

    def __init__(self, config: dict, credentials: dict):
        super().__init__(config, credentials)
        self._extra_headers = self._receivers_headers()
        self._tls = self._tls_context()
        # Made by the first push, so that a URL it cannot use fails that push, permanently.
        self._pool: tuple[urllib3.HTTPConnectionPool, str] | None = None
        self._host = urlsplit(self.config["url"]).hostname  # what an error names

    def push(self, file: FeedFile, deadline: Deadline) -> Receipt:
        deadline.before_commit("webhook")  # receivers order by the omnium-version header too
        try:
            return self._post(file, deadline)
        except urllib3.exceptions.LocationValueError as exc:
            raise TransportError(f"webhook url unusable: {exc}", permanent=True,
                                 reason=Reason.INVALID_SETTINGS) from exc
        except urllib3.exceptions.HTTPError as exc:
            raise self._unreachable(exc) from exc

    def probe(self, steps: ProbeSteps, deadline: Deadline) -> None:
        """One signed test message, marked ``omnium-test: true`` and with a path no feed file
        can have, so a receiver can tell it from a feed file and drop it."""
        with steps.step(f"send a signed test webhook to {_host_of(self.config['url'])}"):
            self.push(test_message(), deadline)

    def _unreachable(self, exc: urllib3.exceptions.HTTPError) -> TransportError:
        # urllib3 counts a refused connection (NewConnectionError) among its connect timeouts.
        timed_out_connecting = (isinstance(exc, urllib3.exceptions.ConnectTimeoutError)
                                and not isinstance(exc, urllib3.exceptions.NewConnectionError))
        reason = reason_of_os_error(exc, connected=not timed_out_connecting)
        seconds = self.config["connect_timeout" if timed_out_connecting else "send_timeout"]
        return TransportError(f"webhook unreachable: {_what_failed(exc)}", reason=reason, seconds=seconds,
                              host=self._host)

    def _post(self, file: FeedFile, deadline: Deadline) -> Receipt:
        # Straight through urllib3, which requests sits on: requests' request preparation,
        # response building and cookie extraction, none of which a push needs (no redirects,
        # no proxies, no cookies), were a sixth of a delivery worker's Python time in a
        # fan-out to 5,000 webhooks (py-spy, bench/scale.py). Proxies and .netrc from the
        # environment, which would change where signed feeds go, are not read by urllib3.
        if self._pool is None:
            self._pool = whole_replies_pool(self.config["url"], self._tls)
        pool, target = self._pool
        timeout = urllib3.Timeout(connect=deadline.timeout(self.config["connect_timeout"]),
                                  read=self.config["send_timeout"])
        reply = pool.urlopen("POST", target, body=file.body, headers=self._headers(file), timeout=timeout,
                             retries=False, redirect=False, preload_content=False, release_conn=False)
        try:
            if not 200 <= reply.status < 300:
                raise _refusal(reply, self._host)
            return _receipt(reply)
        finally:
            # Never kept alive: a kept connection the receiver closed meanwhile would fail the
            # next push, and a POST is not retried.
            reply.close()
            reply.release_conn()

    def close(self) -> None:
        if self._pool is not None:
            self._pool[0].close()

    def _headers(self, file: FeedFile) -> dict[str, str]:
        now = time.time()
        msg_id, timestamp = message_id_for(file), int(now)
        # Standard Webhooks: space-separated signatures; a receiver accepts any it can verify.
        signatures = " ".join(sign(secret, msg_id, timestamp, file.body) for secret in self.signing_secrets(now))
        test = {"omnium-test": "true"} if file.path == TEST_PATH else {}
        return {**self._extra_headers, **test,
            "user-agent": USER_AGENT,
            "content-type": file.content_type,
            "webhook-id": msg_id,
            "webhook-timestamp": str(timestamp),
            "webhook-signature": signatures,
            "omnium-path": file.path,
            "omnium-version": str(file.version),
            "omnium-etag": file.etag,
        }


def _receipt(reply: urllib3.BaseHTTPResponse) -> Receipt:
    """What the receiver said: its status, the headers that name what it took, and a digest
    of its reply body when there is one (a digest of nothing would prove nothing)."""
    parts = [_printable(f"{reply.status} {reply.reason or ''}".strip())]
    parts += [f"{name}={_printable(reply.headers[name])}" for name in RECEIPT_HEADERS if reply.headers.get(name)]
    size, digest = _read_reply_body(reply)
    parts.append(f"body {size} bytes sha256:{digest}" if size else "empty body")
    return Receipt("; ".join(parts))


def _read_reply_body(reply: urllib3.BaseHTTPResponse) -> tuple[int, str]:
    """The size and sha256 of the reply body, both of at most its first RECEIPT_READ_LIMIT bytes.
    Reading it to its end is also what makes a body shorter than its Content-Length fail."""
    digest, seen = hashlib.sha256(), 0
    for chunk in reply.stream(64 * 1024):
        chunk = chunk[: RECEIPT_READ_LIMIT - seen]
        digest.update(chunk)
        seen += len(chunk)
        if seen >= RECEIPT_READ_LIMIT:
            break
    return seen, digest.hexdigest()


def _printable(text: str) -> str:
    # The receipt is shown on status screens: no control characters, no ";" that would
    # pass for a part of its own, and nothing long.
    kept = "".join(char for char in text if " " <= char <= "~" and char != ";")
    return kept[:RECEIPT_VALUE_LIMIT]


def _refusal(reply: urllib3.BaseHTTPResponse, host: str | None) -> TransportError:
    status = reply.status
    # The standard phrase, not the receiver's own: that one is free text chosen by the far side.
    message = f"webhook answered {status} {_phrase(status)}"
    said = {"status": status, "reason": Reason.HTTP_STATUS, "host": host}
    if status == 410:
        return TransportError(message + ": the receiver is gone", permanent=True, **said)
    if status in (408, 429) or status >= 500:
        return TransportError(message, retry_after=retry_after(reply.headers.get("retry-after")), **said)
    return TransportError(message, permanent=True, **said)  # other 4xx, 3xx not followed


def _what_failed(exc: urllib3.exceptions.HTTPError) -> str:
    """urllib3's words for a failure, without the connection object some of its errors carry
    first, nor an error it quotes already: "Failed to establish a new connection: [Errno 111]
    Connection refused"; "Connection aborted.; RemoteDisconnected: Remote end closed connection
    without response"."""
    words = ""
    for arg in exc.args:
        if isinstance(arg, BaseException) and str(arg) not in words:
            words += f"; {type(arg).__name__}: {arg}"
        elif isinstance(arg, str):
            words += f"; {arg}"
    return words.removeprefix("; ") or type(exc).__name__


def _phrase(status: int) -> str:
    try:
        return HTTPStatus(status).phrase
    except ValueError:
        return "(non-standard status)"


def retry_after(value: str | None) -> float | None:
    """A Retry-After header (seconds or an HTTP date) as seconds within RETRY_AFTER_BOUNDS."""
    if not value:
        return None
    seconds = _whole_number(value.strip())
    if seconds is None:
        try:
            seconds = email.utils.parsedate_to_datetime(value).timestamp() - time.time()
        except (TypeError, ValueError):
            return None
    low, high = RETRY_AFTER_BOUNDS
    return float(min(high, max(low, seconds)))
