#!/usr/bin/env python
"""`make demo`: the whole pipeline, live, on this machine.

Loads an asian-games-scale Games, builds its files, starts Celery workers (a live lane and a
bulk lane) and beat, replays part of a Games day at high speed through the workflow commands,
and prints what happened. Ctrl-C stops everything it started; DEMO_SECONDS=N stops by itself
after N seconds. Settings: DEMO_DAY (default 3), DEMO_SPEED (default 300).
"""

import json
import os
import signal
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "omnium.settings")

import django  # noqa: E402

django.setup()

from django.core.management import call_command  # noqa: E402
from django.db.models import Count, Sum  # noqa: E402

from omnium import localrun  # noqa: E402
from omnium.feeds.latency import change_to_built_seconds, percentile  # noqa: E402
from omnium.feeds.models import FeedVersion, PendingBuild  # noqa: E402
from omnium.feeds.tasks import BUILD_COUNTER  # noqa: E402
from omnium.games.models import Games, OutboxEntry  # noqa: E402
from omnium.games.replay import plan_day, play  # noqa: E402
from omnium.redis_client import redis_client  # noqa: E402
from omnium.routing import BULK_QUEUES, LIVE_QUEUES  # noqa: E402

DEADLINE = time.monotonic() + float(os.environ["DEMO_SECONDS"]) if os.environ.get("DEMO_SECONDS") else None
DAY = int(os.environ.get("DEMO_DAY", "3"))
SPEED = float(os.environ.get("DEMO_SPEED", "300"))


def say(message: str) -> None:
    print(f"[demo {time.strftime('%H:%M:%S')}] {message}", flush=True)


def seconds_left(default: float) -> float:
    return default if DEADLINE is None else max(0.0, min(default, DEADLINE - time.monotonic()))


def load_and_build() -> Games:
    say("loading an asian-games-scale Games (seed 1)")
    call_command("load_games", scale="asian-games", seed=1, replace=True, stdout=open(os.devnull, "w"))
    games = Games.objects.get(code="ag1")
    say("building every file once (in this process)")
    call_command("build_feeds", games=games.code, stderr=open(os.devnull, "w"))
    for row in games.feed_documents.values("feed_type").annotate(files=Count("doc_key"), bytes=Sum("size")).order_by("feed_type"):
        say(f"  {row['feed_type']:<13} {row['files']:>3} file(s) {row['bytes'] / 1e6:8.2f} MB")
    return games


def start_pipeline() -> list:
    say("starting Celery: a live-lane worker, a bulk-lane worker and beat (logs in var/logs/)")
    return [
        localrun.start_worker(LIVE_QUEUES, "demo-live", concurrency=2),
        localrun.start_worker(BULK_QUEUES, "demo-bulk", concurrency=1),
        localrun.start_beat("demo-beat"),
    ]


def replay(games: Games) -> dict:
    steps = plan_day(games, DAY)
    window = seconds_left(90.0)
    say(f"replaying day {DAY}: {len(steps)} changes planned at x{SPEED:g}, for up to {window:.0f} s")
    progress = lambda r: say(f"  {r.steps_played} changes played, {r.games_seconds / 3600:.1f} h of Games time")
    return play(steps, SPEED, window, progress).as_dict()


def settle(timeout: float = 6.0) -> None:
    end = time.monotonic() + seconds_left(timeout)
    while time.monotonic() < end and (PendingBuild.objects.exists() or OutboxEntry.objects.filter(handled_at=None).exists()):
        time.sleep(0.2)


def summary(games: Games, first_outbox: int, first_version: int, replayed: dict) -> dict:
    versions = FeedVersion.objects.filter(doc_key__startswith=f"{games.code}/", seq__gt=first_version)
    latencies = [s for s in change_to_built_seconds(games, first_outbox) if s is not None]
    builds = {k.decode(): int(v) for k, v in redis_client().hgetall(BUILD_COUNTER).items()}
    changes = OutboxEntry.objects.filter(games=games, pk__gt=first_outbox).count()
    by_type = {}
    for doc_key, size in versions.values_list("doc_key", "size"):
        feed_type = doc_key.split("/")[1]
        entry = by_type.setdefault(feed_type, {"versions": 0, "bytes": 0})
        entry["versions"] += 1
        entry["bytes"] += size
    return {
        "replay": replayed,
        "changes_committed": changes,
        "builds": {"new_version": builds.get("new_version", 0), "skipped_unchanged": builds.get("unchanged", 0),
                   "superseded": builds.get("superseded", 0)},
        "files_rebuilt_per_change": round(sum(builds.values()) / changes, 2) if changes else 0,
        "new_versions_by_feed_type": by_type,
        "change_to_built_s": {
            "changes_measured": len(latencies),
            "p50": _round(percentile(latencies, 0.5)), "p95": _round(percentile(latencies, 0.95)),
            "max": _round(max(latencies, default=None)),
        },
    }


def _round(value):
    return None if value is None else round(value, 3)


def main() -> None:
    signal.signal(signal.SIGTERM, lambda *_: (_ for _ in ()).throw(KeyboardInterrupt()))
    redis_client().flushdb()  # hints and counters only; PostgreSQL is the record
    processes = []
    try:
        games = load_and_build()
        processes = start_pipeline()
        first_outbox = OutboxEntry.objects.order_by("-id").values_list("id", flat=True).first() or 0
        first_version = FeedVersion.objects.order_by("-seq").values_list("seq", flat=True).first() or 0
        replayed = replay(games)
        settle()
        say("what happened:")
        print(json.dumps(summary(games, first_outbox, first_version, replayed), indent=2), flush=True)
        if DEADLINE is None:
            say("pipeline still running; Ctrl-C stops it")
            while True:
                time.sleep(1)
    except KeyboardInterrupt:
        say("stopping")
    finally:
        localrun.stop_all(processes)
        say("everything the demo started has stopped")


if __name__ == "__main__":
    main()
