#!/usr/bin/env python
"""Benchmark of the client portal's pages with 5,000 destinations in the database (issue 35:
each page under 300 ms). Prints one JSON object.

The database: 500 clients with 10 destinations each (5,000), every destination owed and sent
files of a small Games, a day of proofs (attempts) per destination and 30 freshness days per
client; the measured client holds 500 files (10 destinations x 50 files). Each page is asked
for through Django's request handling in this process (sessions, middleware, templates: all
but the socket), first once to warm up, then ROUNDS times:

  <page>_ms      min / median / p95 / max of a page's answer, in milliseconds
  <page>_queries the SQL statements one answer ran (a number that must not grow with rows)

Own PostgreSQL database (omnium_bench_portal) and Redis database 6. Usage:
  .venv/bin/python bench/portal.py [--rounds 30]
"""

import argparse
import json
import statistics
import sys
import time
from datetime import date, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench.environment import prepare  # noqa: E402

prepare("omnium_bench_portal", redis_db=6)

from django.core.management import call_command  # noqa: E402
from django.db import connection  # noqa: E402
from django.test import Client as Browser  # noqa: E402
from django.test.utils import CaptureQueriesContext  # noqa: E402
from django.utils import timezone  # noqa: E402

from devtools.generator import Generator  # noqa: E402
from omnium.clients.models import Client, Destination, Subscription  # noqa: E402
from omnium.delivery.models import DeliveryAttempt, DeliveryState  # noqa: E402
from omnium.feeds.builder import build_file, files_of  # noqa: E402
from omnium.feeds.models import FeedDefinition, FeedDocument  # noqa: E402
from omnium.portal import links  # noqa: E402
from omnium.reports.models import FreshnessDay  # noqa: E402

CLIENTS = 500
DESTINATIONS_PER_CLIENT = 10
FILES_PER_DESTINATION = 50
ATTEMPTS_PER_DESTINATION = 48  # a day of proofs, one every half hour
PAGES = {"home": "/portal/", "freshness": "/portal/freshness/", "freshness_csv": "/portal/freshness/?format=csv"}


def make_database() -> Client:
    """Every row the pages read, for 5,000 destinations; the first client is the measured one."""
    call_command("migrate", verbosity=0)
    games = Generator("small", seed=7).run()
    for doc_key in files_of(games.code):
        build_file(doc_key)
    documents = list(FeedDocument.objects.order_by("doc_key").values_list("doc_key", "seq"))[:FILES_PER_DESTINATION]
    # A small Games has fewer files than a client of a big one gets: the rest are named as a
    # big Games' athlete pages would be (the page reads their rows the same way).
    documents += [(f"{games.code}/athlete/{n}", 1) for n in range(FILES_PER_DESTINATION - len(documents))]
    definition = FeedDefinition.objects.filter(games=games).first()
    clients = Client.objects.bulk_create([Client(name=f"client {n:03d}") for n in range(CLIENTS)])
    destinations = Destination.objects.bulk_create([
        Destination(client=client, name=f"{client.name} webhook {n}", kind="webhook",
                    config={"url": f"https://hooks.example.com/{client.pk}/{n}"})
        for client in clients for n in range(DESTINATIONS_PER_CLIENT)])
    subscriptions = Subscription.objects.bulk_create([Subscription(destination=d, definition=definition)
                                                      for d in destinations])
    now = timezone.now()
    DeliveryState.objects.bulk_create([
        DeliveryState(subscription=s, destination_id=s.destination_id, doc_key=doc_key, wanted_seq=seq,
                      sent_seq=seq - (n % 7 == 0), sent_bytes=1000 + n, sent_bytes_sha256=bytes(32), sent_hash=bytes(32),
                      receipt="200 OK body 2 bytes", sent_at=now, age_ms=900 + n, sent_path=f"{doc_key}.json")
        for s in subscriptions for n, (doc_key, seq) in enumerate(documents)], batch_size=5000)
    DeliveryAttempt.objects.bulk_create([
        DeliveryAttempt(destination=d, doc_key=documents[0][0], seq=documents[0][1], ok=True, age_ms=800 + n,
                        bytes=1000, duration_ms=20)
        for d in destinations for n in range(ATTEMPTS_PER_DESTINATION)], batch_size=10000)
    today = date.today()
    FreshnessDay.objects.bulk_create([
        FreshnessDay(client=client, day=today - timedelta(days=n), versions_sent=1000, within_10s=990,
                     within_60s=1000, p50_age_ms=900, p95_age_ms=4000, failures=3)
        for client in clients for n in range(30)], batch_size=5000)
    connection.cursor().execute("ANALYZE")
    return clients[0]


def timed(browser: Browser, path: str, rounds: int) -> tuple[list[float], int]:
    assert browser.get(path).status_code == 200  # templates compiled, connections open
    times = []
    for _ in range(rounds):
        started = time.perf_counter()
        answer = browser.get(path)
        times.append((time.perf_counter() - started) * 1000)
        assert answer.status_code == 200, (path, answer.status_code)
    with CaptureQueriesContext(connection) as queries:
        browser.get(path)
    return times, len(queries)


def summary(times: list[float]) -> dict:
    ordered = sorted(times)
    return {"min": round(ordered[0], 1), "median": round(statistics.median(ordered), 1),
            "p95": round(ordered[int(len(ordered) * 0.95) - 1], 1), "max": round(ordered[-1], 1)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=30)
    options = parser.parse_args()
    started = time.monotonic()
    client = make_database()
    result = {"destinations": Destination.objects.count(), "files_of_the_client": DeliveryState.objects.filter(
        destination__client=client).count(), "setup_s": round(time.monotonic() - started, 1)}
    _, token = links.make(client, "bench", timedelta(days=1))
    browser = Browser(HTTP_HOST="127.0.0.1")
    assert browser.get(f"/portal/open/{token}/").status_code == 302
    for name, path in PAGES.items():
        times, queries = timed(browser, path, options.rounds)
        result[f"{name}_ms"], result[f"{name}_queries"] = summary(times), queries
    result["target_ms"] = 300
    result["met"] = all(result[f"{name}_ms"]["p95"] <= 300 for name in PAGES)
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
