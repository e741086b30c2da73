"""Publish each version to the client's own AMQP broker: one persistent message on the client's
exchange, its routing key the file's name, and the broker's publisher confirm as the receipt.

The message is published `mandatory`: a broker with no queue bound for the routing key returns
it, and the send fails, since a message that reached no queue was delivered to no one. A
confirm (basic.ack) is the broker's word that every queue it was routed to has taken it,
written to disk where the queue is durable.
"""

from __future__ import annotations

import hashlib
import socket
import time
from urllib.parse import unquote, urlsplit

import amqp
from amqp import exceptions as amqp_errors
from amqp.method_framing import frame_handler

from .base import TIMEOUT_SETTINGS, Deadline, FeedFile, Receipt, Setting, Transport, TransportError, pem_certificate_problem
from .failures import Reason, reason_of_os_error
from .probes import ProbeSteps
from .urls import userinfo_problem

PERSISTENT = 2  # AMQP delivery mode: the broker writes the message to disk in a durable queue
MAX_ROUTING_KEY_BYTES = 255  # an AMQP short string
# A pooled connection idle this long is replaced before a send: with heartbeats off, a
# connection a firewall or load balancer dropped meanwhile would only show itself by failing.
IDLE_REUSE_S = 30.0


# py-amqp reads every TCP option after connecting and writes it back; Linux refuses to take
# back a segment size above 32,767 (EINVAL), which it reports on loopback (MTU 65,536), so
# connecting failed at random in tests. 0 is the kernel's "no size of the user's".
KERNEL_CHOOSES_THE_SEGMENT_SIZE = {socket.TCP_MAXSEG: 0}


def _url_problem(url: str) -> str | None:
    if not url.startswith(("amqp://", "amqps://")):
        return "must start with amqp:// or amqps://"
    if not urlsplit(url).hostname:
        return "must name the broker's host"
    return userinfo_problem(url)


def _exchange_problem(name: str) -> str | None:
    if name.startswith("amq."):
        return "must be the client's own exchange, not one of the broker's amq.* exchanges"
    return None


def virtual_host_of(url: str) -> str:
    """The vhost a URL names, the RabbitMQ URI way: its path without the leading "/", percent-
    decoded ("amqps://host/feeds" is "feeds", "amqps://host/%2F" is "/"); "/" when it has none."""
    path = urlsplit(url).path
    return unquote(path[1:]) if len(path) > 1 else "/"


