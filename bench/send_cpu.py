#!/usr/bin/env python
"""The CPU time of one send through the sender's own code, in one thread of one process:
the number to compare two versions of the code by on a machine whose speed under load varies
from run to run (bench/scale.py's fan-out moved by a third between runs of the same code).

Every destination is owed its medal table again (as the admin's "resend" does) and drained
in turn by `sender.drain`, in this thread: the lease, the attempt, the push, the proof, the
status published, the metrics. The receivers run in processes of their own, so their CPU is
not counted. Prints one JSON object:

  webhook_cpu_us_per_send / redis_cpu_us_per_send   this process's CPU time per confirmed
                      send, the best round (and the median round: *_median)
  webhook_postgres_cpu_us_per_send / redis_postgres_cpu_us_per_send   the CPU time of this
                      process's PostgreSQL backend per confirmed send, in the same best round
  sends               confirmed sends in all rounds

Own PostgreSQL database (omnium_bench_send_cpu) and Redis database (5; the Redis destinations
write to 6). Usage: .venv/bin/python bench/send_cpu.py [--destinations 200] [--rounds 5]
"""

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from bench.environment import prepare  # noqa: E402
from bench.process_cpu import cpu_seconds  # noqa: E402

prepare("omnium_bench_send_cpu", redis_db=5)

from django.core.management import call_command  # noqa: E402
from django.db import connection  # noqa: E402

from devtools.generator import Generator  # noqa: E402
from devtools.loopback.receivers import webhook_secret  # noqa: E402
from devtools.provisioning import provision_destinations  # noqa: E402
from omnium.delivery.engine import sender  # noqa: E402
from omnium.delivery.models import DeliveryState  # noqa: E402
from omnium.feeds.builder import build_file  # noqa: E402

# A webhook receiver in a process of its own (devtools.loopback.hosts.WebhookReceiver, headers
# only kept); it prints its URL, then serves until stdin closes.
RECEIVER = """
import sys
from devtools.loopback.hosts import WebhookReceiver
receiver = WebhookReceiver(sys.argv[1], keep_bodies=False).start()
print(receiver.url, flush=True)
sys.stdin.read()
"""
REDIS_DESTINATIONS_URL = "redis://127.0.0.1:6379/6"


def provision(games, receiver_url: str, secret: str, count: int) -> dict[str, list[int]]:
    settings = {f"hook-{n}": ("webhook", {"url": f"{receiver_url}/d{n}"}, {"secret": secret}) for n in range(count)}
    settings |= {f"redis-{n}": ("redis", {"url": REDIS_DESTINATIONS_URL, "key_prefix": f"d{n}:"}, {})
                 for n in range(count)}
    made = provision_destinations("bench-send-cpu", settings, games, ["medals"])
    return {kind: [d.pk for d in made if d.kind == kind] for kind in ("webhook", "redis")}


def backend_cpu_s() -> float:
    """The CPU time used so far by this thread's PostgreSQL backend (on this machine)."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        return cpu_seconds([cursor.fetchone()[0]])


def cpu_per_send(ids: list[int]) -> tuple[float, float, int]:
    """Owe every destination its file again, drain each in turn: CPU µs per send here and in
    PostgreSQL's backend, sends."""
    DeliveryState.objects.filter(destination_id__in=ids).update(force_resend=True)
    backend_before, started = backend_cpu_s(), time.process_time()
    for destination_id in ids:
        sender.drain(destination_id)
    spent, backend_spent = time.process_time() - started, backend_cpu_s() - backend_before
    sent = DeliveryState.objects.filter(destination_id__in=ids, force_resend=False).count()
    return spent / sent * 1e6, backend_spent / sent * 1e6, sent


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--destinations", type=int, default=200, help="of each kind")
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    call_command("migrate", verbosity=0)
    games = Generator("small", seed=99).run()
    build_file(f"{games.code}/medals")
    secret = webhook_secret()
    receiver = subprocess.Popen([sys.executable, "-c", RECEIVER, secret], cwd=ROOT, stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, text=True)
    try:
        ids = provision(games, receiver.stdout.readline().strip(), secret, args.destinations)
        for kind_ids in ids.values():
            cpu_per_send(kind_ids)  # warm: transports made, statements prepared, destinations loaded
        result, sends = {}, 0
        for kind, kind_ids in ids.items():
            rounds = [cpu_per_send(kind_ids) for _ in range(args.rounds)]
            best = min(rounds)
            result[f"{kind}_cpu_us_per_send"] = round(best[0])
            result[f"{kind}_cpu_us_per_send_median"] = round(statistics.median(us for us, _, _ in rounds))
            result[f"{kind}_postgres_cpu_us_per_send"] = round(best[1])
            sends += sum(sent for _, _, sent in rounds)
        print(json.dumps({**result, "sends": sends}, indent=2))
    finally:
        receiver.stdin.close()
        receiver.wait(timeout=10)


if __name__ == "__main__":
    main()
