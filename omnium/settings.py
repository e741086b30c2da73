"""All configuration, read once from the environment through django-environ.

Every value has a typed default that runs on a developer machine (PostgreSQL, Redis on
127.0.0.1). A value that cannot be parsed fails at start with ImproperlyConfigured naming
the variable. Secrets may come from `<NAME>_FILE` instead of `<NAME>`.
"""

from pathlib import Path

import environ
from django.core.exceptions import ImproperlyConfigured

BASE_DIR = Path(__file__).resolve().parent.parent

env = environ.Env()
environ.Env.read_env(BASE_DIR / ".env", overwrite=False)


def _secret(name: str, default: str) -> str:
    """A secret from NAME, or from the file named by NAME_FILE."""
    path = env.str(f"{name}_FILE", default="")
    if path:
        try:
            return Path(path).read_text().strip()
        except OSError as exc:
            raise ImproperlyConfigured(f"{name}_FILE: cannot read {path}: {exc}") from exc
    return env.str(name, default=default)


def _positive_float(name: str, default: float) -> float:
    try:
        value = env.float(name, default=default)
    except ValueError as exc:
        raise ImproperlyConfigured(f"{name} must be a number, got {env.str(name)!r}") from exc
    if value <= 0:
        raise ImproperlyConfigured(f"{name} must be greater than 0, got {value}")
    return value


DEBUG = env.bool("DJANGO_DEBUG", default=False)
SECRET_KEY = _secret("DJANGO_SECRET_KEY", "dev-only-insecure-key-change-me")
ALLOWED_HOSTS = env.list("DJANGO_ALLOWED_HOSTS", default=["127.0.0.1", "localhost"])

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "omnium.alerts",
    "omnium.games",
    "omnium.feeds",
    "omnium.clients",
    "omnium.delivery",
    "drf_spectacular",
    "omnium.pullapi",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
]

ROOT_URLCONF = "omnium.urls"
WSGI_APPLICATION = "omnium.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

DATABASES = {
    "default": env.db("DATABASE_URL", default="postgres://postgres@127.0.0.1:5432/omnium"),
}
DATABASES["default"].setdefault("CONN_MAX_AGE", 60)
DATABASES["default"].setdefault("CONN_HEALTH_CHECKS", True)
DATABASES["default"].setdefault("TEST", {})["NAME"] = env.str(
    "TEST_DATABASE_NAME", default="test_omnium"
)

REDIS_URL = env.str("REDIS_URL", default="redis://127.0.0.1:6379/0")
CACHES = {
    "default": {
        "BACKEND": "django.core.cache.backends.redis.RedisCache",
        "LOCATION": REDIS_URL,
    }
}

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True
STATIC_URL = "static/"
STATIC_ROOT = BASE_DIR / "var" / "static"

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": env.str("LOG_LEVEL", default="INFO")},
}

# --- Celery -------------------------------------------------------------------------------
# Redis is the broker: it carries hints only. PostgreSQL is the record, and the sweepers
# re-derive every piece of owed work from it (ARCHITECTURE rule 1).
CELERY_BROKER_URL = env.str("CELERY_BROKER_URL", default=REDIS_URL)
CELERY_RESULT_BACKEND = None
CELERY_TASK_IGNORE_RESULT = True
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_CREATE_MISSING_QUEUES = True
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
# Well above the longest task and every countdown, so an unacked task is not redelivered
# while it still runs.
CELERY_BROKER_TRANSPORT_OPTIONS = {"visibility_timeout": 3600}
CELERY_TASK_SOFT_TIME_LIMIT = 120
CELERY_TASK_TIME_LIMIT = 150
CELERY_TIMEZONE = "UTC"
# Celery's Django fixup would close every database connection around every task; it now
# does so only every this many tasks, and omnium.worker_connections closes the broken or old.
CELERY_DB_REUSE_MAX = 1000

