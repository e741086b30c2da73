"""Where an AWS destination's credentials come from: keys stored with us, the worker's own
environment, or a role in the client's account assumed with an external id.

- **Stored keys**: an access key and secret typed into the admin.
- **The worker's environment** when no keys are stored: boto3's default chain (environment
  variables, a pod's web identity, an ECS task role, an EC2 instance profile), which renews
  what it finds by itself. It is asked outside the send's deadline: the metadata and container
  endpoints it reads live at addresses no destination may reach.
- **A role** (``role_arn``): assumed through STS with either of the above, with the client's
  external id (the guard AWS asks vendors to use against a "confused deputy") and a session
  name that shows in the client's CloudTrail. Its credentials are renewed
  ``REFRESH_BEFORE_EXPIRY_S`` before they run out, so no send starts with credentials about to
  expire.

Clients are made from ``AwsSessions.current()``, a boto3 session of this destination's own (boto3's
default session is not safe to share across a worker's threads), whose credentials are fixed; it returns a new
session whenever they change, and a caller remakes its client then.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import boto3
from botocore.exceptions import BotoCoreError, ClientError, NoCredentialsError

from .deadline import outside_any_deadline

log = logging.getLogger(__name__)

# Renew an assumed role this long before its credentials expire; if STS cannot be reached
# then, the old ones serve on until this close to the end (botocore renews the credentials of
# its own chain 15 minutes ahead, and must by 10).
REFRESH_BEFORE_EXPIRY_S = 600
STILL_USABLE_S = 60


@dataclass(frozen=True)
class Role:
    """A role in the client's account to assume for each destination's sends."""

    arn: str
    external_id: str | None
    session_name: str
    duration_s: int
    sts_endpoint_url: str | None  # None: AWS STS of the region


class AwsSessions:
    """The boto3 session to make one destination's clients from (see the module's doc)."""

    def __init__(self, *, region: str, access_key: str | None = None, secret_key: str | None = None,
                 role: Role | None = None, client_config=None):
        # Without keys this session takes the worker's environment (boto3's default chain).
        self._source = boto3.session.Session(aws_access_key_id=access_key or None,
                                             aws_secret_access_key=secret_key or None, region_name=region)
        self._role = role
        # Stored keys and no role: the credentials never change, nothing to look up per send.
        self._fixed = bool(access_key) and role is None
        self._client_config = client_config
        self._lock = threading.Lock()
        self._session: boto3.session.Session | None = None
        self._made_from = None  # the source credentials self._session was made with
        self._expires_at: datetime | None = None

    @property
    def expires_at(self) -> datetime | None:
        """When the assumed role's credentials run out; None without a role."""
        return self._expires_at

    def current(self) -> boto3.session.Session:
        """A session with credentials good for a while. Raises botocore's errors when there
        are none, or when a role must be assumed and STS refuses or cannot be reached."""
        if self._fixed:
            return self._source
        with self._lock:
            if self._role is None:  # the worker's own identity: the chain renews it, we follow
                source = outside_any_deadline(self._source_credentials)
                if source != self._made_from:
                    self._session, self._made_from = self._session_of(*source), source
            elif self._session is None or self._seconds_left() < REFRESH_BEFORE_EXPIRY_S:
                self._renew_role(outside_any_deadline(self._source_credentials))
            return self._session

    def _source_credentials(self) -> tuple[str, str, str | None]:
        credentials = self._source.get_credentials()
        if credentials is None:
            raise NoCredentialsError()
        # Frozen: one consistent set, renewed first if the chain's were about to expire.
        frozen = credentials.get_frozen_credentials()
        return frozen.access_key, frozen.secret_key, frozen.token

    def _renew_role(self, source) -> None:
        try:
            self._session, self._expires_at = self._assume_role(source)
        except (BotoCoreError, ClientError):
            if self._session is None or self._seconds_left() < STILL_USABLE_S:
                raise
            log.warning("could not renew role %s; its credentials last %.0f s more", self._role.arn,
                        self._seconds_left(), exc_info=True)

    def _assume_role(self, source) -> tuple[boto3.session.Session, datetime]:
        role = self._role
        sts = self._session_of(*source).client("sts", endpoint_url=role.sts_endpoint_url,
                                               config=self._client_config)
        external_id = {"ExternalId": role.external_id} if role.external_id else {}
        try:
            reply = sts.assume_role(RoleArn=role.arn, RoleSessionName=role.session_name,
                                    DurationSeconds=role.duration_s, **external_id)
        finally:
            sts.close()
        credentials = reply["Credentials"]
        session = self._session_of(credentials["AccessKeyId"], credentials["SecretAccessKey"],
                                   credentials["SessionToken"])
        return session, credentials["Expiration"]

    def _session_of(self, access_key: str, secret_key: str, token: str | None) -> boto3.session.Session:
        return boto3.session.Session(aws_access_key_id=access_key, aws_secret_access_key=secret_key,
                                     aws_session_token=token, region_name=self._source.region_name)

    def _seconds_left(self) -> float:
        if self._expires_at is None:
            return 0.0
        return (self._expires_at - datetime.now(UTC)) / timedelta(seconds=1)
