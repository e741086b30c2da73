"""Destinations Omnium keeps itself: the Redis destinations that fill the pull cache
(`omnium.pullapi.pull_cache_destinations` makes and repairs them).

They hold no password of their own: their credentials are read from OMNIUM_PULL_REDIS_URL
at each use, so no admin page, export or database dump of a destination carries the pull
cache's password, and rotating it is a settings change. Only they may reach the pull cache's
Redis (`address_policy_settings`), and the admin shows them read-only.
"""

from urllib.parse import unquote, urlsplit, urlunsplit

from omnium.conf import omnium_setting


def pull_redis_url_and_credentials() -> tuple[str, dict]:
    """The pull cache Redis's URL without its user name and password, and those two."""
    url = omnium_setting("PULL_REDIS_URL")
    parts = urlsplit(url)
    if "@" not in parts.netloc:
        return url, {}
    credentials = {"username": unquote(parts.username or ""), "password": unquote(parts.password or "")}
    plain = parts._replace(netloc=parts.netloc.rpartition("@")[2])
    return urlunsplit(plain), {name: value for name, value in credentials.items() if value}
