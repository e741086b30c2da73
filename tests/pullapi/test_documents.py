import json
from io import StringIO

import orjson
from django.core.management import call_command

from omnium.clients.models import Subscription
from omnium.feeds import changes, record_ids
from omnium.feeds.builder import build_file
from omnium.feeds.models import FeedDefinition, FeedDocument
from omnium.games import workflow
from omnium.games.models import Athlete, Fixture, MedalEvent
from tests.pullapi.conftest import bearer, fill_pull_cache


def test_public_documents_need_a_key_but_no_entitlement(games, entitle, http):
    _, key = entitle("fanapp", games, "medals")
    fixture = Fixture.objects.filter(games=games).first()
    unit = MedalEvent.objects.filter(games=games).order_by("code").first()
    for path in (f"/v1/fixtures/{fixture.pk}", f"/v1/standings/{games.code}/{unit.code}", f"/v1/medals/{games.code}"):
        assert http.get(path).status_code == 401, path
        response = http.get(path, **bearer(key))
        assert response.status_code == 200, path
    fixture_doc = orjson.loads(http.get(f"/v1/fixtures/{fixture.pk}", **bearer(key)).content)
    assert fixture_doc["data"]["fixture"]["id"] == str(fixture.pk)
    assert http.get(f"/v1/standings/{games.code}/NOPE", **bearer(key)).status_code == 404


def test_athlete_career_is_a_public_document(games, entitle, http):
    athlete = Athlete.objects.filter(entry__games=games).first()
    doc_key = f"{games.code}/career/{record_ids.compact(athlete.pk)}"
    build_file(doc_key)
    fill_pull_cache()
    _, key = entitle("fanapp", games, "medals")
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
