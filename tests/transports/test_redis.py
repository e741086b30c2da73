"""The Redis pull cache: write-if-newer is the fence against stale and zombie senders."""

from __future__ import annotations

import gzip

from .kits import feed_path


def test_older_version_never_overwrites_newer(redis_kit, redis_db):
    transport, path = redis_kit.transport(), feed_path()
    redis_kit.send(transport, b'{"v": 10}', path, version=10)

    receipt = redis_kit.send(transport, b'{"v": 9}', path, version=9)

    assert receipt.text == "kept newer v=10"
    assert redis_kit.read_back(path) == b'{"v": 10}'


def test_same_version_again_keeps_what_is_there(redis_kit):
    transport, path = redis_kit.transport(), feed_path()
    redis_kit.send(transport, b'{"v": 7}', path, version=7)

    receipt = redis_kit.send(transport, b'{"v": 7}', path, version=7)

    assert receipt.text == "kept newer v=7"


def test_newer_version_replaces_older(redis_kit):
    transport, path = redis_kit.transport(), feed_path()
    redis_kit.send(transport, b'{"v": 1}', path, version=1)

    receipt = redis_kit.send(transport, b'{"v": 2}', path, version=2)

    assert receipt.text == "stored v=2"
    assert redis_kit.read_back(path) == b'{"v": 2}'


def test_one_hash_holds_version_etag_and_gzipped_body(redis_kit, redis_db):
    path = feed_path()

    receipt = redis_kit.transport().send(
        b'{"a": 1}', path, content_type="application/json", version=5, etag="e5"
    )

    stored = redis_db.hgetall(redis_kit.key_prefix + path)
    assert set(stored) == {b"v", b"etag", b"gz"}
    assert (stored[b"v"], stored[b"etag"]) == (b"5", b"e5")
    assert gzip.decompress(stored[b"gz"]) == b'{"a": 1}'
    assert receipt.remote_bytes == len(stored[b"gz"])
