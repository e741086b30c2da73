#!/usr/bin/env python
"""Benchmark of push delivery, end to end through real Celery workers and real receivers on
loopback (SeaweedFS, sshd, pyftpdlib, a webhook receiver, Redis). Prints one JSON object.

  age_*            the proof's age: the file's changed_at -> confirmed at the receiver, for
                   versions made during a replayed burst, 20 destinations across transports
  change_to_file_p95_s   every change's commit -> first confirmed file containing it
  change_to_version / version_to_send_start / send_duration   where the age goes
  age_p95_with_faults_s  the healthy destinations' p95 with a hanging and a trickling one added
  fanout_500_s     one change (a medal award) to 500 destinations: commit -> the last
                   confirmation; it includes the medal-table stat job, the 1 s quiet period
                   and the build
  bytes_pushed_one_fixture  all destinations, one fixture's score change
  isolated_change_to_file_s  that lone change (its files quiet, the builders warmed up by
                   one change before): commit -> every destination has confirmed a file
                   containing it; isolated_change_to_every_file_s: every file it touched
  extra_versions_per_burst  six scores to one match 200 ms apart, on quiet files: the most
                   versions any file got with the leading edge on beyond those with it off
  bytes_pushed_ratio   bytes pushed in the burst without faults with the leading edge on,
                   against the same burst with it off: the Games generated again (the same
                   data and plan), the same changes before it, every process restarted with
                   OMNIUM_BUILD_LEADING_EDGE=false; leading_edge_off holds that run's numbers

Each world is a freshly generated Games, so its 16,700 split and public pull files get their
first builds in the bulk lane all through the measurements (some 8 minutes on a 2-core
machine): a Games loaded on the day, which the live lane must outrun.

Own PostgreSQL database (omnium_bench_deliver) and Redis databases (2: broker, 5: pull cache).
Usage: .venv/bin/python bench/deliver.py [--burst-seconds 30]
"""

import argparse
import json
import os
import sys
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench.environment import prepare  # noqa: E402

prepare("omnium_bench_deliver", redis_db=2)

from django.core.management import call_command  # noqa: E402
from django.db import connection  # noqa: E402

from devtools import processes  # noqa: E402
from devtools.generator import Generator, delete_games, games_code  # noqa: E402
from devtools.latency import percentile  # noqa: E402
from devtools.loopback import receivers as loopback  # noqa: E402
from devtools.provisioning import provision_destination  # noqa: E402
from devtools.replay import plan_day, play  # noqa: E402
from devtools.waiting import live_builds_pending  # noqa: E402
from omnium.clients.models import Client  # noqa: E402
from omnium.conf import omnium_setting  # noqa: E402
from omnium.delivery.models import DeliveryAttempt, DeliveryState  # noqa: E402
from omnium.feeds.builder import build_file, files_of  # noqa: E402
from omnium.feeds.models import FeedVersion, PendingBuild  # noqa: E402
from omnium.games import workflow  # noqa: E402
from omnium.games.models import Fixture, OutboxEntry  # noqa: E402
from omnium.redis_client import redis_client  # noqa: E402
from omnium.routing import BULK_QUEUES, LIVE_QUEUES  # noqa: E402

SEED = 98
FEEDS = ("calendar", "results", "medals", "standings")
PER_KIND = 4  # x 5 transports = 20 destinations


def log(message: str) -> None:
    print(f"[bench] {message}", file=sys.stderr, flush=True)


def fresh_games():
    call_command("migrate", verbosity=0)
    delete_games(games_code("asian-games", SEED))
    Client.objects.filter(name__startswith="bench-").delete()
    PendingBuild.objects.all().delete()
    redis_client().flushdb()
    games = Generator("asian-games", SEED).run()
    for key in files_of(games.code):
        build_file(key)
    # Each run starts from tidy tables, so that runs compare: where autovacuum is off (as on
    # the development machine), earlier runs' dead rows would otherwise slow later ones.
    with connection.cursor() as cursor:
        cursor.execute("VACUUM ANALYZE")
    return games


