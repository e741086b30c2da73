"""One kit per transport kind: how to build it against its real test server, how to spoil
its credentials, how to aim it at a misbehaving host, and how to read a file back from the
server without going through the transport."""

from __future__ import annotations

import base64
import gzip
import hashlib
import itertools
import os
import re
import threading
import time
import uuid
from pathlib import Path
from urllib.parse import quote, unquote, urlsplit

import amqp
import boto3
import redis as redis_client
from azure.core.exceptions import ResourceNotFoundError
from cryptography.hazmat.primitives.asymmetric import ed25519

from devtools.loopback.hosts import WebhookReceiver
from devtools.loopback.servers import LOOPBACK, AzuriteServer, FTPServer, S3Server, SSHServer, openssh_private_key
from devtools.waiting import wait_until
from omnium.transports.amqp import KERNEL_CHOOSES_THE_SEGMENT_SIZE
from omnium.transports.base import Transport, TransportError, temporary_name
from omnium.transports.registry import TRANSPORTS

WEBHOOK_SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
# Database 14 of the tests' Redis server (the machine's, or an xdist worker's own) is ours to flush.
REDIS_TEST_URL = os.environ.get("REDIS_URL", f"redis://{LOOPBACK}:6379/15").rsplit("/", 1)[0] + "/14"
_versions = itertools.count(int(time.time() * 1000))


def next_version() -> int:
    """A version newer than any sent before in this test run."""
    return next(_versions)


def feed_path(name: str = "medals.json") -> str:
    return f"games/{uuid.uuid4().hex[:12]}/{name}"


class Kit:
    kind = ""
    # What a server of this kind says first (a status line, a greeting, a reply), and
    # whether it waits for the client's request before saying it.
    first_line = b""
    after_request = False

    def __init__(self):
        self._made: list[Transport] = []

    def transport(self, *, credentials: dict | None = None, **config) -> Transport:
        made = TRANSPORTS[self.kind]({**self.config(), **config}, credentials or self.credentials())
        self._made.append(made)
        return made

    def send(self, transport: Transport, body: bytes, path: str, version: int | None = None):
        version = version or next_version()
        etag = hashlib.sha256(body).hexdigest()[:16]
        return transport.send(body, path, content_type="application/json", version=version, etag=etag)

    def close(self) -> None:
        for made in self._made:
            made.close()

    # Each kind fills these in.
    def config(self) -> dict:
        raise NotImplementedError

    def credentials(self) -> dict:
        raise NotImplementedError

    def bad_credentials(self) -> dict:
        raise NotImplementedError

    def aimed_at(self, port: int) -> dict:
        """Config that sends to ``port`` on loopback instead of the real server."""
        raise NotImplementedError

    def read_back(self, path: str) -> bytes | None:
        """The bytes the server holds for feed file ``path``, None if it holds none."""
        raise NotImplementedError

    def receipt_pattern(self, body: bytes, path: str) -> str:
        raise NotImplementedError


class S3Kit(Kit):
    kind = "s3"
    first_line, after_request = b"HTTP/1.1 200 OK\r\n", True
    prefix = "omnium-tests"

    def __init__(self, server: S3Server):
        super().__init__()
        self.server = server
        self.reader = boto3.session.Session().client(
            "s3",
            endpoint_url=server.endpoint_url,
            region_name="us-east-1",
            aws_access_key_id=server.access_key,
            aws_secret_access_key=server.secret_key,
        )

    def config(self):
        return self.server.destination_config(prefix=self.prefix)

    def credentials(self):
        return self.server.credentials()

    def bad_credentials(self):
        return {"access_key": self.server.access_key, "secret_key": "not-the-secret"}

    def aimed_at(self, port):
        return {"endpoint_url": f"http://{LOOPBACK}:{port}"}

    def read_back(self, path):
        try:
            reply = self.reader.get_object(Bucket=self.server.bucket, Key=f"{self.prefix}/{path}")
        except self.reader.exceptions.NoSuchKey:
            return None
        return reply["Body"].read()

    def receipt_pattern(self, body, path):
        return rf"etag={hashlib.md5(body).hexdigest()}( \S+)*"

    def close(self):
        super().close()
        self.reader.close()


class AzureBlobKit(Kit):
    kind = "azure_blob"
    first_line, after_request = b"HTTP/1.1 201 Created\r\n", True
    prefix = "omnium-tests"

    def __init__(self, server: AzuriteServer):
        super().__init__()
        self.server = server
        self.reader = server.service().get_container_client(server.container)

    def config(self):
        return self.server.destination_config(self.prefix)

    def credentials(self):
        return self.server.credentials()

    def bad_credentials(self):
        return {"account_name": self.server.account_name, "account_key": base64.b64encode(b"not-the-key" * 6).decode()}

    def aimed_at(self, port):
        return {"account_url": f"http://{LOOPBACK}:{port}/{self.server.account_name}"}

    def read_back(self, path):
        try:
            return self.reader.download_blob(f"{self.prefix}/{path}").readall()
        except ResourceNotFoundError:
            return None

    def receipt_pattern(self, body, path):
        return rf'etag=\S+ blob={re.escape(self.prefix)}/{re.escape(path)} size={len(body)}'

    def close(self):
        super().close()
        self.reader.close()