# --- Omnium's own settings, read lazily through omnium.conf ------------------------------
OMNIUM = {
    # A file is built once its changes have been quiet this long...
    "BUILD_QUIET_S": _positive_float("OMNIUM_BUILD_QUIET_S", 1.0),
    # ...but never later than this after its first pending change (a stream cannot starve it).
    "BUILD_MAX_WAIT_S": _positive_float("OMNIUM_BUILD_MAX_WAIT_S", 3.0),
    # How often beat runs the backstop sweeper over PostgreSQL.
    "SWEEP_INTERVAL_S": _positive_float("OMNIUM_SWEEP_INTERVAL_S", 2.0),
    # A build claim older than this is considered abandoned (its worker died).
    "BUILD_CLAIM_TTL_S": _positive_float("OMNIUM_BUILD_CLAIM_TTL_S", 120.0),
    # Stat jobs: tries before the job is failed and an alert opened.
    "STAT_JOB_ATTEMPTS": env.int("OMNIUM_STAT_JOB_ATTEMPTS", default=3),
    "STAT_JOB_RETRY_S": _positive_float("OMNIUM_STAT_JOB_RETRY_S", 2.0),
    # Handled outbox rows are kept this many days for audit, then deleted.
    "OUTBOX_RETENTION_DAYS": env.int("OMNIUM_OUTBOX_RETENTION_DAYS", default=7),
    # A sender's lease on its destination lasts the destination's hard send deadline plus
    # this margin (time to record a proof), so a zombie sender has given up before its
    # lease can pass to another.
    "DELIVERY_LEASE_MARGIN_S": _positive_float("OMNIUM_DELIVERY_LEASE_MARGIN_S", 30.0),
    # After a destination's fast retries: one try this often, until it lands or a person acts.
    "DELIVERY_SLOW_RETRY_S": _positive_float("OMNIUM_DELIVERY_SLOW_RETRY_S", 300.0),
    "ATTEMPT_RETENTION_DAYS": env.int("OMNIUM_ATTEMPT_RETENTION_DAYS", default=7),
    # Delivery workers say they are alive this often; silent for 3x this, they count as gone.
    "HEARTBEAT_INTERVAL_S": _positive_float("OMNIUM_HEARTBEAT_INTERVAL_S", 5.0),
    # A destination owed a version for longer than this raises the "behind" alert.
    "BEHIND_AFTER_S": _positive_float("OMNIUM_BEHIND_AFTER_S", 60.0),
}
if OMNIUM["DELIVERY_LEASE_MARGIN_S"] < 5:
    raise ImproperlyConfigured("OMNIUM_DELIVERY_LEASE_MARGIN_S must be at least 5 seconds")

# --- Alerts ------------------------------------------------------------------------------
def _alert_slack_url() -> str:
    url = _secret("OMNIUM_ALERT_SLACK_URL", "")
    if url and not url.startswith(("https://", "http://")):
        raise ImproperlyConfigured(
            f"OMNIUM_ALERT_SLACK_URL must be an http(s) URL of an incoming webhook, got {url!r}"
        )
    return url


OMNIUM_ALERT_SLACK_URL = _alert_slack_url()
OMNIUM_ALERT_EMAILS = env.list("OMNIUM_ALERT_EMAILS", default=[])
EMAIL_HOST = env.str("EMAIL_HOST", default="127.0.0.1")
EMAIL_PORT = env.int("EMAIL_PORT", default=25)
EMAIL_TIMEOUT = 10
DEFAULT_FROM_EMAIL = env.str("DEFAULT_FROM_EMAIL", default="omnium-alerts@localhost")

# Destination credentials: a key ring of Fernet keys, comma separated; the first encrypts,
# all decrypt (rotate: put a new key first, run `manage.py rotate_credentials`, drop the old).
OMNIUM_CREDENTIAL_KEYS = [
    key.strip() for key in _secret(
        "OMNIUM_CREDENTIAL_KEYS", "ZGV2LW9ubHkta2V5LWRvLW5vdC11c2UtaW4tcHJvZCE="
    ).split(",") if key.strip()
]
try:
    from cryptography.fernet import Fernet

    for _key in OMNIUM_CREDENTIAL_KEYS:
        Fernet(_key)
