"""Workflow commands: any input is a WorkflowError with nothing saved, or a valid change."""

import uuid
from datetime import timedelta, timezone

import pytest
from hypothesis import given
from hypothesis import strategies as st

from devtools.generator import Generator
from omnium.games import workflow
from omnium.games.errors import WorkflowError
from omnium.games.models import Competitor, Fixture, MedalAward, OutboxEntry
from tests.fuzzing import FUZZ

ANY_VALUE = st.one_of(
    st.none(), st.booleans(), st.integers(), st.floats(), st.text(max_size=12), st.uuids(),
    st.decimals(allow_nan=True, allow_infinity=True), st.lists(st.integers(), max_size=2),
    st.sampled_from(["1.5", "-0", "1e5", "1E+999999", "sNaN", "0.0001", " 7 ", "999999", "gold"]),
)
ZONES = st.none() | st.timedeltas(timedelta(hours=-23), timedelta(hours=23)).map(timezone)


@pytest.fixture
def games(db):
    return Generator("small", seed=5).run()


def saved(games):
    return (
        list(Competitor.objects.filter(fixture__games=games).order_by("pk").values_list("pk", "score", "rank")),
        list(Fixture.objects.filter(games=games).order_by("pk").values_list(
            "pk", "status", "result_status", "starts_at", "venue", "changed_at")),
        list(MedalAward.objects.order_by("pk").values_list("pk", "medal")),
        OutboxEntry.objects.count(),
    )


def refused_or_changed(games, command) -> bool:
    """Run `command`; True if it changed something, False if it was refused leaving all as it was."""
    before = saved(games)
    try:
        command()
    except WorkflowError as refusal:
        assert str(refusal)
        assert saved(games) == before, "a refused command saved something"
        return False
    return True


@FUZZ
@given(data=st.data())
def test_any_scores_are_refused_clearly_or_recorded_as_given(games, data):
    fixture = data.draw(st.sampled_from(list(Fixture.objects.filter(games=games)[:20])))
    entries = [str(c.entry_id) for c in fixture.competitors.all()]
    fixture_id = data.draw(st.sampled_from([fixture.pk, str(fixture.pk), uuid.uuid4()]) | ANY_VALUE)
    keys = st.sampled_from(entries) | st.uuids() | st.integers() | st.text(max_size=12)
    scores = data.draw(st.dictionaries(keys, ANY_VALUE, max_size=3))

    if refused_or_changed(games, lambda: workflow.record_score(fixture_id, scores)):
        stored = dict(Competitor.objects.filter(fixture=fixture).values_list("entry_id", "score"))
        for entry_id, value in scores.items():
            assert str(stored[uuid.UUID(str(entry_id))]) == str(workflow._parse_score(value))


@FUZZ
@given(data=st.data())
def test_any_move_is_refused_clearly_or_saves_exactly_the_new_time_and_venue(games, data):
    fixture = data.draw(st.sampled_from(list(Fixture.objects.filter(games=games)[:20])))
    starts_at = data.draw(st.none() | st.datetimes(timezones=ZONES) | ANY_VALUE)
    venue = data.draw(st.none() | st.text(max_size=130) | ANY_VALUE)

    if refused_or_changed(games, lambda: workflow.move_fixture(fixture.pk, starts_at=starts_at, venue=venue)):
        moved = Fixture.objects.get(pk=fixture.pk)
        assert starts_at is None or moved.starts_at == starts_at
        assert venue is None or moved.venue == venue.strip()


@FUZZ
@given(data=st.data())
def test_any_medals_are_refused_clearly_or_awarded_as_given(games, data):
    event = data.draw(st.sampled_from(list(games.medal_events.order_by("code")[:10])))
    entries = [str(pk) for pk in event.entries.values_list("pk", flat=True)]
    event_id = data.draw(st.sampled_from([event.pk, uuid.uuid4()]) | ANY_VALUE)
    medals = data.draw(st.dictionaries(st.sampled_from(entries or ["x"]) | st.uuids(),
                                       st.sampled_from(["gold", "silver", "bronze"]) | ANY_VALUE, max_size=3))

    if refused_or_changed(games, lambda: workflow.award_medals(event_id, medals)):
        assert dict(MedalAward.objects.filter(event=event).values_list("entry_id", "medal")) == {
            uuid.UUID(str(k)): v for k, v in medals.items()}
