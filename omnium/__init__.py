"""Omnium: saved sports records in, feed files out, delivered by push and pull.

Packages, in the direction imports go: `games` → `feeds` → `delivery` / `pullapi`, with
`clients` and `transports` below them and `alerts` beside. Here too: `settings`, `celery`
(the app), `routing` (every queue, task name and beat entry), `conf` (our settings, read
lazily) and small shared pieces named after what they hold (`memory_lru`, `single_flight`,
`compression`, `pull_cache_entries`, `read_only_admin`…).
"""

from omnium.celery import app as celery_app

__all__ = ["celery_app"]
