"""Change-driven rebuilds through real Celery workers, beat and PostgreSQL."""

import threading
import time

import kombu
import psycopg
import pytest
from django.conf import settings
from django.db import connection, transaction

from devtools.waiting import wait_until
from omnium.feeds import changes
from omnium.feeds.models import FeedDocument, FeedVersion, PendingBuild
from omnium.games import workflow
from omnium.games.models import Fixture, OutboxEntry
from omnium.routing import LIVE, build_queue
from tests import child_processes
from tests.conftest import ALL_QUEUES
from tests.delivery.fixtures import webhook_settings


def seqs(games) -> dict:
    return dict(FeedDocument.objects.filter(games=games).values_list("doc_key", "seq"))


def a_fixture_between_two_nocs(games) -> Fixture:
    for fixture in Fixture.objects.filter(games=games).prefetch_related("competitors__entry__noc"):
        nocs = {c.entry.noc.code for c in fixture.competitors.all()}
        if len(nocs) >= 2:
            return fixture
    raise AssertionError("the small Games has no fixture between two NOCs")


def nocs_of(fixture) -> set[str]:
    return {c.entry.noc.code for c in fixture.competitors.all()}


def wait_for_builds_to_settle(games, timeout=15.0):
    wait_until(lambda: not OutboxEntry.objects.filter(handled_at__isnull=True).exists()
               and not PendingBuild.objects.exists(), timeout, message="all changes built")


@pytest.mark.worker
def test_one_fixture_change_rebuilds_only_the_files_containing_it(small_games, worker):
    before = seqs(small_games)
    fixture = a_fixture_between_two_nocs(small_games)
    place = fixture.competitors.first()

    workflow.record_score(fixture.pk, {place.entry_id: 5})
    wait_for_builds_to_settle(small_games)

    after = seqs(small_games)
    changed = {key for key in after if after[key] != before[key]}
    code = small_games.code
    expected = {f"{code}/calendar", f"{code}/results"} | {f"{code}/country/{noc}" for noc in nocs_of(fixture)}
    assert changed == expected, "the fixture went live (results) and has a score (calendar, countries)"
    assert len(after) > len(changed) + 3


@pytest.mark.worker
def test_a_file_changing_every_200ms_is_built_within_3s_of_its_first_change(small_games, worker):
    fixture = Fixture.objects.filter(games=small_games).first()
    entry_id = fixture.competitors.first().entry_id
    doc_key = f"{small_games.code}/calendar"
    seq_before = FeedDocument.objects.get(doc_key=doc_key).seq
    first_change_committed = None
    for score in range(1, 26):  # 5 s of changes, one every 200 ms
        workflow.record_score(fixture.pk, {entry_id: score})
        first_change_committed = first_change_committed or time.time()
        time.sleep(0.2)
        if score == 1:
            first_outbox = OutboxEntry.objects.order_by("-id").first()

    first_version = FeedVersion.objects.filter(doc_key=doc_key, seq__gt=seq_before).order_by("seq").first()
    assert first_version is not None, "the file was starved by the stream of changes"
    assert _version_contains(first_version, first_outbox)
    waited = first_version.committed_at.timestamp() - first_change_committed
    assert waited <= 3.0 + 0.5, f"first version containing the first change came {waited:.2f} s after it"


def _version_contains(version: FeedVersion, outbox: OutboxEntry) -> bool:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT pg_visible_in_snapshot(%s::xid8, %s::pg_snapshot)", [outbox.xact_id, version.snapshot]
        )
        return cursor.fetchone()[0]


