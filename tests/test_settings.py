"""Production is the default: the settings refuse the development keys unless DEBUG is on,
turn on every HTTPS protection, and name the variable of any value they cannot read.

Each case loads the settings in a fresh process with only the variables it names, as a
production host would (no DJANGO_DEBUG from the test run)."""

import base64
import importlib
import json
import re
import secrets
import subprocess
import sys

import pytest
from cryptography.fernet import Fernet
from django.conf import settings

from omnium.settings import DEV_CREDENTIAL_KEY

REAL_KEYS = {
    "DJANGO_SECRET_KEY": secrets.token_urlsafe(50),
    "OMNIUM_CREDENTIAL_KEYS": Fernet.generate_key().decode(),
}
PRODUCTION = {"DJANGO_DEBUG": "false", **REAL_KEYS}
SECURITY_SETTINGS = ("SESSION_COOKIE_SECURE", "CSRF_COOKIE_SECURE", "SECURE_HSTS_SECONDS", "SECURE_SSL_REDIRECT",
                     "SECURE_PROXY_SSL_HEADER")
PRINT_SECURITY_SETTINGS = (
    "import django, json; django.setup(); from django.conf import settings; "
    f"print(json.dumps({{name: getattr(settings, name) for name in {SECURITY_SETTINGS!r}}}))"
)


def run(environment: dict, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, *args], env=environment, cwd=settings.BASE_DIR,
                          capture_output=True, text=True, timeout=60)


def security_settings(environment: dict) -> dict:
    finished = run({"DJANGO_SETTINGS_MODULE": "omnium.settings", **environment}, "-c", PRINT_SECURITY_SETTINGS)
    assert finished.returncode == 0, finished.stderr
    return json.loads(finished.stdout)


def test_check_deploy_finds_no_issue_with_real_keys_and_debug_off():
    finished = run(PRODUCTION, "manage.py", "check", "--deploy", "--fail-level", "WARNING")
    assert finished.returncode == 0, finished.stdout + finished.stderr
    assert "System check identified no issues" in finished.stdout


@pytest.mark.parametrize("development_variable", ["DJANGO_SECRET_KEY", "OMNIUM_CREDENTIAL_KEYS"])
def test_process_refuses_to_start_with_a_development_key_and_debug_off(development_variable):
    environment = {key: value for key, value in PRODUCTION.items() if key != development_variable}
    finished = run(environment, "manage.py", "check")
    assert finished.returncode != 0
    assert "ImproperlyConfigured" in finished.stderr and f"{development_variable} " in finished.stderr


@pytest.mark.parametrize("spelling", [
    "ZGV2LW9ubHkta2V5LWRvLW5vdC11c2UtaW4tcHJvZCF=",  # the last character's spare bits set
    "ZGV2LW9ubHkta2V5 LWRvLW5vdC11c2UtaW4tcHJvZCE=",  # a space inside, which base64 skips
])
def test_another_spelling_of_the_development_credential_key_is_refused_too(spelling):
    assert base64.urlsafe_b64decode(spelling) == base64.urlsafe_b64decode(DEV_CREDENTIAL_KEY)
    finished = run({**PRODUCTION, "OMNIUM_CREDENTIAL_KEYS": f"{REAL_KEYS['OMNIUM_CREDENTIAL_KEYS']},{spelling}"},
                   "manage.py", "check")
    assert finished.returncode != 0 and "OMNIUM_CREDENTIAL_KEYS holds the development key" in finished.stderr


def test_debug_is_off_unless_asked_for_so_the_development_keys_are_refused_by_default():
    finished = run({}, "manage.py", "check")
    assert finished.returncode != 0 and "is the development key" in finished.stderr


def test_a_development_machine_with_debug_on_starts_with_the_development_keys():
    assert run({"DJANGO_DEBUG": "true"}, "manage.py", "check").returncode == 0


def test_https_protections_are_on_by_default_and_each_can_be_switched():
    assert security_settings(PRODUCTION) == {
        "SESSION_COOKIE_SECURE": True, "CSRF_COOKIE_SECURE": True, "SECURE_HSTS_SECONDS": 31_536_000,
        "SECURE_SSL_REDIRECT": True, "SECURE_PROXY_SSL_HEADER": None,
    }
    behind_a_proxy = security_settings({
        **PRODUCTION, "DJANGO_SESSION_COOKIE_SECURE": "false", "DJANGO_CSRF_COOKIE_SECURE": "no",
        "DJANGO_SECURE_HSTS_SECONDS": "3600", "DJANGO_SECURE_SSL_REDIRECT": "off",
        "DJANGO_SECURE_PROXY_SSL_HEADER": "HTTP_X_FORWARDED_PROTO=https",
    })
    assert behind_a_proxy == {
        "SESSION_COOKIE_SECURE": False, "CSRF_COOKIE_SECURE": False, "SECURE_HSTS_SECONDS": 3600,
        "SECURE_SSL_REDIRECT": False, "SECURE_PROXY_SSL_HEADER": ["HTTP_X_FORWARDED_PROTO", "https"],
    }


