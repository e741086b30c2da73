"""Files that list fixtures take each unchanged fixture's document from the builder's memory,
keyed by the fixture's row version: the bytes must be those of building every document afresh."""

from datetime import timedelta

from django.db import connection
from django.test.utils import CaptureQueriesContext

from omnium.feeds import builder
from omnium.feeds.builder import build_file
from omnium.feeds.models import FeedDefinition, FeedDocument
from omnium.feeds.resolvers import fixture_documents
from omnium.games import workflow
from omnium.games.models import Entry, Fixture


def _listing_files(games) -> list[str]:
    FeedDefinition.objects.get_or_create(games=games, feed_type="calendar_day", defaults={"name": "A day"})
    fixture = Fixture.objects.filter(games=games).order_by("starts_at").first()
    noc = Entry.objects.filter(games=games).values_list("noc__code", flat=True).first()
    return [f"{games.code}/{name}" for name in
            ("calendar", "results", f"country/{noc}", f"calendar_day/{fixture.starts_at.date()}")]


def _workflow_changes(games):
    """A score to a scheduled fixture (it goes live), its end, a correction once ended (a re-rank),
    the official result, and a move of another scheduled fixture."""
    first, other = Fixture.objects.filter(games=games, status=Fixture.Status.SCHEDULED).order_by("starts_at")[:2]
    entries = [c.entry_id for c in first.competitors.all()]
    return [
        lambda: workflow.record_score(first.pk, {entry: 3 + n for n, entry in enumerate(entries)}),
        lambda: workflow.finish_fixture(first.pk),
        lambda: workflow.record_score(first.pk, {entries[-1]: 9}),
        lambda: workflow.make_official(first.pk),
        lambda: workflow.move_fixture(other.pk, starts_at=other.starts_at + timedelta(hours=2), venue="Hall 9"),
    ]


def test_files_built_from_kept_fixture_documents_equal_files_built_afresh(small_games):
    files = _listing_files(small_games)
    for doc_key in files:
        build_file(doc_key)  # every fixture's document is kept now

    for change in _workflow_changes(small_games):
        change()
        outcomes = [build_file(doc_key).outcome for doc_key in files]
        hashes = [bytes(FeedDocument.objects.get(doc_key=k).content_hash) for k in files]

        fixture_documents.forget_all()
        assert [build_file(doc_key).outcome for doc_key in files] == [builder.UNCHANGED] * len(files)
        assert [bytes(FeedDocument.objects.get(doc_key=k).content_hash) for k in files] == hashes
        assert outcomes[0] == builder.NEW_VERSION  # the calendar shows every change


def test_a_listing_serialises_again_only_the_fixtures_whose_rows_changed(small_games):
    calendar = f"{small_games.code}/calendar"
    fixture_documents.forget_all()
    build_file(calendar)
    kept = len(fixture_documents._kept)
    assert kept == Fixture.objects.filter(games=small_games).count()
    changed = Fixture.objects.filter(games=small_games).order_by("starts_at").first()
    workflow.record_score(changed.pk, {changed.competitors.first().entry_id: 4})

    with CaptureQueriesContext(connection) as queries:
        assert build_file(calendar).outcome == builder.NEW_VERSION

    assert len(fixture_documents._kept) == kept + 1, "one fixture's new version kept beside the old"
    assert len([q for q in queries if 'FROM "games_competitor"' in q["sql"]]) == 1