class AMQPTransport(Transport):
    """One persistent message per version, headers saying which file and version it is
    (omnium-path, omnium-version, omnium-etag, omnium-sha256), message id `<path>@<version>`
    so a consumer can drop a repeat."""

    kind = "amqp"
    label = "AMQP broker (RabbitMQ)"
    config_schema = {
        **TIMEOUT_SETTINGS,
        "url": Setting(str, required=True, check=_url_problem,
                       help="amqps://host:port/vhost (the path names the virtual host; none: '/'). "
                            "User name and password go in the credentials."),
        "exchange": Setting(str, required=True, check=_exchange_problem,
                            help="The client's exchange. The routing key is the file's name, "
                                 "from the subscription's file name template."),
        "ca_cert": Setting(str, check=pem_certificate_problem, multiline=True,
                           help="amqps: a PEM CA certificate to trust instead of the public ones."),
    }
    credentials_bound_to = ("url", "ca_cert")
    credentials_schema = {
        "username": Setting(str, required=True, help="The broker user we publish as."),
        "password": Setting(str, required=True, help="Its password."),
    }
    address_setting = "url"

    def __init__(self, config: dict, credentials: dict):
        super().__init__(config, credentials)
        self._connection: amqp.Connection | None = None
        self._channel = None
        self._returned: list[str] = []
        self._last_used = 0.0

    def push(self, file: FeedFile, deadline: Deadline) -> Receipt:
        routing_key = file.path
        if len(routing_key.encode()) > MAX_ROUTING_KEY_BYTES:
            raise TransportError(f"amqp: the routing key {routing_key!r} is longer than {MAX_ROUTING_KEY_BYTES} bytes: "
                                 "shorten the file name template", permanent=True, reason=Reason.INVALID_SETTINGS)
        digest = hashlib.sha256(file.body).hexdigest()
        message = amqp.Message(
            file.body, content_type=file.content_type, delivery_mode=PERSISTENT, app_id="omnium",
            message_id=f"{file.path}@{file.version}", timestamp=int(time.time()),
            application_headers={"omnium-path": file.path, "omnium-version": file.version,
                                 "omnium-etag": file.etag, "omnium-sha256": digest})
        # A pooled connection may have gone meanwhile (a broker restart, a firewall): once more
        # on a new one. Should the first publish have landed, the consumer gets the version twice.
        self._publish(message, routing_key, deadline, once_more=self._channel is not None)
        self._last_used = time.monotonic()
        if self._returned:
            raise TransportError(
                f"amqp: the broker routed the message to no queue (exchange {self.config['exchange']!r}, routing key "
                f"{routing_key!r}): {self._returned[0]}; nothing was delivered", permanent=True,
                reason=Reason.MISSING_TARGET)
        return Receipt(f"confirmed exchange={self.config['exchange']} routing_key={routing_key} "
                       f"size={len(file.body)} sha256={digest}")

    def _publish(self, message: amqp.Message, routing_key: str, deadline: Deadline, *, once_more: bool) -> None:
        """Publish and wait for the broker's confirm; a connection that failed is dropped."""
        channel = self._open_channel(deadline)
        deadline.before_commit("amqp")
        self._returned.clear()
        try:
            channel.basic_publish(message, exchange=self.config["exchange"], routing_key=routing_key,
                                  mandatory=True, confirm_timeout=deadline.timeout(self.config["send_timeout"]))
        except Exception as exc:
            self._drop_connection()  # its state is unknown now: a late confirm must not answer the next send
            if once_more and isinstance(exc, _CONNECTION_LOST) and not deadline.expired:
                return self._publish(message, routing_key, deadline, once_more=False)
            raise self._failure(exc, connected=True, logged_in=True) from exc
        return None

    def probe(self, steps: ProbeSteps, deadline: Deadline) -> None:
        # Nothing is published: a test message would reach the client's consumers.
        host, port = self.address_of(self.config)
        vhost = virtual_host_of(self.config["url"])
        with steps.step(f"connect to {host}:{port} and log in to virtual host {vhost!r}",
                        failure=lambda exc: self._failure(exc, connected=False)):
            channel = self._open_channel(deadline)
        try:
            with steps.step(f"find the exchange {self.config['exchange']!r}",
                            failure=lambda exc: self._failure(exc, connected=True, logged_in=True)):
                channel.exchange_declare(self.config["exchange"], "direct", passive=True)
        except TransportError:
            self._drop_connection()  # the broker closed the channel
            raise

    def _open_channel(self, deadline: Deadline):
        """The pooled connection's channel in confirm mode, connecting afresh when there is none
        or it sat idle too long."""
        if self._channel is not None and time.monotonic() - self._last_used < IDLE_REUSE_S:
            return self._channel
        self._drop_connection()
        host, port = self.address_of(self.config)
        reached = []  # not empty once the TCP (and TLS) connection is up: a timeout after it is silence
        connection = amqp.Connection(
            f"{host}:{port}", userid=self.credentials["username"], password=self.credentials["password"],
            virtual_host=virtual_host_of(self.config["url"]), ssl=self._tls_options(host),
            connect_timeout=deadline.timeout(self.config["connect_timeout"]), confirm_publish=True,
            client_properties={"product": "Omnium"}, frame_handler=_noting_reached(reached),
            socket_settings=KERNEL_CHOOSES_THE_SEGMENT_SIZE)
        try:
            connection.connect()
            channel = connection.channel()
        except Exception as exc:
            connection.collect()
            raise self._failure(exc, connected=bool(reached)) from exc
        channel.events["basic_return"].add(self._on_return)
        self._connection, self._channel = connection, channel
        self._last_used = time.monotonic()
        return channel

    def _tls_options(self, host: str) -> dict | bool:
        if not self.config["url"].startswith("amqps://"):
            return False
        # py-amqp turns host name checking off for ssl=True: a context of our own turns it on.
        context = {"check_hostname": True, "cadata": self.config.get("ca_cert")}
        return {"context": context, "server_hostname": host}

    def _on_return(self, exception, exchange, routing_key, message) -> None:
        self._returned.append(str(exception))

    def _failure(self, exc: BaseException, *, connected: bool, logged_in: bool = False) -> TransportError:
        if isinstance(exc, TransportError):
            return exc
        permanent = _PERMANENT.get(type(exc))
        if permanent is not None:
            # 403 on the login is a refused login; once in, it is a refused write.
            reason = Reason.PERMISSION_DENIED if logged_in and isinstance(exc, amqp_errors.AccessRefused) else permanent
            return TransportError(f"amqp: the broker refused: {exc}", permanent=True, reason=reason)
        if isinstance(exc, amqp_errors.MessageNacked):
            return TransportError("amqp: the broker could not take the message (basic.nack)", reason=Reason.OTHER)
        if isinstance(exc, amqp_errors.AMQPError):
            return TransportError(f"amqp: {type(exc).__name__}: {exc}", reason=Reason.OTHER)
        reason = reason_of_os_error(exc, connected=connected)
        if reason == Reason.TLS_REFUSED:  # a certificate no retry makes trusted, or for another host
            return TransportError(f"amqp: {exc}", permanent=True, reason=reason)
        seconds = self.config["send_timeout" if connected else "connect_timeout"]
        what = "no answer" if isinstance(exc, socket.timeout | TimeoutError) else type(exc).__name__
        return TransportError(f"amqp: {what}: {exc}", reason=reason, seconds=seconds)

    def _take_connection(self) -> amqp.Connection | None:
        """The pooled connection, which the transport no longer holds."""
        connection, self._connection, self._channel = self._connection, None, None
        return connection

    def _drop_connection(self) -> None:
        connection = self._take_connection()
        if connection is not None:
            connection.collect()

    def close(self) -> None:
        """Close the pooled connection politely, within the connect timeout."""
        connection = self._take_connection()
        if connection is None:
            return
        try:
            with Deadline(self.config["connect_timeout"], sockets=self._sockets):
                connection.close()
        except Exception:  # a broker that does not answer the close: the socket goes anyway
            connection.collect()


def _noting_reached(reached: list):
    """py-amqp's frame handler, made once its transport is connected (its documented
    `frame_handler` parameter), noting that moment in `reached`: a connection that fails
    afterwards failed at a server that accepted it, not on the way to one."""
    def make(connection, callback):
        reached.append(True)
        return frame_handler(connection, callback)
    return make


# How a connection the broker or the network dropped shows itself on the next publish.
_CONNECTION_LOST = (OSError, amqp_errors.RecoverableConnectionError, amqp_errors.ChannelNotOpen)

# Refusals no retry can change until a person acts, and what kind each is: a login (or its
# vhost) refused, a missing exchange, a message too large or an exchange of another type.
_PERMANENT = {
    amqp_errors.AccessRefused: Reason.AUTH_REFUSED,
    amqp_errors.NotAllowed: Reason.AUTH_REFUSED,
    amqp_errors.NotFound: Reason.MISSING_TARGET,
    amqp_errors.PreconditionFailed: Reason.INVALID_SETTINGS,
    amqp_errors.ContentTooLarge: Reason.INVALID_SETTINGS,
}
