"""Retries that never stop, dead letters, and alerts on real channels (in-process senders)."""

import time

import pytest
from django.conf import settings
from django.test import override_settings

from omnium.alerts import notices
from omnium.alerts.models import Alert
from omnium.delivery import health
from omnium.delivery.engine import backoff, sender
from omnium.delivery.models import DeliveryAttempt, DeliveryState, SenderState
from omnium.delivery.operations import behind_alert, control
from omnium.feeds.builder import build_file
from omnium.games import workflow
from omnium.games.models import Fixture
from omnium.transports.failures import Reason
from tests.delivery.fixtures import webhook_settings

FAST_CLOCK = {**settings.OMNIUM, "DELIVERY_SLOW_RETRY_S": 0.01, "BEHIND_AFTER_S": 0.5}


def new_version(games, score) -> int:
    fixture = Fixture.objects.filter(games=games).order_by("starts_at", "id").first()
    workflow.record_score(fixture.pk, {fixture.competitors.first().entry_id: score})
    return build_file(f"{games.code}/calendar").seq


def try_again(destination) -> str:
    control.retry_now(destination.pk)  # the compressed clock: no waiting out the back-off
    return sender.drain(destination.pk)


def send_notices():
    for alert in notices.unsent():
        notices.send_pending(alert)


@override_settings(OMNIUM=FAST_CLOCK)
def test_a_destination_down_for_long_gets_the_newest_version_when_back_and_proof_once(small_games, subscribe,
                                                                                       receiver):
    destination = subscribe(small_games, webhook_settings(receiver.url), fast_retries=2)
    receiver.replies.extend([(503, {})] * 40)  # "down for 20 minutes": 40 tries at the slow pace
    outcomes = [try_again(destination) for _ in range(20)]
    newest = [new_version(small_games, score) for score in (1, 2, 3)][-1]
    outcomes += [try_again(destination) for _ in range(20)]
    assert set(outcomes) == {sender.Outcome.FAILED}
    assert SenderState.objects.get(pk=destination.pk).consecutive_failures == 40, "it never gave up"

    assert try_again(destination) == sender.Outcome.DRAINED

    state = DeliveryState.objects.get(destination=destination)
    assert state.sent_seq == newest and state.dead_lettered_at is None
    assert DeliveryAttempt.objects.filter(destination=destination, ok=True).count() == 1
    assert DeliveryAttempt.objects.get(destination=destination, ok=True).seq == newest


def test_retries_climb_a_ladder_then_go_on_every_slow_interval_forever():
    """Issue 32: quick retries (1 s doubling), then about a minute apart for ten minutes, so a
    client back from a few minutes' outage waits at most a minute; then the slow pace."""
    quick = [[backoff.delay_after(n, fast_retries=3, failing_for_s=n) for n in (1, 2, 3)] for _ in range(20)]
    assert all(0.5 <= a <= 1.0 and 1.0 <= b <= 2.0 and 2.0 <= c <= 4.0 for a, b, c in quick)
    # Counted in time since the first failure, not in tries: forty failed tries of new
    # versions in the first minutes still leave a minute between retries.
    minute_apart = [backoff.delay_after(n, fast_retries=3, failing_for_s=s) for n, s in ((4, 10), (40, 120), (99, 590))]
    assert all(30 <= delay <= 60 for delay in minute_apart)
    assert [round(backoff.delay_after(n, fast_retries=3, failing_for_s=s)) for n, s in ((4, 600), (1000, 3600))] == \
        [300, 300]


@pytest.mark.parametrize("reason, slow", [(Reason.HTTP_STATUS, False), (Reason.PERMISSION_DENIED, False),
                                          (Reason.AUTH_REFUSED, True), (Reason.HOST_KEY_CHANGED, True)])
def test_a_refusal_goes_red_at_once_and_only_one_a_person_must_mend_goes_to_the_slow_pace(
        small_games, subscribe, reason, slow):
    """A 403 from a client mid-deploy is retried within a minute (bench/gameday.py's
    destination_recovery_s_max); our login refused is not hammered (a server may ban us)."""
    destination = subscribe(small_games, webhook_settings("http://127.0.0.1:9/hook"))
    SenderState.objects.get_or_create(destination=destination)  # as the sender's lease makes it

    delay = backoff.failed(destination, "refused", permanent=True, reason=reason)

    assert (delay == settings.OMNIUM["DELIVERY_SLOW_RETRY_S"]) is slow
    assert delay <= 60 or slow
    assert health.read(destination.pk)["status"] == health.Status.FAILING
    assert Alert.objects.filter(kind="destination_failing", subject=f"destination:{destination.pk}").exists()


