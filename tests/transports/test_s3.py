"""S3 beyond the contract: which refusals are permanent, and what the object carries."""

from __future__ import annotations

import os
import time

import pytest

from devtools.loopback.servers import freeze, thaw
from omnium.transports import TransportError

from .kits import feed_path

pytestmark = pytest.mark.servers


def test_missing_bucket_is_permanent(s3_kit):
    transport = s3_kit.transport(bucket="no-such-bucket")

    with pytest.raises(TransportError, match="NoSuchBucket") as failure:
        s3_kit.send(transport, b"{}", feed_path())

    assert failure.value.permanent


def test_unknown_access_key_is_permanent(s3_kit):
    transport = s3_kit.transport(credentials={"access_key": "nobody", "secret_key": "x"})

    with pytest.raises(TransportError, match="InvalidAccessKeyId") as failure:
        s3_kit.send(transport, b"{}", feed_path())

    assert failure.value.permanent


def test_object_carries_content_type_and_version(s3_kit, s3_server):
    path = feed_path()

    s3_kit.send(s3_kit.transport(), b'{"a": 1}', path, version=812)

    head = s3_kit.reader.head_object(Bucket=s3_server.bucket, Key=f"{s3_kit.prefix}/{path}")
    assert head["ContentType"] == "application/json"
    assert head["Metadata"]["omnium-version"] == "812"


def test_frozen_server_fails_within_deadline_and_the_transport_recovers(s3_kit, s3_server):
    transport = s3_kit.transport(send_timeout=3.0)
    s3_kit.send(transport, b"{}", feed_path())  # leaves a pooled connection behind
    frozen = [s3_server.process.pid]

    freeze(frozen)
    try:
        started = time.monotonic()
        with pytest.raises(TransportError) as failure:
            s3_kit.send(transport, os.urandom(2_000_000), feed_path())
        elapsed = time.monotonic() - started
    finally:
        thaw(frozen)

    assert not failure.value.permanent
    assert elapsed < 3.0 + 2.0
    path = feed_path()
    s3_kit.send(transport, b'{"after": "thaw"}', path)
    assert s3_kit.read_back(path) == b'{"after": "thaw"}'
