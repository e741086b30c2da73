"""Every metric Omnium's processes count, in one place, with the small helpers the hooks call.

Each family is made on first use, not at import: a Celery worker imports every module (this
one too) before any hook of ours runs, and the process must first choose where it keeps its
counts (`process_files.use_group_directory`). With PROMETHEUS_MULTIPROC_DIR (a Celery worker,
an API server) each value lives in a file of that directory, so the `/metrics` endpoint of
another process on the host reads them; without it (a test, `runserver`) they stay in this
process.
"""

import functools

from prometheus_client import Counter, Gauge, Histogram

# Proof age: from the newest real change in the file to its confirmed send. Buckets around
# the targets (a lone change under 0.8 s, 95 % under 1.5 s, "behind" after 60 s).
FRESHNESS_BUCKETS = (0.1, 0.25, 0.5, 0.8, 1.0, 1.5, 2.0, 3.0, 5.0, 10.0, 30.0, 60.0, 300.0)
# Builds: a country file takes milliseconds, the asian-games calendar about 0.15 s.
BUILD_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0)

@functools.cache
def delivery_freshness() -> Histogram:
    return Histogram("omnium_delivery_freshness_seconds",
                     "Age of a file version when its send was confirmed (DeliveryState.age_ms of the proof)",
                     ["transport", "client"], buckets=FRESHNESS_BUCKETS)


@functools.cache
def sends() -> Counter:
    return Counter("omnium_sends", "Sends whose proof was recorded", ["transport"])


@functools.cache
def send_failures() -> Counter:
    return Counter("omnium_send_failures", "Failed sends", ["transport", "error_class"])


@functools.cache
def build_duration() -> Histogram:
    return Histogram("omnium_build_duration_seconds", "Time to build one feed file (resolve, hash, save)",
                     ["feed_type", "outcome"], buckets=BUILD_BUCKETS)


@functools.cache
def pull_requests() -> Counter:
    return Counter("omnium_pull_requests", "Pull API responses", ["status"])


@functools.cache
def broker_unreachable() -> Gauge:
    # The highest of the host's live processes: 1 while any of them cannot reach the broker.
    return Gauge("omnium_broker_unreachable", "1 while this process cannot publish to the broker, else 0",
                 multiprocess_mode="livemax")


FAMILIES = (delivery_freshness, sends, send_failures, build_duration, pull_requests, broker_unreachable)


def any_made() -> bool:
    return any(family.cache_info().currsize for family in FAMILIES)

def count_send(transport: str, client: str, age_ms: int | None) -> None:
    """A proof was recorded; `age_ms` is None when a newer proof was there already."""
    sends().labels(transport).inc()
    if age_ms is not None:
        delivery_freshness().labels(transport, client).observe(age_ms / 1000)


def count_send_failure(transport: str, error: Exception) -> None:
    send_failures().labels(transport, type(error).__name__).inc()