@pytest.mark.parametrize("variable, value, message", [
    ("DJANGO_DEBUG", "ture", "DJANGO_DEBUG must be true or false, got 'ture'"),
    ("OMNIUM_PULL_DATABASE_READS", "four", "OMNIUM_PULL_DATABASE_READS must be a whole number, got 'four'"),
    ("OMNIUM_PULL_FAILED_KEYS_PER_MINUTE", "0", "OMNIUM_PULL_FAILED_KEYS_PER_MINUTE must be at least 1"),
    ("EMAIL_PORT", "25.5", "EMAIL_PORT must be a whole number"),
    ("DJANGO_SECURE_HSTS_SECONDS", "a year", "DJANGO_SECURE_HSTS_SECONDS must be a whole number"),
    ("DJANGO_SECURE_PROXY_SSL_HEADER", "X-Forwarded-Proto", "DJANGO_SECURE_PROXY_SSL_HEADER must look like"),
    ("OMNIUM_DESTINATION_ALLOWED_NETWORKS", "127.0.0.1/8",
     "OMNIUM_DESTINATION_ALLOWED_NETWORKS must list addresses or networks"),
    ("OMNIUM_BULK_WORKER_NICE", "25", "OMNIUM_BULK_WORKER_NICE must be 0-19 (a nice increment), got 25"),
])
def test_a_value_that_cannot_be_read_stops_the_process_naming_its_variable(variable, value, message):
    finished = run({**PRODUCTION, variable: value}, "manage.py", "check")
    assert finished.returncode != 0
    assert f"ImproperlyConfigured: {message}" in finished.stderr


def test_an_omnium_variable_no_setting_reads_stops_manage_py_check_naming_it_and_the_closest_name():
    finished = run({**PRODUCTION, "OMNIUM_BUILD_CLAIM_TTL_S": "120"}, "manage.py", "check")
    assert finished.returncode != 0
    assert "OMNIUM_BUILD_CLAIM_TTL_S is set, but no setting of Omnium reads it (did you mean OMNIUM_CLAIM_TTL_S?)" \
        in finished.stderr


def test_env_example_lists_every_variable_the_settings_read_and_nothing_else():
    names_read = settings_module().env.names_read
    example = (settings.BASE_DIR / ".env.example").read_text()
    listed = set(re.findall(r"^(?:# )?([A-Z][A-Z0-9_]+)=", example, re.MULTILINE))
    # NAME_FILE and NAME_AWS_SECRET variants are one rule at the top of the file, not one line each.
    unlisted = sorted(name for name in names_read - listed
                      if name.removesuffix("_FILE").removesuffix("_AWS_SECRET") not in listed)
    assert unlisted == [], f"read by omnium/settings.py, missing from .env.example: {unlisted}"
    assert sorted(listed - names_read) == [], "listed in .env.example, read by no setting"


def settings_module():
    return importlib.import_module(settings.SETTINGS_MODULE)


@pytest.mark.parametrize("url", ["redis://127.0.0.1:6379/0", "amqp://guest@10.0.0.4//;redis://10.0.0.5:6379/0"])
def test_a_broker_that_is_not_rabbitmq_stops_the_process_naming_the_variable(url):
    finished = run({**PRODUCTION, "CELERY_BROKER_URL": url}, "manage.py", "check")
    assert finished.returncode != 0
    assert "CELERY_BROKER_URL must list RabbitMQ URLs (amqp:// or amqps://, ';' between a cluster's nodes), " \
           "got one starting 'redis'" in finished.stderr


NO_KEYS = {key: value for key, value in PRODUCTION.items() if key != "OMNIUM_CREDENTIAL_KEYS"}
TRY_TO_DECRYPT = (
    "import django; django.setup(); from omnium.clients import credentials\n"
    "try:\n    credentials.decrypt(b'gAAAAA-stored')\nexcept credentials.CredentialError as exc:\n    print(exc)"
)


def test_a_process_that_holds_no_credential_keys_starts_and_can_decrypt_nothing():
    finished = run({**NO_KEYS, "DJANGO_SETTINGS_MODULE": "omnium.settings", "OMNIUM_SERVES": "api",
                    "OMNIUM_HOLDS_CREDENTIAL_KEYS": "false"}, "-c", TRY_TO_DECRYPT)

    assert finished.returncode == 0, finished.stderr
    assert "this process holds no credential keys" in finished.stdout


@pytest.mark.parametrize("environment, refusal", [
    ({**PRODUCTION, "OMNIUM_SERVES": "api"}, "yet OMNIUM_CREDENTIAL_KEYS reaches this process"),
    ({**NO_KEYS, "OMNIUM_SERVES": "admin"}, "yet this process serves the admin"),
])
def test_keys_where_none_belong_or_an_admin_without_them_stop_the_process(environment, refusal):
    finished = run({**environment, "OMNIUM_HOLDS_CREDENTIAL_KEYS": "false"}, "manage.py", "check")
    assert finished.returncode != 0
    assert refusal in finished.stderr
