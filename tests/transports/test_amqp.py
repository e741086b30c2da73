"""The AMQP destination against a real RabbitMQ (a vhost of its own): what a client's consumer
receives, and every way the broker can refuse a message without it counting as delivered."""

from __future__ import annotations

import hashlib
import socket
import ssl
import threading
from urllib.parse import quote, urlsplit

import pytest
import requests
from django.conf import settings

from devtools.loopback.servers import LOOPBACK, write_self_signed
from omnium.transports import TransportError
from omnium.transports.amqp import PERSISTENT, virtual_host_of
from omnium.transports.failures import Reason
from omnium.transports.probes import run_connection_test

from .kits import feed_path


def test_the_consumer_gets_a_persistent_message_saying_which_file_and_version_it_is(amqp_kit):
    body, path = b'{"medals": []}', feed_path()

    amqp_kit.transport().send(body, path, content_type="application/json", version=41, etag="e41")

    [message] = amqp_kit.messages()
    assert message.body == body
    assert message.delivery_info["routing_key"] == path, "the routing key is the file's name"
    assert message.properties["delivery_mode"] == PERSISTENT
    assert message.properties["content_type"] == "application/json"
    assert message.properties["message_id"] == f"{path}@41"
    assert message.headers == {"omnium-path": path, "omnium-version": 41, "omnium-etag": "e41",
                               "omnium-sha256": hashlib.sha256(body).hexdigest()}


def test_a_message_no_queue_takes_is_not_delivered(amqp_kit):
    """Published mandatory: RabbitMQ returns a message it could route to no queue, and the
    confirm that follows must not count as a receipt."""
    amqp_kit.channel.exchange_declare("omnium-test-unbound", "direct", durable=True, auto_delete=False)
    transport = amqp_kit.transport(exchange="omnium-test-unbound")

    with pytest.raises(TransportError, match="routed the message to no queue") as failure:
        amqp_kit.send(transport, b"{}", feed_path())

    assert failure.value.permanent and failure.value.reason == Reason.MISSING_TARGET
    amqp_kit.channel.queue_declare("omnium-test-late", durable=True, auto_delete=False)
    amqp_kit.channel.queue_bind("omnium-test-late", "omnium-test-unbound", "late/medals.json")
    assert "confirmed" in amqp_kit.send(transport, b"{}", "late/medals.json").text, "the same connection goes on"
    amqp_kit.channel.queue_delete("omnium-test-late")


def test_a_missing_exchange_is_permanent_and_the_next_send_connects_afresh(amqp_kit):
    transport = amqp_kit.transport(exchange="omnium-test-not-yet")

    with pytest.raises(TransportError, match="NOT_FOUND") as failure:
        amqp_kit.send(transport, b"{}", feed_path())

    assert failure.value.permanent and failure.value.reason == Reason.MISSING_TARGET
    amqp_kit.channel.exchange_declare("omnium-test-not-yet", "fanout", durable=True, auto_delete=False)
    amqp_kit.channel.queue_bind(amqp_kit.queue, "omnium-test-not-yet", "")
    path = feed_path()
    amqp_kit.send(transport, b'{"now": 1}', path)
    assert amqp_kit.read_back(path) == b'{"now": 1}'
    amqp_kit.channel.exchange_delete("omnium-test-not-yet")


def test_a_queue_that_refuses_the_message_gets_a_transient_failure(amqp_kit):
    """A full queue that rejects publishes makes RabbitMQ nack: no receipt, try again later."""
    amqp_kit.channel.exchange_declare("omnium-test-full", "fanout", durable=True, auto_delete=False)
    amqp_kit.channel.queue_declare("omnium-test-full", durable=True, auto_delete=False,
                                   arguments={"x-max-length": 0, "x-overflow": "reject-publish"})
    amqp_kit.channel.queue_bind("omnium-test-full", "omnium-test-full", "")
    transport = amqp_kit.transport(exchange="omnium-test-full")
    try:
        with pytest.raises(TransportError, match="nack") as failure:
            amqp_kit.send(transport, b"{}", feed_path())
        assert not failure.value.permanent
    finally:
        amqp_kit.channel.queue_delete("omnium-test-full")
        amqp_kit.channel.exchange_delete("omnium-test-full")


def test_a_user_who_may_not_write_to_the_exchange_is_told_so(amqp_kit, reader_user):
    transport = amqp_kit.transport(credentials=reader_user)

    with pytest.raises(TransportError, match="ACCESS_REFUSED") as failure:
        amqp_kit.send(transport, b"{}", feed_path())

    assert failure.value.permanent and failure.value.reason == Reason.PERMISSION_DENIED
    assert amqp_kit.messages() == []


def test_a_pooled_connection_that_was_dropped_is_replaced_within_the_send(amqp_kit, broker_front):
    front, _ = broker_front()
    transport, path = amqp_kit.transport(url=amqp_kit.url(front.port)), feed_path()
    amqp_kit.send(transport, b'{"v": 1}', path)
    front.cut()  # the broker, or a firewall, dropped it while idle

    amqp_kit.send(transport, b'{"v": 2}', path)

    assert amqp_kit.read_back(path) == b'{"v": 2}'


def test_a_wrong_password_is_a_refused_login(amqp_kit):
    with pytest.raises(TransportError) as failure:
        amqp_kit.send(amqp_kit.transport(credentials=amqp_kit.bad_credentials()), b"{}", feed_path())

    assert failure.value.permanent and failure.value.reason == Reason.AUTH_REFUSED


