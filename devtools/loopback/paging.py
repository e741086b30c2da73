"""Loopback stand-ins for the pagers' public APIs, checking each request against the documented
shape and answering as the real service does, so the alert channels are tested over real HTTP:

- PagerDuty Events API v2 (developer.pagerduty.com/docs/events-api-v2/trigger-events): POST
  /v2/enqueue, JSON with routing_key (32 characters), event_action trigger | acknowledge |
  resolve, dedup_key (at most 255); a trigger needs payload.summary (at most 1024), source and
  severity (critical | error | warning | info). 202 {"status": "success", …}, else 400.
- Opsgenie Alert API (docs.opsgenie.com/docs/alert-api): `Authorization: GenieKey <key>`; POST
  /v2/alerts with message (required, at most 130), alias (at most 512), priority P1-P5; POST
  /v2/alerts/<alias>/close?identifierType=alias. 202 {"result": "Request will be processed", …},
  401 for another key, 422 for a bad body.

`fail_with` makes either answer that status instead (a pager that is down).
"""

import json
import threading
import uuid
from urllib.parse import parse_qs, unquote, urlsplit

from devtools.loopback.hosts import LOOPBACK, QuietHandler, serve_http

SEVERITIES = {"critical", "error", "warning", "info"}
ACTIONS = {"trigger", "acknowledge", "resolve"}
PRIORITIES = {"P1", "P2", "P3", "P4", "P5"}


class _Receiver:
    def __init__(self):
        self.accepted, self.refused, self.fail_with, self.lock = [], [], None, threading.Lock()
        receiver = self

        class Handler(QuietHandler):
            def do_POST(self):
                body = self.read_body()
                status, problem = receiver.check(self.path, dict(self.headers.items()), body)
                if receiver.fail_with:
                    status, problem = receiver.fail_with, "down"
                with receiver.lock:
                    (receiver.accepted if status == 202 else receiver.refused).append(
                        (self.path, json.loads(body or b"{}"), problem))
                self.answer(status, json.dumps(receiver.reply(status, problem)).encode(),
                            {"content-type": "application/json"})

        self.http = serve_http(Handler)
        self.url = f"http://{LOOPBACK}:{self.http.server_address[1]}"

    def stop(self):
        self.http.shutdown()
        self.http.server_close()


class PagerDutyReceiver(_Receiver):
    def __init__(self, routing_key: str):
        self.routing_key = routing_key
        super().__init__()
        self.events_url = f"{self.url}/v2/enqueue"

    def check(self, path, headers, body) -> tuple[int, str]:
        try:
            event = json.loads(body)
        except ValueError:
            return 400, "not JSON"
        if path != "/v2/enqueue":
            return 404, "no such path"
        if event.get("routing_key") != self.routing_key or len(self.routing_key) != 32:
            return 400, "routing_key"
        if event.get("event_action") not in ACTIONS or not 0 < len(event.get("dedup_key", "")) <= 255:
            return 400, "event_action or dedup_key"
        if event["event_action"] == "trigger":
            payload = event.get("payload") or {}
            if not (0 < len(payload.get("summary", "")) <= 1024 and payload.get("source")
                    and payload.get("severity") in SEVERITIES):
                return 400, "payload"
        return 202, ""

    def reply(self, status, problem) -> dict:
        if status == 202:
            return {"status": "success", "message": "Event processed", "dedup_key": str(uuid.uuid4())}
        return {"status": "invalid event", "message": "Event object is invalid", "errors": [problem]}


class OpsgenieReceiver(_Receiver):
    def __init__(self, api_key: str):
        self.api_key = api_key
        super().__init__()

    def check(self, path, headers, body) -> tuple[int, str]:
        if {k.lower(): v for k, v in headers.items()}.get("authorization") != f"GenieKey {self.api_key}":
            return 401, "key"
        try:
            request = json.loads(body)
        except ValueError:
            return 422, "not JSON"
        parts = urlsplit(path)
        if parts.path == "/v2/alerts":
            if not (0 < len(request.get("message", "")) <= 130 and len(request.get("alias", "")) <= 512
                    and request.get("priority", "P3") in PRIORITIES):
                return 422, "message, alias or priority"
            return 202, ""
        if parts.path.startswith("/v2/alerts/") and parts.path.endswith("/close"):
            alias = unquote(parts.path.removeprefix("/v2/alerts/").removesuffix("/close"))
            if parse_qs(parts.query).get("identifierType") != ["alias"] or not alias:
                return 422, "identifierType"
            return 202, ""
        return 404, "no such path"

    def reply(self, status, problem) -> dict:
        if status == 202:
            return {"result": "Request will be processed", "took": 0.01, "requestId": str(uuid.uuid4())}
        return {"message": problem, "took": 0.0, "requestId": str(uuid.uuid4())}

    def closed_aliases(self) -> list[str]:
        return [unquote(urlsplit(path).path.removeprefix("/v2/alerts/").removesuffix("/close"))
                for path, _, _ in self.accepted if urlsplit(path).path.endswith("/close")]
