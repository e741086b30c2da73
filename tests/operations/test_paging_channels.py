"""Alerts reach pagers and the operator's own tools: PagerDuty (Events API v2), Opsgenie (Alert
API) and a Standard Webhooks signed operator webhook, each through real HTTP to a loopback
receiver that checks the documented request shape (devtools/loopback/paging.py). A channel that
is down delays only its own notices: the others go out, and none is sent twice."""

import json

import pytest
from django.test import override_settings

from devtools.loopback.hosts import WebhookReceiver
from devtools.loopback.paging import OpsgenieReceiver, PagerDutyReceiver
from omnium.alerts import notices, service
from omnium.alerts.channels.base import Notice
from omnium.alerts.channels.slack import SlackChannel
from omnium.alerts.models import Alert

ROUTING_KEY = "R0UT1NGKEY0123456789ABCDEFGHIJKL"
GENIE_KEY = "eb243592-faa2-4ba2-a551q-1afdf565c889"
OPERATOR_SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"


@pytest.fixture
def pagers():
    pagerduty, opsgenie = PagerDutyReceiver(ROUTING_KEY), OpsgenieReceiver(GENIE_KEY)
    operator = WebhookReceiver(OPERATOR_SECRET).start()
    with override_settings(OMNIUM_ALERT_SLACK_URL="", OMNIUM_ALERT_EMAILS=[],
                           OMNIUM_ALERT_PAGERDUTY_ROUTING_KEY=ROUTING_KEY,
                           OMNIUM_ALERT_PAGERDUTY_URL=pagerduty.events_url,
                           OMNIUM_ALERT_OPSGENIE_API_KEY=GENIE_KEY, OMNIUM_ALERT_OPSGENIE_URL=opsgenie.url,
                           OMNIUM_OPERATOR_WEBHOOK_URL=f"{operator.url}/operator",
                           OMNIUM_OPERATOR_WEBHOOK_SECRET=OPERATOR_SECRET):
        yield pagerduty, opsgenie, operator
    pagerduty.stop()
    opsgenie.stop()
    operator.stop()


def send(alert_id: int) -> bool:
    return notices.send_pending(Alert.objects.get(pk=alert_id))


@pytest.mark.django_db
def test_an_alert_pages_and_its_resolution_closes_the_same_incident_everywhere(pagers):
    pagerduty, opsgenie, operator = pagers
    alert = service.open_alert("destination_failing", "destination:12", "Connected, but the server did not answer.")

    assert send(alert.pk) is True
    [(_, trigger, _)] = pagerduty.accepted
    assert trigger["event_action"] == "trigger" and trigger["payload"]["severity"] == "error"
    assert "destination:12" in trigger["payload"]["summary"]
    [(path, created, _)] = opsgenie.accepted
    assert path == "/v2/alerts" and created["alias"] == trigger["dedup_key"] and created["priority"] == "P2"
    [opened] = operator.deliveries
    assert opened.verified and json.loads(opened.body)["type"] == "destination.failing"

    service.resolve_alert("destination_failing", "destination:12")
    assert send(alert.pk) is True
    resolve = pagerduty.accepted[1][1]
    assert resolve["event_action"] == "resolve" and resolve["dedup_key"] == trigger["dedup_key"]
    assert opsgenie.closed_aliases() == [created["alias"]]
    recovered = operator.deliveries[1]
    assert recovered.verified and json.loads(recovered.body)["type"] == "destination.recovered"
    assert recovered.headers["webhook-id"] != opened.headers["webhook-id"]
    assert pagerduty.refused == [] and opsgenie.refused == []


@pytest.mark.django_db
def test_a_pager_that_is_down_delays_only_its_own_notice_and_no_channel_gets_one_twice(pagers):
    pagerduty, opsgenie, operator = pagers
    pagerduty.fail_with = 503
    alert = service.open_alert("build_failing", "file:sm7/medals", "The medals resolver raised KeyError.")

    assert send(alert.pk) is False
    assert len(opsgenie.accepted) == 1 and len(operator.deliveries) == 1, "the others went out"
    stored = Alert.objects.get(pk=alert.pk)
    assert stored.opening_sent_at is None and "pagerduty: HTTP 503" in stored.last_send_error
    assert alert in notices.unsent()

    pagerduty.fail_with = None
    assert send(alert.pk) is True
    assert [event["payload"]["severity"] for _, event, _ in pagerduty.accepted] == ["critical"]
    assert len(opsgenie.accepted) == 1 and len(operator.deliveries) == 1, "no channel got it twice"
    assert json.loads(operator.deliveries[0].body)["type"] == "build.failing"


def test_a_servers_words_in_a_slack_notice_mention_no_one_and_link_nowhere(alert_channels):
    slack, _ = alert_channels
    said_by_a_server = "550 <!channel> see <https://evil.example/login|your dashboard> & <@U123>"
    notice = Notice(title="[Omnium] OPEN destination_failing: destination:7", text=f"FTP answered: {said_by_a_server}")

    SlackChannel(slack.url).send(notice)

    text = slack.posts[-1]["text"]
    assert "<" not in text and ">" not in text
    assert text.endswith("550 &lt;!channel&gt; see &lt;https://evil.example/login|your dashboard&gt; &amp; &lt;@U123&gt;")
    assert text.startswith("*[Omnium] OPEN destination_failing: destination:7*\n")