class SFTPKit(Kit):
    kind = "sftp"
    first_line = b"SSH-2.0-OpenSSH_9.6\r\n"

    def __init__(self, server: SSHServer):
        super().__init__()
        self.server = server

    def config(self):
        return self.server.destination_config(str(self.server.root))

    def credentials(self):
        return self.server.credentials()

    def bad_credentials(self):
        return {"private_key": openssh_private_key(ed25519.Ed25519PrivateKey.generate())}

    def aimed_at(self, port):
        return {"port": port}

    def read_back(self, path):
        return _read_file(self.server.root / path)

    def receipt_pattern(self, body, path):
        return rf"size={len(body)} path={re.escape(str(self.server.root / path))}"


class FTPKit(Kit):
    kind = "ftp"
    first_line = b"220 omnium ready\r\n"

    def __init__(self, server: FTPServer):
        super().__init__()
        self.server = server

    def config(self):
        return self.server.destination_config("/")

    def credentials(self):
        return self.server.credentials()

    def bad_credentials(self):
        return {"password": "not-the-password"}

    def aimed_at(self, port):
        return {"port": port}

    def read_back(self, path):
        return _read_file(self.server.root / path)

    def receipt_pattern(self, body, path):
        return rf"size={len(body)} path=/{re.escape(path)}"


class WebhookKit(Kit):
    kind = "webhook"
    first_line, after_request = b"HTTP/1.1 200 OK\r\n", True

    def __init__(self, receiver: WebhookReceiver):
        super().__init__()
        self.receiver = receiver

    def config(self):
        return self.receiver.destination_config()

    def credentials(self):
        return self.receiver.credentials()

    def bad_credentials(self):
        return {"secret": "whsec_" + "QUFBQUFBQUFBQUFBQUFBQUFBQUFBQUFB"}

    def aimed_at(self, port):
        return {"url": f"http://{LOOPBACK}:{port}/feeds"}

    def read_back(self, path):
        return self.receiver.received(path)

    def receipt_pattern(self, body, path):
        # The loopback receiver answers "received 200", which is 12 bytes.
        return rf"200 OK; body 12 bytes sha256:{hashlib.sha256(b'received 200').hexdigest()}"


class RedisKit(Kit):
    kind = "redis"
    first_line, after_request = b"+OK\r\n", True
    key_prefix = "omnium-test:"

    def __init__(self):
        super().__init__()
        self.reader = redis_client.Redis.from_url(REDIS_TEST_URL)

    def config(self):
        return {"url": REDIS_TEST_URL, "key_prefix": self.key_prefix}

    def credentials(self):
        return {}

    def bad_credentials(self):
        # AUTH as a user that does not exist: refused without adding users to the server.
        return {"username": "omnium-nobody", "password": "not-the-password"}

    def aimed_at(self, port):
        return {"url": f"redis://{LOOPBACK}:{port}/14"}

    def read_back(self, path):
        packed = self.reader.hget(self.key_prefix + path, "gz")
        return gzip.decompress(packed) if packed is not None else None

    def receipt_pattern(self, body, path):
        return r"stored v=\d+"

    def close(self):
        super().close()
        self.reader.close()


