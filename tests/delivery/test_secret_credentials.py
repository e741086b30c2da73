"""Credentials held in AWS Secrets Manager (issue 40): a destination refers to a secret, the
worker reads it with its own AWS identity, picks up a rotation, and sends nothing when the
secret cannot be read or holds nothing usable.

Against moto's server (``servers.AwsServer``, IAM enforced) and the webhook receiver, which
answers 401 to a signature made with any secret but its own."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import uuid

import pytest
from cryptography.fernet import Fernet
from django.conf import settings as django_settings

from omnium.clients import secrets_manager
from omnium.delivery.engine import sender
from omnium.delivery.models import DeliveryAttempt, SenderState
from tests.delivery.fixtures import webhook_settings
from tests.delivery.test_sender import change_and_rebuild
from tests.transports.kits import WEBHOOK_SECRET

pytestmark = pytest.mark.servers

ROTATED_SECRET = "whsec_cm90YXRlZC1zZWNyZXQtZm9yLXRoZS10ZXN0cw=="


@pytest.fixture(scope="module")
def worker_keys(aws_account):
    """Keys of a worker whose IAM policy lets it read secrets, and nothing else."""
    iam = aws_account.client("iam", aws_account.inspector)
    name = f"omnium-worker-{uuid.uuid4().hex[:8]}"
    iam.create_user(UserName=name)
    policy = {"Version": "2012-10-17", "Statement": [
        {"Effect": "Allow", "Action": "secretsmanager:GetSecretValue", "Resource": "*"}]}
    iam.put_user_policy(UserName=name, PolicyName="read-secrets", PolicyDocument=json.dumps(policy))
    key = iam.create_access_key(UserName=name)["AccessKey"]
    return key["AccessKeyId"], key["SecretAccessKey"]


@pytest.fixture
def worker_identity(aws_account, worker_keys, monkeypatch):
    """The worker's own AWS identity, as its unit's environment would give it."""
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", worker_keys[0])
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", worker_keys[1])
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    monkeypatch.setenv("AWS_ENDPOINT_URL_SECRETS_MANAGER", aws_account.endpoint_url)
    return worker_keys


@pytest.fixture
def secret(aws_account):
    """make(value) -> the name of a new secret holding ``value`` as JSON."""
    client = aws_account.client("secretsmanager", aws_account.inspector)

    def make(value: dict) -> str:
        name = f"omnium/test/{uuid.uuid4().hex[:12]}"
        client.create_secret(Name=name, SecretString=json.dumps(value))
        return name

    make.rotate = lambda name, value: client.put_secret_value(SecretId=name, SecretString=json.dumps(value))
    return make


def _subscribed(small_games, subscribe, receiver, secret_name: str):
    kind, config, _ = webhook_settings(receiver.url)
    return subscribe(small_games, (kind, config, secrets_manager.reference(secret_name)))


def _retry_time_has_come(destination) -> None:
    SenderState.objects.filter(pk=destination.pk).update(retry_at=None)


def _last_error(destination) -> str:
    return DeliveryAttempt.objects.filter(destination=destination).latest("pk").error


def test_a_destination_sends_with_the_credentials_its_secret_holds(
        small_games, subscribe, receiver, secret, worker_identity):
    destination = _subscribed(small_games, subscribe, receiver, secret({"secret": WEBHOOK_SECRET}))

    assert sender.drain(destination.pk) == sender.Outcome.DRAINED

    assert receiver.received(f"{small_games.code}/calendar.json")
    assert b"whsec_" not in bytes(destination.credentials_encrypted)


def test_a_rotation_refused_by_the_receiver_is_read_again_at_the_next_try(
        small_games, subscribe, receiver, secret, worker_identity):
    """The client moved to a new secret and rotated ours: the kept old value gets a 401, which
    makes the next try read the secret again instead of waiting out OMNIUM_SECRETS_CACHE_S."""
    name = secret({"secret": WEBHOOK_SECRET})
    destination = _subscribed(small_games, subscribe, receiver, name)
    sender.drain(destination.pk)

    secret.rotate(name, {"secret": ROTATED_SECRET})
    receiver.secret = ROTATED_SECRET
    seq = change_and_rebuild(small_games, 901)
    sender.drain(destination.pk)
    assert "401" in _last_error(destination)
    _retry_time_has_come(destination)
    sender.drain(destination.pk)

    last = DeliveryAttempt.objects.filter(destination=destination).latest("pk")
    assert (last.ok, last.seq) == (True, seq)


def test_a_rotation_reaches_the_worker_once_the_kept_value_is_old_enough(
        small_games, subscribe, receiver, secret, worker_identity, settings):
    settings.OMNIUM_SECRETS_CACHE_S = 1.0
    name = secret({"secret": WEBHOOK_SECRET})
    destination = _subscribed(small_games, subscribe, receiver, name)
    sender.drain(destination.pk)

    secret.rotate(name, {"secret": ROTATED_SECRET})
    change_and_rebuild(small_games, 902)
    sender.drain(destination.pk)  # within the second: the kept value still signs
    receiver.secret = ROTATED_SECRET
    time.sleep(1.1)
    seq = change_and_rebuild(small_games, 903)
    sender.drain(destination.pk)

    attempts = list(DeliveryAttempt.objects.filter(destination=destination).order_by("pk"))
    assert all(a.ok for a in attempts) and attempts[-1].seq == seq and len(attempts) == 3


@pytest.mark.parametrize("value, error", [
    (None, "AWS Secrets Manager has no secret"),
    ({"password": "not what a webhook needs"}, "holds none of: secret"),
    ("not json", "is not a JSON object of credentials"),
])
def test_a_secret_that_cannot_be_used_sends_nothing_and_says_why(
        small_games, subscribe, receiver, secret, worker_identity, aws_account, value, error):
    if value is None:
        name = "omnium/test/never-made"
    elif isinstance(value, str):
        name = secret({})
        aws_account.client("secretsmanager", aws_account.inspector).put_secret_value(SecretId=name,
                                                                                     SecretString=value)
    else:
        name = secret(value)
    destination = _subscribed(small_games, subscribe, receiver, name)

    sender.drain(destination.pk)

    assert not receiver.deliveries
    assert error in _last_error(destination)


def test_a_worker_whose_identity_may_not_read_the_secret_sends_nothing(
        small_games, subscribe, receiver, secret, worker_identity, aws_account, monkeypatch):
    destination = _subscribed(small_games, subscribe, receiver, secret({"secret": WEBHOOK_SECRET}))
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", aws_account.vendor[0])  # may only assume a role
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", aws_account.vendor[1])

    sender.drain(destination.pk)

    assert not receiver.deliveries
    assert "the worker's AWS identity may not read secret" in _last_error(destination)


def test_while_a_rotation_is_in_flight_the_previous_version_is_used(
        small_games, subscribe, receiver, secret, worker_identity):
    """The secret was rotated before the client's server took the new value: AWSCURRENT is
    refused, so AWSPREVIOUS serves until the server catches up."""
    name = secret({"secret": WEBHOOK_SECRET})
    secret.rotate(name, {"secret": ROTATED_SECRET})  # the receiver still verifies the old one
    destination = _subscribed(small_games, subscribe, receiver, name)

    sender.drain(destination.pk)
    assert "401" in _last_error(destination)
    _retry_time_has_come(destination)
    sender.drain(destination.pk)

    last = DeliveryAttempt.objects.filter(destination=destination).latest("pk")
    assert last.ok and receiver.received(f"{small_games.code}/calendar.json")


PRINT_KEY_RING = ("import django; django.setup(); from django.conf import settings; "
                  "print(','.join(settings.OMNIUM_CREDENTIAL_KEYS))")


def _start_a_process(aws_account, worker_keys, **variables) -> subprocess.CompletedProcess:
    environment = {"DJANGO_SETTINGS_MODULE": "omnium.settings", "DJANGO_DEBUG": "false",
                   "DJANGO_SECRET_KEY": "a-real-secret-key-for-this-test-0123456789-abcdefghijklmnop",
                   "AWS_ACCESS_KEY_ID": worker_keys[0], "AWS_SECRET_ACCESS_KEY": worker_keys[1],
                   "AWS_DEFAULT_REGION": "us-east-1", "AWS_ENDPOINT_URL_SECRETS_MANAGER": aws_account.endpoint_url,
                   "PATH": os.environ["PATH"], **variables}
    return subprocess.run([sys.executable, "-c", PRINT_KEY_RING], env=environment, cwd=django_settings.BASE_DIR,
                          capture_output=True, text=True, timeout=60)


def test_the_credential_key_ring_may_come_from_secrets_manager(aws_account, worker_keys):
    """Nothing in an environment file: the delivery worker's key ring is read at start."""
    ring = f"{Fernet.generate_key().decode()},{Fernet.generate_key().decode()}"
    name = f"omnium/test/key-ring-{uuid.uuid4().hex[:8]}"
    aws_account.client("secretsmanager", aws_account.inspector).create_secret(Name=name, SecretString=ring)

    started = _start_a_process(aws_account, worker_keys, OMNIUM_CREDENTIAL_KEYS_AWS_SECRET=name)

    assert started.returncode == 0, started.stderr
    assert started.stdout.strip() == ring


def test_a_key_ring_secret_that_cannot_be_read_stops_the_process_naming_the_variable(aws_account, worker_keys):
    started = _start_a_process(aws_account, worker_keys, OMNIUM_CREDENTIAL_KEYS_AWS_SECRET="omnium/test/no-ring")

    assert started.returncode != 0
    assert ("ImproperlyConfigured: OMNIUM_CREDENTIAL_KEYS_AWS_SECRET: AWS Secrets Manager has no secret "
            "'omnium/test/no-ring'") in started.stderr
