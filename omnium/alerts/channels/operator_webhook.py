"""Operator events to a webhook of the operator's choosing, signed as Standard Webhooks are
(the same signature our feed webhooks carry: `webhook-id`, `webhook-timestamp`,
`webhook-signature`), so any Standard Webhooks library can verify them.

Event types: `destination.failing` / `destination.recovered`, `build.failing` /
`build.recovered`, and `alert.opened` / `alert.resolved` for every other kind; `data` names the
alert's kind, subject and message."""

import hashlib
import time

import orjson

from omnium.alerts.channels.base import Channel, Notice, post_json
from omnium.transports.webhook import sign

TYPES = {"destination_failing": ("destination.failing", "destination.recovered"),
         "build_failing": ("build.failing", "build.recovered")}


def event_type(notice: Notice) -> str:
    opened, resolved = TYPES.get(notice.kind, ("alert.opened", "alert.resolved"))
    return resolved if notice.resolved else opened


class OperatorWebhookChannel(Channel):
    name = "operator-webhook"

    def __init__(self, url: str, secret: str):
        self.url, self.secret = url, secret

    def send(self, notice: Notice) -> None:
        body = orjson.dumps({"type": event_type(notice), "timestamp": notice.at, "data": {
            "key": notice.key, "kind": notice.kind, "subject": notice.subject, "message": notice.text,
            "severity": notice.severity, "details": notice.details}})
        # One id per event (an opening and a resolution differ), the same on every retry of it.
        message_id = "msg_" + hashlib.sha256(f"{notice.key}:{notice.resolved}".encode()).hexdigest()[:32]
        timestamp = int(time.time())
        headers = {"content-type": "application/json", "webhook-id": message_id,
                   "webhook-timestamp": str(timestamp),
                   "webhook-signature": sign(self.secret, message_id, timestamp, body)}
        post_json(self.name, self.url, body, headers)  # the signed bytes, as they are