def destinations(games, receivers) -> list:
    made = []
    for kind in loopback.KINDS:
        for n in range(PER_KIND):
            made.append(provision_destination(f"bench-{kind}", f"{kind}-{n}", receivers.settings(kind, f"{kind}{n}"),
                                              games, FEEDS))
    return made


def wait_caught_up(timeout: float, destination_ids) -> None:
    end = time.monotonic() + timeout
    states = DeliveryState.objects.filter(destination_id__in=destination_ids, dead_lettered_at__isnull=True)
    while time.monotonic() < end:
        if not live_builds_pending() and not any(s.owed for s in states.all()):
            return
        time.sleep(0.25)
    log("warning: not every destination caught up in time")


def latest(model, field):
    return model.objects.order_by(f"-{field}").values_list(field, flat=True).first() or 0


def ages(destination_ids, first_seq) -> list[float]:
    rows = DeliveryAttempt.objects.filter(destination_id__in=destination_ids, ok=True, seq__gt=first_seq,
                                          age_ms__isnull=False)
    return [age / 1000 for age in rows.values_list("age_ms", flat=True)]


def burst(steps, seconds: float, speed: float, destination_ids) -> dict:
    """Play `seconds` of `steps`; returns where it started and how many steps it played."""
    first_seq, first_outbox = latest(FeedVersion, "seq"), latest(OutboxEntry, "id")
    report = play(steps, speed=speed, max_seconds=seconds)
    wait_caught_up(20, destination_ids)
    return {"first_seq": first_seq, "first_outbox": first_outbox, "played": report.steps_played}


CHANGE_TO_FILE = """
WITH changes AS (SELECT id, created_at, xact_id, records FROM games_outbox WHERE id > %(after)s),
touched AS (
    SELECT DISTINCT c.id, d.doc_key FROM changes c, jsonb_array_elements(c.records) r, feed_dependency d
    WHERE d.record_kind = r->>0 AND d.record_id = (r->>1)::uuid),
first_version AS (
    SELECT t.id, t.doc_key, MIN(v.seq) AS seq FROM touched t
    JOIN changes c ON c.id = t.id
    JOIN feeds_feedversion v ON v.doc_key = t.doc_key AND v.committed_at >= c.created_at
        AND pg_visible_in_snapshot(c.xact_id, v.snapshot)
    GROUP BY t.id, t.doc_key)
SELECT c.id, EXTRACT(EPOCH FROM MIN(a.started_at + a.duration_ms * interval '1 millisecond') - c.created_at)
FROM changes c JOIN first_version f ON f.id = c.id
JOIN delivery_deliveryattempt a ON a.doc_key = f.doc_key AND a.seq >= f.seq AND a.ok
    AND a.destination_id = ANY(%(destinations)s)
GROUP BY c.id, c.created_at
"""


def change_to_file(after_outbox: int, destination_ids) -> list[float]:
    with connection.cursor() as cursor:
        cursor.execute(CHANGE_TO_FILE, {"after": after_outbox, "destinations": list(destination_ids)})
        return [float(row[1]) for row in cursor.fetchall() if row[1] is not None]


def p(values, fraction):
    value = percentile(values, fraction)
    return None if value is None else round(value, 3)


AGE_PHASES = """
SELECT EXTRACT(EPOCH FROM v.committed_at - v.changed_at), EXTRACT(EPOCH FROM a.started_at - v.committed_at),
       a.duration_ms / 1000.0, split_part(a.doc_key, '/', 2)
FROM delivery_deliveryattempt a JOIN feeds_feedversion v ON v.seq = a.seq
WHERE a.ok AND a.seq > %s AND a.destination_id = ANY(%s)
"""


def age_phases(destination_ids, first_seq) -> dict:
    """Where the age goes: the quiet period and the build, waiting for a sender, the send;
    and the first of these by feed type, since files differ most in their builds."""
    with connection.cursor() as cursor:
        cursor.execute(AGE_PHASES, [first_seq, list(destination_ids)])
        rows = cursor.fetchall()
    builds, waits, sends = ([float(row[n]) for row in rows] for n in range(3))
    by_feed = {feed: p([float(row[0]) for row in rows if row[3] == feed], 0.95) for feed in FEEDS}
    return {"change_to_version_p95_s": p(builds, 0.95), "change_to_version_p95_by_feed": by_feed,
            "version_to_send_start_p95_s": p(waits, 0.95), "send_duration_p95_s": p(sends, 0.95)}


