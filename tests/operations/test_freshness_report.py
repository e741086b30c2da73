"""The freshness report a client can be handed (issue 32): per client and day, from its proofs,
every confirmed send counted. The numbers are checked against the attempts the test's own sends
left, computed here in Python."""

import csv
import io
import math
from datetime import timedelta

from django.test import override_settings
from django.utils import timezone

from omnium.delivery.engine import sender
from omnium.delivery.models import DeliveryAttempt
from omnium.delivery.operations import control
from omnium.reports import freshness as freshness_report
from omnium.reports.models import FreshnessDay
from omnium.reports.tasks import prune_freshness_days
from tests.delivery.fixtures import webhook_settings
from tests.operations.test_retries_and_alerts import FAST_CLOCK, new_version


def percentile_disc(values, fraction):
    ordered = sorted(values)
    return ordered[max(0, math.ceil(fraction * len(ordered)) - 1)]


@override_settings(OMNIUM=FAST_CLOCK)
def test_a_clients_day_is_summed_from_its_proofs_and_handed_out_as_a_page_and_csv(
        small_games, subscribe, receiver, admin_client):
    destination = subscribe(small_games, webhook_settings(receiver.url), fast_retries=5)
    other = subscribe(small_games, webhook_settings(receiver.url), client="someone else")
    sender.drain(destination.pk)
    sender.drain(other.pk)
    for score in (1, 2):
        new_version(small_games, score)
        sender.drain(destination.pk)
    receiver.replies.extend([(503, {})] * 2)  # an outage: two failures, then the next success
    new_version(small_games, 3)
    for _ in range(3):
        control.retry_now(destination.pk)
        sender.drain(destination.pk)
    sent = DeliveryAttempt.objects.filter(destination=destination, ok=True).order_by("started_at")
    # Two of the proofs made slower, so that both thresholds (10 s, 60 s) are crossed.
    DeliveryAttempt.objects.filter(pk=sent[0].pk).update(age_ms=20_000)
    DeliveryAttempt.objects.filter(pk=sent[1].pk).update(age_ms=70_000)

    day = freshness_report.summarize(destination.client_id, timezone.now().date())

    attempts = list(DeliveryAttempt.objects.filter(destination=destination).order_by("started_at", "id"))
    ages = [a.age_ms for a in attempts if a.ok]
    failed = [a for a in attempts if not a.ok]
    recovered = next(a for a in attempts if a.ok and a.started_at > failed[0].started_at)
    assert len(ages) == 4 and len(failed) == 2
    assert (day.versions_sent, day.within_10s, day.within_60s, day.failures) == (
        4, sum(age <= 10_000 for age in ages), sum(age <= 60_000 for age in ages), 2)
    assert (day.p50_age_ms, day.p95_age_ms) == (percentile_disc(ages, 0.5), percentile_disc(ages, 0.95))
    assert day.longest_outage_s == round((recovered.started_at - failed[0].started_at).total_seconds(), 3)
    assert day.share_within_10s == 0.5

    page = admin_client.get(f"/admin/delivery/status/client/{destination.client_id}/freshness/")
    assert page.status_code == 200
    assert b"95 % of changes at the client within 10 s" in page.content and b"<svg" in page.content
    download = admin_client.get(f"/admin/delivery/status/client/{destination.client_id}/freshness/?format=csv")
    assert download["Content-Type"].startswith("text/csv") and "attachment" in download["Content-Disposition"]
    [header, row] = list(csv.reader(io.StringIO(download.content.decode())))
    assert header[:3] == ["day", "versions_sent", "share_within_10s"]
    assert row[:3] == [day.day.isoformat(), "4", "0.5000"]
    assert FreshnessDay.objects.filter(client=other.client).count() == 0, "only the client asked for"


def test_the_hourly_sum_covers_every_client_with_attempts_and_old_days_are_pruned(small_games, subscribe, receiver):
    destination = subscribe(small_games, webhook_settings(receiver.url))
    sender.drain(destination.pk)

    assert freshness_report.summarize_recent() == 2  # one client: yesterday and today
    assert FreshnessDay.objects.get(client=destination.client, day=timezone.now().date()).versions_sent == 1

    FreshnessDay.objects.create(client=destination.client, day=timezone.now().date() - timedelta(days=500),
                                versions_sent=1, within_10s=1, within_60s=1, failures=0)
    assert prune_freshness_days() == 1
    assert FreshnessDay.objects.filter(client=destination.client).count() == 2
