"""A build worker's warm shutdown (issue 40): SIGTERM to its main process, as systemd's
KillMode=mixed sends it, while a build is in hand. The build finishes, no next file is claimed,
and another worker builds the rest without a sweep; a build that outlasts the stop deadline is
recorded as failed, naming its file, and its claim is given back.

A lock on the files' table holds the build in hand for as long as the test needs. No beat
runs: its sweep would make up for a lost wake-up and hide what these tests look for."""

import threading
import time

import psycopg
import pytest

from devtools.waiting import wait_until
from omnium.feeds.models import PendingBuild
from omnium.games import workflow
from omnium.routing import LIVE_QUEUES
from tests import child_processes
from tests.feeds.test_change_driven_builds import a_fixture_between_two_nocs, seqs, wait_for_builds_to_settle

pytestmark = pytest.mark.worker


class LockedFiles:
    """The files' table locked against writes by a connection of the test's own (`lock`), until
    `release`: a build waits at its commit, while changes still become pending builds (reads)."""

    def __init__(self):
        self.locker = psycopg.connect(child_processes.database_url(), autocommit=False)
        self.watcher = psycopg.connect(child_processes.database_url(), autocommit=True)

    def lock(self) -> None:
        self.locker.execute("LOCK TABLE feeds_feeddocument IN EXCLUSIVE MODE")

    def waiting(self) -> list[str]:
        """The statements of other connections waiting on the lock."""
        return [row[0] for row in self.watcher.execute(
            "SELECT query FROM pg_stat_activity WHERE datname = current_database()"
            " AND wait_event_type = 'Lock' AND pid <> pg_backend_pid()")]

    def release(self) -> None:
        self.locker.rollback()

    def close(self) -> None:
        self.locker.close()
        self.watcher.close()


@pytest.fixture
def locked_files(transactional_db):
    locked = LockedFiles()
    yield locked
    locked.close()


def _stop_in_background(worker) -> threading.Thread:
    stopper = threading.Thread(target=worker.stop, kwargs={"timeout": 30, "main_only": True})
    stopper.start()
    return stopper


def _build_in_hand(small_games, locked_files) -> str:
    """Changes that make several files due; returns the one whose build waits on the lock."""
    fixture = a_fixture_between_two_nocs(small_games)
    locked_files.lock()
    workflow.record_score(fixture.pk, {fixture.competitors.first().entry_id: 7})
    wait_until(lambda: locked_files.waiting(), 20, message="a build in hand")
    return PendingBuild.objects.get(claim_token__isnull=False).doc_key


def test_sigterm_mid_build_finishes_that_build_and_leaves_the_rest_to_another_worker(
        small_games, locked_files, clean_redis):
    before = seqs(small_games)
    first = child_processes.start_worker(LIVE_QUEUES, "builder-stopping", concurrency=1)
    in_hand = _build_in_hand(small_games, locked_files)
    wait_until(lambda: PendingBuild.objects.count() >= 3, 10, message="more files due behind it")

    stopper = _stop_in_background(first)
    time.sleep(1.0)  # the signal has arrived; the build is still held
    locked_files.release()
    stopper.join(30)

    assert first.popen.returncode is not None, "the worker stopped"
    after = seqs(small_games)
    assert {key for key in after if after[key] != before[key]} == {in_hand}, "the build in hand, and no other"
    left = PendingBuild.objects.all()
    assert left.count() >= 2 and not left.filter(claim_token__isnull=False).exists(), "the rest unclaimed"
    assert "WorkerLostError" not in first.output_since_start()

    second = child_processes.start_worker(LIVE_QUEUES, "builder-taking-over", concurrency=1)
    try:
        wait_for_builds_to_settle(small_games, timeout=20)  # woken by the first, not by a sweep
    finally:
        second.stop()


def test_a_build_that_outlasts_the_stop_deadline_is_recorded_and_its_claim_given_back(
        small_games, locked_files, clean_redis):
    worker = child_processes.start_worker(LIVE_QUEUES, "builder-overrun", concurrency=1,
                                          OMNIUM_BUILD_STOP_DEADLINE_S=1)
    in_hand = _build_in_hand(small_games, locked_files)

    stopper = _stop_in_background(worker)
    try:
        wait_until(lambda: PendingBuild.objects.filter(doc_key=in_hand, failed_builds=1).exists(), 10,
                   message="the overrun recorded")
        pending = PendingBuild.objects.get(doc_key=in_hand)
        assert pending.claim_token is None, "given back: another worker may build it now"
        assert "did not finish within the 1 s stop deadline" in pending.last_error
        assert f"the build of {in_hand} did not finish within the 1 s stop deadline" in worker.output_since_start()
    finally:
        locked_files.release()
        stopper.join(30)
    assert worker.popen.returncode is not None, "the worker stopped"


def test_beat_stops_at_sigterm_at_once_and_a_new_beat_goes_on_from_its_schedule(transactional_db):
    """Beat holds no work: on SIGTERM it saves its schedule and exits, well within its unit's
    15 s stop timeout, and the next beat (a restart, or another host's) sends the sweeps again
    from that schedule rather than waiting out the intervals anew."""
    first = child_processes.start_beat("beat-stopping", OMNIUM_SWEEP_INTERVAL_S=0.5)
    first.wait_for_output("Sending due task", 30)
    started = time.monotonic()
    first.stop(timeout=15, main_only=True)
    took = time.monotonic() - started

    assert took < 5 and first.popen.returncode == 0, (took, first.popen.returncode)
    assert "Traceback" not in first.output_since_start()

    second = child_processes.start_beat("beat-stopping", OMNIUM_SWEEP_INTERVAL_S=0.5)
    try:
        second.wait_for_output("Sending due task", 10)
    finally:
        second.stop(timeout=15, main_only=True)
