"""PagerDuty's Events API v2 (developer.pagerduty.com, "Send an Alert Event"): an opening is a
`trigger` and a resolution a `resolve` with the same `dedup_key`, so the incident PagerDuty
opened is the one it closes; a storm of the same alert stays one incident."""

from omnium.alerts.channels.base import Channel, Notice, post_json

EVENTS_URL = "https://events.pagerduty.com/v2/enqueue"
SUMMARY_LIMIT = 1024  # PagerDuty's maximum


class PagerDutyChannel(Channel):
    name = "pagerduty"

    def __init__(self, routing_key: str, url: str = EVENTS_URL):
        self.routing_key, self.url = routing_key, url

    def send(self, notice: Notice) -> None:
        event = {"routing_key": self.routing_key, "dedup_key": notice.key,
                 "event_action": "resolve" if notice.resolved else "trigger"}
        if not notice.resolved:
            event["payload"] = {
                "summary": f"{notice.kind}: {notice.subject}: {notice.text}"[:SUMMARY_LIMIT],
                "source": "omnium", "severity": notice.severity, "timestamp": notice.at,
                "component": notice.subject.split(":", 1)[0], "class": notice.kind,
                "custom_details": {"subject": notice.subject, **notice.details},
            }
        post_json(self.name, self.url, event)
