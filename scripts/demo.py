#!/usr/bin/env python
"""`make demo`: the whole pipeline, live, on this machine.

Loads an asian-games-scale Games and builds its files; starts real receivers on loopback (an
S3-compatible server, an SFTP server with its own host key, an FTP server, a webhook receiver
that verifies signatures, and a host that accepts connections and never answers); creates
demo clients subscribed to the Games, the pull cache and a pull client with a key; starts
Celery (a live-lane worker, a bulk-lane worker, a delivery worker with 32 threads, beat),
Flower and the API/admin server (granian), each restarted if it exits, as systemd would
(devtools/supervisor.py; `kill -9` one to see it); replays part of a Games day at high speed through
the workflow commands; and prints what was built and what landed where, with proof.

Ctrl-C stops everything it started; DEMO_SECONDS=N stops by itself after N seconds.
Settings: DEMO_DAY (default 3), DEMO_SPEED (default 300), DEMO_REPLAY_SECONDS (default 90);
DEMO_BROKER_CLUSTER=1 runs it on a three-node RabbitMQ cluster of its own on loopback
(devtools/broker_cluster.py; its nodes' logs in var/logs/), every process given all three nodes:
kill one node's process to watch deliveries go on.
It refuses a database or Redis that is not a local demo one (devtools/demo_guard.py) unless
DEMO_I_MEAN_IT=1.
"""

import io
import json
import os
import secrets
import signal
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "omnium.settings")
os.environ.setdefault("DJANGO_DEBUG", "true")  # the development keys; the settings refuse them otherwise
# The demo's receivers are on loopback, which production refuses as a destination.
os.environ.setdefault("OMNIUM_DESTINATION_ALLOWED_NETWORKS", "127.0.0.0/8,::1/128")
DEMO_BROKER_URL = "amqp://guest:guest@127.0.0.1:5672/omnium_demo"  # a RabbitMQ vhost of the demo's own
CLUSTER = None
if os.environ.get("DEMO_BROKER_CLUSTER") == "1":
    from devtools.broker_cluster import BrokerCluster

    print("[demo] starting a three-node RabbitMQ cluster on loopback", flush=True)
    CLUSTER = BrokerCluster("demo-broker")
    os.environ["CELERY_BROKER_URL"] = CLUSTER.urls()
    os.environ["CELERY_BROKER_MANAGEMENT_URL"] = CLUSTER.management_url()
os.environ.setdefault("CELERY_BROKER_URL", DEMO_BROKER_URL)
os.environ.setdefault("OMNIUM_FLOWER_URL", "http://127.0.0.1:5555")  # the admin links each queue to Flower below

import django  # noqa: E402

django.setup()

from django.conf import settings  # noqa: E402
from django.core.management import call_command  # noqa: E402
from django.db.models import Count, Sum  # noqa: E402

from devtools import broker, demo_guard, load_games, processes  # noqa: E402
from devtools.latency import change_to_built_seconds, percentile  # noqa: E402
from devtools.loopback import receivers as loopback  # noqa: E402
from devtools.provisioning import provision_destination  # noqa: E402
from devtools.replay import plan_day, play  # noqa: E402
from devtools.supervisor import Supervisor  # noqa: E402
from devtools.waiting import live_builds_pending  # noqa: E402
from omnium.clients.models import Client  # noqa: E402
from omnium.delivery import health  # noqa: E402
from omnium.delivery.models import DeliveryAttempt, DeliveryState  # noqa: E402
from omnium.feeds.models import FeedVersion  # noqa: E402
from omnium.games.models import Games, OutboxEntry  # noqa: E402
from omnium.redis_client import redis_client  # noqa: E402
from omnium.redis_keys import BUILD_COUNTER  # noqa: E402
from omnium.routing import BULK_QUEUES, LIVE_QUEUES  # noqa: E402

