from datetime import UTC, datetime, timezone
from decimal import Decimal

import orjson
from django.db.models import Count

from omnium.feeds.canonical import canonical, decimal_text, iso_time


def test_same_data_gives_same_bytes_whatever_the_key_order():
    a = canonical({"b": 1, "a": {"y": [1, 2], "x": "é"}})
    b = canonical({"a": {"x": "é", "y": [1, 2]}, "b": 1})
    assert a.content == b.content == '{"a":{"x":"é","y":[1,2]},"b":1}'.encode()
    assert a.content_hash == b.content_hash


def test_build_time_stamp_is_in_the_body_but_not_in_the_hash():
    file = canonical({"data": [1]})
    early = file.body(datetime(2026, 9, 20, 10, 0, tzinfo=UTC))
    late = file.body(datetime(2026, 9, 21, 10, 0, tzinfo=UTC))
    assert early != late
    assert orjson.loads(early) == {"built_at": "2026-09-20T10:00:00Z", "data": [1]}
    assert canonical({"data": [1]}).content_hash == file.content_hash


def test_times_and_decimals_have_one_spelling():
    assert iso_time(datetime(2026, 9, 20, 12, 0, 5, 999, tzinfo=UTC)) == "2026-09-20T12:00:05Z"
    assert decimal_text(Decimal("9.580")) == decimal_text(Decimal("9.58")) == "9.58"
    assert decimal_text(Decimal("10.000")) == "10"


SCORES = ["9.580", "10.000", "0.000", "-1.250", "123456789.001", "100.000", "0.500", None]


def test_scores_read_in_postgresql_have_the_same_spelling_as_decimal_text(small_games):
    from omnium.feeds.resolvers import fixture_rows
    from omnium.games.models import Competitor, Fixture

    fixture = Fixture.objects.filter(games=small_games).annotate(field=Count("competitors")).order_by("-field")[0]
    competitors = list(fixture.competitors.order_by("entry_id"))
    assert len(competitors) >= len(SCORES)
    for competitor, score in zip(competitors, SCORES):
        Competitor.objects.filter(pk=competitor.pk).update(score=score, rank=None)
    expected = {str(c.entry_id): decimal_text(Decimal(s) if s else None) for c, s in zip(competitors, SCORES)}

    listed = fixture_rows.competitors_by_fixture([fixture.pk])[fixture.pk]

    assert {c["entry"]: c["score"] for c in listed} == expected


def test_times_are_written_in_utc_to_the_second_whatever_zone_they_come_in():
    from datetime import datetime, timedelta

    from omnium.feeds.canonical import iso_time

    in_jakarta = datetime(2026, 9, 23, 17, 0, 0, 999999, tzinfo=timezone(timedelta(hours=7)))
    assert iso_time(in_jakarta) == "2026-09-23T10:00:00Z"
    assert iso_time(in_jakarta.astimezone(UTC)) == "2026-09-23T10:00:00Z"  # equal instant, remembered
    assert iso_time(in_jakarta + timedelta(seconds=1)) == "2026-09-23T10:00:01Z"
    assert iso_time(None) is None
