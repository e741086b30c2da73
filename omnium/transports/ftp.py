"""Push over FTP, or FTPS (explicit TLS) when the config says ``tls: true``."""

from __future__ import annotations

import contextlib
import ftplib
import io
import posixpath
import ssl
from datetime import UTC, datetime

from .base import (
    TIMEOUT_SETTINGS,
    Deadline,
    FeedFile,
    Receipt,
    Setting,
    Transport,
    TransportError,
    join_remote,
    pem_certificate_problem,
    temporary_name,
    with_defaults,
)
from .failures import Reason, reason_of_os_error
from .probes import ProbeSteps, probe_file_name
from .stale_temporaries import StaleTemporaries

PROBE_BODY = b"omnium connection test: safe to delete\n"


class FTPTransport(Transport):
    """STOR to a temporary name, SIZE must equal the body, then RNFR/RNTO over the final
    name, so a client listing the folder never picks up half a file."""

    kind = "ftp"
    label = "FTP / FTPS"
    config_schema = {
        **TIMEOUT_SETTINGS,
        "host": Setting(str, required=True, help="Server name or address, e.g. ftp.example.com."),
        "port": Setting(int, default=21, minimum=1, maximum=65535, help="FTP control port."),
        "username": Setting(str, required=True, help="The account we log in as."),
        "directory": Setting(str, default="", help="Folder files go to; empty for the login folder."),
        "tls": Setting(bool, default=False, help="FTPS: encrypt with explicit TLS (AUTH TLS)."),
        "ca_cert": Setting(str, check=pem_certificate_problem, multiline=True,
                           help="PEM certificate of a CA to trust instead of the system's (FTPS only)."),
        "passive": Setting(bool, default=True, help="Passive mode: we open the data connections."),
    }
    credentials_bound_to = ("host", "port", "username", "tls", "ca_cert")
    credentials_schema = {"password": Setting(str, default="", help="Password of the account.")}

    @classmethod
    def plaintext(cls, config: dict) -> str | None:
        return None if with_defaults(cls.config_schema, config)["tls"] else "FTP without TLS"

    def __init__(self, config: dict, credentials: dict):
        super().__init__(config, credentials)
        self._stale = StaleTemporaries(self.config["send_timeout"])

    def push(self, file: FeedFile, deadline: Deadline) -> Receipt:
        final = join_remote(self.config["directory"], file.path)
        ftp = self._connect(deadline)
        delivered = False
        try:
            folder = posixpath.dirname(final)
            if self._stale.due(folder):
                _remove_stale_temporaries(ftp, folder, self._stale)
            size = _put_in_place(ftp, file.body, final, deadline)
            delivered = True
        except ftplib.all_errors as exc:
            raise self._failure(exc) from exc
        finally:
            _hang_up(ftp, politely=delivered)
        return Receipt(f"size={size} path={final}", remote_bytes=size)

    def probe(self, steps: ProbeSteps, deadline: Deadline) -> None:
        host, port = self.config["host"], self.config["port"]
        with steps.step(f"connect to {host}:{port} and read its greeting", failure=self._failure):
            ftp = self._open(deadline)
        try:
            with steps.step("log in", failure=self._failure):
                self._log_in(ftp)
            name = join_remote(self.config["directory"], probe_file_name())
            with steps.step(f"write a test file {name}", failure=self._failure):
                _store(ftp, PROBE_BODY, name)
            with steps.step("remove the test file", failure=self._failure):
                ftp.delete(name)
        finally:
            _hang_up(ftp, politely=True)

    def _connect(self, deadline: Deadline) -> ftplib.FTP:
        ftp = self._open(deadline)
        try:
            self._log_in(ftp)
        except ftplib.all_errors as exc:
            ftp.close()
            raise self._failure(exc) from exc
        return ftp

    def _open(self, deadline: Deadline) -> ftplib.FTP:
        """Connected, greeting read; each later wait may last the whole send (the deadline
        ends it sooner)."""
        ftp = _CheckedFTPTLS(context=self._tls_context()) if self.config["tls"] else _CheckedFTP()
        try:
            ftp.connect(self.config["host"], self.config["port"],
                        timeout=deadline.timeout(self.config["connect_timeout"]))
        except ftplib.all_errors as exc:
            connected = ftp.sock is not None  # the greeting is what never came
            ftp.close()
            raise self._failure(exc, connected=connected) from exc
        ftp.timeout = self.config["send_timeout"]
        ftp.sock.settimeout(ftp.timeout)
        return ftp

    def _log_in(self, ftp: ftplib.FTP) -> None:
        ftp.login(self.config["username"], self.credentials["password"])
        if self.config["tls"]:
            ftp.prot_p()  # encrypt the data connections too, not only the commands
        ftp.set_pasv(self.config["passive"])
        ftp.voidcmd("TYPE I")

    def _failure(self, exc: BaseException, connected: bool = True) -> TransportError:
        return _failure(exc, connected=connected, seconds=self.config["connect_timeout"])

    def _tls_context(self) -> ssl.SSLContext:
        return ssl.create_default_context(cadata=self.config.get("ca_cert"))


