"""What a destination's URL setting may hold, and where it points."""

from urllib.parse import urlsplit


def userinfo_problem(url: str) -> str | None:
    """A URL with `user:password@` would keep a secret in the plain, visible config."""
    if "@" in urlsplit(url).netloc:
        return "must not hold a user name or password (user:pass@): type them in the credentials fields"
    return None


# The port a destination's URL connects to when it names none, by scheme; and the schemes that
# send without TLS (the address policy keeps those off public addresses).
DEFAULT_PORTS = {"http": 80, "https": 443, "redis": 6379, "rediss": 6379, "amqp": 5672, "amqps": 5671,
                 "redis+sentinel": 26379, "rediss+sentinel": 26379}
UNENCRYPTED_SCHEMES = frozenset({"http", "redis", "amqp", "redis+sentinel"})


def address_of_url(url: str) -> tuple[str, int] | None:
    """The host and port ``url`` connects to, or None if it names none."""
    try:
        parts = urlsplit(url)
        port = parts.port or DEFAULT_PORTS.get(parts.scheme)
    except ValueError:
        return None
    return (parts.hostname, port) if parts.hostname and port else None


def unencrypted_protocol(url: str) -> str | None:
    """"http:// (without TLS)" and the like for a URL that sends in the clear, else None."""
    scheme = urlsplit(url).scheme
    return f"{scheme}:// (without TLS)" if scheme in UNENCRYPTED_SCHEMES else None
