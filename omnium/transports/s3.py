"""Push to an S3 bucket: Amazon S3 or any S3-compatible server."""

from __future__ import annotations

import base64
import hashlib
import re

import botocore.config
import botocore.exceptions
from botocore.exceptions import BotoCoreError, ClientError, NoCredentialsError, ParamValidationError

from . import object_headers
from .aws_credentials import AwsSessions, Role
from .base import (
    TIMEOUT_SETTINGS,
    Deadline,
    FeedFile,
    Receipt,
    Setting,
    Transport,
    TransportError,
    join_remote,
)
from .failures import Reason, reason_of_os_error
from .probes import ProbeSteps, probe_file_name
from .urls import userinfo_problem

PROBE_BODY = b"omnium connection test: safe to delete\n"

# Error codes that no retry can fix (the bucket or the keys are wrong), and codes that a
# later try may get past even though S3 sends them with a 4xx status.
PERMANENT_CODES = {
    "NoSuchBucket",
    "AccessDenied",
    "AllAccessDisabled",
    "InvalidAccessKeyId",
    "SignatureDoesNotMatch",
    "InvalidBucketName",
    "AccountProblem",
}
TRANSIENT_CODES = {"SlowDown", "RequestTimeout", "RequestTimeTooSkewed", "BadDigest"}


def _http_url(value: str) -> str | None:
    if not value.startswith(("http://", "https://")):
        return "must start with http:// or https://"
    return userinfo_problem(value)


def _role_arn_problem(value: str) -> str | None:
    return None if value.startswith("arn:") and ":role/" in value else "must be a role ARN (arn:aws:iam::<account>:role/<name>)"


def _session_name_problem(value: str) -> str | None:
    # AWS's rule for RoleSessionName.
    return None if re.fullmatch(r"[\w+=,.@-]{2,64}", value) else "must be 2 to 64 letters, digits or +=,.@_-"


STORAGE_CLASSES = ("STANDARD", "STANDARD_IA", "ONEZONE_IA", "INTELLIGENT_TIERING", "GLACIER_IR", "REDUCED_REDUNDANCY")
CANNED_ACLS = ("private", "bucket-owner-full-control", "bucket-owner-read", "public-read", "authenticated-read")
# Settings that become put_object parameters, as the AWS API names them, when set.
OBJECT_SETTINGS = {"storage_class": "StorageClass", "acl": "ACL",
                   "server_side_encryption": "ServerSideEncryption", "kms_key_id": "SSEKMSKeyId"}


