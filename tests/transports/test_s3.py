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


def test_a_clients_bucket_gets_the_object_settings_it_requires(s3_kit, s3_server):
    """Issue 33: buckets owned by the client often require a Cache-Control, a storage class, a
    canned ACL for the bucket's owner and encryption at rest."""
    path = feed_path()
    transport = s3_kit.transport(cache_control="max-age=5", storage_class="STANDARD_IA",
                                 acl="bucket-owner-full-control", server_side_encryption="AES256")

    s3_kit.send(transport, b'{"owned": 1}', path)

    head = s3_kit.reader.head_object(Bucket=s3_server.bucket, Key=f"{s3_kit.prefix}/{path}")
    assert head["CacheControl"] == "max-age=5"
    assert head.get("StorageClass") == "STANDARD_IA"
    assert head.get("ServerSideEncryption") == "AES256"
    assert s3_kit.read_back(path) == b'{"owned": 1}'


def test_object_settings_that_cannot_work_are_refused_plainly(s3_kit):
    with pytest.raises(TransportError, match="storage_class must be one of"):
        s3_kit.transport(storage_class="COLD")
    with pytest.raises(TransportError, match="kms_key_id is for server_side_encryption aws:kms"):
        s3_kit.transport(kms_key_id="alias/feeds")


def test_each_file_format_gets_its_own_content_type_and_cache_control(s3_kit, s3_server):
    """Issue 33: a client's CDN caches its JSON for 5 s and its XML for a minute, and wants the
    XML labelled text/xml; formats without a rule keep the destination's single value."""
    transport = s3_kit.transport(cache_control="max-age=30", cache_control_by_format="json: max-age=5\nxml: "
                                 "public, max-age=60", content_type_by_format="xml: text/xml; charset=utf-8")
    sent = {"json": feed_path("medals.json"), "xml": feed_path("medals.xml"), "csv": feed_path("medals.csv")}
    ours = {"json": "application/json", "xml": "application/xml", "csv": "text/csv"}
    for extension, path in sent.items():
        transport.send(b"<x/>", path, content_type=ours[extension], version=1, etag="e1")

    heads = {extension: s3_kit.reader.head_object(Bucket=s3_server.bucket, Key=f"{s3_kit.prefix}/{path}")
             for extension, path in sent.items()}
    assert {e: (h["ContentType"], h["CacheControl"]) for e, h in heads.items()} == {
        "json": ("application/json", "max-age=5"),
        "xml": ("text/xml; charset=utf-8", "public, max-age=60"),
        "csv": ("text/csv", "max-age=30"),
    }
