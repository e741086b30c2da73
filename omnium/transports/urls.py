"""What a destination's URL setting may hold, and where it points."""

from urllib.parse import urlsplit


def userinfo_problem(url: str) -> str | None:
    """A URL with `user:password@` would keep a secret in the plain, visible config."""
    if "@" in urlsplit(url).netloc:
        return "must not hold a user name or password (user:pass@): type them in the credentials fields"
    return None


def address_of_url(url: str, default_port: int) -> tuple[str, int] | None:
    """The host and port ``url`` connects to, or None if it names none."""
    try:
        parts = urlsplit(url)
        port = parts.port or default_port
    except ValueError:
        return None
    return (parts.hostname, port) if parts.hostname else None