DEADLINE = time.monotonic() + float(os.environ["DEMO_SECONDS"]) if os.environ.get("DEMO_SECONDS") else None
DAY = int(os.environ.get("DEMO_DAY", "3"))
SPEED = float(os.environ.get("DEMO_SPEED", "300"))
REPLAY_SECONDS = float(os.environ.get("DEMO_REPLAY_SECONDS", "90"))
API_PORT = 8000

# (client, destination, kind or a fault, [(feed type, subscription fields)])
DEMO_DESTINATIONS = [
    ("NDTV", "NDTV over S3", "s3", [("calendar", {}), ("medals", {}), ("results", {})]),
    ("Sportstar", "Sportstar over SFTP", "sftp",
     [("medals", {"transform": "xml"}), ("results", {"transform": "xml"}), ("country", {"filter": "CHN"})]),
    ("ScoreApp", "ScoreApp webhook", "webhook",
     [("medals", {"transform": "legacy", "include_version": True}), ("standings", {})]),
    ("Archive", "Archive over FTP", "ftp", [("calendar", {}), ("entries", {}), ("participants", {})]),
    ("DailyHunt", "DailyHunt over SFTP (host hangs)", "hanging", [("calendar", {}), ("results", {})]),
]


def say(message: str) -> None:
    print(f"[demo {time.strftime('%H:%M:%S')}] {message}", flush=True)


def seconds_left(default: float) -> float:
    return default if DEADLINE is None else max(0.0, min(default, DEADLINE - time.monotonic()))


def load_and_build() -> Games:
    say("loading an asian-games-scale Games (seed 1)")
    call_command(load_games.Command(), scale="asian-games", seed=1, replace=True, stdout=io.StringIO())
    games = Games.objects.get(code="ag1")
    say("building every file once (in this process)")
    call_command("build_feeds", games=games.code, stderr=io.StringIO())
    for row in games.feed_documents.values("feed_type").annotate(files=Count("doc_key"), bytes=Sum("size")).order_by("feed_type"):
        say(f"  {row['feed_type']:<13} {row['files']:>3} file(s) {row['bytes'] / 1e6:8.2f} MB")
    return games


def create_demo_clients(games: Games, receivers) -> None:
    Client.objects.filter(name__in=[c for c, *_ in DEMO_DESTINATIONS]).delete()
    for client, name, kind, subscriptions in DEMO_DESTINATIONS:
        settings_ = receivers.hanging() if kind == "hanging" else receivers.settings(kind, client.lower().replace(" ", "-"))
        provision_destination(client, name, settings_, games, subscriptions)
        say(f"  {client:<11} {name}")


def set_up_pull(games: Games) -> str:
    """The pull cache's Redis destinations, a demo pull client and its key (shown once)."""
    from omnium.clients.models import ApiKey, Entitlement
    from omnium.feeds.models import FeedDefinition

    call_command("ensure_pull_cache", games=games.code, no_build=True, stdout=io.StringIO())
    client, _ = Client.objects.get_or_create(name="Google Cricket (pull)")
    for feed_type in ("medals", "calendar", "results"):
        Entitlement.objects.get_or_create(client=client, definition=FeedDefinition.objects.get(games=games, feed_type=feed_type))
    _, plain = ApiKey.issue(client, "demo")
    return plain


def admin_password() -> str:
    from django.contrib.auth import get_user_model

    password = secrets.token_urlsafe(10)
    user, _ = get_user_model().objects.get_or_create(username="ops", defaults={"is_staff": True, "is_superuser": True})
    user.is_staff = user.is_superuser = True
    user.set_password(password)
    user.save()
    return password


def start_api_server(supervisor: Supervisor) -> None:
    call_command("collectstatic", interactive=False, verbosity=0)
    supervisor.add("demo-api", lambda: processes.start_api(API_PORT, "demo-api", dict(os.environ), workers=2,
                                                           static_root=str(settings.STATIC_ROOT)))


