"""`manage.py worker_ready <node name>`: exit 0 when that Celery worker is alive and consuming,
1 (with the reason) when not. For a probe that runs a command: a Kubernetes exec liveness or
readiness probe, a systemd timer, a load balancer's external check.

It reads the worker's heartbeat in PostgreSQL (alerts.worker_heartbeats), the one the dead-man's
switch reads: written every OMNIUM_HEARTBEAT_INTERVAL_S by a thread of the worker once its
consumer runs, with the lanes it consumes. So "ready" means the process runs, reached
PostgreSQL within three intervals and consumes its queues; no broker round trip, so a probe
every few seconds costs nothing.
"""

import json

from django.core.management.base import BaseCommand, CommandError
from django.db import connection

from omnium.conf import omnium_setting

HEARTBEAT_AGE = """
SELECT EXTRACT(EPOCH FROM clock_timestamp() - beat_at), queues::text FROM alerts_workerheartbeat WHERE hostname = %s
"""


class Command(BaseCommand):
    help = "Exit 0 when the named Celery worker has a recent heartbeat and consumes queues, else 1."

    def add_arguments(self, parser):
        parser.add_argument("node", help="the worker's node name, as given to -n (live@host, deliver@host…)")

    def handle(self, *args, node, **options):
        with connection.cursor() as cursor:
            cursor.execute(HEARTBEAT_AGE, [node])
            row = cursor.fetchone()
        if row is None:
            raise CommandError(f"{node}: no heartbeat ever (not started, or another node name)")
        age_s, lanes = float(row[0]), json.loads(row[1])  # jsonb comes back as its text
        limit = 3 * omnium_setting("HEARTBEAT_INTERVAL_S")
        if age_s > limit:
            raise CommandError(f"{node}: last heartbeat {age_s:.0f} s ago (more than {limit:g} s): gone or stuck")
        self.stdout.write(f"{node}: ready, heartbeat {age_s:.1f} s ago, consuming {', '.join(lanes)}")
