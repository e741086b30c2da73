"""Destination credentials held in AWS Secrets Manager instead of typed into the admin.

What a destination stores (encrypted, bound to its address like typed credentials) may be a
reference, ``{"aws_secret": {"id": <name or ARN>, "stage": "AWSCURRENT"}}``. The secret's value
is a JSON object with the kind's credential names (``{"password": "…"}``); other names in it,
such as the ``username`` and ``host`` a rotation function keeps there, are ignored.

The worker reads it with its own AWS identity (boto3's default chain; the region from the ARN,
else ``AWS_REGION``; the endpoint from ``AWS_ENDPOINT_URL_SECRETS_MANAGER`` where set) and keeps
it ``OMNIUM_SECRETS_CACHE_S`` seconds, so a rotation reaches every worker within that time; a
send the server refuses for its credentials drops the kept value (``forget``), so the next try
reads the rotated one at once, or AWSPREVIOUS while the server has not caught up with a
rotation. A secret that cannot be read is a ``SecretError``: nothing is
sent, and the destination shows why.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterable

import boto3
import botocore.config
from botocore.exceptions import BotoCoreError, ClientError, NoCredentialsError
from django.conf import settings

from omnium.clients.credentials import CredentialError

REFERENCE = "aws_secret"
STAGES = ("AWSCURRENT", "AWSPREVIOUS", "AWSPENDING")
_CLIENT_CONFIG = botocore.config.Config(connect_timeout=5, read_timeout=10,
                                        retries={"max_attempts": 2, "mode": "standard"})


class SecretError(CredentialError):
    """A referenced secret that cannot be read or used. ``permanent`` as for a TransportError:
    False when Secrets Manager could not be reached, True when a person must fix something."""

    def __init__(self, message: str, *, permanent: bool = True):
        super().__init__(message)
        self.permanent = permanent


def reference(secret_id: str, stage: str = "AWSCURRENT") -> dict:
    """What a destination stores to take its credentials from ``secret_id``."""
    return {REFERENCE: {"id": secret_id, "stage": stage}}


def reference_in(credentials: dict) -> dict | None:
    """The reference that ``credentials`` (as stored) are, or None for typed credentials."""
    return credentials.get(REFERENCE) if len(credentials) == 1 else None


def describe(stored: dict) -> str | None:
    """A sentence on where credentials come from, for the admin (never a secret), or None."""
    found = reference_in(stored)
    if found is None:
        return None
    return f"Read from AWS Secrets Manager: secret {found['id']!r}, stage {found['stage']}."


class _Kept:
    """Secret values read recently, by (id, stage): (read at, value, version id)."""

    def __init__(self):
        self._lock = threading.Lock()
        self._values: dict[tuple[str, str], tuple[float, dict, str]] = {}

    def get(self, key) -> tuple[dict, str] | None:
        with self._lock:
            found = self._values.get(key)
        if found is None or time.monotonic() - found[0] >= settings.OMNIUM_SECRETS_CACHE_S:
            return None
        return found[1], found[2]

    def put(self, key, value: dict, version: str) -> None:
        with self._lock:
            self._values[key] = (time.monotonic(), value, version)

    def drop(self, key) -> str | None:
        """Forget the value kept for ``key``; returns its version id."""
        with self._lock:
            dropped = self._values.pop(key, None)
        return dropped[2] if dropped else None


_kept = _Kept()


def resolve(found: dict, names: Iterable[str]) -> tuple[dict, str]:
    """The credentials (only ``names``) that the reference ``found`` points to, and the secret's
    version id; raises SecretError."""
    key = (found["id"], found["stage"])
    kept = _kept.get(key)
    if kept is None:
        kept = _read(*key)
        if key[1] == "AWSCURRENT" and _refused.pop(key, None) == kept[1]:
            kept = _previous_if_any(found["id"], kept)
        _kept.put(key, *kept)
    value, version = kept
    names = list(names)
    credentials = {name: value[name] for name in names if isinstance(value.get(name), str) and value[name]}
    if not credentials:
        raise SecretError(f"AWS secret {found['id']!r} holds none of: {', '.join(names)}")
    return credentials, version


# By (id, stage): the version the destination's server refused last.
_refused: dict[tuple[str, str], str] = {}


def forget(found: dict) -> None:
    """The server refused what the secret held: read it again at next use. If AWSCURRENT still
    holds what was refused, a rotation is in flight (the secret moved on before the server did):
    AWSPREVIOUS serves for OMNIUM_SECRETS_CACHE_S, then AWSCURRENT is tried again."""
    key = (found["id"], found["stage"])
    refused_version = _kept.drop(key)
    if refused_version is not None:
        _refused[key] = refused_version


def _previous_if_any(secret_id: str, current: tuple[dict, str]) -> tuple[dict, str]:
    try:
        return _read(secret_id, "AWSPREVIOUS")
    except SecretError:  # no previous version (never rotated), or not readable: keep the current
        return current


def read_text(secret_id: str) -> str:
    """The text of the secret's current version (a process's own secrets: settings._secret)."""
    return _get(secret_id, "AWSCURRENT").get("SecretString") or ""


def _read(secret_id: str, stage: str) -> tuple[dict, str]:
    reply = _get(secret_id, stage)
    try:
        value = json.loads(reply.get("SecretString") or "")
    except ValueError:
        value = None
    if not isinstance(value, dict):
        raise SecretError(f"AWS secret {secret_id!r} is not a JSON object of credentials (e.g. "
                          '{"password": "…"})')
    return value, reply["VersionId"]


def _get(secret_id: str, stage: str) -> dict:
    client = _client(secret_id)
    try:
        return client.get_secret_value(SecretId=secret_id, VersionStage=stage)
    except ClientError as exc:
        raise _refusal(exc, secret_id, stage) from exc
    except NoCredentialsError as exc:
        raise SecretError(f"the worker has no AWS identity to read secret {secret_id!r} with (AWS_* variables, "
                          "a pod or instance role)") from exc
    except BotoCoreError as exc:
        raise SecretError(f"could not reach AWS Secrets Manager for secret {secret_id!r}: {exc}",
                          permanent=False) from exc
    finally:
        client.close()


def _client(secret_id: str):
    # An ARN names its region (arn:aws:secretsmanager:<region>:…); a name is read in AWS_REGION's.
    parts = secret_id.split(":")
    region = parts[3] if secret_id.startswith("arn:") and len(parts) > 3 else None
    return boto3.session.Session().client("secretsmanager", region_name=region, config=_CLIENT_CONFIG)


def _refusal(exc: ClientError, secret_id: str, stage: str) -> SecretError:
    code = exc.response.get("Error", {}).get("Code", "")
    status = exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode")
    if code == "ResourceNotFoundException":
        return SecretError(f"AWS Secrets Manager has no secret {secret_id!r} with stage {stage}")
    if code in ("AccessDeniedException", "UnrecognizedClientException", "InvalidSignatureException") or status == 403:
        return SecretError(f"the worker's AWS identity may not read secret {secret_id!r} ({code})")
    if code == "DecryptionFailure":
        return SecretError(f"the worker's AWS identity may not decrypt secret {secret_id!r} with its KMS key")
    return SecretError(f"AWS Secrets Manager refused secret {secret_id!r}: {code}",
                       permanent=code not in ("InternalServiceError", "ThrottlingException"))
