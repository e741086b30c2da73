"""A Slack-compatible incoming webhook: POST {"text": …} as JSON; any 2xx is delivered."""

import requests

from omnium.alerts.channels.base import Channel, ChannelError, Notice

TIMEOUT_S = (3, 5)  # connect, read: a slow Slack must not hold an alert worker for long


class SlackChannel(Channel):
    name = "slack"

    def __init__(self, url: str):
        self.url = url

    def send(self, notice: Notice) -> None:
        try:
            reply = requests.post(self.url, json={"text": f"*{notice.title}*\n{notice.text}"}, timeout=TIMEOUT_S)
        except requests.RequestException as exc:
            raise ChannelError(f"slack: {exc}") from exc
        if not 200 <= reply.status_code < 300:
            # Not the body: a proxy or Slack itself may echo the request, token included.
            raise ChannelError(f"slack: HTTP {reply.status_code}", status=reply.status_code) from requests.HTTPError(
                response=reply)
