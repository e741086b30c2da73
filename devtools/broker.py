"""A RabbitMQ virtual host of its own for each test run, benchmark and demo.

Each vhost is a broker of its own (queues, exchanges, messages), so a test run never takes a
benchmark's or another run's kicks. Made through RabbitMQ's management API (milliseconds;
`rabbitmqctl` takes two seconds a call to start its Erlang VM).
"""

import os
import re
from urllib.parse import quote, urlsplit, urlunsplit

import requests

from devtools.waiting import wait_until

TIMEOUT_S = 60  # the management API answers slowly while RabbitMQ is busy
# Deleting a vhost deletes its queues one by one: one with 5,000 destination queues (after
# bench/scale.py) took RabbitMQ 26 s on a loaded 2-core machine.
DELETE_VHOST_TIMEOUT_S = 300


def with_vhost(broker_url: str, vhost: str) -> str:
    """`broker_url` pointed at `vhost` (same host, port and user)."""
    parts = urlsplit(broker_url)
    return urlunsplit((parts.scheme, parts.netloc, "/" + quote(vhost, safe=""), "", ""))


def ensure_vhost(management_url: str, broker_url: str, *, fresh: bool = False) -> None:
    """Create the vhost of `broker_url` and let its user in; `fresh` deletes it first, with
    every queue and message in it."""
    parts = urlsplit(broker_url)
    vhost = _vhost_of(broker_url)
    api = management_url.rstrip("/")
    if fresh:
        delete_vhost(management_url, broker_url)
    _call("put", f"{api}/vhosts/{vhost}", ok=(201, 204))
    _call("put", f"{api}/permissions/{vhost}/{quote(parts.username or 'guest', safe='')}",
          json={"configure": ".*", "write": ".*", "read": ".*"}, ok=(201, 204))


def fresh_vhost_per_run(management_url: str, broker_url: str, name: str) -> str:
    """`broker_url` pointed at a new vhost `<name>.<pid>`, made after deleting every earlier
    run's (`<name>` and `<name>.<n>`).

    A name per run, because RabbitMQ (3.10 here) may keep a deleted vhost's durable queue
    records a while: a vhost made again at once under the same name refused to declare one of
    them ("home node ... of durable queue 'deliver.3432' ... is down or inaccessible"), twice
    after bench/scale.py's 5,000 queues, and the bench stopped on it."""
    api = management_url.rstrip("/")
    for vhost in _call("get", f"{api}/vhosts", ok=(200,)).json():
        if vhost["name"] == name or re.fullmatch(re.escape(name) + r"\.\d+", vhost["name"]):
            delete_vhost(management_url, with_vhost(broker_url, vhost["name"]))
    url = with_vhost(broker_url, f"{name}.{os.getpid()}")
    ensure_vhost(management_url, url)
    return url


def delete_vhost(management_url: str, broker_url: str) -> None:
    """Delete the vhost of `broker_url` with every queue and message in it. Idle queues are not
    free: the 5,000 that bench/scale.py leaves kept RabbitMQ at 8 % of a core (2 % without)."""
    api = management_url.rstrip("/")
    _call("delete", f"{api}/vhosts/{_vhost_of(broker_url)}", ok=(204, 404), timeout=DELETE_VHOST_TIMEOUT_S)


def vhost_listing(management_url: str, broker_url: str, kind: str) -> list[dict]:
    """The management API's list of `kind` ("consumers", "channels", "connections", "queues") in the vhost of
    `broker_url`."""
    vhost = _vhost_of(broker_url)
    path = f"vhosts/{vhost}/{kind}" if kind in ("channels", "connections") else f"{kind}/{vhost}"
    return _call("get", f"{management_url.rstrip('/')}/{path}", ok=(200,)).json()


def cluster_nodes(management_url: str) -> list[dict]:
    """The management API's list of the cluster's nodes (name, running, mem_used, ...)."""
    return _call("get", f"{management_url.rstrip('/')}/nodes", ok=(200,)).json()


def node_memory_bytes(management_url: str) -> int:
    """The memory every RabbitMQ node in the cluster uses now (the management API's mem_used)."""
    return sum(node.get("mem_used", 0) for node in cluster_nodes(management_url))


def close_connections(management_url: str, broker_url: str, listed_within_s: float = 15.0) -> int:
    """Close every client connection to the vhost of `broker_url` from the broker's side, as
    RabbitMQ does to one that missed its heartbeats; returns how many. The management API
    lists a new connection only with its next statistics (every 5 s by default), so this
    waits up to `listed_within_s` for one to be listed."""
    api = management_url.rstrip("/")
    connections = wait_until(lambda: vhost_listing(management_url, broker_url, "connections"), listed_within_s,
                             interval=0.2, message="a connection listed by the management API")
    for connection in connections:
        _call("delete", f"{api}/connections/{quote(connection['name'], safe='')}", ok=(204, 404))
    return len(connections)


def _vhost_of(broker_url: str) -> str:
    """The vhost of `broker_url` (a cluster's nodes, ';' between them, share it), quoted for
    the management API's paths."""
    return quote(urlsplit(broker_url.split(";")[0]).path.lstrip("/") or "/", safe="")


def _call(method: str, url: str, ok: tuple[int, ...], timeout: float = TIMEOUT_S, **kwargs) -> requests.Response:
    parts = urlsplit(url)
    auth = (parts.username or "guest", parts.password or "guest")
    bare = urlunsplit((parts.scheme, parts.hostname + (f":{parts.port}" if parts.port else ""), parts.path, "", ""))
    reply = requests.request(method, bare, auth=auth, timeout=timeout, **kwargs)
    if reply.status_code not in ok:
        raise RuntimeError(f"RabbitMQ management API: {method.upper()} {parts.path} answered "
                           f"{reply.status_code} {reply.text[:200]}")
    return reply
