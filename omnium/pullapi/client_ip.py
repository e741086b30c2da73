"""The address of the client behind a request, for counting its failed keys.

REMOTE_ADDR is the load balancer's address when there is one, so counting failures by it
lets one bad client lock out everyone behind the same balancer. X-Forwarded-For names the
client, but anyone can send that header: it is believed only as far as the chain of
PULL_TRUSTED_PROXIES reaches. Read from the right (the last hop is the one our proxy saw),
the first address that is not a trusted proxy is the client.
"""

import ipaddress

from omnium.conf import omnium_setting


def client_ip(meta) -> str:
    """The client's address; REMOTE_ADDR unless that is a trusted proxy."""
    remote = meta.get("REMOTE_ADDR", "")
    trusted = omnium_setting("PULL_TRUSTED_PROXIES")
    if not trusted or not _is_trusted(remote, trusted):
        return remote
    hops = [hop.strip() for hop in meta.get("HTTP_X_FORWARDED_FOR", "").split(",") if hop.strip()]
    for hop in reversed(hops):
        if not _is_trusted(hop, trusted):
            return hop if _is_address(hop) else remote  # a forged, malformed hop names nobody
    return hops[0] if hops else remote


def client_ip_of_request(request) -> str:
    """The same, for a request (django-axes counts failed admin sign-ins by it)."""
    return client_ip(request.META)


def _is_trusted(address: str, trusted) -> bool:
    try:
        parsed = ipaddress.ip_address(address)
    except ValueError:
        return False
    return any(parsed in network for network in trusted)


def _is_address(text: str) -> bool:
    try:
        ipaddress.ip_address(text)
        return True
    except ValueError:
        return False
