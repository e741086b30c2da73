"""Destinations reach public addresses only, unless a network is allowed: checked when the
destination is saved (its host resolved) and again on every connect, against the address really
connected to. A refusal is a permanent failure at send time and a field error in the form."""

import socket
import threading

import pytest
from django.conf import settings
from django.core.exceptions import ValidationError
from django.test import override_settings

from omnium.clients.models import Client, Destination
from omnium.clients.system_destinations import pull_redis_url_and_credentials
from omnium.transports.address_policy import AddressPolicy
from omnium.transports.base import TransportError
from omnium.transports.failures import Reason
from omnium.transports.probes import run_connection_test
from omnium.transports.registry import transport_for
from tests.transports.kits import WEBHOOK_SECRET


def nothing_allowed():
    return override_settings(OMNIUM={**settings.OMNIUM, "DESTINATION_ALLOWED_NETWORKS": ()})


@pytest.mark.parametrize("ip", ["127.0.0.1", "::1", "10.1.2.3", "172.16.0.9", "192.168.1.1", "100.64.0.1",
                                "169.254.10.10", "fe80::1", "224.0.0.1", "0.0.0.0", "240.0.0.1",
                                "::ffff:127.0.0.1", "fd00:ec2::254", "169.254.169.254",
                                # Python's own tables call these global (issue 31):
                                "192.0.0.192", "168.63.129.16", "fec0::1", "2002:7f00:1::1", "2002:a00:1::",
                                "64:ff9b::7f00:1", "64:ff9b::a9fe:a9fe", "64:ff9b:1::1", "3fff::1", "5f00::1"])
def test_non_public_addresses_are_refused(ip):
    assert AddressPolicy().refusal(ip, 80)


@pytest.mark.parametrize("ip", ["2002:5db8:d822::1", "64:ff9b::5db8:d822"])
def test_an_ipv6_address_that_carries_a_public_ipv4_one_is_allowed(ip):
    assert AddressPolicy().refusal(ip, 443) is None


def test_the_refusal_of_a_wrapped_address_names_the_ipv4_address_it_reaches():
    assert AddressPolicy().refusal("2002:7f00:1::1", 22).startswith("127.0.0.1 is a loopback address")


def test_public_addresses_are_allowed():
    assert AddressPolicy().refusal("93.184.216.34", 443) is None
    assert AddressPolicy().refusal("2606:2800:220:1::248", 443) is None


def test_an_allowed_network_opens_only_itself_and_never_the_metadata_service():
    from ipaddress import ip_network

    policy = AddressPolicy(allowed_networks=(ip_network("127.0.0.0/8"), ip_network("169.254.0.0/16")))

    assert policy.refusal("127.0.0.5", 22) is None and policy.refusal("10.0.0.1", 22)
    assert "metadata" in policy.refusal("169.254.169.254", 80)


def _listener():
    """A loopback TCP port that counts the connections it accepts."""
    server = socket.create_server(("127.0.0.1", 0))
    accepted = []

    def accept():
        while True:
            try:
                connection, _ = server.accept()
            except OSError:
                return
            accepted.append(connection)

    threading.Thread(target=accept, daemon=True).start()
    return server, accepted


@pytest.mark.parametrize("host", ["127.0.0.1", "localhost"])
def test_a_send_to_a_refused_address_is_a_permanent_failure_and_connects_nowhere(host):
    server, accepted = _listener()
    port = server.getsockname()[1]
    transport = transport_for("webhook", {"url": f"http://{host}:{port}/hook", "send_timeout": 5},
                              {"secret": WEBHOOK_SECRET})
    try:
        with nothing_allowed(), pytest.raises(TransportError) as refused:
            transport.send(b"{}", "ag1/medals.json", content_type="application/json", version=1, etag="e")
    finally:
        transport.close()
        server.close()

    assert refused.value.permanent and refused.value.reason == Reason.ADDRESS_REFUSED
    assert "loopback" in str(refused.value)
    assert accepted == []