def by_transport(destinations_, first_seq) -> dict:
    result = {}
    for kind in loopback.KINDS:
        ids = [d.pk for d in destinations_ if d.kind == kind]
        result[kind] = p(ages(ids, first_seq), 0.95)
    return result


def team_match(games, skip: int = 0) -> Fixture:
    matches = Fixture.objects.filter(games=games, event__is_team=True, status="scheduled").order_by("starts_at", "id")
    return matches[skip]


def warm_up_builders(games, destination_ids) -> None:
    """One change first: a build worker's first build of a feed type took 0.36 s for an 805-byte
    results file and 1.03 s for the calendar (0.5 s warm), which no running system pays."""
    match = team_match(games, skip=1)
    workflow.record_score(match.pk, {match.competitors.first().entry_id: 1})
    time.sleep(0.5)
    wait_caught_up(20, destination_ids)


def one_fixture(fixture, destination_ids) -> dict:
    wait_until_quiet(destination_ids)
    first_seq = latest(FeedVersion, "seq")
    workflow.record_score(fixture.pk, {fixture.competitors.first().entry_id: 1})
    change = latest(OutboxEntry, "id")
    time.sleep(1.5)
    wait_caught_up(20, destination_ids)
    sent = DeliveryAttempt.objects.filter(destination_id__in=destination_ids, ok=True, seq__gt=first_seq)
    return {"bytes_pushed_one_fixture": sum(sent.values_list("bytes", flat=True)),
            "files_pushed_one_fixture": sorted({d.split("/", 1)[1] for d in sent.values_list("doc_key", flat=True)}),
            "sends_one_fixture": sent.count(), **change_at_every_destination_s(change, destination_ids)}


# Per destination: its first confirmed file containing the change (as change_to_file counts),
# and the last of the files the change touched there. A pair with no confirmed send makes the
# answer None, not a flattering maximum.
CHANGE_AT_EVERY_DESTINATION = """
WITH change AS (SELECT created_at, xact_id, records FROM games_outbox WHERE id = %(change)s),
first_version AS (
    SELECT v.doc_key, MIN(v.seq) AS seq FROM change c
    JOIN feeds_feedversion v ON v.committed_at >= c.created_at AND pg_visible_in_snapshot(c.xact_id, v.snapshot)
    WHERE v.doc_key IN (SELECT d.doc_key FROM jsonb_array_elements(c.records) r, feed_dependency d
                        WHERE d.record_kind = r->>0 AND d.record_id = (r->>1)::uuid)
    GROUP BY v.doc_key),
confirmed AS (
    SELECT s.destination_id, (
        SELECT MIN(a.started_at + a.duration_ms * interval '1 millisecond') FROM delivery_deliveryattempt a
        WHERE a.destination_id = s.destination_id AND a.doc_key = s.doc_key AND a.seq >= f.seq AND a.ok) AS at
    FROM delivery_state s JOIN first_version f USING (doc_key)
    WHERE s.destination_id = ANY(%(destinations)s)),
per_destination AS (
    SELECT MIN(at) AS first_file, CASE WHEN bool_and(at IS NOT NULL) THEN MAX(at) END AS every_file
    FROM confirmed GROUP BY destination_id)
SELECT CASE WHEN bool_and(first_file IS NOT NULL) THEN EXTRACT(EPOCH FROM MAX(first_file) - MIN(c.created_at)) END,
       CASE WHEN bool_and(every_file IS NOT NULL) THEN EXTRACT(EPOCH FROM MAX(every_file) - MIN(c.created_at)) END
FROM per_destination, change c
"""


def change_at_every_destination_s(change_id: int, destination_ids) -> dict:
    with connection.cursor() as cursor:
        cursor.execute(CHANGE_AT_EVERY_DESTINATION, {"change": change_id, "destinations": list(destination_ids)})
        first_file, every_file = cursor.fetchone()
    return {"isolated_change_to_file_s": None if first_file is None else round(float(first_file), 3),
            "isolated_change_to_every_file_s": None if every_file is None else round(float(every_file), 3)}


