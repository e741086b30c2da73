"""`manage.py worker_ready <node name>`: exit 0 when that Celery worker is alive and consuming,
1 (with the reason) when not. For a probe that runs a command: a Kubernetes exec liveness or
readiness probe, a systemd timer, a load balancer's external check.

It reads the worker's heartbeat in PostgreSQL (alerts.worker_heartbeats), the one the dead-man's
switch reads: written every OMNIUM_HEARTBEAT_INTERVAL_S by a thread of the worker once its
consumer runs, with the lanes it consumes. So "ready" means the process runs, reached
PostgreSQL within three intervals and consumes its queues; no broker round trip, so a probe
every few seconds costs nothing.
"""

from django.core.management.base import BaseCommand, CommandError

from omnium.alerts.worker_heartbeats import heartbeat_of, silent_after_s


class Command(BaseCommand):
    help = "Exit 0 when the named Celery worker has a recent heartbeat and consumes queues, else 1."

    def add_arguments(self, parser):
        parser.add_argument("node", help="the worker's node name, as given to -n (live@host, deliver@host…)")

    def handle(self, *args, node, **options):
        heartbeat = heartbeat_of(node)
        if heartbeat is None:
            raise CommandError(f"{node}: no heartbeat ever (not started, or another node name)")
        age_s, lanes = heartbeat
        if age_s > silent_after_s():
            raise CommandError(f"{node}: last heartbeat {age_s:.0f} s ago (more than {silent_after_s():g} s): "
                               "gone or stuck")
        self.stdout.write(f"{node}: ready, heartbeat {age_s:.1f} s ago, consuming {', '.join(lanes)}")
