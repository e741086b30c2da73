"""Omnium: saved sports records in, feed files out, delivered by push and pull.

Packages, in the direction imports go: `games` → `feeds` → `delivery` / `pullapi`, with
`clients` and `transports` below them and `alerts`, `metrics` and `reports` beside; `staff` is
the admin site and how staff sign in to it. Below them all, helper
packages named after what they hold: `database` (claims, server-side binding, timestamps),
`caching` (in-process caches), `encoding` (gzip, the pull cache's entries, XML characters) and
`workers` (worker process tuning).

Here, the wiring: `settings` (read through `environment_variables`), `celery` (the app),
`routing` (every queue, task name and beat entry), `redis_keys` (every Redis key and channel),
`urls`, `wsgi`, `conf` (our settings, read
lazily), `redis_client` (one pool per process), and bases every part shares:
`read_only_admin`, `shown_once_admin` (a secret made in the admin, shown once) and
`safe_errors` (what may be shown of an error).
"""

from omnium.celery import app as celery_app

__all__ = ["celery_app"]
