#!/usr/bin/env python
"""Benchmark of the build half: file sizes, build and hash times, what one change rebuilds,
and change-to-built latency with real Celery workers. Prints one JSON object.

Runs in its own PostgreSQL database (omnium_bench) and Redis database (2), so it never
touches the demo's data. Usage: .venv/bin/python bench/build.py [--replay-seconds 40]
"""

import argparse
import hashlib
import json
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench.environment import prepare  # noqa: E402

prepare("omnium_bench", redis_db=2)

from django.core.management import call_command  # noqa: E402

from devtools import processes  # noqa: E402
from devtools.generator import Generator, delete_games, games_code  # noqa: E402
from devtools.latency import change_to_built_seconds, percentile  # noqa: E402
from devtools.replay import plan_day, play  # noqa: E402
from devtools.waiting import live_builds_pending  # noqa: E402
from omnium.conf import omnium_setting  # noqa: E402
from omnium.feeds import builder, changes  # noqa: E402
from omnium.feeds.models import FeedDocument, FeedVersion, PendingBuild  # noqa: E402
from omnium.games import workflow  # noqa: E402
from omnium.games.models import Fixture, OutboxEntry  # noqa: E402
from omnium.redis_client import redis_client  # noqa: E402
from omnium.routing import BULK_QUEUES, LIVE_QUEUES  # noqa: E402

SEED = 99


def log(message: str) -> None:
    print(f"[bench] {message}", file=sys.stderr, flush=True)


def fresh_games():
    call_command("migrate", verbosity=0)
    delete_games(games_code("asian-games", SEED))
    PendingBuild.objects.all().delete()
    redis_client().flushdb()
    return Generator("asian-games", SEED).run()


def full_build(games) -> dict:
    results = {key: builder.build_file(key) for key in builder.files_of(games.code)}
    calendar = results[f"{games.code}/calendar"]
    started = time.perf_counter()
    builder.build_file(f"{games.code}/calendar")
    return {
        "files_total": len(results),
        "calendar_bytes": calendar.size,
        "calendar_build_s": round(calendar.seconds, 3),
        "calendar_rebuild_unchanged_s": round(time.perf_counter() - started, 3),
        "all_files_bytes": sum(r.size for r in results.values()),
        "full_build_s": round(sum(r.seconds for r in results.values()), 3),
    }


def hash_calendar_ms(games) -> float:
    body = bytes(FeedDocument.objects.get(doc_key=f"{games.code}/calendar").body)
    timings = []
    for _ in range(20):
        started = time.perf_counter()
        hashlib.sha256(body).digest()
        timings.append((time.perf_counter() - started) * 1000)
    return round(statistics.median(timings), 3)


def a_scheduled_match(games, skip: int = 0) -> Fixture:
    matches = Fixture.objects.filter(games=games, event__is_team=True, status="scheduled").order_by("starts_at", "id")
    return matches[skip]


def one_fixture_change(games) -> dict:
    fixture = a_scheduled_match(games)
    seq_before = FeedVersion.objects.order_by("-seq").values_list("seq", flat=True).first()
    workflow.record_score(fixture.pk, {fixture.competitors.first().entry_id: 1})
    touched = changes.handle_all().files
    PendingBuild.objects.filter(doc_key__in=touched).delete()
    built = [builder.build_file(key) for key in sorted(touched)]
    new = FeedVersion.objects.filter(seq__gt=seq_before)
    return {
        "files_rebuilt_one_fixture": len(built),
        "files_with_new_version_one_fixture": new.count(),
        "rebuilt_files_one_fixture": sorted(k.split("/", 1)[1] for k in touched),
        "bytes_rebuilt_one_fixture": sum(new.values_list("size", flat=True)),
    }


def wait_until_quiet() -> None:
    """Every touched file built, and none with a version within the quiet period: the next
    change is a lone change to quiet files, built at once (the leading edge)."""
    deadline = time.monotonic() + 10
    while live_builds_pending() and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(omnium_setting("BUILD_QUIET_S") + 0.5)


def isolated_changes(games, count: int = 5) -> float:
    latencies = []
    for n in range(count):
        wait_until_quiet()
        fixture = a_scheduled_match(games, skip=n + 1)
        last = OutboxEntry.objects.order_by("-id").values_list("id", flat=True).first()
        workflow.record_score(fixture.pk, {fixture.competitors.first().entry_id: 1})
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            measured = [s for s in change_to_built_seconds(games, last) if s is not None]
            if measured:
                latencies.append(measured[0])
                break
            time.sleep(0.05)
    return round(statistics.median(latencies), 3)


def replay_burst(games, seconds: float) -> dict:
    last = OutboxEntry.objects.order_by("-id").values_list("id", flat=True).first()
    report = play(plan_day(games, 3), speed=300, max_seconds=seconds)
    time.sleep(4)  # the 2 s cap, a build, and room for a loaded machine
    measured = [s for s in change_to_built_seconds(games, last) if s is not None]
    return {
        "replayed_changes": report.steps_played,
        "replayed_changes_per_s": round(report.steps_played / report.wall_seconds, 1),
        "changes_measured": len(measured),
        "change_to_built_p50_s": round(percentile(measured, 0.5), 3),
        "change_to_built_p95_s": round(percentile(measured, 0.95), 3),
        "change_to_built_max_s": round(max(measured), 3),
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--replay-seconds", type=float, default=40.0)
    args = parser.parse_args()
    log("generating an asian-games-scale Games")
    games = fresh_games()
    log("full build")
    result = full_build(games)
    result["hash_calendar_ms"] = hash_calendar_ms(games)
    log("one fixture change")
    result.update(one_fixture_change(games))
    log("starting real Celery workers and beat")
    env = dict(os.environ)
    running = [
        processes.start_worker(LIVE_QUEUES, "bench-live", 2, env),
        processes.start_worker(BULK_QUEUES, "bench-bulk", 1, env),
        processes.start_beat("bench-beat", env),
    ]
    try:
        log("isolated changes")
        result["isolated_change_to_built_s"] = isolated_changes(games)
        log(f"replaying a burst of live play for {args.replay_seconds:.0f} s")
        result.update(replay_burst(games, args.replay_seconds))
    finally:
        processes.stop_all(running)
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
