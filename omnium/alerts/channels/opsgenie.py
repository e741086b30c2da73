"""Opsgenie's Alert API v2 (docs.opsgenie.com, "Alert API"): an opening creates an alert whose
`alias` is the notice's key, so repeats are deduplicated by Opsgenie and the resolution closes
it by that alias. The API key goes in `Authorization: GenieKey …`."""

from urllib.parse import quote

from omnium.alerts.channels.base import Channel, Notice, post_json

API_URL = "https://api.opsgenie.com"  # EU accounts: https://api.eu.opsgenie.com
MESSAGE_LIMIT = 130  # Opsgenie's maximum
PRIORITY = {"critical": "P1", "error": "P2", "warning": "P3"}


class OpsgenieChannel(Channel):
    name = "opsgenie"

    def __init__(self, api_key: str, url: str = API_URL):
        self.headers, self.url = {"Authorization": f"GenieKey {api_key}"}, url.rstrip("/")

    def send(self, notice: Notice) -> None:
        if notice.resolved:
            post_json(self.name, f"{self.url}/v2/alerts/{quote(notice.key, safe='')}/close?identifierType=alias",
                      {"source": "omnium", "note": notice.text}, self.headers)
            return
        post_json(self.name, f"{self.url}/v2/alerts", {
            "message": f"{notice.kind}: {notice.subject}"[:MESSAGE_LIMIT], "alias": notice.key,
            "description": notice.text, "priority": PRIORITY.get(notice.severity, "P3"), "source": "omnium",
            "tags": ["omnium", notice.kind], "details": {"subject": notice.subject},
        }, self.headers)
