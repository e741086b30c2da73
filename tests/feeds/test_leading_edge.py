"""The leading edge: the first change to a quiet file is built at once, what follows is
debounced. Rules on PostgreSQL alone first, then through real Celery workers."""

import importlib.util
import time
from collections import Counter
from datetime import timedelta
from pathlib import Path

import pytest
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.db import connection
from django.test import override_settings
from django.utils import timezone

import omnium
from devtools.waiting import wait_until
from omnium.feeds import debounce, tasks
from omnium.feeds.models import FeedDocument, FeedVersion, PendingBuild
from omnium.games import workflow
from omnium.games.models import Fixture, OutboxEntry
from omnium.routing import LIVE
from tests import child_processes
from tests.conftest import ALL_QUEUES

QUIET = timedelta(seconds=settings.OMNIUM["BUILD_QUIET_S"])


def quiet_calendar(games) -> str:
    """The calendar, as if its last version were built 10 s ago."""
    return calendar_built_ago(games, timedelta(seconds=10))


def calendar_built_ago(games, ago: timedelta) -> str:
    doc_key = f"{games.code}/calendar"
    FeedDocument.objects.filter(doc_key=doc_key).update(built_at=timezone.now() - ago)
    return doc_key


def test_the_first_change_to_a_quiet_file_is_due_at_once(small_games):
    calendar = quiet_calendar(small_games)

    debounce.note_changes([calendar], timezone.now(), LIVE)

    claim = debounce.claim_next_due([LIVE])
    assert claim is not None and claim.doc_key == calendar


def test_a_build_loop_notes_changes_recorded_while_it_runs(small_games, clean_redis):
    """No handle_changes task runs here (no worker): only the build loop itself reads the
    outbox, as it must when its worker's slots are all busy building."""
    doc_key = quiet_calendar(small_games)
    seq_before = FeedDocument.objects.get(doc_key=doc_key).seq
    fixture = Fixture.objects.filter(games=small_games).order_by("starts_at", "id").first()
    workflow.record_score(fixture.pk, {fixture.competitors.first().entry_id: 4242})

    tasks.build_due(LIVE)

    assert FeedDocument.objects.get(doc_key=doc_key).seq > seq_before
    assert not OutboxEntry.objects.filter(handled_at__isnull=True).exists()


def test_a_change_within_the_quiet_period_after_a_version_waits_for_quiet(small_games):
    calendar = calendar_built_ago(small_games, timedelta(seconds=0.1))
    changed_at = timezone.now()

    [due] = debounce.note_changes([calendar], changed_at, LIVE)

    assert due == changed_at + QUIET
    assert debounce.claim_next_due([LIVE]) is None


def test_changes_noted_before_the_claim_ride_in_the_leading_build(small_games):
    calendar = quiet_calendar(small_games)
    first = timezone.now() - timedelta(seconds=0.5)

    debounce.note_changes([calendar], first, LIVE)
    debounce.note_changes([calendar], first + timedelta(seconds=0.2), LIVE)

    claim = debounce.claim_next_due([LIVE])
    assert claim is not None and claim.doc_key == calendar
    assert claim.generation == 2, "one build covers both changes"


def test_a_change_noted_during_the_leading_build_is_built_after_it_once_quiet(small_games):
    calendar = quiet_calendar(small_games)
    debounce.note_changes([calendar], timezone.now(), LIVE)
    claim = debounce.claim_next_due([LIVE])
    during_build = timezone.now()

    debounce.note_changes([calendar], during_build, LIVE)
    still_pending = debounce.finish(claim)

    assert still_pending
    assert PendingBuild.objects.get(doc_key=calendar).due_at == during_build + QUIET
    assert debounce.claim_next_due([LIVE]) is None, "the follower waits for the quiet period"