except ValueError as exc:
    raise ImproperlyConfigured(f"OMNIUM_CREDENTIAL_KEYS holds a key that is not a Fernet key: {exc}") from exc
if not OMNIUM_CREDENTIAL_KEYS:
    raise ImproperlyConfigured("OMNIUM_CREDENTIAL_KEYS is empty")
if OMNIUM["BUILD_MAX_WAIT_S"] < OMNIUM["BUILD_QUIET_S"]:
    raise ImproperlyConfigured("OMNIUM_BUILD_MAX_WAIT_S must be at least OMNIUM_BUILD_QUIET_S")


# --- Pull API -------------------------------------------------------------------------------
# The pull API reads only memory and Redis on its hot path (ARCHITECTURE rule 11, issue 5).
OMNIUM.update({
    # The Redis that holds the pull cache (filled by the Redis destinations) and carries the
    # catalogue's change notices.
    "PULL_REDIS_URL": env.str("OMNIUM_PULL_REDIS_URL", default=REDIS_URL),
    # Files kept in each API process's memory, least recently used dropped first.
    "PULL_MEMORY_MB": _positive_float("OMNIUM_PULL_MEMORY_MB", 256.0),
    # PostgreSQL reads at once per process when Redis has no copy (the rest wait, single-flight).
    "PULL_DATABASE_READS": env.int("OMNIUM_PULL_DATABASE_READS", default=4),
    # Clients, keys and entitlements are re-read on every change notice, and at least this often.
    "PULL_CATALOGUE_MAX_AGE_S": _positive_float("OMNIUM_PULL_CATALOGUE_MAX_AGE_S", 60.0),
    # Listen for change notices in a thread (off in tests that drive the catalogue by hand).
    "PULL_LISTEN_FOR_CHANGES": env.bool("OMNIUM_PULL_LISTEN_FOR_CHANGES", default=True),
    # Requests per second per client, across all API processes.
    "PULL_CLIENT_RATE": _positive_float("OMNIUM_PULL_CLIENT_RATE", 200.0),
    # Failed key attempts per minute per source address before it is refused outright.
    "PULL_FAILED_KEYS_PER_MINUTE": env.int("OMNIUM_PULL_FAILED_KEYS_PER_MINUTE", default=30),
    # A file PostgreSQL does not have is remembered as missing this long (shields PostgreSQL).
    "PULL_MISSING_TTL_S": _positive_float("OMNIUM_PULL_MISSING_TTL_S", 2.0),
    # After a failed Redis call, serve from memory without asking Redis for this long.
    "PULL_REDIS_RETRY_S": _positive_float("OMNIUM_PULL_REDIS_RETRY_S", 1.0),
})
if OMNIUM["PULL_DATABASE_READS"] < 1:
    raise ImproperlyConfigured("OMNIUM_PULL_DATABASE_READS must be at least 1")

REST_FRAMEWORK = {
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "EXCEPTION_HANDLER": "omnium.pullapi.problems.problem_response",
    "UNAUTHENTICATED_USER": None,
}
SPECTACULAR_SETTINGS = {
    "TITLE": "Omnium pull API",
    "DESCRIPTION": "Feed files and public documents of a Games. Send your key as "
                   "`Authorization: Bearer omk_…` or `X-Api-Key: omk_…`.",
    "VERSION": "1",
    "SERVE_INCLUDE_SCHEMA": False,
}
# Legacy clients may send their key in the address: no log line may carry it.
LOGGING.setdefault("filters", {})["scrub_api_keys"] = {"()": "omnium.pullapi.log_scrubbing.ScrubApiKeys"}
LOGGING["handlers"]["console"]["filters"] = ["scrub_api_keys"]
