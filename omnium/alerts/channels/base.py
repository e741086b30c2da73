"""The channel contract: `send(notice)` delivers one alert notice or raises ChannelError."""

from dataclasses import dataclass, field

import requests


class ChannelError(Exception):
    """The notice did not go out; the alert sweeper will try again. `status` is the channel's
    HTTP status, when it answered one."""

    def __init__(self, message: str, *, status: int | None = None):
        super().__init__(message)
        self.status = status


@dataclass(frozen=True)
class Notice:
    title: str  # "[Omnium] OPEN destination_failing: destination:12" / "[Omnium] RESOLVED …"
    text: str
    # The same for an alert's opening and its resolution, so a pager closes what it opened.
    key: str = ""
    kind: str = ""  # destination_failing, build_failing, …
    subject: str = ""  # destination:12
    resolved: bool = False
    severity: str = "error"  # critical, error or warning
    at: str = ""  # ISO 8601, when it opened or resolved
    details: dict = field(default_factory=dict)


class Channel:
    name = ""

    def send(self, notice: Notice) -> None:
        raise NotImplementedError


TIMEOUT_S = (3, 5)  # connect, read: a slow channel must not hold an alert worker for long


def post_json(channel: str, url: str, payload: dict | bytes, headers: dict | None = None) -> requests.Response:
    """POST `payload` as JSON (bytes: already encoded, sent as they are); any 2xx is taken,
    anything else raises ChannelError naming only the channel and the status (never the body
    or URL: a proxy may echo a token back)."""
    body = {"data": payload} if isinstance(payload, bytes) else {"json": payload}
    try:
        reply = requests.post(url, headers=headers or {}, timeout=TIMEOUT_S, **body)
    except requests.RequestException as exc:
        raise ChannelError(f"{channel}: {exc}") from exc
    if not 200 <= reply.status_code < 300:
        raise ChannelError(f"{channel}: HTTP {reply.status_code}", status=reply.status_code) from requests.HTTPError(
            response=reply)
    return reply