@override_settings(OMNIUM={**settings.OMNIUM, "BUILD_LEADING_EDGE": False})
def test_with_the_leading_edge_off_a_quiet_file_waits_for_the_quiet_period(small_games):
    calendar = quiet_calendar(small_games)
    changed_at = timezone.now()

    [due] = debounce.note_changes([calendar], changed_at, LIVE)

    assert due == changed_at + QUIET
    assert debounce.claim_next_due([LIVE]) is None


def settings_read_from_the_environment() -> dict:
    """omnium/settings.py executed afresh, as a process starting now would read it."""
    spec = importlib.util.spec_from_file_location("settings_at_start", Path(omnium.__file__).parent / "settings.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.OMNIUM


@pytest.mark.parametrize(("value", "leading_edge"), [("false", False), ("0", False), ("Off", False), ("true", True)])
def test_the_leading_edge_setting_reads_yes_and_no(monkeypatch, value, leading_edge):
    monkeypatch.setenv("OMNIUM_BUILD_LEADING_EDGE", value)

    assert settings_read_from_the_environment()["BUILD_LEADING_EDGE"] is leading_edge


def test_a_misspelt_leading_edge_setting_stops_the_process_at_start(monkeypatch):
    monkeypatch.setenv("OMNIUM_BUILD_LEADING_EDGE", "flase")  # env.bool would read this as False

    with pytest.raises(ImproperlyConfigured, match="OMNIUM_BUILD_LEADING_EDGE"):
        settings_read_from_the_environment()


# --- through real workers ------------------------------------------------------------------

def wait_until_quiet(games, quiet_s: float) -> None:
    """The fixture just built every file: wait until none has a version within `quiet_s`."""
    latest = FeedDocument.objects.filter(games=games).order_by("-built_at").values_list("built_at", flat=True)[0]
    time.sleep(max(0.0, quiet_s - (timezone.now() - latest).total_seconds()) + 0.05)


def calendar_versions_after(games, seq: int):
    return FeedVersion.objects.filter(doc_key=f"{games.code}/calendar", seq__gt=seq).order_by("seq")


def lone_change_to_built_s(games) -> float:
    """Score one fixture; seconds from the change's commit to the calendar's next version."""
    seq_before = FeedDocument.objects.get(doc_key=f"{games.code}/calendar").seq
    fixture = Fixture.objects.filter(games=games).first()
    workflow.record_score(fixture.pk, {fixture.competitors.first().entry_id: 4})
    committed = OutboxEntry.objects.latest("id").created_at
    version = wait_until(lambda: calendar_versions_after(games, seq_before).first(), 15, message="the change built")
    return (version.committed_at - committed).total_seconds()


@pytest.mark.worker
def test_a_lone_change_to_a_quiet_file_is_built_without_waiting_for_the_quiet_period(small_games, clean_redis):
    worker = child_processes.start_worker(ALL_QUEUES, "leading-edge", OMNIUM_BUILD_QUIET_S=3, OMNIUM_BUILD_MAX_WAIT_S=6)
    try:
        wait_until_quiet(small_games, 3)

        waited = lone_change_to_built_s(small_games)
    finally:
        worker.stop()
    assert waited < 1.0, f"built {waited:.2f} s after the change; the quiet period is 3 s"


@pytest.mark.worker
def test_with_the_leading_edge_off_a_lone_change_waits_for_the_quiet_period(small_games, clean_redis):
    worker = child_processes.start_worker(ALL_QUEUES, "no-leading-edge", OMNIUM_BUILD_LEADING_EDGE="false",
                                    OMNIUM_BUILD_QUIET_S=2, OMNIUM_BUILD_MAX_WAIT_S=4)
    try:
        wait_until_quiet(small_games, 2)

        waited = lone_change_to_built_s(small_games)
    finally:
        worker.stop()
    assert waited >= 2.0, f"built {waited:.2f} s after the change, before its 2 s quiet period"


def versions_per_file(games, after_seq: int) -> Counter:
    new = FeedVersion.objects.filter(seq__gt=after_seq, doc_key__startswith=f"{games.code}/")
    return Counter(new.values_list("doc_key", flat=True))


def contains(version: FeedVersion, outbox: OutboxEntry) -> bool:
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_visible_in_snapshot(%s::xid8, %s::pg_snapshot)", [outbox.xact_id, version.snapshot])
        return cursor.fetchone()[0]


@pytest.mark.worker
def test_a_burst_to_a_quiet_file_is_built_at_once_then_batched_into_one_more_version(small_games, worker):
    # Defaults: 1 s quiet, 2 s cap. Eight scores 150 ms apart: 1.05 s of burst.
    wait_until_quiet(small_games, settings.OMNIUM["BUILD_QUIET_S"])
    seq_before = FeedVersion.objects.order_by("-seq").values_list("seq", flat=True).first()
    fixture = Fixture.objects.filter(games=small_games).first()
    entry_id = fixture.competitors.first().entry_id

    for score in range(1, 9):
        workflow.record_score(fixture.pk, {entry_id: score})
        if score == 1:
            first_change = OutboxEntry.objects.latest("id")
        time.sleep(0.15)
    last_change = OutboxEntry.objects.latest("id")
    wait_until(lambda: not OutboxEntry.objects.filter(handled_at__isnull=True).exists()
               and not PendingBuild.objects.exists(), 15, message="the burst built")

    calendar = list(calendar_versions_after(small_games, seq_before))
    led_by = (calendar[0].committed_at - first_change.created_at).total_seconds()
    # Debounced from its start, the burst's first version came 1 s after its last change: 2.05 s.
    assert led_by < 0.8, f"the burst's first change waited {led_by:.2f} s for its first version"
    assert contains(calendar[-1], last_change), "the burst's last change was built"
    per_file = versions_per_file(small_games, seq_before)
    allowed = 2 + stalls(first_change, last_change)
    assert max(per_file.values()) <= allowed, f"more than one version beyond the leading one: {per_file}"


def stalls(first: OutboxEntry, last: OutboxEntry) -> int:
    """How many more versions the debounce rule allows when the machine stalled the burst: a
    pause of a quiet period between two changes ends the burst (the next change leads again),
    and a change noted a quiet period after its commit is due at once. Both seen once in CI,
    with three other test processes on two cores; 0 on an unloaded machine."""
    quiet = timedelta(seconds=settings.OMNIUM["BUILD_QUIET_S"])
    changes = list(OutboxEntry.objects.filter(id__gte=first.id, id__lte=last.id).order_by("id"))
    gaps = sum(1 for a, b in zip(changes, changes[1:]) if b.created_at - a.created_at >= quiet)
    late = sum(1 for change in changes if change.handled_at - change.created_at >= quiet)
    return gaps + late


def test_a_live_file_goes_before_bulk_first_builds_which_go_first_come_first_served(small_games):
    from omnium.routing import BULK

    earlier = [f"{small_games.code}/fixture/a{n}" for n in range(100)]  # never built: owed a first build
    later = [f"{small_games.code}/fixture/b{n}" for n in range(100)]
    assert debounce.note_first_builds(earlier, BULK) == len(earlier)
    assert debounce.note_first_builds(later, BULK) == len(later)
    calendar = f"{small_games.code}/calendar"
    debounce.note_changes([calendar], timezone.now() - timedelta(seconds=5), LIVE)

    # As many claims as rows: a claim expires after OMNIUM_CLAIM_TTL_S, and on a loaded machine
    # claiming on until none is due reached the first claims again.
    claims = [debounce.claim_next_due([LIVE, BULK]).doc_key for _ in range(1 + len(earlier) + len(later))]

    assert claims[0] == calendar
    assert set(claims[1:101]) == set(earlier) and set(claims[101:]) == set(later)
    assert debounce.note_first_builds([calendar, earlier[0]], BULK) == 0, "built or pending already"