class S3Transport(Transport):
    """One PUT per file. A PUT is atomic on S3 (readers get the old object or the new one),
    so unlike SFTP and FTP there is no temporary name to rename."""

    kind = "s3"
    label = "Amazon S3 or S3-compatible"
    config_schema = {
        **TIMEOUT_SETTINGS,
        "endpoint_url": Setting(str, check=_http_url, help="For S3-compatible servers: their URL. Empty for Amazon S3."),
        "region": Setting(str, default="us-east-1", help="Region of the bucket."),
        "bucket": Setting(str, required=True, help="Bucket files go to."),
        "prefix": Setting(str, default="", help="Key prefix (folder) inside the bucket."),
        "addressing_style": Setting(str, default="auto", choices=("auto", "path", "virtual"),
                                    help="'path' for most S3-compatible servers."),
        # Credentials of a role in the client's account, instead of keys of theirs.
        "role_arn": Setting(str, check=_role_arn_problem,
                            help="A role in the client's account to assume (AssumeRole), with the keys below or, "
                                 "when none are stored, the worker's own AWS identity."),
        "external_id": Setting(str, help="The external id the role's trust policy requires."),
        "role_session_name": Setting(str, default="omnium", check=_session_name_problem,
                                     help="Session name of the assumed role, shown in the client's CloudTrail."),
        "role_duration": Setting(int, default=3600, minimum=900, maximum=43200,
                                 help="Seconds the role's credentials last; renewed 10 minutes before."),
        "sts_endpoint_url": Setting(str, check=_http_url,
                                    help="STS URL for the role (empty: AWS STS of the region)."),
        # What a bucket owned by the client may require of each object.
        **object_headers.SETTINGS,
        "storage_class": Setting(str, choices=STORAGE_CLASSES, help="Storage class of each object (empty: the "
                                                                    "bucket's default, STANDARD)."),
        "acl": Setting(str, choices=CANNED_ACLS, help="Canned ACL of each object, e.g. bucket-owner-full-control "
                                                      "for a bucket of another account (empty: none sent)."),
        "server_side_encryption": Setting(str, choices=("AES256", "aws:kms"),
                                          help="Encryption at rest the bucket requires: AES256 (SSE-S3) or aws:kms "
                                               "(SSE-KMS, with the key below; empty: the bucket's default)."),
        "kms_key_id": Setting(str, help="SSE-KMS: the KMS key id or ARN (empty: the account's aws/s3 key)."),
    }
    credentials_bound_to = ("endpoint_url", "bucket", "role_arn", "sts_endpoint_url")
    credentials_schema = {
        "access_key": Setting(str, help="Access key ID (empty: the worker's own AWS identity: its "
                                        "environment, pod or instance role)."),
        "secret_key": Setting(str, help="Secret access key."),
    }

    address_setting = "endpoint_url"  # empty for Amazon S3 itself: a public service, no address to check

    @classmethod
    def validate_config(cls, config: dict) -> list[str]:
        problems = super().validate_config(config)
        if config.get("kms_key_id") and config.get("server_side_encryption") != "aws:kms":
            problems.append("kms_key_id is for server_side_encryption aws:kms")
        role_settings = ("external_id", "sts_endpoint_url")
        if not config.get("role_arn") and any(config.get(name) for name in role_settings):
            problems.append("external_id and sts_endpoint_url are for a role: give its role_arn too")
        return problems

    @classmethod
    def validate_credentials(cls, credentials: dict) -> list[str]:
        problems = super().validate_credentials(credentials)
        if bool(credentials.get("access_key")) != bool(credentials.get("secret_key")):
            problems.append("give the access key and its secret key together, or neither to use the worker's "
                            "own AWS identity")
        return problems

    def __init__(self, config: dict, credentials: dict):
        super().__init__(config, credentials)
        self._client = None
        self._client_session = None  # the session self._client was made from
        self._client_config = self._botocore_config()
        self._sessions = AwsSessions(region=self.config["region"], access_key=self.credentials.get("access_key"),
                                     secret_key=self.credentials.get("secret_key"), role=self._role(),
                                     client_config=self._client_config)
        self._headers = object_headers.ObjectHeaders(self.config)
        self._object_options = {parameter: self.config[name] for name, parameter in OBJECT_SETTINGS.items()
                                if self.config.get(name)}

    def _role(self) -> Role | None:
        if not self.config.get("role_arn"):
            return None
        return Role(self.config["role_arn"], self.config.get("external_id") or None,
                    self.config["role_session_name"], self.config["role_duration"],
                    self.config.get("sts_endpoint_url") or None)

    def push(self, file: FeedFile, deadline: Deadline) -> Receipt:
        key = join_remote(self.config["prefix"].strip("/"), file.path)
        deadline.before_commit("s3")  # one PUT makes it visible: no temporary name to rename
        try:
            reply = self._put(file, key)
        except (ClientError, BotoCoreError) as exc:
            raise self._failure(exc) from exc
        if not reply.get("ETag"):
            # Every S3 server answers a stored PUT with the ETag of what it holds; a 200
            # without one is a reply that was cut short, not a receipt.
            raise TransportError("S3 reply carried no ETag: not a receipt", reason=Reason.CONNECTION_LOST)
        return Receipt(_receipt_text(reply), remote_bytes=len(file.body))

    def probe(self, steps: ProbeSteps, deadline: Deadline) -> None:
        key = join_remote(self.config["prefix"].strip("/"), probe_file_name())
        where = f"{self.config['bucket']}/{key}"
        test_file = FeedFile(PROBE_BODY, key, "text/plain", 0, "connection-test")
        with steps.step(f"connect, sign in and write a test object {where}", failure=self._failure):
            self._put(test_file, key)
        with steps.step("remove the test object", failure=self._failure):
            self._s3().delete_object(Bucket=self.config["bucket"], Key=key)

    def _put(self, file: FeedFile, key: str) -> dict:
        return self._s3().put_object(
                Bucket=self.config["bucket"],
                Key=key,
                Body=file.body,
                ContentType=self._headers.content_type(file.path, file.content_type),
                # The server checks the bytes it got against this digest and refuses a
                # mismatch, so a 200 proves it holds exactly our body.
                ContentMD5=base64.b64encode(hashlib.md5(file.body).digest()).decode(),
                Metadata={"omnium-version": str(file.version), "omnium-etag": file.etag},
                **self._cache_control(file.path),
                **self._object_options,
            )

    def _cache_control(self, path: str) -> dict:
        value = self._headers.cache_control(path)
        return {"CacheControl": value} if value else {}

    def _failure(self, exc: BaseException) -> TransportError:
        if isinstance(exc, ClientError):
            return _refusal(exc)
        if isinstance(exc, NoCredentialsError):
            return TransportError("S3: no credentials: none are stored and the worker's environment has no AWS "
                                  "identity (AWS_* variables, a pod or instance role)", permanent=True,
                                  reason=Reason.INVALID_SETTINGS)
        if isinstance(exc, ParamValidationError):
            return TransportError(f"S3 request invalid: {exc}", permanent=True, reason=Reason.INVALID_SETTINGS)
        # botocore names a timeout while connecting ConnectTimeoutError, one later ReadTimeoutError.
        connected = not isinstance(exc, botocore.exceptions.ConnectTimeoutError)
        reason = reason_of_os_error(exc, connected=connected)
        if reason == Reason.OTHER and isinstance(exc, botocore.exceptions.ConnectionError):
            reason = Reason.NO_ANSWER if connected else Reason.UNREACHABLE
        seconds = self.config["connect_timeout" if not connected else "send_timeout"]
        return TransportError(f"S3 unreachable: {exc}", reason=reason, seconds=seconds)

    def close(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None

    def _s3(self):
        """The client, made on first use and reused (it holds the connection pool) until the
        credentials change (an assumed role renewed, the worker's role rotated)."""
        try:
            session = self._sessions.current()
        except ClientError as exc:
            raise _refusal(exc, service=f"STS (assuming {self.config['role_arn']})") from exc
        if self._client is None or session is not self._client_session:
            self.close()
            self._client = session.client("s3", endpoint_url=self.config.get("endpoint_url"),
                                          config=self._client_config)
            self._client_session = session
        return self._client

    def _botocore_config(self) -> botocore.config.Config:
        return botocore.config.Config(
            connect_timeout=self.config["connect_timeout"],
            read_timeout=self.config["send_timeout"],
            retries={"max_attempts": 2, "mode": "standard"},
            # Newer botocore adds CRC checksums by default; many S3-compatible servers
            # reject or mishandle them. Content-MD5 above covers integrity instead.
            request_checksum_calculation="when_required",
            response_checksum_validation="when_required",
            s3={"addressing_style": self.config["addressing_style"]},
        )


def _refusal(exc: ClientError, service: str = "S3") -> TransportError:
    error = exc.response.get("Error", {})
    code = error.get("Code", "")
    status = exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode") or 0
    if code in PERMANENT_CODES or code in TRANSIENT_CODES:
        permanent = code in PERMANENT_CODES
    else:
        permanent = 400 <= status < 500 and status not in (408, 429)
    detail = error.get("Message") or ""
    reason = _CODE_REASONS.get(code, Reason.HTTP_STATUS)
    return TransportError(f"{service} refused: {code or 'error'} ({status}) {detail}".strip(), permanent=permanent,
                          status=status or None, reason=reason)


_CODE_REASONS = {
    "InvalidAccessKeyId": Reason.AUTH_REFUSED,
    "SignatureDoesNotMatch": Reason.AUTH_REFUSED,
    "AccessDenied": Reason.PERMISSION_DENIED,
    "AllAccessDisabled": Reason.PERMISSION_DENIED,
    "NoSuchBucket": Reason.MISSING_TARGET,
    "InvalidBucketName": Reason.MISSING_TARGET,
    "QuotaExceeded": Reason.DISK_FULL,
    "EntityTooLarge": Reason.DISK_FULL,
}


def _receipt_text(reply: dict) -> str:
    etag = reply.get("ETag", "").strip('"')
    parts = [f"etag={etag}"]
    parts += [
        f"{name.removeprefix('Checksum').lower()}={value}"
        for name, value in reply.items()
        if name.startswith("Checksum") and name != "ChecksumType" and value
    ]
    if reply.get("VersionId"):
        parts.append(f"version_id={reply['VersionId']}")
    return " ".join(parts)
