"""All configuration, read once from the environment through django-environ.

Every value has a typed default that runs on a developer machine (PostgreSQL, Redis on
127.0.0.1). A value that cannot be parsed fails at start with ImproperlyConfigured naming
the variable. Secrets may come from `<NAME>_FILE` instead of `<NAME>`.

Production is the default: with DJANGO_DEBUG off (unset) the process refuses to start with
the development secret key or credential key, and cookies, HSTS and the HTTPS redirect are
on. Development flows (`make demo`, `make test`, the benchmarks) set DJANGO_DEBUG=true.
"""

import base64
import ipaddress
import ssl
from pathlib import Path

import environ
from csp.constants import NONE, SELF
from django.core.exceptions import ImproperlyConfigured

from omnium.environment_variables import ReadingEnv, refuse_unread

BASE_DIR = Path(__file__).resolve().parent.parent

env = ReadingEnv()  # remembers what it read: an OMNIUM_ variable nothing reads stops the process
environ.Env.read_env(BASE_DIR / ".env", overwrite=False)


def _secret(name: str, default: str) -> str:
    """A secret from NAME, from the file named by NAME_FILE, or from the AWS Secrets Manager
    secret named by NAME_AWS_SECRET (read once at start with the process's own AWS identity)."""
    path, value = env.str(f"{name}_FILE", default=""), env.str(name, default=default)
    secret_id = env.str(f"{name}_AWS_SECRET", default="")
    if secret_id:
        from omnium.clients.secrets_manager import SecretError, read_text

        try:
            return read_text(secret_id).strip()
        except SecretError as exc:
            raise ImproperlyConfigured(f"{name}_AWS_SECRET: {exc}") from exc
    if path:
        try:
            return Path(path).read_text().strip()
        except OSError as exc:
            raise ImproperlyConfigured(f"{name}_FILE: cannot read {path}: {exc}") from exc
    return value


# Known to everyone who has read this file: a process with DJANGO_DEBUG off refuses them.
DEV_SECRET_KEY = "dev-only-insecure-key-change-me"
DEV_CREDENTIAL_KEY = "ZGV2LW9ubHkta2V5LWRvLW5vdC11c2UtaW4tcHJvZCE="
_TRUE, _FALSE = {"true", "yes", "on", "1"}, {"false", "no", "off", "0"}


def _bool(name: str, default: bool) -> bool:
    """NAME as a boolean; anything but true/false/yes/no/on/off/1/0 stops the process (env.bool
    would read a typo such as "ture" as False)."""
    text = env.str(name, default="").strip().lower()
    if not text:
        return default
    if text not in _TRUE | _FALSE:
        raise ImproperlyConfigured(f"{name} must be true or false, got {text!r}")
    return text in _TRUE


def _int(name: str, default: int, minimum: int | None = None) -> int:
    """NAME as an integer (env.int raises a bare ValueError that names nothing)."""
    text = env.str(name, default="").strip()
    try:
        value = int(text) if text else default
    except ValueError:
        raise ImproperlyConfigured(f"{name} must be a whole number, got {text!r}") from None
    if minimum is not None and value < minimum:
        raise ImproperlyConfigured(f"{name} must be at least {minimum}, got {value}")
    return value


def _networks(name: str) -> tuple:
    """NAME as comma separated addresses or networks (10.0.0.0/8, ::1)."""
    try:
        return tuple(ipaddress.ip_network(text.strip()) for text in env.list(name, default=[]) if text.strip())
    except ValueError as exc:
        raise ImproperlyConfigured(f"{name} must list addresses or networks: {exc}") from None


def _positive_float(name: str, default: float) -> float:
    try:
        value = env.float(name, default=default)
    except ValueError as exc:
        raise ImproperlyConfigured(f"{name} must be a number, got {env.str(name)!r}") from exc
    if value <= 0:
        raise ImproperlyConfigured(f"{name} must be greater than 0, got {value}")
    return value


DEBUG = _bool("DJANGO_DEBUG", default=False)
SECRET_KEY = _secret("DJANGO_SECRET_KEY", DEV_SECRET_KEY)
if not DEBUG and SECRET_KEY == DEV_SECRET_KEY:
    raise ImproperlyConfigured(
        "DJANGO_SECRET_KEY is the development key: set a real one (or DJANGO_DEBUG=true on a dev machine)"
    )
