"""S3 with the identities a client's cloud team gives a vendor instead of long-lived keys of
theirs (issue 33): a role in their account assumed with an external id, or the worker's own
AWS identity; and the client's KMS key for encryption at rest.

Against moto's server as a small AWS account with IAM enforced (``servers.AwsServer``): the
vendor's own keys may do nothing but assume the role, so an object that lands proves the
role was used."""

from __future__ import annotations

import http.server
import json
import threading
from ipaddress import ip_network

import pytest

from omnium.transports import TransportError, aws_credentials
from omnium.transports.failures import Reason
from omnium.transports.registry import transport_for

from .kits import feed_path

pytestmark = pytest.mark.servers

PREFIX = "omnium-tests"


def _transport(aws_account, credentials=None, **config):
    settings = {**aws_account.destination_config(PREFIX), "role_arn": aws_account.role_arn,
                "external_id": aws_account.external_id, **config}
    keys = dict(zip(("access_key", "secret_key"), aws_account.vendor, strict=True))
    return transport_for("s3", settings, keys if credentials is None else credentials)


def _send(transport, body: bytes, path: str):
    return transport.send(body, path, content_type="application/json", version=1, etag="e1")


def _refusal(transport) -> TransportError:
    """The error a send through ``transport`` fails with (closing the transport)."""
    with transport, pytest.raises(TransportError) as failure:
        _send(transport, b"{}", feed_path())
    return failure.value


def _head(aws_account, path: str) -> dict:
    s3 = aws_account.client("s3", aws_account.inspector)
    return s3.head_object(Bucket=aws_account.bucket, Key=f"{PREFIX}/{path}")


def test_a_role_assumed_with_the_external_id_writes_what_the_vendors_own_keys_may_not(aws_account):
    refused = _refusal(_transport(aws_account, role_arn=None, external_id=None, sts_endpoint_url=None))
    assert "AccessDenied" in str(refused) and refused.permanent and refused.reason == Reason.PERMISSION_DENIED

    path = feed_path()

    with _transport(aws_account) as transport:
        receipt = _send(transport, b'{"a": 1}', path)

    assert receipt.text.startswith("etag=")
    assert _head(aws_account, path)["ContentLength"] == len(b'{"a": 1}')


def test_a_wrong_external_id_is_a_permanent_refusal_that_names_the_role(aws_account):
    refused = _refusal(_transport(aws_account, external_id="someone-elses-id"))

    assert refused.permanent and refused.reason == Reason.PERMISSION_DENIED
    assert f"STS (assuming {aws_account.role_arn}) refused: AccessDenied" in str(refused)


def test_the_role_is_assumed_again_before_its_credentials_expire(aws_account, monkeypatch):
    with _transport(aws_account, role_duration=900) as transport:
        _send(transport, b"{}", feed_path())
        first_client, first_expiry = transport._s3(), transport._sessions.expires_at
        _send(transport, b"{}", feed_path())
        assert transport._s3() is first_client, "credentials far from expiry are kept"

        # 900 s of credentials are within any margin above 900 s of their end.
        monkeypatch.setattr(aws_credentials, "REFRESH_BEFORE_EXPIRY_S", 901)
        path = feed_path()
        _send(transport, b'{"renewed": 1}', path)

        assert transport._sessions.expires_at > first_expiry
        assert transport._s3() is not first_client
    assert _head(aws_account, path)["ContentLength"] == len(b'{"renewed": 1}')


def test_the_object_is_encrypted_with_the_clients_kms_key(aws_account):
    path = feed_path()
    with _transport(aws_account, server_side_encryption="aws:kms", kms_key_id=aws_account.kms_key_arn) as transport:
        _send(transport, b'{"secret": 1}', path)

    head = _head(aws_account, path)
    assert head["ServerSideEncryption"] == "aws:kms" and head["SSEKMSKeyId"] == aws_account.kms_key_arn
    kms = aws_account.client("kms", aws_account.inspector)
    assert kms.describe_key(KeyId=head["SSEKMSKeyId"])["KeyMetadata"]["Enabled"]


def test_without_stored_keys_the_workers_environment_supplies_them(aws_account, monkeypatch):
    """boto3's default chain: here its first link, the AWS_* variables a pod or a systemd unit
    would set; the role is then assumed with the worker's own identity."""
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", aws_account.vendor[0])
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", aws_account.vendor[1])
    path = feed_path()

    with _transport(aws_account, credentials={}) as transport:
        _send(transport, b'{"from": "env"}', path)

    assert _head(aws_account, path)["ContentLength"] == len(b'{"from": "env"}')


def test_no_keys_anywhere_is_a_permanent_error_that_says_where_it_looked(aws_account, monkeypatch, tmp_path):
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE",
                 "AWS_WEB_IDENTITY_TOKEN_FILE", "AWS_CONTAINER_CREDENTIALS_FULL_URI",
                 "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")

    failure = _refusal(_transport(aws_account, credentials={}))

    assert "no credentials: none are stored" in str(failure)
    assert failure.permanent and failure.reason == Reason.INVALID_SETTINGS


class _ContainerCredentials(http.server.BaseHTTPRequestHandler):
    """An ECS or EKS pod credentials endpoint handing out the pod role's credentials."""

    credentials: dict = {}

    def do_GET(self):  # noqa: N802 - http.server's name
        given = self.credentials
        body = json.dumps({"AccessKeyId": given["AccessKeyId"], "SecretAccessKey": given["SecretAccessKey"],
                           "Token": given["SessionToken"],
                           "Expiration": given["Expiration"].strftime("%Y-%m-%dT%H:%M:%SZ")}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


def test_the_pod_role_is_read_from_an_address_no_destination_may_reach(aws_account, monkeypatch, settings):
    """The worker's role comes from the container (or instance metadata) endpoint, a link-local
    address the destination address policy refuses; asking it must not count as the send
    reaching it, while the send itself stays under the policy."""
    # The pod runs as a role that may write to the client's bucket.
    pod_role = aws_account.client("sts", aws_account.vendor).assume_role(
        RoleArn=aws_account.role_arn, RoleSessionName="pod", ExternalId=aws_account.external_id)
    handler = type("Handler", (_ContainerCredentials,), {"credentials": pod_role["Credentials"]})
    endpoint = http.server.ThreadingHTTPServer(("127.0.0.2", 0), handler)
    threading.Thread(target=endpoint.serve_forever, daemon=True).start()
    monkeypatch.setenv("AWS_CONTAINER_CREDENTIALS_FULL_URI", f"http://127.0.0.2:{endpoint.server_port}/role")
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_PROFILE"):
        monkeypatch.delenv(name, raising=False)
    # Only the account's own address may be reached by a send.
    settings.OMNIUM = {**settings.OMNIUM, "DESTINATION_ALLOWED_NETWORKS": (ip_network("127.0.0.1/32"),)}
    path = feed_path()
    try:
        with _transport(aws_account, credentials={}, role_arn=None, external_id=None,
                        sts_endpoint_url=None) as transport:
            _send(transport, b'{"from": "pod"}', path)
        refused = _refusal(_transport(aws_account, credentials={}, sts_endpoint_url="http://127.0.0.2:9/"))
    finally:
        endpoint.shutdown()
        endpoint.server_close()

    assert _head(aws_account, path)["ContentLength"] == len(b'{"from": "pod"}')
    assert refused.reason == Reason.ADDRESS_REFUSED and "127.0.0.2" in str(refused)
