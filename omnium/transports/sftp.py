"""Push over SFTP (paramiko) to a server whose host key we pinned when it was set up."""

from __future__ import annotations

import base64
import binascii
import contextlib
import hashlib
import io
import posixpath
import socket

import paramiko

from .base import (
    TIMEOUT_SETTINGS,
    Deadline,
    FeedFile,
    Receipt,
    Setting,
    Transport,
    TransportError,
    join_remote,
    temporary_name,
)
from .failures import Reason, reason_of_os_error
from .probes import ProbeSteps, probe_file_name
from .stale_temporaries import StaleTemporaries

KEY_CLASSES = (paramiko.Ed25519Key, paramiko.ECDSAKey, paramiko.RSAKey)


def parse_host_key(text: str) -> paramiko.PKey:
    """The public key in OpenSSH "type base64" form (as in known_hosts or a .pub file)."""
    kind, data = text.split()[:2]
    return paramiko.PKey.from_type_string(kind, base64.b64decode(data, validate=True))


def _host_key_problem(text: str) -> str | None:
    try:
        parse_host_key(text)
    except (ValueError, IndexError, binascii.Error, paramiko.SSHException):
        return "must be an OpenSSH public key such as 'ssh-ed25519 AAAA...'"
    return None


def _file_mode_problem(text: str) -> str | None:
    ok = len(text) in (3, 4) and all(char in "01234567" for char in text)
    return None if ok else "must be an octal mode such as 644 or 0640"


def sha256_fingerprint(key: paramiko.PKey) -> str:
    """The fingerprint as ``ssh-keygen -lf`` and ssh's prompts print it: ``SHA256:`` and the
    digest in base64 without its "=" padding."""
    digest = hashlib.sha256(key.asbytes()).digest()
    return "SHA256:" + base64.b64encode(digest).decode().rstrip("=")


def fingerprint(key: paramiko.PKey) -> str:
    return f"{key.get_name()} {sha256_fingerprint(key)}"


def public_key_text(key: paramiko.PKey) -> str:
    """The key as a destination pins it: ``type base64``."""
    return f"{key.get_name()} {key.get_base64()}"


def fetch_host_key(host: str, port: int, timeout: float) -> paramiko.PKey:
    """The host key the server at ``host:port`` offers, read within ``timeout`` seconds
    (connect and key exchange, no login). Only a person may decide to pin it."""
    with Deadline(timeout) as deadline:
        sock = _open_socket(host, port, deadline, timeout)
        session = paramiko.Transport(sock)
        try:
            session.start_client(timeout=deadline.timeout(timeout))
            return session.get_remote_server_key()
        except (OSError, EOFError, paramiko.SSHException) as exc:
            raise _failure(exc, connected=True, seconds=timeout) from exc
        finally:
            session.close()


def _open_socket(host: str, port: int, deadline: Deadline, connect_timeout: float) -> socket.socket:
    try:
        return socket.create_connection((host, port), timeout=deadline.timeout(connect_timeout))
    except OSError as exc:
        raise TransportError(f"SFTP could not connect to {host}:{port}: {type(exc).__name__}: {exc}",
                             reason=reason_of_os_error(exc, connected=False), seconds=connect_timeout) from exc


class _RefuseUnknownHostKey(paramiko.MissingHostKeyPolicy):
    """The server offered a key we never pinned: never trust it on first sight."""

    def missing_host_key(self, client, hostname, key):
        raise TransportError(f"SFTP host key of {hostname} unknown: {fingerprint(key)}", permanent=True,
                             reason=Reason.HOST_KEY_CHANGED)


PROBE_BODY = b"omnium connection test: safe to delete\n"


