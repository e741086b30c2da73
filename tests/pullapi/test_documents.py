import json
import uuid
from datetime import timedelta
from io import StringIO

import orjson
from django.core.management import call_command
from django.db import connection, transaction

from omnium.clients.models import Subscription
from omnium.feeds import changes, record_ids
from omnium.feeds.builder import build_file
from omnium.feeds.models import FeedDefinition, FeedDocument
from omnium.games import workflow
from omnium.games.models import Athlete, Fixture, Games, MedalEvent
from omnium.pullapi import record_games
from tests.pullapi.conftest import bearer, fill_pull_cache


def test_public_documents_need_the_entitlement_they_are_drawn_from(games, entitle, http):
    _, everything = entitle("fanapp", games, "medals", "standings", "calendar")
    fixture = Fixture.objects.filter(games=games).first()
    unit = MedalEvent.objects.filter(games=games).order_by("code").first()
    documents = {"calendar": f"/v1/fixtures/{fixture.pk}", "standings": f"/v1/standings/{games.code}/{unit.code}",
                 "medals": f"/v1/medals/{games.code}"}
    for feed_type, path in documents.items():
        _, only_this = entitle(f"only-{feed_type}", games, feed_type)
        assert http.get(path).status_code == 401, path
        assert http.get(path, **bearer(everything)).status_code == 200, path
        assert http.get(path, **bearer(only_this)).status_code == 200, path
        others = [other for other in documents.values() if other != path]
        assert [http.get(other, **bearer(only_this)).status_code for other in others] == [403, 403], feed_type
    fixture_doc = orjson.loads(http.get(f"/v1/fixtures/{fixture.pk}", **bearer(everything)).content)
    assert fixture_doc["data"]["fixture"]["id"] == str(fixture.pk)
    assert http.get(f"/v1/standings/{games.code}/NOPE", **bearer(everything)).status_code == 404
    assert http.get(f"/v1/fixtures/{uuid.uuid4()}", **bearer(everything)).status_code == 404


def test_an_unentitled_key_gets_403_before_any_404(games, entitle, http):
    _, medals_only = entitle("fanapp", games, "medals")
    for path in (f"/v1/fixtures/{uuid.uuid4()}", f"/v1/athletes/{uuid.uuid4()}/career",
                 f"/v1/standings/{games.code}/NOPE", "/v1/medals/nope", f"/v1/feeds/{games.code}/nonsense",
                 "/v1/feeds/nope/medals", f"/getfeeds?seriesid={games.code}&feedtype=nonsense"):
        assert http.get(path, **bearer(medals_only)).status_code == 403, path


def test_a_record_of_a_games_the_key_may_not_read_is_answered_as_if_it_did_not_exist(games, entitle, http):
    """403 for an id that exists elsewhere and 404 for one that does not would tell a client
    which ids exist in Games it may not read."""
    other = Games.objects.create(code="ot1", name="Other Games", starts_on="2027-01-01", ends_on="2027-01-10")
    FeedDefinition.objects.create(games=other, feed_type="calendar", name="Calendar")
    FeedDefinition.objects.create(games=other, feed_type="results", name="Results")
    _, other_games_only = entitle("other-games-app", other, "calendar", "results")
    fixture = Fixture.objects.filter(games=games).first()
    athlete = Athlete.objects.filter(entry__games=games).first()
    build_file(f"{games.code}/career/{record_ids.compact(athlete.pk)}")
    for existing, made_up in ((f"/v1/fixtures/{fixture.pk}", f"/v1/fixtures/{uuid.uuid4()}"),
                              (f"/v1/athletes/{athlete.pk}/career", f"/v1/athletes/{uuid.uuid4()}/career")):
        answers = [http.get(path, **bearer(other_games_only)) for path in (existing, made_up)]
        assert [answer.status_code for answer in answers] == [404, 404], existing
        assert answers[0].json()["detail"] == answers[1].json()["detail"]


def test_an_unknown_record_id_is_answered_through_an_index_not_a_scan(games):
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("SET LOCAL enable_seqscan = off")  # the small test table would be scanned anyway
        cursor.execute("EXPLAIN " + record_games.GAMES_OF_RECORD, ["fixture", "x" * 26])
        plan = " ".join(row[0] for row in cursor.fetchall())
    assert "feed_document_by_record" in plan and "Seq Scan on feeds_feeddocument" not in plan


