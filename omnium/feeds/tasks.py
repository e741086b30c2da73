"""Celery tasks of the feed builder. Every one is safe to run twice or concurrently."""

import logging
import time
from datetime import timedelta

from celery import shared_task
from django.db import connection
from django.utils import timezone
from redis.exceptions import RedisError

from omnium import redis_keys
from omnium.conf import omnium_setting
from omnium.database import claim_renewal
from omnium.feeds import build_alerts, builder, changes, debounce, stopping
from omnium.feeds.hints import wake_builders
from omnium.messaging import hints
from omnium.redis_client import redis_client
from omnium.routing import BUILD_LANES, LIVE, build_queue

log = logging.getLogger(__name__)

# A build_due task hands over to a fresh task after this long, so one task never runs for
# minutes during a flood and the queue stays fair.
BUILD_LOOP_S = 20.0
SUPERSEDED_RETRY_S = 0.05
NOTHING_CLAIMED_RETRY_S = 0.2
FAILED_RETRY_S = 5.0


def lanes_served_by(lane: str) -> list[str]:
    """A live builder builds only live files; a bulk builder helps with live files first."""
    return [LIVE] if lane == LIVE else list(BUILD_LANES)


@shared_task
def handle_changes() -> int:
    """Turn unhandled outbox rows into pending builds, and wake the builders for them."""
    handled = changes.handle_all()
    for lane, due in handled.due.items():
        wake_builders(lane, max(0.0, (due - timezone.now()).total_seconds()))
    return handled.rows


@shared_task
def build_due(lane: str) -> int:
    """Build files of `lane` that are due, one claim at a time, then schedule the next wake."""
    lanes = lanes_served_by(lane)
    built, started = 0, time.monotonic()
    while time.monotonic() - started < BUILD_LOOP_S and not stopping.under_way():
        # The outbox is read here too, before each claim: handle_changes tasks wait in the same
        # queue as build loops like this one, and with both of a worker's slots building a flood
        # of athlete pages, no new score became a pending build for 17 s (bench/gameday.py), so
        # the calendar and results, which go first when due, were never due.
        handle_changes()
        claimed_at = time.monotonic()
        claim = debounce.claim_next_due(lanes)
        if claim is None:
            break
        if built == 0 and debounce.next_due_in(lanes) == 0:  # more is due: a second pair of hands
            # A hint: with the broker gone this instant, the loop goes on building alone.
            hints.send("a second builder", lambda: build_due.apply_async(args=[lane], queue=build_queue(lane)))
        held = claim_renewal.hold(f"build {claim.doc_key}", lambda claim=claim: debounce.renew(claim), claimed_at)
        try:
            with stopping.building(claim):
                _build_claimed(claim)
        finally:
            claim_renewal.let_go(held)
        built += 1
    next_in = debounce.next_due_in(lanes)
    if next_in is not None:
        # A due file that could not be claimed is being noted or built this instant. Asking
        # again at once bounced no-op tasks between the workers (thousands a minute in a
        # burst, a core's worth of work), so a task that built nothing looks again shortly.
        wake_builders(lane, next_in if built else max(next_in, NOTHING_CLAIMED_RETRY_S))
    return built


def _build_claimed(claim: debounce.Claim) -> None:
    try:
        result = builder.build_file(claim.doc_key)
    except Exception as exc:
        log.exception("build of %s failed; retrying in %s s", claim.doc_key, FAILED_RETRY_S)
        error = build_alerts.error_text(exc)
        build_alerts.failed(claim.doc_key, debounce.release_failed(claim, FAILED_RETRY_S, error), error)
        return
    if result.outcome == builder.SUPERSEDED:
        debounce.release(claim, SUPERSEDED_RETRY_S)
        return
    debounce.finish(claim)
    if claim.failed_builds:
        build_alerts.built_again(claim.doc_key)
    _count_build(result.outcome)
    log.info("built %s: %s seq=%s %d bytes in %.3f s", result.doc_key, result.outcome, result.seq,
             result.size, result.seconds)



def _count_build(outcome: str) -> None:
    """Ops counters (a hash of outcome -> count) for the demo and dashboards; not a record."""
    try:
        redis_client().hincrby(redis_keys.BUILD_COUNTER, outcome, 1)
    except RedisError:
        pass


@shared_task
def sweep() -> dict:
    """The backstop (beat): handle forgotten outbox rows, wake builders for due files."""
    handled = changes.handle_all()
    woken = {}
    for lane in BUILD_LANES:
        next_in = debounce.next_due_in([lane])
        if next_in is not None:
            woken[lane] = wake_builders(lane, next_in)
    return {"outbox_rows": handled.rows, "woken": woken}


@shared_task
def prune_outbox() -> int:
    from omnium.games.models import OutboxEntry

    cutoff = timezone.now() - timedelta(days=omnium_setting("OUTBOX_RETENTION_DAYS"))
    deleted, _ = OutboxEntry.objects.filter(handled_at__lt=cutoff).delete()
    return deleted


# A version's row is history (latency reports, audits); the current version of every file is
# kept whatever its age, so "which version is current" never depends on the window.
PRUNE_FEED_VERSIONS = """
DELETE FROM feeds_feedversion v
WHERE v.committed_at < %s
  AND NOT EXISTS (SELECT 1 FROM feeds_feeddocument d WHERE d.doc_key = v.doc_key AND d.seq = v.seq)
"""


@shared_task
def prune_feed_versions() -> int:
    """Delete version rows older than FEED_VERSION_RETENTION_DAYS but a file's current one."""
    cutoff = timezone.now() - timedelta(days=omnium_setting("FEED_VERSION_RETENTION_DAYS"))
    with connection.cursor() as cursor:
        cursor.execute(PRUNE_FEED_VERSIONS, [cutoff])
        return cursor.rowcount