class SFTPTransport(Transport):
    """Uploads to ``<dir>/.<name>.<random>.tmp``, checks its size, then renames it over the
    final name, so a client polling the folder never reads half a file."""

    kind = "sftp"
    label = "SFTP"
    config_schema = {
        **TIMEOUT_SETTINGS,
        "host": Setting(str, required=True, help="Server name or address, e.g. sftp.example.com."),
        "port": Setting(int, default=22, minimum=1, maximum=65535, help="SSH port."),
        "username": Setting(str, required=True, help="The account we log in as."),
        "host_key": Setting(str, required=True, check=_host_key_problem, multiline=True,
                            help="The server's public host key ('ssh-ed25519 AAAA…'): use \"Fetch host key\" "
                                 "and confirm its fingerprint with the server's owner."),
        "next_host_key": Setting(str, check=_host_key_problem, multiline=True,
                                 help="While the server rotates its host key: the new key, confirmed like the "
                                      "first. Either is accepted; remove the old one once the server has moved."),
        "directory": Setting(str, default="", help="Folder files go to; empty for the login folder."),
        "file_mode": Setting(str, check=_file_mode_problem,
                             help="Permissions each file gets (octal, e.g. 644), set before it takes its final "
                                  "name; empty: the server's default."),
    }
    credentials_bound_to = ("host", "port", "username", "host_key", "next_host_key")
    credentials_schema = {
        "password": Setting(str, help="Password, if the server takes one."),
        "private_key": Setting(str, multiline=True, help="Private key (OpenSSH or PEM): Ed25519, ECDSA or RSA."),
        "passphrase": Setting(str, help="Passphrase of the private key, if it has one."),
    }

    def __init__(self, config: dict, credentials: dict):
        super().__init__(config, credentials)
        if not (self.credentials.get("password") or self.credentials.get("private_key")):
            raise TransportError("sftp: password or private_key is required", permanent=True,
                                 reason=Reason.INVALID_SETTINGS)
        # The SSH session stays open between sends: a handshake (key exchange, host key check,
        # login) costs more than uploading a 3 MB file on loopback, on both sides.
        self._session: tuple[paramiko.SSHClient, paramiko.SFTPClient] | None = None
        self._stale = StaleTemporaries(self.config["send_timeout"])

    def push(self, file: FeedFile, deadline: Deadline) -> Receipt:
        final = join_remote(self.config["directory"], file.path)
        reused = self._session is not None
        try:
            return self._put_or_fail(file.body, final, deadline)
        except TransportError as failure:
            if not reused or failure.permanent or deadline.expired:
                raise
        # The server may have closed the session while it was idle: once more, on a new one.
        return self._put_or_fail(file.body, final, deadline)

    def _put_or_fail(self, body: bytes, final: str, deadline: Deadline) -> Receipt:
        """_put; any failure closes the session and is raised as a TransportError."""
        try:
            return self._put(body, final, deadline)
        except (OSError, EOFError, paramiko.SSHException) as exc:
            self._drop_session()
            raise _failure(exc, connected=True, seconds=self.config["connect_timeout"]) from exc
        except BaseException:
            self._drop_session()
            raise

    def _put(self, body: bytes, final: str, deadline: Deadline) -> Receipt:
        sftp = self._open_session(deadline)
        folder = posixpath.dirname(final)
        if self._stale.due(folder):
            _remove_stale_temporaries(sftp, folder, self._stale)
        mode = int(self.config["file_mode"], 8) if self.config.get("file_mode") else None
        _put_in_place(sftp, body, final, deadline, mode)
        size = sftp.stat(final).st_size
        return Receipt(f"size={size} path={final}", remote_bytes=size)

    def _open_session(self, deadline: Deadline) -> paramiko.SFTPClient:
        if self._session is not None:
            client, sftp = self._session
            transport = client.get_transport()
            if transport is not None and transport.is_active():
                return sftp
            self._drop_session()
        client = self._connect(deadline)
        try:
            sftp = client.open_sftp()
        except BaseException:
            client.close()
            raise
        sftp.get_channel().settimeout(self.config["send_timeout"])
        self._session = (client, sftp)
        return sftp

    def _drop_session(self) -> None:
        if self._session is not None:
            client, _ = self._session
            self._session = None
            client.close()

    def close(self) -> None:
        self._drop_session()

    def probe(self, steps: ProbeSteps, deadline: Deadline) -> None:
        host, port = self.config["host"], self.config["port"]
        with steps.step(f"connect to {host}:{port}"):
            sock = _open_socket(host, port, deadline, self.config["connect_timeout"])
        with steps.step("check the host key and log in"):
            client = self._log_in(sock, deadline)
        try:
            with steps.step("open SFTP", failure=self._failure):
                sftp = client.open_sftp()
            name = join_remote(self.config["directory"], probe_file_name())
            with steps.step(f"write a test file {name}", failure=self._failure):
                _upload(sftp, PROBE_BODY, name)
            with steps.step("remove the test file", failure=self._failure):
                sftp.remove(name)
        finally:
            client.close()

    def _failure(self, exc: BaseException) -> TransportError:
        return _failure(exc, connected=True, seconds=self.config["connect_timeout"])

    def _connect(self, deadline: Deadline) -> paramiko.SSHClient:
        sock = _open_socket(self.config["host"], self.config["port"], deadline, self.config["connect_timeout"])
        return self._log_in(sock, deadline)

    def _log_in(self, sock: socket.socket, deadline: Deadline) -> paramiko.SSHClient:
        """Key exchange on ``sock`` with the pinned host key, then the login. With a second key
        pinned (a rotation), a server that does not offer the first is asked again, on a new
        connection, for the second: paramiko asks a server for the type of one known key."""
        next_key = self.config.get("next_host_key")
        try:
            return self._log_in_pinning(sock, deadline, self.config["host_key"])
        except TransportError as refused:
            if not next_key or refused.reason != Reason.HOST_KEY_CHANGED:
                raise
        sock = _open_socket(self.config["host"], self.config["port"], deadline, self.config["connect_timeout"])
        return self._log_in_pinning(sock, deadline, next_key)

    def _log_in_pinning(self, sock: socket.socket, deadline: Deadline, host_key: str) -> paramiko.SSHClient:
        client = paramiko.SSHClient()
        host, port = self.config["host"], self.config["port"]
        pinned = parse_host_key(host_key)
        known_as = host if port == 22 else f"[{host}]:{port}"
        client.get_host_keys().add(known_as, pinned.get_name(), pinned)
        client.set_missing_host_key_policy(_RefuseUnknownHostKey())
        wait = deadline.timeout(self.config["connect_timeout"])
        try:
            client.connect(
                host,
                port,
                username=self.config["username"],
                sock=sock,
                password=self.credentials.get("password"),
                pkey=self._private_key(),
                timeout=wait,
                banner_timeout=wait,
                auth_timeout=wait,
                channel_timeout=wait,
                allow_agent=False,
                look_for_keys=False,
            )
        except TransportError:
            client.close()
            raise
        except (OSError, EOFError, paramiko.SSHException) as exc:
            client.close()
            raise self._failure(exc) from exc
        return client

    def _private_key(self) -> paramiko.PKey | None:
        text = self.credentials.get("private_key")
        if not text:
            return None
        for key_class in KEY_CLASSES:
            try:
                return key_class.from_private_key(io.StringIO(text), self.credentials.get("passphrase"))
            except (paramiko.SSHException, ValueError):
                continue
        raise TransportError("sftp: private_key is not a readable Ed25519, ECDSA or RSA key", permanent=True,
                             reason=Reason.INVALID_SETTINGS)


