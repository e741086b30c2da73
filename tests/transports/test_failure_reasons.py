"""Every transport says what kind of failure it met, against real hosts that fail that way:
silent, trickling, refusing, unresolvable, bad credentials, a changed host key, a path we may
not write to. The category is what the admin reads as a plain sentence."""

from __future__ import annotations

import pytest
import redis

from devtools.loopback import servers
from devtools.private_redis import PrivateRedis
from devtools.processes import free_port
from omnium.safe_errors import plain_and_technical, safe_error_text
from omnium.transports import TransportError
from omnium.transports.failures import Reason, reason_of_os_error, sentence

from .kits import FTPKit, RedisKit, S3Kit, SFTPKit, feed_path

QUICK = {"connect_timeout": 1.0, "send_timeout": 1.5}
# For the failures a client library retries once after a jittered pause (botocore: up to 2 s):
# with QUICK's 1.5 s the deadline fired during that pause about one run in three and was named
# instead of the failure itself (CI failed on it twice).
PAST_ONE_RETRY = {"connect_timeout": 1.0, "send_timeout": 5.0}
SLACK = 2.0


def timeouts_naming(expected: Reason) -> dict:
    """QUICK, with room for the failure the test expects to be the one named. Where the
    client's own timeout (1 s) should name it before the deadline (1.5 s), half a second
    was too little on a busy machine: a worker starved that long let the deadline expire
    first, and the send was named "deadline" (CI failed on it for amqp's silent host)."""
    return QUICK if expected == Reason.DEADLINE else {**QUICK, "send_timeout": 4.0}

# What each kind can tell about a host that accepts and then says nothing. SSH and FTP
# servers speak first, so their greeting's timeout (the connect timeout) names the silence;
# an HTTP or Redis client waits for a reply, so only the send's deadline ends it.
SILENT = {"sftp": Reason.NO_ANSWER, "ftp": Reason.NO_ANSWER, "s3": Reason.DEADLINE,
          "webhook": Reason.DEADLINE, "redis": Reason.DEADLINE, "amqp": Reason.NO_ANSWER,
          "azure_blob": Reason.DEADLINE}
# A trickle never completes paramiko's key exchange (it gives up at the connect timeout);
# the others read each byte as progress until the deadline cuts them.
TRICKLING = {**{kind: Reason.DEADLINE for kind in SILENT}, "sftp": Reason.NO_ANSWER}
BAD_CREDENTIALS = {"sftp": Reason.AUTH_REFUSED, "ftp": Reason.AUTH_REFUSED, "s3": Reason.AUTH_REFUSED,
                   "redis": Reason.AUTH_REFUSED, "amqp": Reason.AUTH_REFUSED,
                   "azure_blob": Reason.AUTH_REFUSED, "webhook": Reason.HTTP_STATUS}  # the receiver's 401


def _failure(kit, transport) -> TransportError:
    with pytest.raises(TransportError) as failure:
        kit.send(transport, b'{"medals": []}', feed_path())
    return failure.value


def _seconds_in_sentence(failure: TransportError) -> bool:
    return f"{failure.seconds:g} s" in failure.plain_sentence


def test_refused_connection_says_could_not_connect(kit):
    failure = _failure(kit, kit.transport(**kit.aimed_at(free_port()), **PAST_ONE_RETRY))

    assert failure.reason == Reason.REFUSED, str(failure)
    assert failure.plain_sentence.startswith("Could not connect")


def test_unresolvable_host_says_so(kit):
    unresolvable = {key: value.replace("127.0.0.1", "nowhere.invalid") if isinstance(value, str) else value
                    for key, value in {**kit.config(), **kit.aimed_at(free_port())}.items()}
    if "host" in unresolvable:
        unresolvable["host"] = "nowhere.invalid"

    failure = _failure(kit, kit.transport(**unresolvable, **PAST_ONE_RETRY))

    assert failure.reason == Reason.UNRESOLVED, str(failure)


def test_silent_host_says_no_answer_within_the_timeout(kit, silent_host):
    timeouts = timeouts_naming(SILENT[kit.kind])
    failure = _failure(kit, kit.transport(**kit.aimed_at(silent_host.port), **timeouts))

    assert failure.reason == SILENT[kit.kind], str(failure)
    assert _seconds_in_sentence(failure), failure.plain_sentence


def test_trickling_host_says_no_answer_or_deadline(kit, trickling_host):
    timeouts = timeouts_naming(TRICKLING[kit.kind])
    failure = _failure(kit, kit.transport(**kit.aimed_at(trickling_host.port), **timeouts))

    assert failure.reason == TRICKLING[kit.kind], str(failure)
    assert _seconds_in_sentence(failure), failure.plain_sentence