def test_the_connection_test_finds_the_exchange_and_publishes_nothing(amqp_kit):
    report = run_connection_test(amqp_kit.transport())
    missing = run_connection_test(amqp_kit.transport(exchange="omnium-test-absent"))

    assert report.ok, report.failure
    assert [step.name.split(" ")[0] for step in report.steps] == ["connect", "find"]
    assert amqp_kit.messages() == [], "a test message would reach the client's consumers"
    assert not missing.ok and missing.failure.reason == Reason.MISSING_TARGET
    assert "omnium-test-absent" in missing.steps[-1].name


@pytest.mark.parametrize("url, vhost", [
    ("amqps://broker.example.com", "/"),
    ("amqps://broker.example.com/", "/"),
    ("amqps://broker.example.com/feeds", "feeds"),
    ("amqps://broker.example.com/%2F", "/"),
    ("amqps://broker.example.com/a%2Fb", "a/b"),
])
def test_the_url_path_names_the_virtual_host(url, vhost):
    assert virtual_host_of(url) == vhost


@pytest.mark.parametrize("config, refusal", [
    ({"url": "http://broker.example.com", "exchange": "feeds"}, "must start with amqp:// or amqps://"),
    ({"url": "amqps://u:p@broker.example.com", "exchange": "feeds"}, "must not hold a user name or password"),
    ({"url": "amqps://broker.example.com", "exchange": "amq.topic"}, "the client's own exchange"),
    ({"url": "amqps://broker.example.com", "exchange": ""}, "exchange is required"),
])
def test_settings_that_cannot_work_are_refused_plainly(amqp_kit, config, refusal):
    with pytest.raises(TransportError, match=refusal) as refused:
        amqp_kit.transport(**config)

    assert refused.value.permanent


def test_a_routing_key_longer_than_amqp_allows_is_refused_before_sending(amqp_kit):
    with pytest.raises(TransportError, match="longer than 255 bytes") as refused:
        amqp_kit.send(amqp_kit.transport(), b"{}", "a/" + "x" * 260 + ".json")

    assert refused.value.permanent and amqp_kit.messages() == []


def test_amqps_publishes_to_a_broker_whose_certificate_names_its_host(amqp_kit, broker_front):
    front, ca_pem = broker_front((LOOPBACK,))
    transport = amqp_kit.transport(url=amqp_kit.url(front.port, "amqps"), ca_cert=ca_pem)
    path = feed_path()

    amqp_kit.send(transport, b'{"tls": 1}', path)

    assert amqp_kit.read_back(path) == b'{"tls": 1}'


def test_amqps_refuses_a_broker_whose_certificate_names_another_host(amqp_kit, broker_front):
    """py-amqp's bare ssl=True checks no host name (issue 31): a certificate of a trusted CA
    for another name must not get the password."""
    front, ca_pem = broker_front(("broker.example.net",))
    transport = amqp_kit.transport(url=amqp_kit.url(front.port, "amqps"), ca_cert=ca_pem)

    with pytest.raises(TransportError) as failure:
        amqp_kit.send(transport, b"{}", feed_path())

    assert failure.value.permanent and failure.value.reason == Reason.TLS_REFUSED
    assert amqp_kit.messages() == []


@pytest.fixture
def reader_user(amqp_broker):
    """A broker user who may read the vhost but write nothing; removed afterwards."""
    api, vhost = settings.CELERY_BROKER_MANAGEMENT_URL.rstrip("/"), quote(virtual_host_of(amqp_broker), safe="")
    name, password = "omnium-test-reader", "reader-password"
    requests.put(f"{api}/users/{name}", json={"password": password, "tags": ""}, timeout=30).raise_for_status()
    requests.put(f"{api}/permissions/{vhost}/{name}", json={"configure": "", "write": "", "read": ".*"},
                 timeout=30).raise_for_status()
    yield {"username": name, "password": password}
    requests.delete(f"{api}/users/{name}", timeout=30)


class BrokerFront:
    """A listener that passes each connection on to RabbitMQ's plain port, as a broker's TLS
    listener (`context`: its certificate) or a firewall would; `cut()` drops every connection
    passed on so far, as a firewall that forgets idle ones does."""

    def __init__(self, context: ssl.SSLContext | None):
        self._context, self._open = context, []
        self._listener = socket.create_server((LOOPBACK, 0))
        self.port = self._listener.getsockname()[1]
        self._broker_port = urlsplit(settings.CELERY_BROKER_URL).port or 5672
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            try:
                client = self._context.wrap_socket(client, server_side=True) if self._context else client
            except (ssl.SSLError, OSError):
                client.close()
                continue
            upstream = socket.create_connection((LOOPBACK, self._broker_port))
            self._open += [client, upstream]
            for source, sink in ((client, upstream), (upstream, client)):
                threading.Thread(target=_pipe, args=(source, sink), daemon=True).start()

    def cut(self) -> None:
        for sock in self._open:
            _shut(sock)

    def close(self) -> None:
        self._listener.close()
        self.cut()


@pytest.fixture
def broker_front(tmp_path):
    """front(names=None) -> (BrokerFront, CA PEM or None): TLS with a certificate naming `names`, or plain."""
    fronts = []

    def front(names=None):
        context, ca_pem = None, None
        if names:
            ca_pem = write_self_signed(tmp_path, names)
            context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            context.load_cert_chain(tmp_path / "tls.crt", tmp_path / "tls.key")
        fronts.append(BrokerFront(context))
        return fronts[-1], ca_pem

    yield front
    for made in fronts:
        made.close()


def _pipe(source, sink) -> None:
    try:
        while data := source.recv(65536):
            sink.sendall(data)
    except OSError:
        pass
    finally:
        _shut(source)
        _shut(sink)


def _shut(sock) -> None:
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass
