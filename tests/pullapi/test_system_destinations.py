"""The pull cache's destinations are Omnium's own: no stored password, read-only in the admin,
and the only destinations that may write to the pull cache's Redis database."""

import ipaddress

import pytest
from django.core.exceptions import ValidationError

from devtools.sentinel_redis import SentinelRedis
from omnium.clients import address_policy_settings
from omnium.clients.models import Client, Destination
from omnium.pullapi import pull_cache_destinations
from omnium.transports import registry
from tests.child_processes import LOG_DIR
from tests.delivery.fixtures import redis_destination_settings

PULL_REDIS_WITH_PASSWORD = "redis://:pull-cache-pass@127.0.0.1:6379/15"


@pytest.fixture
def system_destination(games):
    return Destination.objects.get(client__name=pull_cache_destinations.SYSTEM_CLIENT,
                                   name=pull_cache_destinations.SHARED_DESTINATION)


def test_a_system_destination_stores_no_password_and_reads_it_from_the_settings(system_destination, settings):
    settings.OMNIUM = {**settings.OMNIUM, "PULL_REDIS_URL": PULL_REDIS_WITH_PASSWORD}
    pull_cache_destinations.ensure_destinations(system_destination.subscriptions.first().definition.games)

    stored = Destination.objects.get(pk=system_destination.pk)
    assert stored.system and bytes(stored.credentials_encrypted) == b""
    assert "pull-cache-pass" not in str(stored.config)
    assert stored.credentials == {"password": "pull-cache-pass"}, "read from the settings when used"
    assert registry.transport_for(stored.kind, stored.config, stored.credentials).credentials["password"] == \
        "pull-cache-pass"


def test_a_system_destination_never_keeps_credentials_set_on_it(system_destination):
    system_destination.set_credentials({"password": "typed-somewhere"})
    system_destination.save()
    assert bytes(Destination.objects.get(pk=system_destination.pk).credentials_encrypted) == b""


def test_the_admin_shows_a_system_destination_read_only(system_destination, admin_client):
    page = admin_client.get(f"/admin/clients/destination/{system_destination.pk}/change/")
    assert page.status_code == 200
    assert 'name="redis__url"' not in page.content.decode(), "no field to edit"

    changed = admin_client.post(f"/admin/clients/destination/{system_destination.pk}/change/",
                                {"name": "taken over", "kind": "redis", "redis__url": "redis://attacker.example.com/0"})
    assert changed.status_code == 403
    assert admin_client.post(f"/admin/clients/destination/{system_destination.pk}/delete/", {"post": "yes"}).status_code == 403
    assert Destination.objects.get(pk=system_destination.pk).name == pull_cache_destinations.SHARED_DESTINATION


def test_only_a_system_destination_may_write_to_the_pull_caches_redis_database(games, settings):
    pull_url = settings.OMNIUM["PULL_REDIS_URL"]
    client = Client.objects.create(name="mallory")
    kind, config, _ = redis_destination_settings()
    into_the_pull_cache = Destination(client=client, name="races the writer", kind=kind,
                                      config={**config, "url": pull_url, "key_prefix": "feed:"})
    with pytest.raises(ValidationError, match="is the pull cache's own Redis"):
        into_the_pull_cache.full_clean()

    another_database = Destination(client=client, name="own database", kind=kind, config=config)
    assert config["url"].rsplit("/", 1)[1] != pull_url.rsplit("/", 1)[1]
    another_database.full_clean()  # the same server, another database: no key of the pull cache's there

    into_the_pull_cache.system = True
    into_the_pull_cache.full_clean()


def test_a_sentinel_url_is_for_the_pull_caches_own_destinations_only(games):
    """A client's Sentinel names the primary at run time, so the address the form checks is not
    the one written to: a Sentinel of the client's own could name the pull cache's primary."""
    config = {"url": "redis+sentinel://sentinel.example.com:26379/primary/0", "key_prefix": "feed:"}
    destination = Destination(client=Client.objects.create(name="mallory"), name="behind sentinel",
                              kind="redis", config=config)
    with pytest.raises(ValidationError, match=r"redis\+sentinel:// is for the pull cache's own destinations"):
        destination.full_clean()

    destination.system = True
    destination.full_clean()


@pytest.mark.servers
def test_behind_sentinel_the_pull_cache_is_every_sentinel_and_every_node_they_name(games, settings):
    cluster = SentinelRedis("policy-sentinel", log_dir=LOG_DIR)
    try:
        settings.OMNIUM = {**settings.OMNIUM, "PULL_REDIS_URL": cluster.url}
        allowed = address_policy_settings.policy().allowed_endpoints
        replica = Destination(client=Client.objects.create(name="mallory"), name="the replica, promoted later",
                              kind="redis", config={"url": f"redis://127.0.0.1:{cluster.nodes[1].port}/0"})
        with pytest.raises(ValidationError, match="is the pull cache's own Redis"):
            replica.full_clean()
    finally:
        cluster.stop()

    loopback = ipaddress.ip_address("127.0.0.1")
    assert allowed == {(loopback, port) for port in [*cluster.sentinel_ports, *(n.port for n in cluster.nodes)]}