def wait_until_quiet(destination_ids) -> None:
    """Everything built and sent, and no version within the quiet period: the next change
    meets the leading edge."""
    wait_caught_up(20, destination_ids)
    time.sleep(omnium_setting("BUILD_QUIET_S") + 0.5)


def score_flurry(fixture, first_score: int, destination_ids) -> Counter:
    """Six scores to one match, 200 ms apart, once its files are quiet; new versions per file."""
    wait_until_quiet(destination_ids)
    first_seq = latest(FeedVersion, "seq")
    entry_id = fixture.competitors.first().entry_id
    for score in range(first_score, first_score + 6):
        workflow.record_score(fixture.pk, {entry_id: score})
        time.sleep(0.2)
    time.sleep(1.5)
    wait_caught_up(20, destination_ids)
    return Counter(FeedVersion.objects.filter(seq__gt=first_seq).values_list("doc_key", flat=True))


def bytes_pushed(destination_ids, first_seq) -> int:
    sent = DeliveryAttempt.objects.filter(destination_id__in=destination_ids, ok=True, seq__gt=first_seq)
    return sum(sent.values_list("bytes", flat=True))


def start_processes(args, leading_edge: bool) -> list:
    env = {**os.environ, "OMNIUM_BUILD_LEADING_EDGE": "true" if leading_edge else "false"}
    return [processes.start_worker(LIVE_QUEUES, "bench-live", 2, env),
            processes.start_worker(BULK_QUEUES, "bench-bulk", 1, env),
            *[processes.start_delivery_worker(f"bench-delivery-{n}", args.delivery_threads, env)
              for n in range(1, args.delivery_workers + 1)],
            processes.start_beat("bench-beat", env)]


def fanout_500(games, receivers) -> float:
    Client.objects.filter(name__startswith="bench-").delete()
    made = [provision_destination("bench-fanout", f"hook-{n}", receivers.settings("webhook", f"f{n}"), games, ["medals"])
            for n in range(500)]
    ids = [d.pk for d in made]
    wait_caught_up(120, ids)
    time.sleep(3)  # every new queue announced to the delivery worker
    event = Fixture.objects.filter(games=games, is_medal_fixture=True, status="scheduled").order_by("starts_at")[0]
    workflow.record_score(event.pk, {c.entry_id: 10 + n for n, c in enumerate(event.competitors.all())})
    workflow.finish_fixture(event.pk)
    # The final's result and the award are two changes; wait for the first to be built, so
    # that the award (the one change measured) is not queued behind its builds.
    time.sleep(1.5)
    wait_caught_up(60, ids)
    first_seq = latest(FeedVersion, "seq")
    winner = event.competitors.order_by("rank").first().entry_id
    workflow.award_medals(event.event_id, {winner: "gold"})
    committed = OutboxEntry.objects.order_by("-id").first().created_at
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if DeliveryState.objects.filter(destination_id__in=ids, sent_seq__gt=first_seq).count() == len(ids):
            break
        time.sleep(0.1)
    last = DeliveryState.objects.filter(destination_id__in=ids).order_by("-sent_at").values_list("sent_at", flat=True)[0]
    return round((last - committed).total_seconds(), 3)


def calm_burst_measurements(healthy, calm: dict, args) -> dict:
    ids = [d.pk for d in healthy]
    calm_ages = ages(ids, calm["first_seq"])
    to_file = change_to_file(calm["first_outbox"], ids)
    return {
        "destinations": len(ids), "sends_measured": len(calm_ages), "replay_speed": args.speed,
        "changes_per_s": round(calm["played"] / args.burst_seconds, 2),
        "age_p50_s": p(calm_ages, 0.5), "age_p95_s": p(calm_ages, 0.95), "age_p99_s": p(calm_ages, 0.99),
        "change_to_file_p50_s": p(to_file, 0.5), "change_to_file_p95_s": p(to_file, 0.95),
        "age_p95_by_transport": by_transport(healthy, calm["first_seq"]),
        **age_phases(ids, calm["first_seq"]),
        "bytes_pushed_burst": bytes_pushed(ids, calm["first_seq"]),
    }