ALLOWED_HOSTS = env.list("DJANGO_ALLOWED_HOSTS", default=["127.0.0.1", "localhost"])


# --- HTTPS and cookies: on unless DEBUG; each one can be switched for a particular setup ---
def _proxy_ssl_header() -> tuple[str, str] | None:
    """`HTTP_X_FORWARDED_PROTO=https`: the header a TLS-terminating proxy sets, and its value
    for an HTTPS request. Only set it when every request passes that proxy, which overwrites
    the header: otherwise a client could claim HTTPS itself."""
    text = env.str("DJANGO_SECURE_PROXY_SSL_HEADER", default="").strip()
    if not text:
        return None
    header, _, value = text.partition("=")
    if not header.startswith("HTTP_") or not value:
        raise ImproperlyConfigured(
            f"DJANGO_SECURE_PROXY_SSL_HEADER must look like HTTP_X_FORWARDED_PROTO=https, got {text!r}"
        )
    return header, value


SESSION_COOKIE_SECURE = _bool("DJANGO_SESSION_COOKIE_SECURE", not DEBUG)
CSRF_COOKIE_SECURE = _bool("DJANGO_CSRF_COOKIE_SECURE", not DEBUG)
SECURE_HSTS_SECONDS = _int("DJANGO_SECURE_HSTS_SECONDS", 0 if DEBUG else 31_536_000, minimum=0)
SECURE_HSTS_INCLUDE_SUBDOMAINS = _bool("DJANGO_SECURE_HSTS_INCLUDE_SUBDOMAINS", not DEBUG)
SECURE_HSTS_PRELOAD = _bool("DJANGO_SECURE_HSTS_PRELOAD", not DEBUG)
# Behind a proxy that terminates TLS, set DJANGO_SECURE_PROXY_SSL_HEADER, or requests that
# arrived over HTTPS look like HTTP and are redirected forever.
SECURE_SSL_REDIRECT = _bool("DJANGO_SECURE_SSL_REDIRECT", not DEBUG)
SECURE_PROXY_SSL_HEADER = _proxy_ssl_header()
# Staff sessions last a working day, not Django's two weeks: a laptop left logged in, or a
# session cookie taken, is good for hours at most. Every password a person sets is checked.
SESSION_COOKIE_AGE = _int("DJANGO_SESSION_COOKIE_AGE", 8 * 3600, minimum=60)
# Stored as Argon2id with OWASP's parameters (omnium/staff/password_hashing.py): a check costs
# 24 ms of CPU, not PBKDF2's 317, during a sign-in flood too. The others read older hashes.
PASSWORD_HASHERS = [
    "omnium.staff.password_hashing.OwaspArgon2PasswordHasher",
    "django.contrib.auth.hashers.PBKDF2PasswordHasher",
    "django.contrib.auth.hashers.PBKDF2SHA1PasswordHasher",
    "django.contrib.auth.hashers.ScryptPasswordHasher",
]
AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator", "OPTIONS": {"min_length": 12}},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]
# Admin sign-ins are throttled by django-axes (maintained by Jazzband, the usual choice of Django
# shops): after AXES_FAILURE_LIMIT failures from one address, or for one user name, further
# attempts are refused for an hour without checking the password (so a flood costs no PBKDF2
# either). Per user name too, so a guess spread over many addresses stops as well; staff can
# lift a lock at once with `manage.py axes_reset_username <name>` (or axes_reset_ip).
AUTHENTICATION_BACKENDS = ["axes.backends.AxesStandaloneBackend", "django.contrib.auth.backends.ModelBackend"]
AXES_FAILURE_LIMIT = _int("DJANGO_LOGIN_FAILURE_LIMIT", 5, minimum=1)
AXES_LOCKOUT_PARAMETERS = ["ip_address", "username"]
AXES_COOLOFF_TIME = 1  # hours
AXES_RESET_ON_SUCCESS = True
AXES_VERBOSE = False  # no banner at every start; lockouts are still logged as warnings
# The name authenticator apps show beside a person's account.
OTP_TOTP_ISSUER = "Omnium"

# The same client address as the pull API's failed-key counting: behind the load balancer, the
# address X-Forwarded-For names as far as OMNIUM_PULL_TRUSTED_PROXIES reach, not the balancer's.
AXES_CLIENT_IP_CALLABLE = "omnium.pullapi.client_ip.client_ip_of_request"

# Which part of Omnium this process serves: "api" (the pull API, with /healthz, /readyz and
# /metrics), "admin" (the admin, the status screens and the API schema UI, with the same probes),
# or "all" (a development machine, the demo). In production the API and the admin run as
# separate processes on separate ports, so nothing done to the admin (a login flood, a heavy
# status page) takes a thread from a pull client (docs/operations/deploy.md).
OMNIUM_SERVES = env.str("OMNIUM_SERVES", default="all")
if OMNIUM_SERVES not in ("api", "admin", "all"):
    raise ImproperlyConfigured(f"OMNIUM_SERVES must be api, admin or all, got {OMNIUM_SERVES!r}")

INSTALLED_APPS = [
    # Django's admin, on our site: an authenticator app's code at sign-in for those who set one up.
    "omnium.staff.apps.StaffAdminConfig",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "axes",
    # Second factor for staff (Jazzband's django-otp): TOTP authenticator apps (omnium/staff/).
    "django_otp",
    "django_otp.plugins.otp_totp",
    "rest_framework",
    "omnium.alerts",
    "omnium.games",
    "omnium.feeds",
    "omnium.clients",
    "omnium.delivery",
    "drf_spectacular",
    # Swagger UI's JavaScript and CSS served as our own static files, not from a CDN.
    "drf_spectacular_sidecar",
    "omnium.pullapi",
    "omnium.reports",
    "omnium.portal",
]

MIDDLEWARE = [
    # Outermost, so that every pull API answer is counted, refusals and throttles included.
    "omnium.metrics.pull_requests.PullRequestCounter",
    "django.middleware.security.SecurityMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    # request.user.is_verified(): signed in with an authenticator code this session.
    "django_otp.middleware.OTPMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    # Last, as django-axes asks: it turns a locked-out sign-in into its lockout answer.
    "axes.middleware.AxesMiddleware",
]
if OMNIUM_SERVES != "api":
    # Pages for people (the admin, the status screens, the schema UI) say where their scripts,
    # styles and images may come from: Mozilla's django-csp until Django 6.0 has its own. Pull
    # answers are JSON and files, read by programs: the API process leaves the header out.
    MIDDLEWARE.insert(MIDDLEWARE.index("django.middleware.security.SecurityMiddleware") + 1,
                      "csp.middleware.CSPMiddleware")
# Everything from our own origin; no inline script or style (ours are static files), no plugin,
# no framing, forms posted only to us. Swagger UI draws its icons as data: images.
CONTENT_SECURITY_POLICY = {
    "DIRECTIVES": {
        "default-src": [SELF],
        "script-src": [SELF],
        "style-src": [SELF],
        "img-src": [SELF, "data:"],
        "object-src": [NONE],
        "base-uri": [NONE],
        "frame-ancestors": [NONE],
        "form-action": [SELF],
    },
}

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
# Statements run through omnium.database.server_binding's cursors are prepared on their connection
# once run five times (Django's own cursors bind on the client and never prepare). Behind a
# pooler in transaction mode, set it to null, or use PgBouncer 1.21+ with max_prepared_statements.
# A prepared statement is planned once, for any parameters (a generic plan): all of them look
# rows up by key. Left to choose, PostgreSQL kept planning the sender's next-file pick for each
# destination (3.8 ms a pick during a fan-out to 2,000 destinations).
DATABASES["default"].setdefault("OPTIONS", {}).setdefault("prepare_threshold", 5)
DATABASES["default"]["OPTIONS"].setdefault("options", "-c plan_cache_mode=force_generic_plan")
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
# RabbitMQ is the broker, a component of its own: a Redis outage stops no build and no push
# to S3, SFTP, FTP or a webhook. It pushes messages to consumers of any number of queues
# (one per destination), and returns a dead worker's unacknowledged messages at once. It
# carries hints only: PostgreSQL is the record, and the sweepers re-derive every piece of
# owed work from it (ARCHITECTURE rule 1). RabbitMQ only (docs/decisions/005-rabbitmq-only.md).
# A cluster's nodes are listed with ";" between them, every process given every node: Celery
# and kombu connect to the first that answers and move to the next when it is lost
# (docs/operations/deploy.md#a-broker-that-may-lose-a-node).
CELERY_BROKER_URL = _secret("CELERY_BROKER_URL", "amqp://guest:guest@127.0.0.1:5672//")
for _node_url in CELERY_BROKER_URL.split(";"):
    if not _node_url.strip().startswith(("amqp://", "amqps://")):
        raise ImproperlyConfigured(
            f"CELERY_BROKER_URL must list RabbitMQ URLs (amqp:// or amqps://, ';' between a "
            f"cluster's nodes), got one starting {_node_url.strip().split(':', 1)[0]!r}: Omnium's "
            "delivery depends on RabbitMQ (docs/decisions/005-rabbitmq-only.md)")
# amqps:// checks the broker's certificate and that it names the host connected to (a bare
# ssl=True in py-amqp checks neither name nor, without a CA, much else). kombu fills a
# server_hostname of None with the broker's host name. OMNIUM_BROKER_CA_FILE: the CA that
# signed the broker's certificate, when it is not one the system trusts.
_broker_ca_file = env.str("OMNIUM_BROKER_CA_FILE", default="") or None
if "amqps://" in CELERY_BROKER_URL:
    CELERY_BROKER_USE_SSL = {"cert_reqs": ssl.CERT_REQUIRED, "server_hostname": None, "ca_certs": _broker_ca_file}
# RabbitMQ's management API: queue depths for Flower (--broker_api) and the tooling.
CELERY_BROKER_MANAGEMENT_URL = _secret("CELERY_BROKER_MANAGEMENT_URL", "http://guest:guest@127.0.0.1:15672/api/")
CELERY_RESULT_BACKEND = None
CELERY_TASK_IGNORE_RESULT = True
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_CREATE_MISSING_QUEUES = True
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
# A broker cluster that lost a node forgets that node's queues a moment after the workers have
# moved to another node: a queue declared in that moment can be gone before it is bound or
# consumed (404 NOT_FOUND). That refusal is a channel error, which a worker would take for
# fatal and exit on; retried like a lost connection, the consumer starts again and declares
# the queue anew (omnium.routing.hint_queue).
CELERY_BROKER_CHANNEL_ERROR_RETRY = True
# Retried for as long as the broker is gone: a worker that gives up exits, and with a try
# every second (omnium.messaging.reconnecting) Celery's 100 tries are over in 30 s.
CELERY_BROKER_CONNECTION_MAX_RETRIES = None
CELERY_TASK_SOFT_TIME_LIMIT = 120
CELERY_TASK_TIME_LIMIT = 150
CELERY_TIMEZONE = "UTC"
# Celery's Django fixup would close every database connection around every task; it now
# does so only every this many tasks, and omnium.workers.database_connections closes the broken or old.
CELERY_DB_REUSE_MAX = 1000

# --- Omnium's own settings, read lazily through omnium.conf ------------------------------
OMNIUM = {
    # A file is built once its changes have been quiet this long...
    "BUILD_QUIET_S": _positive_float("OMNIUM_BUILD_QUIET_S", 1.0),
    # ...but never later than this after its first pending change (a stream cannot starve it).
    # The source design's 3 s was set when its 4 MB calendar took 1.3 s to build; ours takes
    # 0.07-0.36 s, and with 2 s a change reaches the client within 1.9-2.0 s at p95 in
    # bench/deliver.py's storm (2.95 s with 3 s) for 1.36x the bytes in that storm; at a real
    # day's pace a file is quiet between changes and the cap never binds.
    "BUILD_MAX_WAIT_S": _positive_float("OMNIUM_BUILD_MAX_WAIT_S", 2.0),
    # The first change to a quiet file (no pending change, no version for BUILD_QUIET_S) is
    # built at once; what follows it is debounced as above. Off: every change waits.
    "BUILD_LEADING_EDGE": _bool("OMNIUM_BUILD_LEADING_EDGE", True),
    # A file whose build failed this many times in a row opens a `build_failing` alert
    # (a failed build is tried again every 5 s: with 3, the alert opens about 10 s after the
    # first failure); it resolves when the file builds (omnium/feeds/build_alerts.py).
    "BUILD_ALERT_AFTER_FAILURES": _int("OMNIUM_BUILD_ALERT_AFTER_FAILURES", 3, minimum=1),
    # A worker that consumes only bulk queues runs this much nicer (0-19), so that live builds
    # and sends get the cores first on a shared host (omnium/workers/cpu_priority.py).
    "BULK_WORKER_NICE": _int("OMNIUM_BULK_WORKER_NICE", 10, minimum=0),
    # How often beat runs the backstop sweeper over PostgreSQL.
    "SWEEP_INTERVAL_S": _positive_float("OMNIUM_SWEEP_INTERVAL_S", 2.0),
    # Claims (a destination's lease, a build's, a stat job's) expire this long after their
    # holder's last renewal (every third of it): a dead or frozen worker's work moves on
    # within this time (omnium/database/claim_renewal.py).
    "CLAIM_TTL_S": _positive_float("OMNIUM_CLAIM_TTL_S", 6.0),
    # Stat jobs: tries before the job is failed and an alert opened.
    "STAT_JOB_ATTEMPTS": _int("OMNIUM_STAT_JOB_ATTEMPTS", 3, minimum=1),
    "STAT_JOB_RETRY_S": _positive_float("OMNIUM_STAT_JOB_RETRY_S", 2.0),
    # Handled outbox rows are kept this many days for audit, then deleted.
    "OUTBOX_RETENTION_DAYS": _int("OMNIUM_OUTBOX_RETENTION_DAYS", 7, minimum=0),
    # A sender's lease on its destination lasts the destination's hard send deadline plus
    # this margin (time to record a proof), so a zombie sender has given up before its
    # lease can pass to another.
    "DELIVERY_LEASE_MARGIN_S": _positive_float("OMNIUM_DELIVERY_LEASE_MARGIN_S", 30.0),
    # A stopping delivery worker waits this long for its sends in flight, then cuts them (a send
    # has 60 s at most; systemd's TimeoutStopSec, 90 s, leaves time to record and release).
    "DELIVERY_STOP_DEADLINE_S": _positive_float("OMNIUM_DELIVERY_STOP_DEADLINE_S", 65.0),
    # A stopping build worker claims no next file; a build still running after this long is
    # recorded as failed and its claim given back (systemd's TimeoutStopSec, 45 s, is above it).
    "BUILD_STOP_DEADLINE_S": _positive_float("OMNIUM_BUILD_STOP_DEADLINE_S", 30.0),
    # After a destination's fast retries: one try this often, until it lands or a person acts.
    "DELIVERY_SLOW_RETRY_S": _positive_float("OMNIUM_DELIVERY_SLOW_RETRY_S", 300.0),
    # Where staff open Flower (e.g. https://ops.example.com/flower): the admin links each
    # destination's queue there. Empty: the queue's name is shown without a link.
    "FLOWER_URL": env.str("OMNIUM_FLOWER_URL", default=""),
    # Destinations reach public addresses only; these networks (CIDRs) are allowed as well, e.g.
    # 127.0.0.0/8 on a development machine (omnium/transports/address_policy.py).
    "DESTINATION_ALLOWED_NETWORKS": _networks("OMNIUM_DESTINATION_ALLOWED_NETWORKS"),
    "ATTEMPT_RETENTION_DAYS": _int("OMNIUM_ATTEMPT_RETENTION_DAYS", 7, minimum=0),
    # Connection tests and host-key fetches run by delivery workers, never in a request: at
    # most this many waiting or running in all, and this many started by one person a minute.
    "PROBES_AT_ONCE": _int("OMNIUM_PROBES_AT_ONCE", 8, minimum=1),
    "PROBES_PER_PERSON_PER_MINUTE": _int("OMNIUM_PROBES_PER_PERSON_PER_MINUTE", 12, minimum=1),
    # The per-client, per-day freshness report (delivery.operations.freshness_report): kept past a Games.
    "FRESHNESS_RETENTION_DAYS": _int("OMNIUM_FRESHNESS_RETENTION_DAYS", 400, minimum=1),
    # The dead-man's switch (in beat) looks for lanes without a live worker this often.
    "DEAD_MANS_SWITCH_EVERY_S": _positive_float("OMNIUM_DEAD_MANS_SWITCH_EVERY_S", 15.0),
    # Workers say they are alive this often; silent for 3x this, they count as gone.
    "HEARTBEAT_INTERVAL_S": _positive_float("OMNIUM_HEARTBEAT_INTERVAL_S", 5.0),
    # A destination owed a version for longer than this raises the "behind" alert.
    "BEHIND_AFTER_S": _positive_float("OMNIUM_BEHIND_AFTER_S", 60.0),
    # More destinations behind at once than this: one "behind" alert for them all.
    "BEHIND_GROUP_OVER": _int("OMNIUM_BEHIND_GROUP_OVER", 20, minimum=0),
    # Retention, each applied by its beat task (omnium.routing.beat_schedule), checked this often.
    # Feed versions (history rows, no body) older than this; a file's current version is always kept.
    "FEED_VERSION_RETENTION_DAYS": _int("OMNIUM_FEED_VERSION_RETENTION_DAYS", 30, minimum=0),
    # Resolved alerts older than this (open ones are always kept).
    "ALERT_RETENTION_DAYS": _int("OMNIUM_ALERT_RETENTION_DAYS", 30, minimum=0),
    # Finished stat jobs older than this (pending, running and failed ones are kept).
    "STAT_JOB_RETENTION_DAYS": _int("OMNIUM_STAT_JOB_RETENTION_DAYS", 2, minimum=0),
    "PRUNE_INTERVAL_S": _positive_float("OMNIUM_PRUNE_INTERVAL_S", 3600.0),
}
if OMNIUM["DELIVERY_LEASE_MARGIN_S"] < 5:
    raise ImproperlyConfigured("OMNIUM_DELIVERY_LEASE_MARGIN_S must be at least 5 seconds")

# --- Alerts ------------------------------------------------------------------------------
def _http_url(name: str, default: str = "", secret: bool = False) -> str:
    """NAME as an http(s) URL (empty allowed where the default is); `secret`: NAME_FILE too."""
    url = _secret(name, default) if secret else env.str(name, default=default)
    if url and not url.startswith(("https://", "http://")):
        raise ImproperlyConfigured(f"{name} must be an http(s) URL, got {url!r}")
    return url


def _webhook_secret(name: str) -> str:
    secret = _secret(name, "")
    if secret and not secret.startswith("whsec_"):
        raise ImproperlyConfigured(f"{name} must be a Standard Webhooks secret (whsec_ followed by base64)")
    return secret


OMNIUM_ALERT_SLACK_URL = _http_url("OMNIUM_ALERT_SLACK_URL", secret=True)  # an incoming webhook's; its path is a secret
OMNIUM_ALERT_EMAILS = env.list("OMNIUM_ALERT_EMAILS", default=[])
# Pagers: PagerDuty's Events API v2 (an integration's routing key) and Opsgenie's Alert API (an
# API integration's key); the URLs change only for Opsgenie's EU accounts, or a test's receiver.
OMNIUM_ALERT_PAGERDUTY_ROUTING_KEY = _secret("OMNIUM_ALERT_PAGERDUTY_ROUTING_KEY", "")
OMNIUM_ALERT_PAGERDUTY_URL = _http_url("OMNIUM_ALERT_PAGERDUTY_URL", "https://events.pagerduty.com/v2/enqueue")
OMNIUM_ALERT_OPSGENIE_API_KEY = _secret("OMNIUM_ALERT_OPSGENIE_API_KEY", "")
OMNIUM_ALERT_OPSGENIE_URL = _http_url("OMNIUM_ALERT_OPSGENIE_URL", "https://api.opsgenie.com")
# Operator events (alerts opened and resolved) to a webhook of the operator's, Standard Webhooks signed.
OMNIUM_OPERATOR_WEBHOOK_URL = env.str("OMNIUM_OPERATOR_WEBHOOK_URL", default="")
OMNIUM_OPERATOR_WEBHOOK_SECRET = _webhook_secret("OMNIUM_OPERATOR_WEBHOOK_SECRET")
if OMNIUM_OPERATOR_WEBHOOK_URL and not OMNIUM_OPERATOR_WEBHOOK_SECRET:
    raise ImproperlyConfigured("OMNIUM_OPERATOR_WEBHOOK_URL needs OMNIUM_OPERATOR_WEBHOOK_SECRET (or its _FILE)")