def start_pipeline(supervisor: Supervisor) -> None:
    """Every process under `supervisor`, which restarts one that exits (as systemd would)."""
    say("starting Celery: live-lane worker, bulk-lane worker, delivery worker (32 threads), beat")
    supervisor.add("demo-live", lambda: processes.start_worker(LIVE_QUEUES, "demo-live", concurrency=2))
    supervisor.add("demo-bulk", lambda: processes.start_worker(BULK_QUEUES, "demo-bulk", concurrency=1))
    supervisor.add("demo-delivery", lambda: processes.start_delivery_worker("demo-delivery", concurrency=32))
    supervisor.add("demo-beat", lambda: processes.start_beat("demo-beat"))


def start_flower(supervisor: Supervisor) -> None:
    password = secrets.token_urlsafe(12)
    # --broker_api: Flower reads every destination queue's depth from RabbitMQ's management API.
    supervisor.add("demo-flower", lambda: processes.ManagedProcess(
        [*processes.CELERY, "flower", "--address=127.0.0.1", "--port=5555", f"--basic-auth=ops:{password}",
         f"--broker_api={settings.CELERY_BROKER_MANAGEMENT_URL}"],
        "demo-flower"))
    say(f"Flower: http://127.0.0.1:5555/  (user ops, password {password})")


def replay(games: Games) -> dict:
    steps = plan_day(games, DAY)
    window = seconds_left(REPLAY_SECONDS)
    say(f"replaying day {DAY}: {len(steps)} changes planned at x{SPEED:g}, for up to {window:.0f} s")
    progress = lambda r: say(f"  {r.steps_played} changes played, {r.games_seconds / 3600:.1f} h of Games time")
    return play(steps, SPEED, window, progress).as_dict()


def settle(timeout: float = 6.0) -> None:
    end = time.monotonic() + seconds_left(timeout)
    while time.monotonic() < end and (live_builds_pending() or OutboxEntry.objects.filter(handled_at=None).exists()):
        time.sleep(0.2)
    time.sleep(min(2.0, seconds_left(2.0)))  # the last sends


def build_summary(games: Games, first_outbox: int, first_version: int, replayed: dict) -> dict:
    versions = FeedVersion.objects.filter(doc_key__startswith=f"{games.code}/", seq__gt=first_version)
    latencies = [s for s in change_to_built_seconds(games, first_outbox) if s is not None]
    builds = {k.decode(): int(v) for k, v in redis_client().hgetall(BUILD_COUNTER).items()}
    changes = OutboxEntry.objects.filter(games=games, pk__gt=first_outbox).count()
    by_type = {}
    for doc_key, size in versions.values_list("doc_key", "size"):
        entry = by_type.setdefault(doc_key.split("/")[1], {"versions": 0, "bytes": 0})
        entry["versions"] += 1
        entry["bytes"] += size
    return {
        "replay": replayed,
        "changes_committed": changes,
        "builds": {"new_version": builds.get("new_version", 0), "skipped_unchanged": builds.get("unchanged", 0),
                   "superseded": builds.get("superseded", 0)},
        "files_rebuilt_per_change": round(sum(builds.values()) / changes, 2) if changes else 0,
        "new_versions_by_feed_type": by_type,
        "change_to_built_s": {"changes_measured": len(latencies), "p50": _round(percentile(latencies, 0.5)),
                              "p95": _round(percentile(latencies, 0.95)), "max": _round(max(latencies, default=None))},
    }


def delivery_summary(since) -> list[dict]:
    rows = []
    for client, name, *_ in DEMO_DESTINATIONS:
        states = DeliveryState.objects.filter(destination__name=name, destination__client__name=client)
        attempts = DeliveryAttempt.objects.filter(destination__name=name, started_at__gte=since)
        ages = sorted(attempts.filter(ok=True, age_ms__isnull=False).values_list("age_ms", flat=True))
        latest = states.filter(sent_seq__gt=0).order_by("-sent_at").first()
        destination_id = states.values_list("destination_id", flat=True).first()
        rows.append({
            "destination": name,
            "status": health.read(destination_id).get("status") if destination_id else "unknown",
            "files_current": states.filter(sent_seq__gte=1).exclude(wanted_seq__gt=0, sent_seq__lt=1).count(),
            "files_owed": sum(1 for s in states if s.owed),
            "sends": attempts.filter(ok=True).count(),
            "failed_attempts": attempts.filter(ok=False).count(),
            "bytes_sent": sum(attempts.filter(ok=True).values_list("bytes", flat=True)),
            "age_ms_p50": percentile(ages, 0.5), "age_ms_p95": percentile(ages, 0.95),
            "last_proof": None if latest is None else {
                "file": latest.doc_key, "version": latest.sent_seq, "bytes": latest.sent_bytes,
                "sha256": bytes(latest.sent_hash).hex()[:16] + "…", "receipt": latest.receipt[:60],
                "age_ms": latest.age_ms},
        })
    return rows


