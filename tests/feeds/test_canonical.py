from datetime import datetime, timezone
from decimal import Decimal

import orjson

from omnium.feeds.canonical import canonical, decimal_text, iso_time


def test_same_data_gives_same_bytes_whatever_the_key_order():
    a = canonical({"b": 1, "a": {"y": [1, 2], "x": "é"}})
    b = canonical({"a": {"x": "é", "y": [1, 2]}, "b": 1})
    assert a.content == b.content == '{"a":{"x":"é","y":[1,2]},"b":1}'.encode()
    assert a.content_hash == b.content_hash


def test_build_time_stamp_is_in_the_body_but_not_in_the_hash():
    file = canonical({"data": [1]})
    early = file.body(datetime(2026, 9, 20, 10, 0, tzinfo=timezone.utc))
    late = file.body(datetime(2026, 9, 21, 10, 0, tzinfo=timezone.utc))
    assert early != late
    assert orjson.loads(early) == {"built_at": "2026-09-20T10:00:00Z", "data": [1]}
    assert canonical({"data": [1]}).content_hash == file.content_hash


def test_times_and_decimals_have_one_spelling():
    assert iso_time(datetime(2026, 9, 20, 12, 0, 5, 999, tzinfo=timezone.utc)) == "2026-09-20T12:00:05Z"
    assert decimal_text(Decimal("9.580")) == decimal_text(Decimal("9.58")) == "9.58"
    assert decimal_text(Decimal("10.000")) == "10"