EMAIL_HOST = env.str("EMAIL_HOST", default="127.0.0.1")
EMAIL_PORT = _int("EMAIL_PORT", 25, minimum=1)
EMAIL_TIMEOUT = 10
DEFAULT_FROM_EMAIL = env.str("DEFAULT_FROM_EMAIL", default="omnium-alerts@localhost")

# Destination credentials: a key ring of Fernet keys, comma separated; the first encrypts,
# all decrypt (rotate: put a new key first, run `manage.py rotate_credentials`, drop the old).
# Only the admin (which encrypts what staff type) and the delivery workers (which decrypt to
# send) hold it. Every other process says OMNIUM_HOLDS_CREDENTIAL_KEYS=false and gets no keys,
# so a pull API, beat or build worker that is broken into gives away no client's password
# (deploy/systemd passes the keys to the admin and delivery units alone).
OMNIUM_HOLDS_CREDENTIAL_KEYS = _bool("OMNIUM_HOLDS_CREDENTIAL_KEYS", True)
OMNIUM_CREDENTIAL_KEYS = [
    key.strip() for key in _secret("OMNIUM_CREDENTIAL_KEYS", DEV_CREDENTIAL_KEY if OMNIUM_HOLDS_CREDENTIAL_KEYS else "")
    .split(",") if key.strip()
]


def _fernet_key_bytes(key: str) -> bytes:
    """The 32 bytes a Fernet key stands for. Base64 has several spellings of the same bytes
    (spare low bits in the last character, characters outside the alphabet skipped), so keys
    are compared by their bytes, never by their text."""
    from cryptography.fernet import Fernet

    try:
        Fernet(key)
    except ValueError as exc:
        raise ImproperlyConfigured(f"OMNIUM_CREDENTIAL_KEYS holds a key that is not a Fernet key: {exc}") from exc
    return base64.urlsafe_b64decode(key)


if OMNIUM_HOLDS_CREDENTIAL_KEYS and not OMNIUM_CREDENTIAL_KEYS:
    raise ImproperlyConfigured("OMNIUM_CREDENTIAL_KEYS is empty (a process that needs none says "
                               "OMNIUM_HOLDS_CREDENTIAL_KEYS=false)")
if not OMNIUM_HOLDS_CREDENTIAL_KEYS and OMNIUM_CREDENTIAL_KEYS:
    raise ImproperlyConfigured("OMNIUM_HOLDS_CREDENTIAL_KEYS is false, yet OMNIUM_CREDENTIAL_KEYS reaches this "
                               "process: give the keys to the admin and the delivery workers only")
if not OMNIUM_HOLDS_CREDENTIAL_KEYS and OMNIUM_SERVES != "api":
    raise ImproperlyConfigured("OMNIUM_HOLDS_CREDENTIAL_KEYS is false, yet this process serves the admin "
                               f"(OMNIUM_SERVES={OMNIUM_SERVES}), which encrypts what staff type: give it the keys")
# Credentials a destination takes from AWS Secrets Manager are read again after this many
# seconds, so a rotation reaches every worker within it (clients/secrets_manager.py).
OMNIUM_SECRETS_CACHE_S = _positive_float("OMNIUM_SECRETS_CACHE_S", 300.0)
_credential_key_bytes = [_fernet_key_bytes(key) for key in OMNIUM_CREDENTIAL_KEYS]
if not DEBUG and _fernet_key_bytes(DEV_CREDENTIAL_KEY) in _credential_key_bytes:
    raise ImproperlyConfigured(
        "OMNIUM_CREDENTIAL_KEYS holds the development key: set real Fernet keys (or DJANGO_DEBUG=true on a dev machine)"
    )