class ForeignDataConnection(ftplib.Error):
    """In active mode, a data connection came from an address other than the server's."""


class _CheckedFTP(ftplib.FTP):
    """In active mode the server connects to a port we announce, and ftplib takes whoever
    connects first. Anyone who reaches that port before the server would be handed the file,
    so a data connection is used only if it comes from the address our commands go to.
    (Passive mode already ignores the address a server names: ftplib's
    ``trust_server_pasv_ipv4_address`` stays False.)"""

    def ntransfercmd(self, cmd, rest=None):
        conn, size = super().ntransfercmd(cmd, rest)
        if not self.passiveserver:
            server, caller = self.sock.getpeername()[0], conn.getpeername()[0]
            if caller != server:
                conn.close()
                raise ForeignDataConnection(f"active mode: the data connection came from {caller}, not from "
                                            f"the server {server}; refused, nothing was sent on it")
        return conn, size


class _CheckedFTPTLS(ftplib.FTP_TLS, _CheckedFTP):
    """FTPS checks the caller in _CheckedFTP before FTP_TLS wraps the connection in TLS."""


def _put_in_place(ftp: ftplib.FTP, body: bytes, final: str, deadline: Deadline) -> int:
    """Upload under a temporary name, then rename it over ``final``; returns the size."""
    temporary = temporary_name(final)
    try:
        size = _store(ftp, body, temporary)
        deadline.before_commit("ftp")
        _replace(ftp, temporary, final)
    except Exception:
        _discard(ftp, temporary)
        raise
    return size


# ftplib sends 8 KB at a time by default: 370 socket writes for the calendar, and in a
# delivery worker each one waits to take the GIL back from up to 31 other sending threads.
# With 3 busy threads in the process, a 3 MB STOR took 0.1-2.4 s in 8 KB blocks and
# 0.17-0.28 s in 256 KB ones.
STORE_BLOCK_BYTES = 256 * 1024


def _store(ftp: ftplib.FTP, body: bytes, temporary: str) -> int:
    """STOR ``body`` as ``temporary`` and return the size the server reports, which must
    be ours: a short file must never be renamed into place."""
    try:
        ftp.storbinary(f"STOR {temporary}", io.BytesIO(body), blocksize=STORE_BLOCK_BYTES)
    except ftplib.error_perm:
        folder = posixpath.dirname(temporary)
        if not folder:
            raise
        _make_folders(ftp, folder)  # 550 is also what a missing folder gets
        ftp.storbinary(f"STOR {temporary}", io.BytesIO(body), blocksize=STORE_BLOCK_BYTES)
    size = ftp.size(temporary)
    if size != len(body):
        raise TransportError(f"FTP kept {size} bytes of {len(body)}")
    return size


