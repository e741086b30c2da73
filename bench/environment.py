"""What every benchmark does first: its own PostgreSQL database and Redis database, so that a
run never touches the demo's data, then Django set up against them."""

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def prepare(database: str, redis_db: int) -> None:
    """Point this process (and the workers it starts) at the bench's databases; set Django up."""
    sys.path.insert(0, str(ROOT))
    os.environ["DATABASE_URL"] = os.environ.get("BENCH_DATABASE_URL", f"postgres://postgres@127.0.0.1:5432/{database}")
    os.environ["REDIS_URL"] = os.environ.get("BENCH_REDIS_URL", f"redis://127.0.0.1:6379/{redis_db}")
    _own_broker(database)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "omnium.settings")
    os.environ.setdefault("DJANGO_DEBUG", "true")  # the development keys; the settings refuse them otherwise
    # Every benchmark destination is a server on loopback, which production refuses.
    os.environ.setdefault("OMNIUM_DESTINATION_ALLOWED_NETWORKS", "127.0.0.0/8,::1/128")
    subprocess.run([sys.executable, str(ROOT / "scripts" / "ensure_database.py")], check=True)
    import django

    django.setup()


def _own_broker(vhost: str) -> None:
    """A RabbitMQ vhost of the benchmark's own, emptied (BENCH_BROKER_URL: another broker)."""
    from devtools import broker

    if os.environ.get("BENCH_BROKER_URL"):
        os.environ["CELERY_BROKER_URL"] = os.environ["BENCH_BROKER_URL"]
        return
    url = broker.with_vhost("amqp://guest:guest@127.0.0.1:5672/", vhost)
    broker.ensure_vhost(os.environ.get("CELERY_BROKER_MANAGEMENT_URL", "http://guest:guest@127.0.0.1:15672/api/"),
                        url, fresh=True)
    os.environ["CELERY_BROKER_URL"] = url