if OMNIUM["BULK_WORKER_NICE"] > 19:
    raise ImproperlyConfigured(f"OMNIUM_BULK_WORKER_NICE must be 0-19 (a nice increment), got {OMNIUM['BULK_WORKER_NICE']}")
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
    "PULL_DATABASE_READS": _int("OMNIUM_PULL_DATABASE_READS", 4, minimum=1),
    # Clients, keys and entitlements are re-read on every change notice, and at least this often.
    "PULL_CATALOGUE_MAX_AGE_S": _positive_float("OMNIUM_PULL_CATALOGUE_MAX_AGE_S", 60.0),
    # How often an API process writes when its pull keys were last used (one UPDATE for all).
    "PULL_KEY_USE_WRITE_S": _positive_float("OMNIUM_PULL_KEY_USE_WRITE_S", 60.0),
    # Listen for change notices in a thread (off in tests that drive the catalogue by hand).
    # Requests per second per client, across all API processes.
    "PULL_CLIENT_RATE": _positive_float("OMNIUM_PULL_CLIENT_RATE", 200.0),
    # Failed attempts per minute per (client address, key prefix) before more are refused
    # outright (a valid key is always served).
    "PULL_FAILED_KEYS_PER_MINUTE": _int("OMNIUM_PULL_FAILED_KEYS_PER_MINUTE", 30, minimum=1),
    # The proxies (addresses or networks) whose X-Forwarded-For is believed; behind none,
    # the client's address is the connection's, whatever the header says.
    "PULL_TRUSTED_PROXIES": _networks("OMNIUM_PULL_TRUSTED_PROXIES"),
    # A file PostgreSQL does not have is remembered as missing this long (shields PostgreSQL).
    "PULL_MISSING_TTL_S": _positive_float("OMNIUM_PULL_MISSING_TTL_S", 2.0),
    # After a failed Redis call, serve from memory without asking Redis for this long.
    "PULL_REDIS_RETRY_S": _positive_float("OMNIUM_PULL_REDIS_RETRY_S", 1.0),
    # At most this many missing files remembered per process (least recently asked dropped
    # first): every unknown id a client tries would otherwise be kept forever.
    "PULL_MISSING_MAX": _int("OMNIUM_PULL_MISSING_MAX", 10_000, minimum=1),
    # A copy the read path puts in Redis from PostgreSQL expires after this unless a pull
    # cache destination takes the key over: nothing would ever update it otherwise.
    "PULL_FILL_TTL_S": _int("OMNIUM_PULL_FILL_TTL_S", 60, minimum=1),
    # Every Games and entitlement shape gets its pull cache destinations by itself (on Games
    # creation, on entitlement changes, and this often by the repair task).
    "PULL_CACHE_AUTOMATIC": _bool("OMNIUM_PULL_CACHE_AUTOMATIC", True),
    "PULL_CACHE_REPAIR_S": _positive_float("OMNIUM_PULL_CACHE_REPAIR_S", 60.0),
})

# --- Metrics (/metrics, omnium/metrics/) -------------------------------------------------------
OMNIUM.update({
    # Every Omnium process group on this host keeps its counts in a directory under this one
    # (omnium/metrics/process_files.py); /metrics on this host merges them all.
    "METRICS_DIR": env.str("OMNIUM_METRICS_DIR", default=str(BASE_DIR / "var" / "metrics")),
    # A scraper sends it as `Authorization: Bearer …`; empty: only staff sessions may read /metrics.
    "METRICS_TOKEN": _secret("OMNIUM_METRICS_TOKEN", ""),
})

# Named here, not left to DRF's defaults, which include Basic auth (a staff password on every
# request) and let anyone in. The pull views set their own (keys, then the staff session).
REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": ["rest_framework.authentication.SessionAuthentication"],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAdminUser"],
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
    # /v1/schema and /v1/docs: staff sessions only.
    "SERVE_AUTHENTICATION": ["rest_framework.authentication.SessionAuthentication"],
    "SERVE_PERMISSIONS": ["rest_framework.permissions.IsAdminUser"],
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
}
# Legacy clients may send their key in the address: no log line may carry it.
LOGGING.setdefault("filters", {})["scrub_api_keys"] = {"()": "omnium.pullapi.log_scrubbing.ScrubApiKeys"}
LOGGING["handlers"]["console"]["filters"] = ["scrub_api_keys"]
# A load balancer's readiness probe answered 503 is the balancer's to act on, every second or two.
LOGGING["filters"]["quiet_probes"] = {"()": "omnium.pullapi.log_scrubbing.QuietProbes"}
LOGGING["handlers"]["console"]["filters"].append("quiet_probes")

# Last: every setting above has read its variables by now.
refuse_unread(env.names_read)
