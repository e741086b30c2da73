"""A Slack-compatible incoming webhook: POST {"text": …} as JSON; any 2xx is delivered.

The text carries what servers answered (a receiver's error page, an SFTP banner), which is not
ours: Slack reads `<!channel>`, `<@user>` and `<url|label>` in it as mentions and links, so
`&`, `<` and `>` are escaped as Slack's message formatting asks. Only our own `*title*` is markup.
"""

from omnium.alerts.channels.base import Channel, Notice, post_json


def slack_escaped(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


class SlackChannel(Channel):
    name = "slack"

    def __init__(self, url: str):
        self.url = url

    def send(self, notice: Notice) -> None:
        post_json(self.name, self.url, {"text": f"*{slack_escaped(notice.title)}*\n{slack_escaped(notice.text)}"})