def test_an_outbox_row_that_commits_late_is_still_handled(small_games):
    fixtures = list(Fixture.objects.filter(games=small_games).order_by("starts_at")[:2])
    late_written, release = threading.Event(), threading.Event()

    def slow_transaction():
        with transaction.atomic():
            workflow.record_score(fixtures[0].pk, {fixtures[0].competitors.first().entry_id: 9})
            late_written.set()
            release.wait(10)
        connection.close()

    slow = threading.Thread(target=slow_transaction)
    slow.start()
    assert late_written.wait(10)
    workflow.record_score(fixtures[1].pk, {fixtures[1].competitors.first().entry_id: 9})
    early_id = OutboxEntry.objects.get().pk  # the only committed row so far

    first = changes.handle_all()
    release.set()
    slow.join(10)
    second = changes.handle_all()

    late = OutboxEntry.objects.exclude(pk=early_id).get()
    assert late.pk < early_id, "the late row took the lower id, as a cursor reader would skip"
    assert first.rows == 1 and second.rows == 1
    assert late.handled_at is not None
    assert f"{small_games.code}/calendar" in second.files


def test_handling_an_outbox_row_twice_changes_nothing(small_games):
    fixture = Fixture.objects.filter(games=small_games).first()
    workflow.record_score(fixture.pk, {fixture.competitors.first().entry_id: 2})
    changes.handle_all()
    pending = list(PendingBuild.objects.values_list("doc_key", "generation", "due_at"))

    again = changes.handle_all()

    assert again.rows == 0
    assert list(PendingBuild.objects.values_list("doc_key", "generation", "due_at")) == pending


HINTS = build_queue(LIVE)


@pytest.mark.worker
def test_losing_the_hints_between_commit_and_build_loses_nothing(small_games, clean_redis):
    """The hint (handle_changes, on build.live) waits in RabbitMQ and the wake-ups' marks in
    Redis: both are lost (the queue purged, as a broker restart loses it, and Redis flushed).
    The sweeper builds the change from PostgreSQL."""
    fixture = Fixture.objects.filter(games=small_games).first()
    doc_key = f"{small_games.code}/calendar"
    seq_before = FeedDocument.objects.get(doc_key=doc_key).seq

    workflow.record_score(fixture.pk, {fixture.competitors.first().entry_id: 7})  # hint sent, nobody listening
    with kombu.Connection(settings.CELERY_BROKER_URL) as broker:
        channel = broker.default_channel
        wait_until(lambda: channel.queue_declare(HINTS, passive=True).message_count > 0, 5, message="the hint queued")
        channel.queue_purge(HINTS)  # the hint is gone
    clean_redis.flushdb()  # and every wake-up's mark
    worker = child_processes.start_worker(ALL_QUEUES, "after-flush")
    beat = child_processes.start_beat("beat-after-flush", OMNIUM_SWEEP_INTERVAL_S=0.5)
    try:
        wait_until(lambda: FeedDocument.objects.get(doc_key=doc_key).seq > seq_before, 15,
                   message="the sweeper built the change")
    finally:
        beat.stop()
        worker.stop()


@pytest.mark.worker
def test_killing_the_worker_between_commit_and_build_loses_nothing(small_games, clean_redis):
    doc_key = f"{small_games.code}/calendar"
    seq_before = FeedDocument.objects.get(doc_key=doc_key).seq
    # The leading edge would claim the quiet calendar at once, and the kill would land
    # mid-build (tests/operations/test_recovery.py covers that). Off, the change waits
    # out its quiet period in PostgreSQL: the window this test is about.
    doomed = child_processes.start_worker(ALL_QUEUES, "doomed", OMNIUM_BUILD_LEADING_EDGE="false")
    fixture = Fixture.objects.filter(games=small_games).first()

    workflow.record_score(fixture.pk, {fixture.competitors.first().entry_id: 8})
    wait_until(lambda: PendingBuild.objects.exists(), 5, message="the change was noted")  # waiting out its 1 s quiet
    doomed.kill()
    assert FeedDocument.objects.get(doc_key=doc_key).seq == seq_before

    survivor = child_processes.start_worker(ALL_QUEUES, "survivor")
    beat = child_processes.start_beat("beat-after-kill", OMNIUM_SWEEP_INTERVAL_S=0.5)
    try:
        wait_until(lambda: FeedDocument.objects.get(doc_key=doc_key).seq > seq_before, 15,
                   message="the change was built after the crash")
    finally:
        beat.stop()
        survivor.stop()