def _put_in_place(sftp: paramiko.SFTPClient, body: bytes, final: str, deadline: Deadline,
                  mode: int | None = None) -> None:
    """Upload under a temporary name (its permissions set to ``mode`` if given, so the file
    appears under its final name with them), then rename it over ``final``."""
    temporary = temporary_name(final)
    try:
        _upload(sftp, body, temporary)
        if mode is not None:
            sftp.chmod(temporary, mode)
        deadline.before_commit("sftp")
        _replace(sftp, temporary, final)
    except Exception:
        _discard(sftp, temporary)
        raise


def _upload(sftp: paramiko.SFTPClient, body: bytes, temporary: str) -> None:
    """Write ``body`` to ``temporary``, making missing folders; putfo's confirm step
    compares the remote size with ours and raises if they differ."""
    try:
        sftp.putfo(io.BytesIO(body), temporary, file_size=len(body), confirm=True)
    except FileNotFoundError:
        _make_folders(sftp, posixpath.dirname(temporary))
        sftp.putfo(io.BytesIO(body), temporary, file_size=len(body), confirm=True)


def _make_folders(sftp: paramiko.SFTPClient, folder: str) -> None:
    parts = folder.split("/")
    for depth in range(1, len(parts) + 1):
        if parts[depth - 1]:
            try:
                sftp.mkdir("/".join(parts[:depth]))
            except OSError:
                pass  # exists already (or cannot be made: the upload retry will say so)


