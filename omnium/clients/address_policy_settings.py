"""The address policy of destinations (``transports.address_policy``) as the settings say.

Allowed: public addresses, the networks of OMNIUM_DESTINATION_ALLOWED_NETWORKS, and the pull
cache's own Redis (OMNIUM_PULL_REDIS_URL, its address and port only), which the system's own
Redis destinations write to wherever it runs. Behind Sentinel, that is the Sentinels and every
node they name for the service (primary and replicas, asked again every SENTINEL_NODES_AGE_S,
so a replica promoted by a failover is already allowed).
"""

import socket
import time
from functools import lru_cache
from urllib.parse import urlsplit

from django.core.exceptions import ValidationError

from omnium.conf import omnium_setting
from omnium.transports import address_policy
from omnium.transports.address_policy import AddressPolicy
from omnium.transports.base import Transport
from omnium.transports.deadline import outside_any_deadline
from omnium.transports.redis_servers import is_sentinel_url, nodes_named_by_sentinels, sentinel_url
from omnium.transports.urls import address_of_url

REFUSED_ADDRESS = "address_refused"  # the ValidationError code the destination form puts beside the field


SENTINEL_NODES_AGE_S = 60


def policy() -> AddressPolicy:
    url = omnium_setting("PULL_REDIS_URL")
    # Behind Sentinel the nodes may change: the policy is made again every SENTINEL_NODES_AGE_S.
    age = int(time.monotonic() // SENTINEL_NODES_AGE_S) if is_sentinel_url(url) else 0
    return _policy(omnium_setting("DESTINATION_ALLOWED_NETWORKS"), url, age)


@lru_cache(maxsize=4)  # asked at every connect; the settings rarely change, the pull Redis's address neither
def _policy(networks: tuple, pull_redis_url: str, age: int) -> AddressPolicy:
    return AddressPolicy(allowed_networks=tuple(networks), allowed_endpoints=_endpoints(pull_redis_url))


def _endpoints(url: str) -> frozenset:
    if is_sentinel_url(url):
        # Asked from inside a send's connect: the Sentinels' own sockets are ours, not the send's.
        addresses = {*sentinel_url(url).sentinels, *outside_any_deadline(nodes_named_by_sentinels, url)}
    else:
        addresses = {address_of_url(url)} - {None}
    return frozenset(endpoint for address in addresses for endpoint in _resolved(*address))


def _resolved(host: str, port: int) -> set:
    try:
        found = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except socket.gaierror:
        return set()
    return {(address_policy.plain_address(info[4][0]), port) for info in found}


def check(transport: type[Transport], config: dict, system: bool = False) -> None:
    """Raise a ValidationError (code ``REFUSED_ADDRESS``) for each refused address the
    destination's host resolves to now. Only a system destination may point at the pull
    cache's own Redis: a client's destination there could overwrite what every pull client
    is served."""
    address = transport.address_of(config)
    if not system and is_sentinel_url(config.get("url", "")):
        raise ValidationError("redis+sentinel:// is for the pull cache's own destinations; name the "
                              "client's primary (or its managed endpoint) with redis:// or rediss://",
                              code=REFUSED_ADDRESS)
    refusals = list(policy().refusals_of_host(*address, transport.plaintext(config))) if address else []
    if address and not system and _is_the_pull_cache(*address) and not _another_database(transport, config):
        refusals.append(f"{address[0]}:{address[1]} is the pull cache's own Redis: only Omnium's own "
                        "destinations write there")
    if refusals:
        raise ValidationError([ValidationError(refusal, code=REFUSED_ADDRESS) for refusal in refusals])


def _is_the_pull_cache(host: str, port: int) -> bool:
    try:
        found = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except socket.gaierror:
        return False
    pull_cache = policy().allowed_endpoints  # resolved once per setting, not at every save
    return any((address_policy.plain_address(info[4][0]), port) in pull_cache for info in found)


def _another_database(transport: type[Transport], config: dict) -> bool:
    """A Redis destination on the pull cache's server but in another database cannot touch
    the pull cache's keys (and without the pull cache's password, which no client destination
    holds, an ACL-protected server refuses it anyway: see docs/admin-guide.md)."""
    if transport.kind != "redis":
        return False
    return _database_of(config.get("url", "")) != _database_of(omnium_setting("PULL_REDIS_URL"))


def _database_of(url: str) -> int:
    number = urlsplit(url).path.strip("/") or "0"
    return int(number) if number.isdigit() else 0
