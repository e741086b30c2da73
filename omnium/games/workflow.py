"""Workflow commands: every change to the Games data goes through one of these.

Each command runs in one transaction that also writes an outbox row naming the records it
touched, and refuses bad input with a WorkflowError before anything is saved. A command that
changes nothing writes nothing, so a file's "last updated" never moves without a real change.
"""

from datetime import UTC, datetime
from decimal import Decimal, InvalidOperation

from django.core.exceptions import ValidationError

from omnium.encoding.xml_chars import first_not_in_xml
from omnium.games import statjobs
from omnium.games.database_restarts import workflow_command
from omnium.games.errors import WorkflowError
from omnium.games.models import (
    Athlete,
    ClockTimestamp,
    Competitor,
    Entry,
    Fixture,
    MedalAward,
    MedalEvent,
    Team,
)
from omnium.games.outbox import day_record, record_change
from omnium.routing import LIVE

MAX_SCORE = Decimal("999999")
MEDALS = {choice.value for choice in MedalAward.Medal}


def _locked(model, record_id, what: str):
    try:
        return model.objects.select_for_update().get(pk=record_id)
    except (model.DoesNotExist, ValidationError, ValueError, TypeError):
        raise WorkflowError(f"unknown {what} {record_id!r}") from None


def _touch(record) -> None:
    """Mark a record as really changed now (database clock, like every other time stamp)."""
    type(record).objects.filter(pk=record.pk).update(changed_at=ClockTimestamp())


def _parse_score(value) -> Decimal:
    try:
        score = Decimal(str(value))
    except (InvalidOperation, ValueError):
        raise WorkflowError(f"score {value!r} is not a number") from None
    if not score.is_finite() or score < 0 or score > MAX_SCORE:
        raise WorkflowError(f"score {value!r} is impossible: it must be between 0 and {MAX_SCORE}")
    if score != score.quantize(Decimal("0.001")):
        raise WorkflowError(f"score {value!r} has more than 3 decimal places")
    return score.quantize(Decimal("0.001"))


def _text(field: str, value, max_length: int) -> str:
    """`value` stripped, or WorkflowError naming `field`: every text ends up in XML files too,
    and one NUL there makes the whole file unreadable for every client."""
    if not isinstance(value, str):
        raise WorkflowError(f"the {field} must be text, not {type(value).__name__}")
    text = value.strip()
    if not text:
        raise WorkflowError(f"the {field} cannot be blank")
    refused = first_not_in_xml(text)
    if refused is not None:
        position, character = refused
        raise WorkflowError(f"the {field} contains a character XML cannot carry (U+{ord(character):04X} at "
                            f"position {position})")
    if len(text) > max_length:
        raise WorkflowError(f"the {field} is longer than {max_length} characters")
    return text


def _in_utc(moment: datetime) -> datetime:
    """`moment` in UTC, as every time is stored (PostgreSQL cannot even parse an offset with
    seconds, such as +00:00:00.000001, which Python allows)."""
    if moment.utcoffset() is None:
        raise WorkflowError("the start time must carry a time zone")
    try:
        return moment.astimezone(UTC)
    except OverflowError:
        raise WorkflowError(f"the start time {moment.isoformat()} is out of range") from None


def _competitors_by_entry(fixture: Fixture) -> dict[str, Competitor]:
    return {str(c.entry_id): c for c in fixture.competitors.select_for_update()}