def test_bad_credentials_say_login_refused(kit):
    failure = _failure(kit, kit.transport(credentials=kit.bad_credentials()))

    assert failure.reason == BAD_CREDENTIALS[kit.kind], str(failure)
    if kit.kind == "webhook":
        assert failure.plain_sentence == "The receiver answered HTTP 401 Unauthorized."


@pytest.mark.servers
def test_changed_host_key_says_so_and_shows_both_fingerprints(sftp_kit):
    failure = _failure(sftp_kit, sftp_kit.transport(host_key=servers.other_host_keys()["changed"]))

    assert failure.reason == Reason.HOST_KEY_CHANGED
    assert str(failure).count("SHA256:") == 2  # got and pinned, side by side


@pytest.fixture(scope="module")
def read_only_sftp(tmp_path_factory):
    server = servers.start_sshd(tmp_path_factory.mktemp("sftp-ro"), read_only=True)
    yield server
    server.process.stop()


@pytest.fixture(scope="module")
def read_only_ftp(tmp_path_factory):
    server = servers.start_ftpd(tmp_path_factory.mktemp("ftp-ro"), read_only=True)
    yield server
    server.process.stop()


@pytest.mark.servers
@pytest.mark.parametrize("make_kit, server", [(SFTPKit, "read_only_sftp"), (FTPKit, "read_only_ftp")])
def test_read_only_path_says_permission_denied(make_kit, server, request):
    kit = make_kit(request.getfixturevalue(server))
    try:
        failure = _failure(kit, kit.transport())
    finally:
        kit.close()

    assert failure.reason == Reason.PERMISSION_DENIED, str(failure)


@pytest.mark.servers
def test_read_only_s3_identity_says_permission_denied(s3_server):
    kit = S3Kit(s3_server)
    read_only = {"access_key": s3_server.reader_access_key, "secret_key": s3_server.reader_secret_key}
    try:
        failure = _failure(kit, kit.transport(credentials=read_only))
    finally:
        kit.close()

    assert failure.reason == Reason.PERMISSION_DENIED, str(failure)


def test_webhook_refusal_names_the_status(webhook_kit):
    webhook_kit.receiver.replies.append((403, {}))

    failure = _failure(webhook_kit, webhook_kit.transport())

    assert failure.reason == Reason.HTTP_STATUS
    assert failure.plain_sentence == "The receiver answered HTTP 403 Forbidden."


def test_a_tls_handshake_that_fails_is_not_taken_for_a_refused_permission(webhook_kit):
    plain_http = webhook_kit.receiver.url.replace("http://", "https://")  # TLS to a plain HTTP server
    transport = webhook_kit.transport(url=plain_http, **QUICK)

    failure = _failure(webhook_kit, transport)

    assert failure.reason == Reason.OTHER, "OpenSSL's error 1 is not the system's EPERM"
    assert "SSL" in str(failure) and not failure.permanent


def test_full_disk_errors_say_disk_full():
    # No loopback server can be filled safely on a shared machine: the mapping is checked alone.
    assert reason_of_os_error(OSError(28, "No space left on device"), connected=True) == Reason.DISK_FULL
    assert sentence(Reason.DISK_FULL) == "The server's disk is full (or our quota is used up)."


def test_stored_error_is_the_plain_sentence_over_the_technical_detail():
    failure = TransportError("SFTP failed: SSHException: No existing session", reason=Reason.NO_ANSWER,
                             seconds=10)

    plain, technical = plain_and_technical(safe_error_text(failure))

    assert plain == "Connected, but the server did not answer within 10 s."
    assert technical == "TransportError: SFTP failed: SSHException: No existing session"


@pytest.fixture
def read_only_redis(tmp_path):
    """A redis-server of our own with a user who may read but not write (a Redis ACL)."""
    server = PrivateRedis("read-only-redis", log_dir=tmp_path)
    server_admin = redis.Redis.from_url(server.url)
    server_admin.execute_command("ACL", "SETUSER", "reader", "on", ">reader-password", "~*", "&*",
                                 "+@read", "+@connection")
    server_admin.close()
    yield server
    server.stop()


@pytest.mark.servers
def test_read_only_redis_user_says_permission_denied(read_only_redis):
    kit = RedisKit()
    reader = {"username": "reader", "password": "reader-password"}
    try:
        failure = _failure(kit, kit.transport(url=read_only_redis.url, credentials=reader))
    finally:
        kit.close()

    assert failure.reason == Reason.PERMISSION_DENIED, str(failure)