def test_a_connection_test_to_a_refused_address_says_so():
    server, accepted = _listener()
    transport = transport_for("webhook", {"url": f"http://127.0.0.1:{server.getsockname()[1]}/hook"},
                              {"secret": WEBHOOK_SECRET})
    try:
        with nothing_allowed():
            report = run_connection_test(transport)
    finally:
        server.close()

    assert report.failure.reason == Reason.ADDRESS_REFUSED and report.failure.permanent
    assert "loopback" in report.failure.plain_sentence and accepted == []


@pytest.mark.parametrize("kind, config", [
    ("ftp", {"host": "127.0.0.1", "port": 1, "username": "feeds"}),
    ("redis", {"url": "redis://127.0.0.1:1/0"}),
])
def test_every_transport_is_checked_at_connect(kind, config):
    transport = transport_for(kind, {**config, "send_timeout": 5}, {})
    try:
        with nothing_allowed(), pytest.raises(TransportError) as refused:
            transport.send(b"{}", "ag1/medals.json", content_type="application/json", version=1, etag="e")
    finally:
        transport.close()

    assert refused.value.permanent and refused.value.reason == Reason.ADDRESS_REFUSED


@pytest.fixture
def owner(db):
    return Client.objects.create(name="NDTV")


@pytest.mark.parametrize("kind, config", [
    ("webhook", {"url": "http://169.254.169.254/latest/meta-data/"}),
    ("webhook", {"url": "http://localhost:8080/hook"}),
    ("s3", {"endpoint_url": "http://10.0.0.7:9000", "bucket": "feeds"}),
    ("sftp", {"host": "127.0.0.1", "username": "feeds",
              "host_key": "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl"}),
    ("redis", {"url": "redis://127.0.0.1:6380/0"}),  # not the pull cache's own Redis port
])
def test_saving_a_destination_on_a_refused_address_is_refused(owner, kind, config):
    destination = Destination(client=owner, name="x", kind=kind, config=config)

    with nothing_allowed(), pytest.raises(ValidationError) as refused:
        destination.full_clean()

    assert "address" in str(refused.value)


@pytest.mark.parametrize("kind, url", [
    ("webhook", "https://feeds:s3cret@hooks.example.com/in"),
    ("redis", "redis://:s3cret@127.0.0.1:6379/0"),
    ("s3", "https://key:s3cret@s3.example.com"),
])
def test_a_url_holding_credentials_is_refused_and_points_to_the_credentials(owner, kind, url):
    setting = {"webhook": "url", "redis": "url", "s3": "endpoint_url"}[kind]
    destination = Destination(client=owner, name="x", kind=kind, config={setting: url, "bucket": "b"}
                              if kind == "s3" else {setting: url})

    with pytest.raises(ValidationError) as refused:
        destination.full_clean()

    assert "credentials" in str(refused.value)


def test_a_unix_socket_redis_is_refused(owner):
    destination = Destination(client=owner, name="x", kind="redis", config={"url": "unix:///run/redis.sock"})

    with pytest.raises(ValidationError):
        destination.full_clean()


def test_the_admin_form_shows_a_refused_address_beside_the_url_field(admin_client, owner):
    form = {"client": owner.pk, "name": "metadata", "kind": "webhook",
            "webhook__url": "http://169.254.169.254/latest/meta-data/", "webhook__cred__secret": WEBHOOK_SECRET,
            "enabled": "on", "fast_retries": 5, "subscriptions-TOTAL_FORMS": 0, "subscriptions-INITIAL_FORMS": 0}

    reply = admin_client.post("/admin/clients/destination/add/", form)

    errors = reply.context["adminform"].form.errors
    assert "metadata" in errors["webhook__url"][0]
    assert not Destination.objects.exists()


def test_the_pull_cache_redis_url_is_split_into_a_plain_url_and_its_credentials(settings):
    settings.OMNIUM = {**settings.OMNIUM, "PULL_REDIS_URL": "redis://:p%40ss@10.0.0.5:6379/2"}
    assert pull_redis_url_and_credentials() == ("redis://10.0.0.5:6379/2", {"password": "p@ss"})
    settings.OMNIUM = {**settings.OMNIUM, "PULL_REDIS_URL": "rediss://omnium:pw@cache:6380/0"}
    assert pull_redis_url_and_credentials() == ("rediss://cache:6380/0", {"username": "omnium", "password": "pw"})