@workflow_command
def record_score(fixture_id, scores: dict, lane: str = LIVE) -> Fixture:
    """Set the scores of a fixture's competitors ({entry id: score}); a scheduled fixture goes live."""
    fixture = _locked(Fixture, fixture_id, "fixture")
    if fixture.result_status == Fixture.ResultStatus.OFFICIAL:
        raise WorkflowError(f"fixture {fixture.pk} has an official result; its scores are final")
    if not scores:
        raise WorkflowError("no scores given")
    places = _competitors_by_entry(fixture)
    parsed = {}
    for entry_id, value in scores.items():
        if str(entry_id) not in places:
            raise WorkflowError(f"entry {entry_id} does not compete in fixture {fixture.pk}")
        parsed[str(entry_id)] = _parse_score(value)
    changed = [places[key] for key, score in parsed.items() if places[key].score != score]
    for place in changed:
        place.score = parsed[str(place.entry_id)]
    Competitor.objects.bulk_update(changed, ["score"])
    if fixture.status == Fixture.Status.FINISHED and changed:
        _rank(fixture)
    went_live = fixture.status == Fixture.Status.SCHEDULED
    if went_live:
        Fixture.objects.filter(pk=fixture.pk).update(status=Fixture.Status.LIVE)
    if changed or went_live:
        _touch(fixture)
        records = [("fixture", fixture.pk)]
        if fixture.status == Fixture.Status.FINISHED:
            records.append(("fixture_result", fixture.pk))  # a corrected result re-ranks it
        record_change(fixture.games, "score_recorded", records, lane)
    return fixture


def _rank(fixture: Fixture) -> None:
    """Competition ranking (1, 2, 2, 4) by score, in the event's direction."""
    places = list(fixture.competitors.select_related(None))
    if any(place.score is None for place in places):
        raise WorkflowError(f"fixture {fixture.pk} cannot be ranked: not every competitor has a score")
    higher_wins = fixture.event.higher_is_better
    ordered = sorted(places, key=lambda p: -p.score if higher_wins else p.score)
    for index, place in enumerate(ordered):
        tied = index and place.score == ordered[index - 1].score
        place.rank = ordered[index - 1].rank if tied else index + 1
    Competitor.objects.bulk_update(ordered, ["rank"])


@workflow_command
def finish_fixture(fixture_id, lane: str = LIVE) -> Fixture:
    """End a fixture: rank its competitors and publish the result as provisional."""
    fixture = _locked(Fixture, fixture_id, "fixture")
    if fixture.status == Fixture.Status.FINISHED:
        raise WorkflowError(f"fixture {fixture.pk} is already finished")
    _rank(fixture)
    Fixture.objects.filter(pk=fixture.pk).update(
        status=Fixture.Status.FINISHED, result_status=Fixture.ResultStatus.PROVISIONAL
    )
    _touch(fixture)
    record_change(fixture.games, "fixture_finished", [("fixture", fixture.pk), ("fixture_result", fixture.pk)], lane)
    return fixture


@workflow_command
def make_official(fixture_id, lane: str = LIVE) -> Fixture:
    """Confirm a finished fixture's provisional result."""
    fixture = _locked(Fixture, fixture_id, "fixture")
    if fixture.status != Fixture.Status.FINISHED:
        raise WorkflowError(f"fixture {fixture.pk} is {fixture.status}; only a finished result can be made official")
    if fixture.result_status == Fixture.ResultStatus.OFFICIAL:
        return fixture
    Fixture.objects.filter(pk=fixture.pk).update(result_status=Fixture.ResultStatus.OFFICIAL)
    _touch(fixture)
    record_change(fixture.games, "result_official", [("fixture", fixture.pk)], lane)
    return fixture


@workflow_command
def award_medals(event_id, medals: dict, lane: str = LIVE) -> MedalEvent:
    """Award a medal event's medals ({entry id: "gold" | "silver" | "bronze"})."""
    event = _locked(MedalEvent, event_id, "medal event")
    final = event.fixtures.filter(is_medal_fixture=True).first()
    if final is None or final.status != Fixture.Status.FINISHED:
        raise WorkflowError(f"medal event {event.code} has no result yet: its medal fixture is not finished")
    entries = {str(e.pk): e for e in event.entries.filter(status=Entry.Status.ENTERED)}
    for entry_id, medal in medals.items():
        if str(entry_id) not in entries:
            raise WorkflowError(f"entry {entry_id} is not entered in medal event {event.code}")
        if medal not in MEDALS:
            raise WorkflowError(f"{medal!r} is not a medal: use one of {sorted(MEDALS)}")
    if not medals:
        raise WorkflowError("no medals given")
    event.awards.all().delete()
    MedalAward.objects.bulk_create(
        MedalAward(event=event, entry=entries[str(key)], medal=medal) for key, medal in medals.items()
    )
    _touch(event)
    # "medal_award", not "unit": only the files that show medals depend on it. Naming the unit
    # rebuilt every file that lists events (entries, participants, standings: 1-2 s each under
    # load, all unchanged) ahead of the medals file.
    record_change(event.games, "medals_awarded", [("medal_award", event.pk)], lane)
    statjobs.enqueue(event.games, "medal_standings", lane, fixture=final, event=event)
    return event