@override_settings(OMNIUM=FAST_CLOCK)
def test_three_failures_make_one_alert_and_recovery_one_resolution(small_games, subscribe, receiver, alert_channels):
    slack, mailbox = alert_channels
    destination = subscribe(small_games, webhook_settings(receiver.url), fast_retries=1)
    receiver.replies.extend([(503, {})] * 103)
    for _ in range(3):
        try_again(destination)
    send_notices()
    assert len(slack.posts) == 1 and "OPEN destination_failing" in slack.posts[0]["text"]
    assert len(mailbox.messages) == 1 and "destination_failing" in mailbox.messages[0]

    for _ in range(100):
        try_again(destination)
    send_notices()
    assert len(slack.posts) == 1 and len(mailbox.messages) == 1, "a failure storm is one alert"

    assert try_again(destination) == sender.Outcome.DRAINED
    send_notices()
    assert len(slack.posts) == 2 and "RESOLVED destination_failing" in slack.posts[1]["text"]
    assert len(mailbox.messages) == 2
    assert Alert.objects.get(kind="destination_failing").resolved_at is not None


@override_settings(OMNIUM=FAST_CLOCK)
def test_an_alert_that_cannot_be_sent_is_kept_for_later_and_delivery_goes_on(small_games, subscribe, receiver,
                                                                             silent_host):
    with override_settings(OMNIUM_ALERT_SLACK_URL=f"http://127.0.0.1:{silent_host.port}/hook", OMNIUM_ALERT_EMAILS=[]):
        destination = subscribe(small_games, webhook_settings(receiver.url), fast_retries=1)
        receiver.replies.extend([(503, {})] * 3)
        for _ in range(3):
            try_again(destination)
        alert = Alert.objects.get(kind="destination_failing")
        assert notices.send_pending(alert) is False
        assert try_again(destination) == sender.Outcome.DRAINED, "delivery does not wait for the alert"
    alert.refresh_from_db()
    assert alert.opening_sent_at is None and alert.send_attempts == 1 and "slack" in alert.last_send_error
    assert alert in notices.unsent()


@override_settings(OMNIUM=FAST_CLOCK)
def test_a_destination_owed_a_version_too_long_is_behind_even_without_failures(small_games, subscribe, receiver):
    import time

    destination = subscribe(small_games, webhook_settings(receiver.url))  # owed, but no sender runs
    time.sleep(0.6)

    assert behind_alert.check_behind() == 1
    alert = Alert.objects.get(kind="destination_behind", resolved_at__isnull=True)
    assert alert.subject == f"destination:{destination.pk}"
    assert not DeliveryAttempt.objects.exists(), "no send failed: it is simply behind"

    sender.drain(destination.pk)
    assert behind_alert.check_behind() == 0
    assert Alert.objects.get(pk=alert.pk).resolved_at is not None


@override_settings(OMNIUM=FAST_CLOCK)
def test_a_destination_whose_file_waits_too_long_to_be_built_is_behind_though_it_has_every_version(
        small_games, subscribe, receiver):
    """Issue 32: "behind" counts from the oldest unbuilt change, so a live build that lags (or
    keeps failing) alerts too; a bulk-lane file may wait."""
    from datetime import timedelta

    from django.utils import timezone

    from omnium.feeds.models import PendingBuild

    destination = subscribe(small_games, webhook_settings(receiver.url))
    sender.drain(destination.pk)  # it has the current version: nothing owed
    doc_key, long_ago = f"{small_games.code}/calendar", timezone.now() - timedelta(seconds=5)
    pending = PendingBuild.objects.create(doc_key=doc_key, lane="bulk", first_change_at=long_ago,
                                          last_change_at=long_ago, due_at=long_ago)
    assert behind_alert.check_behind() == 0, "a bulk file may wait"

    PendingBuild.objects.filter(pk=pending.pk).update(lane="live")
    assert behind_alert.check_behind() == 1
    alert = Alert.objects.get(kind="destination_behind", resolved_at__isnull=True)
    assert alert.subject == f"destination:{destination.pk}" and "not yet built" in alert.message

    PendingBuild.objects.filter(pk=pending.pk).delete()  # built
    assert behind_alert.check_behind() == 0
    assert Alert.objects.get(pk=alert.pk).resolved_at is not None


