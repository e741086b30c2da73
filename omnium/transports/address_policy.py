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
# wider allowed network contains them (AWS/GCP/Azure's link-local one and AWS's IPv6 one,
# Azure's wire server, Alibaba's).
METADATA_ADDRESSES = frozenset(ipaddress.ip_address(a) for a in (
    "169.254.169.254", "fd00:ec2::254", "168.63.129.16", "100.100.100.200"))

# The special-purpose blocks a destination never lives in, written out from IANA's IPv4 and
# IPv6 Special-Purpose Address Registries rather than left to Python's is_private/is_global,
# whose tables differ between versions and let 192.0.0.0/24, fec0::/10 and 2002::/16 through.
# Blocks that only wrap an IPv4 address (mapped, 6to4, NAT64) are unwrapped by plain_address
# and the IPv4 address inside is judged instead.
_SPECIAL_PURPOSE = tuple((ipaddress.ip_network(network), kind) for network, kind in (
    ("0.0.0.0/8", "unspecified"), ("10.0.0.0/8", "private"), ("100.64.0.0/10", "shared (carrier-grade NAT)"),
    ("127.0.0.0/8", "loopback"), ("169.254.0.0/16", "link-local"), ("172.16.0.0/12", "private"),
    ("192.0.0.0/24", "IETF protocol assignment"), ("192.0.2.0/24", "documentation"),
    ("192.88.99.0/24", "6to4 relay"), ("192.168.0.0/16", "private"), ("198.18.0.0/15", "benchmarking"),
    ("198.51.100.0/24", "documentation"), ("203.0.113.0/24", "documentation"), ("224.0.0.0/4", "multicast"),
    ("240.0.0.0/4", "reserved"),
    ("::/127", "unspecified or loopback"), ("64:ff9b:1::/48", "local NAT64"), ("100::/64", "discard-only"),
    ("2001::/23", "IETF protocol assignment"), ("2001:db8::/32", "documentation"), ("3fff::/20", "documentation"),
    ("5f00::/16", "segment routing"), ("fc00::/7", "unique local (private)"), ("fe80::/10", "link-local"),
    ("fec0::/10", "site-local"), ("ff00::/8", "multicast"),
))
_NAT64 = ipaddress.ip_network("64:ff9b::/96")


def kind_of_address(address: IpAddress) -> str | None:
    """What kind of non-public address this is ("loopback", "private"…), or None if public."""
    if address in METADATA_ADDRESSES:
        return "cloud metadata"
    for network, kind in _SPECIAL_PURPOSE:
        if address.version == network.version and address in network:
            return kind
    return None if address.is_global else "reserved"


@dataclass(frozen=True)
class AddressPolicy:
    allowed_networks: tuple[IpNetwork, ...] = ()
    allowed_endpoints: frozenset[tuple[IpAddress, int]] = field(default_factory=frozenset)

    def refusal(self, ip: str, port: int | None = None, plaintext: str | None = None) -> str | None:
        """Why connecting to ``ip`` (and ``port``) is refused, or None when it is allowed.
        ``plaintext`` names the protocol when it would go unencrypted ("http", "FTP without
        TLS"): credentials and files in clear never cross the internet, only an allowed network."""
        address = plain_address(ip)
        if address in METADATA_ADDRESSES:
            return f"{address} is the cloud metadata service's address"
        if any(address in network for network in self.allowed_networks) or (address, port) in self.allowed_endpoints:
            return None
        kind = kind_of_address(address)
        if kind is not None:
            return f"{address} is a {kind} address (allow its network in OMNIUM_DESTINATION_ALLOWED_NETWORKS)"
        if plaintext:
            return (f"{address} is a public address, and {plaintext} would carry the files and credentials "
                    "unencrypted: use TLS (or allow its network in OMNIUM_DESTINATION_ALLOWED_NETWORKS)")
        return None

    def refusal_of_peer(self, address, plaintext: str | None = None) -> str | None:
        """For a socket's connect: a Unix socket path is never a destination."""
        if isinstance(address, (str, bytes)):
            return "a Unix socket is not a destination"
        host, port = address[0], address[1]
        try:
            return self.refusal(host, port, plaintext)
        except ValueError:  # a name, not an address: the library resolves it inside connect
            refusals = self.refusals_of_host(host, port, plaintext)
            return refusals[0] if refusals else None

    def refusals_of_host(self, host: str, port: int, plaintext: str | None = None) -> list[str]:
        """Every refused address ``host`` resolves to. A name that does not resolve now is not
        refused here (it may resolve when the destination goes live); its connect is checked."""
        try:
            found = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
        except (socket.gaierror, UnicodeError):
            return []
        refusals = sorted({refusal for info in found if (refusal := self.refusal(info[4][0], port, plaintext))})
        return refusals if _is_address(host) else [f"{host} resolves to {refusal}" for refusal in refusals]


def _is_address(host: str) -> bool:
    try:
        ipaddress.ip_address(host.split("%", 1)[0])
    except ValueError:
        return False
    return True


def plain_address(ip: str) -> IpAddress:
    """The address a connection to ``ip`` really reaches: an IPv6 address that carries an IPv4
    one (::ffff:127.0.0.1, 6to4's 2002:7f00:1::, NAT64's 64:ff9b::7f00:1) reaches that one."""
    address = ipaddress.ip_address(ip.split("%", 1)[0])  # an IPv6 zone is no part of the address
    if address.version == 4:
        return address
    if address in _NAT64:
        return ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
    return address.ipv4_mapped or address.sixtofour or address


_policy_source: Callable[[], AddressPolicy] = AddressPolicy  # strict until the application says more


def use(source: Callable[[], AddressPolicy]) -> None:
    """Take the policy from ``source`` from now on (asked at every check, so it can follow settings)."""
    global _policy_source
    _policy_source = source


def current() -> AddressPolicy:
    return _policy_source()