def _remove_stale_temporaries(ftp: ftplib.FTP, folder: str, stale: StaleTemporaries) -> None:
    """Delete our temporary files in ``folder`` that cut or killed sends left behind. A file
    whose age the server does not tell is left alone."""
    try:
        listing = ftp.mlsd(folder, facts=["modify"])
        entries = [(name, _modified(facts["modify"])) for name, facts in listing if "modify" in facts]
    except (ftplib.error_perm, ftplib.error_temp, ValueError):
        return  # a server without MLSD, a folder the upload has yet to make, an odd time stamp
    for name in stale.stale(entries):
        # Another sender's clean-up may have got there first; the upload must go on.
        with contextlib.suppress(ftplib.error_perm, ftplib.error_temp):
            ftp.delete(posixpath.join(folder, name))


def _modified(stamp: str) -> float:
    """An MLSD "modify" fact (YYYYMMDDHHMMSS[.sss], UTC) in epoch seconds."""
    return datetime.strptime(stamp[:14], "%Y%m%d%H%M%S").replace(tzinfo=UTC).timestamp()


def _discard(ftp: ftplib.FTP, temporary: str) -> None:
    """Delete a failed upload's temporary file, if the session still works. (When the
    connection is what failed, the hidden file stays until a later connection finds it stale;
    each try uses a new random name so that two senders can never write into the same one.)"""
    with contextlib.suppress(Exception):
        ftp.delete(temporary)


def _make_folders(ftp: ftplib.FTP, folder: str) -> None:
    parts = folder.split("/")
    for depth in range(1, len(parts) + 1):
        if parts[depth - 1]:
            try:
                ftp.mkd("/".join(parts[:depth]))
            except ftplib.error_perm:
                pass  # exists already (or cannot be made: the STOR retry will say so)


def _replace(ftp: ftplib.FTP, temporary: str, final: str) -> None:
    try:
        ftp.rename(temporary, final)
    except ftplib.error_perm as refusal:
        # Some servers refuse to rename over an existing file; the final name is then
        # briefly absent (never partial). If deleting fails too, the refusal was real.
        try:
            ftp.delete(final)
        except ftplib.error_perm:
            raise refusal from None
        ftp.rename(temporary, final)


def _hang_up(ftp: ftplib.FTP, *, politely: bool) -> None:
    """Say QUIT after a delivery (a failed goodbye changes nothing: the file is in place);
    after a failure just close, since the server may be what is stuck."""
    if politely:
        with contextlib.suppress(*ftplib.all_errors):
            ftp.quit()
    ftp.close()


# FTP reply codes (RFC 959 and 3659) that say what went wrong.
_REPLY_REASONS = {
    "530": Reason.AUTH_REFUSED,  # not logged in
    "532": Reason.AUTH_REFUSED,
    "550": Reason.PERMISSION_DENIED,  # file unavailable: no access (or no such folder)
    "553": Reason.PERMISSION_DENIED,  # file name not allowed
    "452": Reason.DISK_FULL,  # insufficient storage space
    "552": Reason.DISK_FULL,  # exceeded storage allocation
}


def _failure(exc: BaseException, *, connected: bool, seconds: float) -> TransportError:
    reply = str(exc)
    if isinstance(exc, ftplib.error_perm | ftplib.error_temp):
        reason = _REPLY_REASONS.get(reply[:3], Reason.OTHER)
        what = "login refused" if reason == Reason.AUTH_REFUSED else "refused"
        return TransportError(f"FTP {what}: {reply}", permanent=isinstance(exc, ftplib.error_perm), reason=reason)
    if isinstance(exc, ForeignDataConnection):
        return TransportError(f"FTP data connection refused: {exc}", reason=Reason.OTHER)
    if isinstance(exc, ssl.SSLCertVerificationError):
        return TransportError(f"FTPS certificate rejected: {exc}", permanent=True, reason=Reason.TLS_REFUSED)
    reason = reason_of_os_error(exc, connected=connected)
    return TransportError(f"FTP failed: {type(exc).__name__}: {reply}", reason=reason, seconds=seconds)
