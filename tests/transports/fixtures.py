"""Fixtures: real servers on loopback (started once per session), misbehaving hosts, and
one kit per transport kind for the contract tests."""

from __future__ import annotations

import pytest
import redis
from django.conf import settings

from devtools import broker
from devtools.loopback import hosts, servers
from tests import child_processes
from tests.transports.kits import (
    REDIS_TEST_URL,
    WEBHOOK_SECRET,
    AMQPKit,
    AzureBlobKit,
    FTPKit,
    RedisKit,
    S3Kit,
    SFTPKit,
    WebhookKit,
)

KINDS = ["s3", "sftp", "ftp", "webhook", "redis", "amqp", "azure_blob"]
# Trickling hosts send a byte this often: well below the 1 s connect and read timeouts the
# deadline tests set, so that only the whole-send deadline can stop them.
TRICKLE_S = 0.25


def _serve(start, tmp_path_factory, name, **options):
    server = start(tmp_path_factory.mktemp(name), **options)
    yield server
    server.process.stop()


@pytest.fixture(scope="session")
def s3_server(tmp_path_factory):
    yield from _serve(servers.start_s3, tmp_path_factory, "s3")


@pytest.fixture(scope="session")
def aws_account(tmp_path_factory):
    yield from _serve(servers.start_aws, tmp_path_factory, "aws")


@pytest.fixture(scope="session")
def azurite(tmp_path_factory):
    yield from _serve(servers.start_azurite, tmp_path_factory, "azurite")


@pytest.fixture(scope="session")
def sftp_server(tmp_path_factory):
    yield from _serve(servers.start_sshd, tmp_path_factory, "sftp")


@pytest.fixture(scope="session")
def ftp_server(tmp_path_factory):
    yield from _serve(servers.start_ftpd, tmp_path_factory, "ftp")


@pytest.fixture(scope="session")
def ftps_server(tmp_path_factory):
    yield from _serve(servers.start_ftpd, tmp_path_factory, "ftps", tls=True)


@pytest.fixture(scope="session")
def webhook_receiver():
    receiver = hosts.WebhookReceiver(WEBHOOK_SECRET).start()
    yield receiver
    receiver.stop()


@pytest.fixture(scope="session")
def redis_db():
    """Redis db 14 on the local server, emptied before and after the session."""
    client = redis.Redis.from_url(REDIS_TEST_URL)
    client.flushdb()
    yield client
    client.flushdb()
    client.close()


@pytest.fixture(scope="session")
def amqp_broker():
    """A client's AMQP broker: a vhost of its own on the machine's RabbitMQ, deleted after the session."""
    url = broker.fresh_vhost_per_run(settings.CELERY_BROKER_MANAGEMENT_URL, settings.CELERY_BROKER_URL,
                                     f"{child_processes.database_of_this_run()}-amqp-destination")
    yield url
    broker.delete_vhost(settings.CELERY_BROKER_MANAGEMENT_URL, url)


@pytest.fixture
def silent_host():
    host = hosts.SilentHost()
    yield host
    host.stop()


@pytest.fixture
def trickling_host():
    host = hosts.TricklingHost(trickle_s=TRICKLE_S)
    yield host
    host.stop()


@pytest.fixture
def answering_trickler(kit):
    """A host that says the first line a server of ``kit``'s kind would, then trickles."""
    host = hosts.AnswerThenTrickleHost(kit.first_line, after_request=kit.after_request, trickle_s=TRICKLE_S)
    yield host
    host.stop()


@pytest.fixture
def s3_kit(s3_server):
    yield from _kit(S3Kit(s3_server))


@pytest.fixture
def azure_blob_kit(azurite):
    yield from _kit(AzureBlobKit(azurite))


@pytest.fixture
def sftp_kit(sftp_server):
    yield from _kit(SFTPKit(sftp_server))


@pytest.fixture
def ftp_kit(ftp_server):
    yield from _kit(FTPKit(ftp_server))


@pytest.fixture
def webhook_kit(webhook_receiver):
    webhook_receiver.replies.clear()
    yield from _kit(WebhookKit(webhook_receiver))


@pytest.fixture
def redis_kit(redis_db):
    yield from _kit(RedisKit())


@pytest.fixture
def amqp_kit(amqp_broker):
    yield from _kit(AMQPKit(amqp_broker))


def _kit(kit):
    yield kit
    kit.close()


# Kinds whose server is a process of its own (the webhook receiver is a thread, Redis the machine's).
SERVER_PROCESSES = {"s3", "sftp", "ftp", "azure_blob"}


def _kind_param(kind: str):
    """A kind whose server is a process of its own is marked `servers`; AMQP, whose server is
    the machine's RabbitMQ, `broker`."""
    if kind in SERVER_PROCESSES:
        return pytest.param(kind, marks=pytest.mark.servers)
    return pytest.param(kind, marks=pytest.mark.broker) if kind == "amqp" else kind


@pytest.fixture(params=[_kind_param(kind) for kind in KINDS])
def kit(request):
    """Each transport kind in turn, wired to its real server."""
    return request.getfixturevalue(f"{request.param}_kit")