@workflow_command
def add_entry(event_id, *, athlete_id=None, team_id=None, lane: str = LIVE) -> Entry:
    """Enter an athlete (individual event) or a team (team event) in a medal event."""
    event = _locked(MedalEvent, event_id, "medal event")
    if (athlete_id is None) == (team_id is None):
        raise WorkflowError("give exactly one of athlete_id or team_id")
    if event.is_team and team_id is None:
        raise WorkflowError(f"{event.code} is a team event: enter a team")
    if not event.is_team and athlete_id is None:
        raise WorkflowError(f"{event.code} is an individual event: enter an athlete")
    competitor = _locked(Team, team_id, "team") if team_id else _locked(Athlete, athlete_id, "athlete")
    entry, created = Entry.objects.get_or_create(
        event=event, games=event.games, athlete_id=athlete_id, team_id=team_id,
        defaults={"noc": competitor.noc},
    )
    if not created and entry.status == Entry.Status.ENTERED:
        return entry
    if not created:
        Entry.objects.filter(pk=entry.pk).update(status=Entry.Status.ENTERED)
        _touch(entry)
    record_change(event.games, "entry_added", _entry_records(entry), lane)
    return entry


@workflow_command
def withdraw_entry(entry_id, lane: str = LIVE) -> Entry:
    entry = _locked(Entry, entry_id, "entry")
    if entry.status == Entry.Status.WITHDRAWN:
        return entry
    Entry.objects.filter(pk=entry.pk).update(status=Entry.Status.WITHDRAWN)
    _touch(entry)
    record_change(entry.games, "entry_withdrawn", _entry_records(entry), lane)
    return entry


def _entry_records(entry: Entry):
    return [("entry", entry.pk), ("unit", entry.event_id), ("noc", entry.noc_id)]


@workflow_command
def move_fixture(fixture_id, *, starts_at: datetime | None = None, venue: str | None = None,
                 lane: str = LIVE) -> Fixture:
    """Move a fixture to another time and/or venue."""
    fixture = _locked(Fixture, fixture_id, "fixture")
    if starts_at is None and venue is None:
        raise WorkflowError("give a new start time or a new venue")
    if starts_at is not None and not isinstance(starts_at, datetime):
        raise WorkflowError(f"the start time must be a datetime, not {type(starts_at).__name__}")
    if starts_at is not None:
        starts_at = _in_utc(starts_at)
    if venue is not None:
        venue = _text("venue", venue, Fixture._meta.get_field("venue").max_length)
    if fixture.status != Fixture.Status.SCHEDULED:
        raise WorkflowError(f"fixture {fixture.pk} is {fixture.status}; only a scheduled fixture can move")
    updates = {}
    if starts_at is not None and starts_at != fixture.starts_at:
        updates["starts_at"] = starts_at
    if venue is not None and venue != fixture.venue:
        updates["venue"] = venue
    if updates:
        Fixture.objects.filter(pk=fixture.pk).update(**updates, changed_at=ClockTimestamp())
        records = [("fixture", fixture.pk)]  # the files that show it, its old day's among them
        if "starts_at" in updates:
            records.append(day_record(fixture.games_id, starts_at.date()))  # the day it joins
        record_change(fixture.games, "fixture_moved", records, lane)
    return fixture