def _round(value):
    return None if value is None else round(value, 3)


def refuse_foreign_data() -> None:
    problems = demo_guard.refusals(settings.DATABASES["default"], settings.REDIS_URL)
    if problems and os.environ.get(demo_guard.OVERRIDE) != "1":
        sys.exit(demo_guard.message(problems))


def main() -> None:
    refuse_foreign_data()
    signal.signal(signal.SIGTERM, lambda *_: (_ for _ in ()).throw(KeyboardInterrupt()))
    redis_client().flushdb()  # hints and counters only; PostgreSQL is the record
    if settings.CELERY_BROKER_URL == DEMO_BROKER_URL:  # the demo's own vhost: last run's kicks go
        broker.ensure_vhost(settings.CELERY_BROKER_MANAGEMENT_URL, DEMO_BROKER_URL, fresh=True)
    supervisor, receivers = Supervisor(report=say), None
    try:
        games = load_and_build()
        say("starting receivers on loopback: SeaweedFS (S3), sshd (SFTP), pyftpdlib (FTP), webhook, a hanging host")
        receivers = loopback.start(settings.REDIS_URL)
        say("creating demo clients:")
        create_demo_clients(games, receivers)
        key = set_up_pull(games)
        start_pipeline(supervisor)
        start_flower(supervisor)
        metrics_token = os.environ.setdefault("OMNIUM_METRICS_TOKEN", secrets.token_urlsafe(16))  # read by the API server
        start_api_server(supervisor)
        password = admin_password()
        say(f"admin and status screens: http://127.0.0.1:{API_PORT}/admin/delivery/status/  (user ops, password {password})")
        say(f"metrics (Prometheus, every worker and API process of this machine): http://127.0.0.1:{API_PORT}/metrics")
        print(f"  curl -H 'Authorization: Bearer {metrics_token}' http://127.0.0.1:{API_PORT}/metrics", flush=True)
        say("pull a file (the key is shown once):")
        print(f"  curl --compressed -i -H 'Authorization: Bearer {key}' http://127.0.0.1:{API_PORT}/v1/feeds/{games.code}/medals",
              flush=True)
        from django.utils import timezone

        since = timezone.now()
        first_outbox = OutboxEntry.objects.order_by("-id").values_list("id", flat=True).first() or 0
        first_version = FeedVersion.objects.order_by("-seq").values_list("seq", flat=True).first() or 0
        replayed = replay(games)
        settle()
        say("what was built:")
        print(json.dumps(build_summary(games, first_outbox, first_version, replayed), indent=2), flush=True)
        say("what landed where (proof of delivery; the hanging destination slows nobody else):")
        print(json.dumps(delivery_summary(since), indent=2, default=str), flush=True)
        say(f"processes restarted after exiting: {supervisor.restarts}")
        if DEADLINE is None:
            say("pipeline still running (Flower above; `manage.py runserver` for the admin); Ctrl-C stops it")
            while True:
                time.sleep(1)
    except KeyboardInterrupt:
        say("stopping")
    finally:
        supervisor.stop()
        if receivers is not None:
            receivers.stop()
        if CLUSTER is not None:
            CLUSTER.stop()
        say("everything the demo started has stopped")


if __name__ == "__main__":
    main()