def test_a_builder_that_cannot_claim_a_due_file_looks_again_shortly_not_at_once(small_games, clean_redis):
    from django.utils import timezone

    from omnium.feeds import debounce, tasks
    from omnium.routing import LIVE

    doc_key = f"{small_games.code}/calendar"
    debounce.note_changes([doc_key], timezone.now() - timezone.timedelta(seconds=5), LIVE)  # overdue
    other = psycopg.connect(child_processes.database_url(), autocommit=False)
    try:  # another session is noting a change to it this instant: its row is locked
        other.execute("SELECT 1 FROM feeds_pendingbuild WHERE doc_key = %s FOR UPDATE", [doc_key])

        called_at = time.time()
        built = tasks.build_due(LIVE)

        wake_at = float(clean_redis.get(f"omnium:build-wake:{LIVE}"))
        assert built == 0
        # Measured from the call, not from now: a loaded machine may take a while to return.
        assert wake_at >= called_at + tasks.NOTHING_CLAIMED_RETRY_S - 0.01, "no immediate retry: that loops"
    finally:
        other.rollback()
        other.close()


def test_an_idle_builder_schedules_no_wake_up(small_games, clean_redis):
    from omnium.feeds import debounce, tasks
    from omnium.routing import LIVE

    built = tasks.build_due(LIVE)  # nothing is pending

    assert built == 0
    assert debounce.next_due_in([LIVE]) is None
    assert clean_redis.get(f"omnium:build-wake:{LIVE}") is None, "an idle builder polled itself"


def test_standings_follow_finished_results_not_every_live_score(small_games):
    fixture = Fixture.objects.filter(games=small_games, status=Fixture.Status.SCHEDULED).first()
    standings = f"{small_games.code}/standings"
    scores = {c.entry_id: 10 + n for n, c in enumerate(fixture.competitors.all())}

    workflow.record_score(fixture.pk, scores)
    changes.handle_all()
    pending_after_score = set(PendingBuild.objects.values_list("doc_key", flat=True))
    PendingBuild.objects.all().delete()
    workflow.finish_fixture(fixture.pk)
    changes.handle_all()
    pending_after_finish = set(PendingBuild.objects.values_list("doc_key", flat=True))
    PendingBuild.objects.all().delete()
    workflow.record_score(fixture.pk, {next(iter(scores)): 99})  # a correction re-ranks it
    changes.handle_all()
    pending_after_correction = set(PendingBuild.objects.values_list("doc_key", flat=True))

    assert f"{small_games.code}/calendar" in pending_after_score
    assert standings not in pending_after_score, "a running fixture's score changes no standings"
    assert standings in pending_after_finish
    assert standings in pending_after_correction


def award_after_a_finished_final(games) -> set[str]:
    """Finish a medal event's final, then award its gold; returns the feed types (with filter)
    of the files the award alone made pending."""
    final = Fixture.objects.filter(games=games, is_medal_fixture=True, status=Fixture.Status.SCHEDULED).first()
    workflow.record_score(final.pk, {c.entry_id: 10 + n for n, c in enumerate(final.competitors.all())})
    workflow.finish_fixture(final.pk)
    changes.handle_all()
    PendingBuild.objects.all().delete()
    workflow.award_medals(final.event_id, {final.competitors.order_by("rank").first().entry_id: "gold"})
    changes.handle_all()
    return {key.split("/", 1)[1] for key in PendingBuild.objects.values_list("doc_key", flat=True)}


def test_a_medal_award_rebuilds_the_files_that_show_medals_and_no_other(small_games):
    pending = award_after_a_finished_final(small_games)

    assert "results" in pending, "the results show the medals"
    assert not pending & {"entries", "participants", "standings", "calendar"}, pending


