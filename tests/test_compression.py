import gzip
import subprocess

import orjson

from omnium.encoding.compression import gzip_body


def a_feed_body() -> bytes:
    fixtures = [{"id": n, "venue": f"Hall {n % 7}", "competitors": [{"entry": f"{n}-{c}", "score": str(c)}
                                                                     for c in range(8)]} for n in range(2000)]
    return orjson.dumps({"built_at": "2026-09-23T10:00:00Z", "data": {"fixtures": fixtures}})


def test_a_body_gzips_to_standard_gzip_that_any_reader_opens():
    body = a_feed_body()
    packed = gzip_body(body)
    assert len(packed) < len(body) / 5
    assert gzip.decompress(packed) == body
    unpacked = subprocess.run(["gzip", "-dc"], input=packed, capture_output=True, check=True).stdout
    assert unpacked == body


def test_the_same_body_always_gives_the_same_bytes():
    body = a_feed_body()
    packed = gzip_body(body)
    assert gzip_body(bytes(body)) == packed
    assert packed[4:8] == b"\0\0\0\0"  # no time stamp in the header
    assert gzip_body(body.replace(b"Hall 3", b"Hall 9")) != packed
