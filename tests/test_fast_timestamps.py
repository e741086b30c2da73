from datetime import UTC, datetime, timedelta, timezone

import pytest
from django.db import connection
from psycopg.pq import Format

from omnium.database.fast_timestamps import TIMESTAMPTZ, UtcTimestamptzLoader
from omnium.games.models import Games


@pytest.mark.django_db
def test_every_cursor_reads_timestamps_with_psycopgs_loader():
    with connection.cursor() as cursor:
        assert cursor.cursor.adapters.get_loader(TIMESTAMPTZ, Format.TEXT) is UtcTimestamptzLoader


@pytest.mark.django_db
def test_timestamps_read_as_the_same_instants_in_utc():
    with connection.cursor() as cursor:
        cursor.execute("SELECT '2026-09-23 12:00:00.000001+02'::timestamptz, '1999-12-31 23:59:59-11'::timestamptz,"
                       " NULL::timestamptz")
        row = cursor.fetchone()
    assert row == (datetime(2026, 9, 23, 10, 0, 0, 1, tzinfo=UTC),
                   datetime(2000, 1, 1, 10, 59, 59, tzinfo=UTC), None)
    assert row[0].tzinfo is UTC


@pytest.mark.django_db
def test_models_keep_their_times_to_the_microsecond():
    games = Games.objects.create(code="tz1", name="Time zones", starts_on="2026-09-19", ends_on="2026-10-04")
    moment = datetime(2026, 9, 23, 10, 0, 0, 123456, tzinfo=timezone(timedelta(hours=8)))
    Games.objects.filter(pk=games.pk).update(changed_at=moment)
    assert Games.objects.get(pk=games.pk).changed_at == moment
    assert Games.objects.get(pk=games.pk).changed_at.tzinfo is UTC