def test_files_built_before_medal_awards_had_their_own_kind_still_get_the_award(small_games):
    import importlib

    from omnium.feeds.models import FeedDependency

    migration = importlib.import_module("omnium.feeds.migrations.0003_medal_award_dependencies")
    FeedDependency.objects.filter(record_kind="medal_award").delete()  # as built before the change
    with connection.cursor() as cursor:
        cursor.execute(migration.FORWARD)

    assert "results" in award_after_a_finished_final(small_games)


def _claim_order(keys) -> list[str]:
    from omnium.feeds import debounce
    from omnium.routing import LIVE

    order = []
    while (claim := debounce.claim_next_due([LIVE])) is not None:
        order.append(claim.doc_key)
    return [key for key in order if key in keys]


def test_due_files_are_built_oldest_change_first_and_of_one_change_biggest_first(small_games):
    from django.utils import timezone

    from omnium.feeds import debounce
    from omnium.routing import LIVE

    now, second = timezone.now(), timezone.timedelta(seconds=1)
    by_size = list(FeedDocument.objects.filter(games=small_games).order_by("size").values_list("doc_key", "size"))
    smallest, smallest_size = by_size[0]
    # two bigger files where the smaller sorts first by name, as a tie would leave them
    middle, big = next((m, b) for m, m_size in by_size for b, b_size in by_size
                       if smallest_size < m_size < b_size and m < b)
    # `smallest`: changes 9 s and 5 s ago, due 6 s ago; `big` and `middle`: one change 8 s
    # ago, due 7 s ago. Oldest unbuilt change first, then of one change the biggest first.
    debounce.note_changes([smallest], now - 9 * second, LIVE)
    debounce.note_changes([middle, big], now - 8 * second, LIVE)
    debounce.note_changes([smallest], now - 5 * second, LIVE)

    assert _claim_order({smallest, middle, big}) == [smallest, big, middle]


def test_files_pushed_to_more_destinations_are_built_first(small_games, clean_redis):
    from django.utils import timezone

    from devtools.provisioning import provision_destination
    from omnium.feeds import debounce
    from omnium.routing import LIVE

    # The calendar is the biggest file; standings is small. Two destinations take the
    # standings, one the calendar, none the results.
    documents = FeedDocument.objects.filter(games=small_games)
    calendar, standings, results = (f"{small_games.code}/{feed}" for feed in ("calendar", "standings", "results"))
    assert documents.get(doc_key=calendar).size > documents.get(doc_key=results).size
    unreachable = webhook_settings("http://127.0.0.1:9/hook")  # never sent to: the claims are the test
    provision_destination("acme", "one", unreachable, small_games, ["standings", "calendar"])
    provision_destination("acme", "two", unreachable, small_games, ["standings"])

    now, second = timezone.now(), timezone.timedelta(seconds=1)
    debounce.note_changes([results], now - 6 * second, LIVE)  # an older change, pushed to no one
    debounce.note_changes([calendar, standings], now - 5 * second, LIVE)

    assert _claim_order({calendar, standings, results}) == [standings, calendar, results]


def test_a_country_subscription_counts_for_its_own_country_only(small_games, clean_redis):
    from django.utils import timezone

    from devtools.provisioning import provision_destination
    from omnium.feeds import debounce
    from omnium.routing import LIVE

    countries = FeedDocument.objects.filter(games=small_games, feed_type="country").order_by("-size")
    bigger, smaller = countries[0], countries[1]
    unreachable = webhook_settings("http://127.0.0.1:9/hook")
    provision_destination("acme", "one", unreachable, small_games, [("country", {"filter": smaller.filter})])

    debounce.note_changes([bigger.doc_key, smaller.doc_key], timezone.now() - timezone.timedelta(seconds=5), LIVE)

    assert _claim_order({bigger.doc_key, smaller.doc_key}) == [smaller.doc_key, bigger.doc_key]