def faults_and_fanout(games, receivers, ids, rest_of_day, age_p95_s: float, args) -> dict:
    log("burst with a hanging and a trickling destination")
    provision_destination("bench-faults", "hanging", receivers.hanging(), games, FEEDS)
    provision_destination("bench-faults", "trickling", receivers.trickling(send_timeout=30), games, FEEDS)
    # The next stretch of the same busy day, so that the loads with and without faults are
    # alike and their ratio says something.
    stormy = burst(rest_of_day, args.burst_seconds, args.speed, ids)
    with_faults = p(ages(ids, stormy["first_seq"]), 0.95)
    result = {"age_p95_with_faults_s": with_faults, "isolation_ratio": round(with_faults / age_p95_s, 3)}
    if not args.skip_fanout:
        log("fan-out to 500 destinations")
        result["fanout_500_s"] = fanout_500(games, receivers)
    return result


def one_world(args, receivers, leading_edge: bool) -> tuple[dict, Counter]:
    """A freshly generated Games (the generator is deterministic: the same data, ids and day
    plan each time), 20 destinations and fresh processes; then the lone change, the flurry
    and the calm burst. With the leading edge on, the faults burst and the fan-out follow."""
    log(f"generating and building an asian-games-scale Games; leading edge {'on' if leading_edge else 'off'}")
    games = fresh_games()
    healthy = destinations(games, receivers)
    ids = [d.pk for d in healthy]
    running = start_processes(args, leading_edge)
    try:
        if args.only_fanout:
            log("fan-out to 500 destinations")
            return {"fanout_500_s": fanout_500(games, receivers)}, Counter()
        log("initial catch-up of 20 destinations")
        wait_caught_up(120, ids)
        warm_up_builders(games, ids)
        match = team_match(games)
        result = one_fixture(match, ids)
        log("a flurry of scores to one match")
        flurry = score_flurry(match, 2, ids)
        log(f"burst without faults ({args.burst_seconds:.0f} s)")
        day = plan_day(games, 3)
        calm = burst(day, args.burst_seconds, args.speed, ids)
        result.update(calm_burst_measurements(healthy, calm, args))
        if leading_edge:
            result.update(faults_and_fanout(games, receivers, ids, day[calm["played"]:], result["age_p95_s"], args))
        return result, flurry
    finally:
        processes.stop_all(running)


def leading_edge_costs(led: tuple[dict, Counter], unled: tuple[dict, Counter]) -> dict:
    """The same changes with the leading edge on and off: what it costs and what it buys."""
    (on, flurry_on), (off, flurry_off) = led, unled

    def by_feed(counts):
        return {key.split("/", 1)[1]: n for key, n in sorted(counts.items())}

    return {
        "extra_versions_per_burst": max(flurry_on[key] - flurry_off[key] for key in flurry_on | flurry_off),
        "burst_versions_leading_edge_on": by_feed(flurry_on), "burst_versions_leading_edge_off": by_feed(flurry_off),
        "bytes_pushed_ratio": round(on["bytes_pushed_burst"] / off["bytes_pushed_burst"], 3),
        "leading_edge_off": {key: off[key] for key in (
            "isolated_change_to_file_s", "isolated_change_to_every_file_s", "changes_per_s", "bytes_pushed_burst",
            "age_p50_s", "age_p95_s", "change_to_file_p50_s", "change_to_file_p95_s")},
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--burst-seconds", type=float, default=30.0)
    parser.add_argument("--speed", type=float, default=300.0, help="replay speed (times real time)")
    parser.add_argument("--skip-fanout", action="store_true")
    parser.add_argument("--only-fanout", action="store_true")
    parser.add_argument("--delivery-workers", type=int, default=2)
    parser.add_argument("--delivery-threads", type=int, default=16, help="per delivery worker")
    args = parser.parse_args()
    log("starting receivers")
    receivers = loopback.start("redis://127.0.0.1:6379/5")
    try:
        led = one_world(args, receivers, leading_edge=True)
        result = led[0]
        if not args.only_fanout:
            log("the same Games, changes and burst again, with the leading edge off")
            result.update(leading_edge_costs(led, one_world(args, receivers, leading_edge=False)))
    finally:
        receivers.stop()
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
