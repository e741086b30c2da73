"""Workflow commands: changes with their outbox rows, and refusals that save nothing."""

import uuid

import pytest

from devtools.generator import Generator
from omnium.games import workflow
from omnium.games.errors import WorkflowError
from omnium.games.models import Competitor, Entry, Fixture, MedalAward, MedalEvent, OutboxEntry, StatJob


@pytest.fixture
def games(transactional_db):
    return Generator("small", seed=3).run()


def saved_state(games):
    return (
        list(Competitor.objects.filter(fixture__games=games).order_by("pk").values_list("pk", "score", "rank")),
        list(Fixture.objects.filter(games=games).order_by("pk").values_list("pk", "status", "result_status", "changed_at")),
        list(MedalAward.objects.order_by("pk").values_list("pk", "medal")),
        OutboxEntry.objects.count(),
        StatJob.objects.count(),
    )


def test_recording_a_score_writes_the_change_and_its_outbox_row(games):
    fixture = Fixture.objects.filter(games=games).first()
    place = fixture.competitors.first()

    workflow.record_score(fixture.pk, {place.entry_id: "12.5"})

    place.refresh_from_db()
    fixture.refresh_from_db()
    assert str(place.score) == "12.500"
    assert fixture.status == Fixture.Status.LIVE
    outbox = OutboxEntry.objects.get()
    assert outbox.records == [["fixture", str(fixture.pk)]] and outbox.lane == "live"


def test_the_same_score_again_is_no_change(games):
    fixture = Fixture.objects.filter(games=games).first()
    place = fixture.competitors.first()
    workflow.record_score(fixture.pk, {place.entry_id: 3})
    fixture.refresh_from_db()

    workflow.record_score(fixture.pk, {place.entry_id: 3})

    assert OutboxEntry.objects.count() == 1
    assert Fixture.objects.get(pk=fixture.pk).changed_at == fixture.changed_at


@pytest.mark.parametrize("fixture_id, message", [
    (uuid.uuid4(), "unknown fixture"),
    ("not-a-uuid", "unknown fixture"),
])
def test_a_command_naming_an_unknown_fixture_saves_nothing(games, fixture_id, message):
    before = saved_state(games)
    with pytest.raises(WorkflowError, match=message):
        workflow.record_score(fixture_id, {uuid.uuid4(): 1})
    assert saved_state(games) == before


@pytest.mark.parametrize("score, message", [
    (-1, "impossible"), ("abc", "not a number"), ("NaN", "impossible"), (10**7, "impossible"),
    ("1.0001", "decimal places"),
])
def test_an_impossible_score_is_refused_and_saves_nothing(games, score, message):
    fixture = Fixture.objects.filter(games=games).first()
    places = list(fixture.competitors.all())
    before = saved_state(games)
    with pytest.raises(WorkflowError, match=message):
        # the first score is valid: the refusal must also undo it
        workflow.record_score(fixture.pk, {places[0].entry_id: 1, places[1].entry_id: score})
    assert saved_state(games) == before


def test_a_score_for_an_entry_not_in_the_fixture_is_refused(games):
    fixture = Fixture.objects.filter(games=games).first()
    stranger = Entry.objects.filter(games=games).exclude(competitions__fixture=fixture).first()
    before = saved_state(games)
    with pytest.raises(WorkflowError, match="does not compete"):
        workflow.record_score(fixture.pk, {stranger.pk: 1})
    assert saved_state(games) == before


def test_medals_for_a_unit_without_a_result_are_refused_and_save_nothing(games):
    event = MedalEvent.objects.filter(games=games).first()
    entry = event.entries.first()
    before = saved_state(games)
    with pytest.raises(WorkflowError, match="has no result yet"):
        workflow.award_medals(event.pk, {entry.pk: "gold"})
    assert saved_state(games) == before


def finish_final(event):
    final = event.fixtures.get(is_medal_fixture=True)
    scores = {c.entry_id: 10 + n for n, c in enumerate(final.competitors.all())}
    workflow.record_score(final.pk, scores)
    workflow.finish_fixture(final.pk)
    return final


def test_finishing_ranks_competitors_in_the_events_direction(games):
    event = MedalEvent.objects.filter(games=games, higher_is_better=True).first()
    final = finish_final(event)
    ranked = list(final.competitors.order_by("rank").values_list("score", flat=True))
    assert ranked == sorted(ranked, reverse=True)
    assert Fixture.objects.get(pk=final.pk).result_status == Fixture.ResultStatus.PROVISIONAL


def test_awarding_medals_queues_a_live_stat_job_with_the_change(games):
    event = MedalEvent.objects.filter(games=games).first()
    final = finish_final(event)
    winner = final.competitors.get(rank=1).entry

    workflow.award_medals(event.pk, {winner.pk: "gold"})

    job = StatJob.objects.get()
    assert (job.stat, job.lane, job.fixture_id, job.state) == ("medal_standings", "live", final.pk, "pending")
    assert OutboxEntry.objects.filter(action="medals_awarded").exists()


def test_an_unknown_medal_is_refused(games):
    event = MedalEvent.objects.filter(games=games).first()
    final = finish_final(event)
    before = saved_state(games)
    with pytest.raises(WorkflowError, match="not a medal"):
        workflow.award_medals(event.pk, {final.competitors.first().entry_id: "platinum"})
    assert saved_state(games) == before


def test_an_official_result_cannot_be_rescored(games):
    event = MedalEvent.objects.filter(games=games).first()
    final = finish_final(event)
    workflow.make_official(final.pk)
    with pytest.raises(WorkflowError, match="official"):
        workflow.record_score(final.pk, {final.competitors.first().entry_id: 1})


def test_moving_a_started_fixture_is_refused(games):
    fixture = Fixture.objects.filter(games=games).first()
    workflow.record_score(fixture.pk, {fixture.competitors.first().entry_id: 1})
    with pytest.raises(WorkflowError, match="only a scheduled fixture can move"):
        workflow.move_fixture(fixture.pk, venue="Elsewhere")


def test_withdrawing_and_re_adding_an_entry_names_entry_unit_and_noc(games):
    entry = Entry.objects.filter(games=games, athlete__isnull=False).first()
    workflow.withdraw_entry(entry.pk)
    workflow.add_entry(entry.event_id, athlete_id=entry.athlete_id)
    kinds = [sorted(kind for kind, _ in row.records) for row in OutboxEntry.objects.order_by("id")]
    assert kinds == [["entry", "noc", "unit"], ["entry", "noc", "unit"]]
    assert Entry.objects.get(pk=entry.pk).status == Entry.Status.ENTERED


@pytest.mark.parametrize("venue, message", [
    ("Hall\x00A", r"the venue contains a character XML cannot carry \(U\+0000 at position 4\)"),
    ("Hall\x0cA", r"the venue contains a character XML cannot carry \(U\+000C"),
    ("Hall \ufffe", r"the venue contains a character XML cannot carry \(U\+FFFE"),
    ("H" * 121, "the venue is longer than 120 characters"),
    (42, "the venue must be text, not int"),
])
def test_a_venue_xml_cannot_carry_is_refused_naming_the_field_and_saves_nothing(games, venue, message):
    fixture = Fixture.objects.filter(games=games, status=Fixture.Status.SCHEDULED).first()
    before = saved_state(games)
    with pytest.raises(WorkflowError, match=message):
        workflow.move_fixture(fixture.pk, venue=venue)
    assert saved_state(games) == before
    assert Fixture.objects.get(pk=fixture.pk).venue == fixture.venue
