"""What every benchmark does first: a fresh PostgreSQL database and a Redis database of its own,
so that a run never touches the demo's data and runs compare; the settings of production;
then Django set up against them."""

import atexit
import os
import secrets
import subprocess
import sys
from pathlib import Path
from urllib.parse import urlsplit

import psycopg
from psycopg import sql

ROOT = Path(__file__).resolve().parent.parent

# Only a database named so is dropped at the start of a run (BENCH_DATABASE_URL may name another).
OWN_DATABASE_PREFIX = "omnium_bench"


def prepare(database: str, redis_db: int) -> None:
    """Point this process (and the workers it starts) at the bench's databases, in production
    mode; set Django up."""
    sys.path.insert(0, str(ROOT))
    os.environ["DATABASE_URL"] = os.environ.get("BENCH_DATABASE_URL", f"postgres://postgres@127.0.0.1:5432/{database}")
    os.environ["REDIS_URL"] = os.environ.get("BENCH_REDIS_URL", f"redis://127.0.0.1:6379/{redis_db}")
    _own_broker(database)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "omnium.settings")
    os.environ.update(production_settings())
    fresh_database(os.environ["DATABASE_URL"])
    import django

    django.setup()


def production_settings() -> dict[str, str]:
    """The environment of a production process, for this run: DJANGO_DEBUG off (with it on,
    Django keeps the text and time of every query a worker runs, a few per cent of a send),
    a secret key and a credential key ring of the run's own (its database is fresh: no row
    was encrypted with another). Plain HTTP on loopback stands for a TLS proxy in front."""
    from cryptography.fernet import Fernet

    return {
        "DJANGO_DEBUG": "false",
        "DJANGO_SECRET_KEY": secrets.token_urlsafe(50),
        "OMNIUM_CREDENTIAL_KEYS": Fernet.generate_key().decode(),
        "DJANGO_SECURE_SSL_REDIRECT": "false",
        # Every benchmark destination is a server on loopback, which production refuses.
        "OMNIUM_DESTINATION_ALLOWED_NETWORKS": "127.0.0.0/8,::1/128",
    }


def fresh_database(url: str) -> None:
    """Create the database of `url`; one of the bench's own is dropped first, so that each run
    starts from the same empty tables (no bloat or statistics of an earlier run)."""
    name = urlsplit(url).path.lstrip("/")
    admin = urlsplit(url)._replace(path="/postgres").geturl()
    with psycopg.connect(admin, autocommit=True) as conn:
        if name.startswith(OWN_DATABASE_PREFIX):
            conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))
    subprocess.run([sys.executable, str(ROOT / "scripts" / "ensure_database.py")], check=True)


def _own_broker(vhost: str) -> None:
    """A new RabbitMQ vhost of the benchmark's own (BENCH_BROKER_URL: another broker)."""
    from devtools import broker

    if os.environ.get("BENCH_BROKER_URL"):
        os.environ["CELERY_BROKER_URL"] = os.environ["BENCH_BROKER_URL"]
        return
    management = os.environ.get("CELERY_BROKER_MANAGEMENT_URL", "http://guest:guest@127.0.0.1:15672/api/")
    url = broker.fresh_vhost_per_run(management, "amqp://guest:guest@127.0.0.1:5672/", vhost)
    atexit.register(broker.delete_vhost, management, url)  # the machine is left as it was
    os.environ["CELERY_BROKER_URL"] = url
