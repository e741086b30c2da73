import threading

import orjson
import pytest
from django.db import connection

from omnium.feeds import builder
from omnium.feeds.builder import build_file, files_of
from omnium.feeds.models import FeedDependency, FeedDocument
from omnium.feeds.resolvers import RESOLVERS
from omnium.games import workflow
from omnium.games.models import Entry, Fixture, MedalEvent


def _snapshot(doc_key):
    doc = FeedDocument.objects.get(doc_key=doc_key)
    return doc.seq, bytes(doc.content_hash), bytes(doc.body), doc.changed_at


def test_rebuild_without_real_change_keeps_seq_hash_body_and_changed_at(small_games):
    doc_key = f"{small_games.code}/calendar"
    before = _snapshot(doc_key)

    result = build_file(doc_key)

    assert result.outcome == builder.UNCHANGED
    assert _snapshot(doc_key) == before


def test_changed_at_is_the_newest_real_change_not_now(small_games):
    fixture = Fixture.objects.filter(games=small_games).order_by("starts_at").first()
    entry_id = fixture.competitors.first().entry_id
    workflow.record_score(fixture.pk, {entry_id: 3})
    fixture.refresh_from_db()

    build_file(f"{small_games.code}/calendar")

    body = orjson.loads(bytes(FeedDocument.objects.get(doc_key=f"{small_games.code}/calendar").body))
    assert body["changed_at"] == fixture.changed_at.strftime("%Y-%m-%dT%H:%M:%SZ")


def test_a_real_change_takes_a_new_seq_and_replaces_dependencies(small_games):
    doc_key = f"{small_games.code}/calendar"
    seq_before = _snapshot(doc_key)[0]
    fixture = Fixture.objects.filter(games=small_games).first()
    workflow.record_score(fixture.pk, {fixture.competitors.first().entry_id: 1})

    result = build_file(doc_key)

    assert result.outcome == builder.NEW_VERSION and result.seq > seq_before
    fixtures = set(Fixture.objects.filter(games=small_games).values_list("id", flat=True))
    deps = set(FeedDependency.objects.filter(doc_key=doc_key, record_kind="fixture").values_list("record_id", flat=True))
    assert deps == fixtures


def _dependency_row_versions(doc_key):
    """Each dependency row with the transaction that wrote it: rewritten rows get a new xmin."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT record_kind, record_id, xmin::text FROM feed_dependency WHERE doc_key = %s",
                       [doc_key])
        return set(cursor.fetchall())


def test_a_new_version_with_the_same_records_leaves_dependency_rows_unwritten(small_games):
    doc_key = f"{small_games.code}/calendar"
    rows_before = _dependency_row_versions(doc_key)
    fixture = Fixture.objects.filter(games=small_games).first()
    workflow.record_score(fixture.pk, {fixture.competitors.first().entry_id: 4})

    result = build_file(doc_key)

    assert result.outcome == builder.NEW_VERSION
    assert _dependency_row_versions(doc_key) == rows_before


def test_a_new_version_with_a_new_record_rewrites_its_dependencies(small_games):
    entry = Entry.objects.filter(games=small_games, athlete__isnull=False).select_related("noc").first()
    doc_key = f"{small_games.code}/country/{entry.noc.code}"
    hash_before = bytes(FeedDocument.objects.get(doc_key=doc_key).dependencies_hash)
    other_event = MedalEvent.objects.filter(games=small_games, is_team=False).exclude(
        entries__athlete=entry.athlete).first()
    added = workflow.add_entry(other_event.pk, athlete_id=entry.athlete_id)

    result = build_file(doc_key)

    assert result.outcome == builder.NEW_VERSION
    entries = {row[1] for row in _dependency_row_versions(doc_key) if row[0] == "entry"}
    assert added.pk in entries
    assert bytes(FeedDocument.objects.get(doc_key=doc_key).dependencies_hash) != hash_before


def test_older_build_finishing_last_never_overwrites_newer(small_games, monkeypatch):
    doc_key = f"{small_games.code}/calendar"
    fixture = Fixture.objects.filter(games=small_games).first()
    entry_id = fixture.competitors.first().entry_id
    resolved_old, release_old = threading.Event(), threading.Event()
    real_calendar = RESOLVERS["calendar"]

    def calendar_that_pauses_in_thread_a(games, filter):
        resolved = real_calendar(games, filter)
        if threading.current_thread().name == "older-build":
            resolved_old.set()
            release_old.wait(10)
        return resolved

    monkeypatch.setitem(RESOLVERS, "calendar", calendar_that_pauses_in_thread_a)
    outcomes = {}
    older = threading.Thread(name="older-build", target=lambda: outcomes.update(old=build_file(doc_key)))
    older.start()
    assert resolved_old.wait(10)  # the older build has read the data before the change

    workflow.record_score(fixture.pk, {entry_id: 42})
    newer = build_file(doc_key)
    release_old.set()
    older.join(10)

    assert newer.outcome == builder.NEW_VERSION
    assert outcomes["old"].outcome == builder.SUPERSEDED
    body = orjson.loads(bytes(FeedDocument.objects.get(doc_key=doc_key).body))
    scores = [c["score"] for day in body["data"]["days"] for f in day["fixtures"] for c in f["competitors"]
              if f["id"] == str(fixture.pk) and c["entry"] == str(entry_id)]
    assert scores == ["42"]
    assert FeedDocument.objects.get(doc_key=doc_key).seq == newer.seq


def test_unknown_country_file_is_refused(small_games):
    from omnium.feeds.resolvers.base import UnknownFile

    with pytest.raises(UnknownFile, match="ZZZ"):
        build_file(f"{small_games.code}/country/ZZZ")


def test_a_country_file_lists_its_fixtures_with_only_its_own_competitors(small_games):
    from omnium.games.models import Competitor

    noc = Entry.objects.filter(games=small_games).values_list("noc__code", flat=True).first()
    body = orjson.loads(bytes(FeedDocument.objects.get(doc_key=f"{small_games.code}/country/{noc}").body))

    own = Competitor.objects.filter(fixture__games=small_games, entry__noc__code=noc)
    listed = {(f["id"], c["entry"]) for f in body["data"]["fixtures"] for c in f["competitors"]}
    assert listed == {(str(c.fixture_id), str(c.entry_id)) for c in own}
    assert Competitor.objects.filter(fixture_id__in={f for f, _ in listed}).exclude(entry__noc__code=noc).exists()


def test_bodies_are_stored_compressed_with_lz4(small_games):
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_column_compression(body) FROM feeds_feeddocument WHERE doc_key = %s",
                       [f"{small_games.code}/calendar"])
        assert cursor.fetchone()[0] == "lz4"


def test_every_file_listed_for_a_games_builds_even_with_its_pull_files_defined(small_games):
    from omnium.pullapi import pull_cache_destinations

    pull_cache_destinations.ensure_destinations(small_games)  # defines the per-record pull files too

    listed = files_of(small_games.code)

    assert listed and all(build_file(doc_key).outcome for doc_key in listed)
    assert not [key for key in listed if key.split("/")[1] in ("calendar_day", "fixture", "career", "unit_standings")]