def drain_unattended(destination, until, seconds: float) -> None:
    """Drain as the destination's own kicks and the sweeper would: no retry_now, no person."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and not until():
        sender.drain(destination.pk)
        time.sleep(0.02)


@override_settings(OMNIUM={**FAST_CLOCK, "DELIVERY_SLOW_RETRY_S": 0.3})
def test_a_webhook_refusing_with_403_while_it_deploys_gets_the_newest_version_and_no_person_acts(
        small_games, subscribe, receiver):
    destination = subscribe(small_games, webhook_settings(receiver.url), fast_retries=5)
    receiver.replies.extend([(403, {})] * 1000)  # "403 for 90 s": three slow retries' worth

    assert sender.drain(destination.pk) == sender.Outcome.FAILED
    assert health.read(destination.pk)["status"] == health.Status.FAILING, "red at once, not after 5 tries"
    assert Alert.objects.filter(kind="destination_failing", resolved_at__isnull=True).exists()
    newest = new_version(small_games, 7)  # the Games goes on while the client deploys

    def fixed_and_delivered():
        # The client's deploy is done after three refusals (by the clock: 0.9 s of retries every
        # 0.3 s; counted, because a loaded machine took longer over each and made only two).
        if DeliveryAttempt.objects.filter(destination=destination, ok=False).count() >= 3:
            receiver.replies.clear()
        return DeliveryState.objects.filter(destination=destination, sent_seq=newest).exists()

    drain_unattended(destination, fixed_and_delivered, seconds=10)

    state = DeliveryState.objects.get(destination=destination)
    assert state.sent_seq == newest and state.dead_lettered_at is None
    refused = DeliveryAttempt.objects.filter(destination=destination, ok=False)
    assert refused.count() >= 3 and all(a.permanent for a in refused), "kept trying at the slow pace"
    assert Alert.objects.get(kind="destination_failing").resolved_at is not None
    assert health.read(destination.pk)["status"] == health.Status.RUNNING


def test_a_dead_lettered_older_version_does_not_block_a_newer_one(small_games, subscribe, receiver):
    destination = subscribe(small_games, webhook_settings(receiver.url))
    receiver.replies.append((404, {}))
    assert sender.drain(destination.pk) == sender.Outcome.FAILED
    assert DeliveryState.objects.get(destination=destination).dead_lettered_at is not None
    assert sender.drain(destination.pk) == sender.Outcome.IDLE, "the same version waits out the back-off"

    newest = new_version(small_games, 8)

    assert sender.drain(destination.pk) == sender.Outcome.DRAINED, "a newer version is tried at once"
    state = DeliveryState.objects.get(destination=destination)
    assert state.sent_seq == newest and state.dead_lettered_at is None
    assert SenderState.objects.get(pk=destination.pk).retry_at is None


def test_a_dead_letter_is_kept_as_a_record_and_can_be_replayed(small_games, subscribe, receiver):
    destination = subscribe(small_games, webhook_settings(receiver.url))
    receiver.replies.append((410, {}))

    assert sender.drain(destination.pk) == sender.Outcome.FAILED
    state = DeliveryState.objects.get(destination=destination)
    assert state.dead_lettered_at is not None and "410" in state.last_error
    assert DeliveryAttempt.objects.get(destination=destination).permanent

    assert control.replay_dead_letters(destination.pk) == 1
    control.retry_now(destination.pk)
    assert sender.drain(destination.pk) == sender.Outcome.DRAINED
    assert DeliveryState.objects.get(pk=state.pk).sent_seq > 0


@override_settings(OMNIUM=FAST_CLOCK)
def test_a_stuck_destination_is_behind_even_while_newer_versions_keep_arriving(small_games, subscribe, receiver):
    import time

    destination = subscribe(small_games, webhook_settings(receiver.url))  # owed; its sender is stuck
    for score in (1, 2, 3, 4):
        time.sleep(0.2)
        new_version(small_games, score)  # each new version replaces the owed one

    assert behind_alert.check_behind() == 1, "behind since the first unsent version, not the newest"
    assert Alert.objects.filter(kind="destination_behind", subject=f"destination:{destination.pk}",
                                resolved_at__isnull=True).exists()


@override_settings(OMNIUM={**FAST_CLOCK, "BEHIND_GROUP_OVER": 2})
def test_more_destinations_behind_at_once_than_the_group_limit_raise_one_alert_for_them_all(small_games, subscribe,
                                                                                            receiver, alert_channels):
    slack, _ = alert_channels
    first = subscribe(small_games, webhook_settings(receiver.url))  # behind alone: its own alert
    time.sleep(0.6)
    assert behind_alert.check_behind() == 1
    others = [subscribe(small_games, webhook_settings(f"{receiver.url}/{n}")) for n in range(2)]
    time.sleep(0.6)

    assert behind_alert.check_behind() == 3
    open_alerts = Alert.objects.filter(kind=behind_alert.KIND, resolved_at__isnull=True)
    assert sorted(open_alerts.values_list("subject", flat=True)) == [f"destination:{first.pk}", behind_alert.MANY], \
        "one alert for the storm, none for each destination in it; the one open before stays"
    group = open_alerts.get(subject=behind_alert.MANY)
    assert group.message.startswith("3 destinations are owed files")
    assert all(str(d.pk) in group.message for d in (first, *others)) and group.details == {"destinations": 3}
    assert behind_alert.check_behind() == 3 and open_alerts.count() == 2, "no second alert while the storm lasts"

    sender.drain(first.pk)
    sender.drain(others[0].pk)
    assert behind_alert.check_behind() == 1

    assert Alert.objects.get(pk=group.pk).resolved_at is not None, "the storm is over"
    assert list(open_alerts.values_list("subject", flat=True)) == [f"destination:{others[1].pk}"], \
        "the destination still behind has its own alert now; the one that caught up is resolved"
    send_notices()
    sent = [post["text"].split("\n")[0] for post in slack.posts]
    assert sum("OPEN destination_behind: destinations:many" in text for text in sent) == 1
    assert sum("RESOLVED destination_behind: destinations:many" in text for text in sent) == 1
    assert len(sent) == 5, f"the group's two, the first alone's two, the last one's opening: {sent}"
