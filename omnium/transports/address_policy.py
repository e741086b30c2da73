"""Which addresses a destination may reach.

A destination's host is typed by a person and the workers connect to it from inside our
network, so a host that names (or resolves to) this machine, a private network or the cloud's
metadata service would turn a feed push into a request to our own infrastructure. Only public
addresses are reached, unless the operator allows a network (``AddressPolicy.allowed_networks``,
from ``OMNIUM_DESTINATION_ALLOWED_NETWORKS``) or names one of our own endpoints (the pull
cache's Redis, ``allowed_endpoints``).

The host is checked twice: when a destination is saved (``refusals_of_host``: resolved and every
address checked), and on every connect, against the address really connected to (the socket
audit hook in ``base``), so a name that resolves elsewhere later (DNS rebinding) is still refused.
The policy in force comes from ``current()``; Django installs its own with ``use()`` at start.
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Callable
from dataclasses import dataclass, field

IpAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
IpNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network

# Cloud metadata services hand out credentials to whoever asks from inside: never, even when a
# wider allowed network contains them.
METADATA_ADDRESSES = frozenset(ipaddress.ip_address(a) for a in ("169.254.169.254", "fd00:ec2::254"))


def kind_of_address(address: IpAddress) -> str | None:
    """What kind of non-public address this is ("loopback", "private"…), or None if public."""
    if address in METADATA_ADDRESSES:
        return "cloud metadata"
    for kind, is_it in (("loopback", address.is_loopback), ("link-local", address.is_link_local),
                        ("multicast", address.is_multicast), ("unspecified", address.is_unspecified),
                        ("reserved", address.is_reserved), ("private", address.is_private)):
        if is_it:
            return kind
    return None if address.is_global else "reserved"


@dataclass(frozen=True)
class AddressPolicy:
    allowed_networks: tuple[IpNetwork, ...] = ()
    allowed_endpoints: frozenset[tuple[IpAddress, int]] = field(default_factory=frozenset)

    def refusal(self, ip: str, port: int | None = None) -> str | None:
        """Why connecting to ``ip`` (and ``port``) is refused, or None when it is allowed."""
        address = plain_address(ip)
        if address in METADATA_ADDRESSES:
            return f"{address} is the cloud metadata service's address"
        kind = kind_of_address(address)
        if kind is None or any(address in network for network in self.allowed_networks):
            return None
        if (address, port) in self.allowed_endpoints:
            return None
        return f"{address} is a {kind} address (allow its network in OMNIUM_DESTINATION_ALLOWED_NETWORKS)"

    def refusal_of_peer(self, address) -> str | None:
        """For a socket's connect: a Unix socket path is never a destination."""
        if isinstance(address, (str, bytes)):
            return "a Unix socket is not a destination"
        host, port = address[0], address[1]
        try:
            return self.refusal(host, port)
        except ValueError:  # a name, not an address: the library resolves it inside connect
            refusals = self.refusals_of_host(host, port)
            return refusals[0] if refusals else None

    def refusals_of_host(self, host: str, port: int) -> list[str]:
        """Every refused address ``host`` resolves to. A name that does not resolve now is not
        refused here (it may resolve when the destination goes live); its connect is checked."""
        try:
            found = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
        except (socket.gaierror, UnicodeError):
            return []
        refusals = sorted({refusal for info in found if (refusal := self.refusal(info[4][0], port))})
        return refusals if _is_address(host) else [f"{host} resolves to {refusal}" for refusal in refusals]


def _is_address(host: str) -> bool:
    try:
        ipaddress.ip_address(host.split("%", 1)[0])
    except ValueError:
        return False
    return True


def plain_address(ip: str) -> IpAddress:
    address = ipaddress.ip_address(ip.split("%", 1)[0])  # an IPv6 zone is no part of the address
    mapped = getattr(address, "ipv4_mapped", None)  # ::ffff:127.0.0.1 reaches 127.0.0.1
    return mapped if mapped is not None else address


_policy_source: Callable[[], AddressPolicy] = AddressPolicy  # strict until the application says more


def use(source: Callable[[], AddressPolicy]) -> None:
    """Take the policy from ``source`` from now on (asked at every check, so it can follow settings)."""
    global _policy_source
    _policy_source = source


def current() -> AddressPolicy:
    return _policy_source()
