"""Refuse to run the demo against data it was not made for.

The demo empties its Redis database (FLUSHDB), deletes clients by name and resets the password
of user `ops`: harmless on a developer's machine, a disaster on a shared or production one. So
it runs only where it can be sure it is at home:

- PostgreSQL on this machine (a loopback address, `localhost` or a Unix socket), in a database
  named `omnium` (the Makefile's default) or whose name contains `demo`;
- Redis on this machine, database 0 (the default `REDIS_URL`; the tests use 15 or their own).

Anything else needs `DEMO_I_MEAN_IT=1`.
"""

import ipaddress
from urllib.parse import urlsplit

OVERRIDE = "DEMO_I_MEAN_IT"
LOCAL_HOST_NAMES = {"", "localhost"}


def refusals(database: dict, redis_url: str) -> list[str]:
    """Why the demo must not run here (empty: it may)."""
    return [*_database_refusals(database), *_redis_refusals(redis_url)]


def _database_refusals(database: dict) -> list[str]:
    problems = []
    name, host = database.get("NAME", ""), database.get("HOST", "")
    if name != "omnium" and "demo" not in name:
        problems.append(f"the database is {name!r}: the demo uses `omnium` or a name containing `demo`")
    if not _is_local(host):
        problems.append(f"the database is on {host!r}, not on this machine")
    return problems


def _redis_refusals(redis_url: str) -> list[str]:
    address = urlsplit(redis_url)
    if address.scheme not in ("redis", "rediss"):
        return [f"REDIS_URL {address.scheme}:// is not a Redis on this machine's loopback"]
    problems = []
    if not _is_local(address.hostname or ""):
        problems.append(f"Redis is on {address.hostname!r}, not on this machine")
    if (address.path.strip("/") or "0") != "0":
        problems.append(f"Redis database {address.path.strip('/')} is not the demo's (0); the demo empties it")
    return problems


def _is_local(host: str) -> bool:
    if host in LOCAL_HOST_NAMES or host.startswith("/"):  # a Unix socket directory
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def message(problems: list[str]) -> str:
    lines = "\n".join(f"  - {problem}" for problem in problems)
    return (f"make demo refuses to run: it empties Redis, deletes clients by name and resets user ops, and\n"
            f"{lines}\nSet {OVERRIDE}=1 to run it here anyway.")