def _replace(sftp: paramiko.SFTPClient, temporary: str, final: str) -> None:
    try:
        sftp.posix_rename(temporary, final)  # atomic replace (OpenSSH extension)
    except OSError as exc:
        if exc.errno is not None or "unsupported" not in str(exc).lower():
            raise
        # A server without the extension: plain SFTP rename refuses to overwrite, so the
        # final name is briefly absent (never partial) between these two calls.
        try:
            sftp.remove(final)
        except FileNotFoundError:
            pass
        sftp.rename(temporary, final)


def _remove_stale_temporaries(sftp: paramiko.SFTPClient, folder: str, stale: StaleTemporaries) -> None:
    """Remove our temporary files in ``folder`` that cut or killed sends left behind."""
    try:
        entries = sftp.listdir_attr(folder or ".")
    except (FileNotFoundError, PermissionError):
        return  # a folder the upload has yet to make, or one we may not list
    for name in stale.stale((entry.filename, entry.st_mtime or 0) for entry in entries):
        # Another sender's clean-up may have got there first; the upload must go on.
        with contextlib.suppress(FileNotFoundError, PermissionError):
            sftp.remove(posixpath.join(folder, name))


def _discard(sftp: paramiko.SFTPClient, temporary: str) -> None:
    """Remove a failed upload's temporary file, if the session still works. (When the
    connection is what failed, the hidden file stays until a later connection finds it stale;
    each try uses a new random name so that two senders can never write into the same one.)"""
    with contextlib.suppress(Exception):
        sftp.remove(temporary)


# Said by paramiko when the key exchange had not finished when its timeout ran out (a host
# that never answers, or trickles), and when the reply to the banner never came.
_NO_ANSWER_SIGNS = ("no existing session", "error reading ssh protocol banner", "timeout opening channel")


def _failure(exc: BaseException, *, connected: bool, seconds: float) -> TransportError:
    if isinstance(exc, paramiko.BadHostKeyException):
        # A key of another type than the pinned one is one we have never seen.
        same_type = exc.key.get_name() == exc.expected_key.get_name()
        what = "changed" if same_type else "unknown"
        got, pinned = fingerprint(exc.key), fingerprint(exc.expected_key)
        return TransportError(f"SFTP host key of {exc.hostname} {what}: got {got}, pinned {pinned}",
                              permanent=True, reason=Reason.HOST_KEY_CHANGED)
    text = f"{type(exc).__name__}: {exc}"
    if isinstance(exc, paramiko.AuthenticationException) and "timeout" not in str(exc).lower():
        return TransportError(f"SFTP login refused: {exc}", permanent=True, reason=Reason.AUTH_REFUSED)
    if isinstance(exc, paramiko.SSHException) and str(exc).lower().startswith(_NO_ANSWER_SIGNS):
        return TransportError(f"SFTP failed: {text}", reason=Reason.NO_ANSWER, seconds=seconds)
    reason = reason_of_os_error(exc, connected=connected)
    if reason == Reason.PERMISSION_DENIED:
        return TransportError(f"SFTP permission denied: {exc}", permanent=True, reason=reason)
    if reason == Reason.OTHER and isinstance(exc, FileNotFoundError):
        reason = Reason.MISSING_TARGET
    return TransportError(f"SFTP failed: {text}", reason=reason, seconds=seconds)