def test_key_clean_up_reaches_no_address_a_send_may_not(db, caplog, django_capture_on_commit_callbacks):
    """A retired subscription's Redis keys are deleted through the destination's transport:
    the address policy and the send deadline hold there too (issue 31)."""
    from omnium.delivery.models import DeliveryState
    from omnium.feeds.models import FeedDefinition
    from omnium.games.models import Games

    server, accepted = _listener()
    games = Games.objects.create(code="kc1", name="Clean-up Games", starts_on="2026-09-19", ends_on="2026-10-04")
    definition = FeedDefinition.objects.create(games=games, feed_type="medals", name="medals")
    destination = Destination.objects.create(client=Client.objects.create(name="cache owner"), name="cache",
                                             kind="redis", config={"url": f"redis://127.0.0.1:{server.getsockname()[1]}/0",
                                                                   "key_prefix": "feed:"})
    subscription = destination.subscriptions.create(definition=definition)
    DeliveryState.objects.create(subscription=subscription, destination=destination, doc_key="kc1/medals",
                                 sent_path="kc1/medals.json")
    try:
        with nothing_allowed(), django_capture_on_commit_callbacks(execute=True):
            subscription.delete()
    finally:
        server.close()

    assert accepted == []
    assert "could not delete 1 retired pull cache keys" in caplog.text and "loopback" in caplog.text


PUBLIC = "93.184.216.34"


@pytest.mark.parametrize("kind, config", [
    ("webhook", {"url": f"http://{PUBLIC}/hook"}),
    ("ftp", {"host": PUBLIC, "username": "feeds"}),
    ("redis", {"url": f"redis://{PUBLIC}:6379/0"}),
    ("s3", {"endpoint_url": f"http://{PUBLIC}:9000", "bucket": "feeds"}),
])
def test_a_public_destination_without_tls_is_refused_at_save_and_at_connect(owner, kind, config):
    """Issue 31: files and credentials in clear never cross the internet; only an allowed
    network may be reached without TLS."""
    destination = Destination(client=owner, name="x", kind=kind, config=config)
    with nothing_allowed(), pytest.raises(ValidationError) as refused:
        destination.full_clean()
    assert "unencrypted: use TLS" in str(refused.value)

    credentials = {"webhook": {"secret": WEBHOOK_SECRET}, "s3": {"access_key": "a", "secret_key": "s"}}
    transport = transport_for(kind, config, credentials.get(kind, {"password": "p"}))
    with nothing_allowed(), pytest.raises(TransportError) as at_connect, transport.deadline() as deadline:
        deadline.check_peer((PUBLIC, 80))
    assert "unencrypted" in str(at_connect.value)


@pytest.mark.parametrize("kind, config", [
    ("webhook", {"url": f"https://{PUBLIC}/hook"}),
    ("ftp", {"host": PUBLIC, "username": "feeds", "tls": True}),
    ("redis", {"url": f"rediss://{PUBLIC}:6379/0"}),
    ("s3", {"endpoint_url": f"https://{PUBLIC}", "bucket": "feeds"}),
])
def test_the_same_destinations_with_tls_pass(owner, kind, config):
    with nothing_allowed():
        Destination(client=owner, name="x", kind=kind, config=config).full_clean(exclude=["credentials"])


def test_an_allowed_network_may_be_reached_without_tls():
    from ipaddress import ip_network

    policy = AddressPolicy(allowed_networks=(ip_network("93.184.216.0/24"),))
    assert policy.refusal(PUBLIC, 80, plaintext="http:// (without TLS)") is None
    assert AddressPolicy().refusal(PUBLIC, 80, plaintext="http:// (without TLS)")
    assert AddressPolicy().refusal(PUBLIC, 443) is None