def test_athlete_career_is_a_public_document(games, entitle, http):
    athlete = Athlete.objects.filter(entry__games=games).first()
    doc_key = f"{games.code}/career/{record_ids.compact(athlete.pk)}"
    build_file(doc_key)
    fill_pull_cache()
    _, key = entitle("fanapp", games, "results")
    career = orjson.loads(http.get(f"/v1/athletes/{athlete.pk}/career", **bearer(key)).content)
    assert career["data"]["athlete"]["id"] == str(athlete.pk) and career["data"]["results"]


def test_a_score_rebuilds_only_that_fixtures_split_files(games):
    fixture = Fixture.objects.filter(games=games, status=Fixture.Status.SCHEDULED).order_by("starts_at").first()
    before = dict(FeedDocument.objects.values_list("doc_key", "seq"))
    entry = fixture.competitors.first().entry_id
    workflow.record_score(fixture.pk, {str(entry): "10"})
    touched = changes.handle_all().files
    for doc_key in touched:
        build_file(doc_key)
    after = dict(FeedDocument.objects.values_list("doc_key", "seq"))
    moved = {k for k in after if after[k] != before.get(k)}
    day = fixture.starts_at.date().isoformat()
    assert f"{games.code}/fixture/{record_ids.compact(fixture.pk)}" in moved
    assert f"{games.code}/calendar_day/{day}" in moved
    assert not any(k.startswith(f"{games.code}/fixture/") for k in moved - {
        f"{games.code}/fixture/{record_ids.compact(fixture.pk)}"})
    assert not any(k.startswith(f"{games.code}/calendar_day/") and not k.endswith(day) for k in moved)
    # Not even rebuilt: the scheduled fixture could move into another day, but its score does not.
    assert not any(k.startswith(f"{games.code}/calendar_day/") and not k.endswith(day) for k in touched)


def test_a_fixture_moved_to_another_day_leaves_its_old_days_file_and_joins_the_new_ones(games):
    fixture = Fixture.objects.filter(games=games, status=Fixture.Status.SCHEDULED).order_by("starts_at").first()
    old_day, new_day = fixture.starts_at.date(), fixture.starts_at.date() + timedelta(days=1)
    for day in (old_day, new_day):
        build_file(f"{games.code}/calendar_day/{day}")

    workflow.move_fixture(fixture.pk, starts_at=fixture.starts_at + timedelta(days=1))
    touched = changes.handle_all().files
    for doc_key in touched:
        build_file(doc_key)

    def shown_on(day):
        body = FeedDocument.objects.get(doc_key=f"{games.code}/calendar_day/{day}").body
        return str(fixture.pk) in {f["id"] for f in orjson.loads(bytes(body))["data"]["fixtures"]}

    assert {f"{games.code}/calendar_day/{old_day}", f"{games.code}/calendar_day/{new_day}"} <= touched
    assert not shown_on(old_day) and shown_on(new_day)
    other_days = {k for k in touched if k.startswith(f"{games.code}/calendar_day/")} - {
        f"{games.code}/calendar_day/{old_day}", f"{games.code}/calendar_day/{new_day}"}
    assert not other_days


def test_ensure_pull_cache_subscribes_every_definition_and_the_sender_fills_redis(small_games, clean_redis):
    out = StringIO()
    call_command("ensure_pull_cache", "--games", small_games.code, stdout=out)
    summary = json.loads(out.getvalue())
    assert summary["built"].get("new_version", 0) == summary["pull_files"]
    definitions = FeedDefinition.objects.filter(games=small_games, enabled=True).count()
    shared = Subscription.objects.filter(destination_id=summary["shared_destination"], active=True)
    assert shared.count() == definitions and {s.file_name_template for s in shared} == {"{doc_key}"}
    fill_pull_cache()
    for document in FeedDocument.objects.filter(games=small_games).only("doc_key", "seq")[:50]:
        assert int(clean_redis.hget(f"feed:{document.doc_key}", "v")) == document.seq
    call_command("ensure_pull_cache", "--games", small_games.code, stdout=StringIO())  # safe to repeat
    assert Subscription.objects.filter(destination_id=summary["shared_destination"]).count() == definitions