class AMQPKit(Kit):
    """The machine's RabbitMQ, in a vhost of its own: a topic exchange of the client's, and a
    queue bound to it for every routing key, which read_back drains."""

    kind = "amqp"
    # RabbitMQ answers a client's protocol header with connection.start, a method frame on channel 0.
    first_line, after_request = b"\x01\x00\x00\x00\x00\x01\xf4\x00\x0a\x00\x0a", True
    exchange, queue = "omnium-test-feeds", "omnium-test-received"

    def __init__(self, broker_url: str):
        super().__init__()
        parts = urlsplit(broker_url)
        self.vhost, self.port = unquote(parts.path[1:]), parts.port or 5672
        self.username, self.password = unquote(parts.username), unquote(parts.password)
        self._received: dict[str, tuple[int, bytes]] = {}
        self._lock = threading.Lock()
        self._reader = self.connect()
        self.channel = self._reader.channel()
        self.channel.exchange_declare(self.exchange, "topic", durable=True, auto_delete=False)
        self.channel.queue_declare(self.queue, durable=True, auto_delete=False)
        self.channel.queue_bind(self.queue, self.exchange, "#")

    def connect(self) -> amqp.Connection:
        """A connection of our own to the kit's vhost (not through the transport)."""
        connection = amqp.Connection(f"{LOOPBACK}:{self.port}", userid=self.username, password=self.password,
                                     virtual_host=self.vhost, socket_settings=KERNEL_CHOOSES_THE_SEGMENT_SIZE)
        connection.connect()
        return connection

    def url(self, port: int | None = None, scheme: str = "amqp") -> str:
        return f"{scheme}://{LOOPBACK}:{port or self.port}/{quote(self.vhost, safe='')}"

    def config(self):
        return {"url": self.url(), "exchange": self.exchange}

    def credentials(self):
        return {"username": self.username, "password": self.password}

    def bad_credentials(self):
        return {"username": self.username, "password": "not-the-password"}

    def aimed_at(self, port):
        return {"url": self.url(port)}

    def messages(self) -> list[amqp.Message]:
        """The messages waiting in the kit's queue, taken off it (each also kept for read_back)."""
        taken = []
        with self._lock:
            while (message := self.channel.basic_get(self.queue, no_ack=True)) is not None:
                taken.append(message)
                path, version = message.headers["omnium-path"], message.headers["omnium-version"]
                if version >= self._received.get(path, (0, b""))[0]:
                    self._received[path] = (version, bytes(message.body))
        return taken

    def read_back(self, path):
        """The newest version's body published for ``path``: what a consumer of the queue holds last."""
        self.messages()
        return self._received.get(path, (0, None))[1]

    def receipt_pattern(self, body, path):
        return (rf"confirmed exchange={self.exchange} routing_key={re.escape(path)} size={len(body)} "
                rf"sha256={hashlib.sha256(body).hexdigest()}")

    def close(self):
        super().close()
        self.channel.queue_purge(self.queue)
        self._reader.close()


def _read_file(path) -> bytes | None:
    try:
        return path.read_bytes()
    except FileNotFoundError:
        return None


def cut_mid_upload(kit: Kit, root: Path, path: str) -> Path:
    """Start sending a large file to ``path`` (below the server's ``root``), cut the send
    once its temporary file is growing, and return that file, which the cut left behind."""
    transport, failures = kit.transport(), []

    def send():
        try:
            kit.send(transport, os.urandom(60_000_000), path)
        except TransportError as failure:
            failures.append(failure)

    sender = threading.Thread(target=send)
    sender.start()
    temporary = growing_temporary_file(root / path)
    transport.cut()
    sender.join(10)
    assert failures and temporary.exists(), "the cut send failed and left its temporary file"
    _wait_until_still(temporary)
    return temporary


def left_by_a_killed_sender(root: Path, path: str) -> Path:
    """The partial temporary file that a sender killed mid-upload leaves at ``path`` (below the
    server's ``root``): the server keeps what it had received, and no one is left to delete it.
    (A sender that survives its cut deletes its own temporary file when the session still
    answers, as the FTP transport does, so a real cut leaves nothing there to clean.)"""
    partial = root / temporary_name(path)
    partial.parent.mkdir(parents=True, exist_ok=True)
    partial.write_bytes(os.urandom(1_000_000))
    return partial


def _wait_until_still(file: Path, quiet: float = 0.3) -> None:
    """Wait until the server has written the last of what it had received to ``file`` (sshd's
    sftp-server goes on writing queued data for a moment after the connection is cut)."""
    ends, last = time.monotonic() + 10, None
    while time.monotonic() < ends:
        seen = file.stat().st_size, file.stat().st_mtime_ns
        if seen == last:
            return
        last = seen
        time.sleep(quiet)
    raise AssertionError(f"{file} kept changing")


def growing_temporary_file(final: Path) -> Path:
    """The temporary file an upload to ``final`` is writing, once it holds some bytes."""
    def growing():
        return next((p for p in final.parent.glob(f".{final.name}.*.tmp") if p.stat().st_size > 0), None)

    return wait_until(growing, 10, interval=0.002, message="the upload started")


def leftovers_beside(final: Path) -> dict[str, Path]:
    """Files beside ``final`` that a clean-up must keep, each an hour old but for the upload
    in progress: names close to our temporary pattern, and a temporary file of ours that is
    younger than the deadline (another sender's upload in progress)."""
    names = {
        "foreign dot file": f".{final.name}.swp",
        "foreign tmp": f"{final.name}.tmp",
        "almost ours": f".{final.name}.{'g' * 12}.tmp",
        "upload in progress": f".{final.name}.{'a' * 12}.tmp",
    }
    files = {what: final.parent / name for what, name in names.items()}
    for what, file in files.items():
        file.write_bytes(b"not ours to remove")
        if what != "upload in progress":
            age_by_an_hour(file)
    return files


def age_by_an_hour(file: Path) -> None:
    """Make ``file`` look as if written an hour ago: long past any send's deadline."""
    an_hour_ago = time.time() - 3600
    os.utime(file, (an_hour_ago, an_hour_ago))
