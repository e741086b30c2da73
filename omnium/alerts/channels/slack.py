"""A Slack-compatible incoming webhook: POST {"text": …} as JSON; any 2xx is delivered."""

from omnium.alerts.channels.base import Channel, Notice, post_json


class SlackChannel(Channel):
    name = "slack"

    def __init__(self, url: str):
        self.url = url

    def send(self, notice: Notice) -> None:
        post_json(self.name, self.url, {"text": f"*{notice.title}*\n{notice.text}"})
