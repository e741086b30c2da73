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


def _files(*versions_and_paths):
    from omnium.transports.base import FeedFile

    return [FeedFile(b'{"v": %d}' % version, path, "application/json", version, f"e{version}")
            for version, path in versions_and_paths]


def test_a_batch_is_one_pipeline_in_which_each_file_keeps_its_own_outcome(redis_kit, redis_db):
    transport, fresh, stale, taken = redis_kit.transport(), feed_path(), feed_path(), feed_path()
    redis_kit.send(transport, b'{"v": 50}', stale, version=50)
    redis_db.set(redis_kit.key_prefix + taken, "not a hash")  # WRONGTYPE for this key only
    calls_before = redis_db.info("commandstats").get("cmdstat_evalsha", {}).get("calls", 0)

    outcomes = transport.send_many(_files((3, fresh), (40, stale), (7, taken)))

    assert [o.text for o in outcomes[:2]] == ["stored v=3", "kept newer v=50"]
    assert outcomes[2].permanent and "WRONGTYPE" in str(outcomes[2])
    assert redis_kit.read_back(fresh) == b'{"v": 3}' and redis_kit.read_back(stale) == b'{"v": 50}'
    assert redis_db.info("commandstats")["cmdstat_evalsha"]["calls"] - calls_before == 3


def test_a_batch_whose_sender_lost_the_destination_writes_nothing(redis_kit):
    transport, path = redis_kit.transport(), feed_path()

    outcomes = transport.send_many(_files((1, path), (2, feed_path())), still_ours=lambda: False)

    assert all(not o.permanent for o in outcomes) and len(outcomes) == 2
    assert redis_kit.read_back(path) is None
