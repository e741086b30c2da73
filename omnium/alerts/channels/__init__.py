"""The configured alert channels, read from settings at call time."""

from django.conf import settings

from omnium.alerts.channels.base import Channel, ChannelError, Notice
from omnium.alerts.channels.email import EmailChannel
from omnium.alerts.channels.slack import SlackChannel

__all__ = ["Channel", "ChannelError", "Notice", "configured_channels"]


def configured_channels() -> list[Channel]:
    channels = []
    if settings.OMNIUM_ALERT_SLACK_URL:
        channels.append(SlackChannel(settings.OMNIUM_ALERT_SLACK_URL))
    if settings.OMNIUM_ALERT_EMAILS:
        channels.append(EmailChannel(settings.OMNIUM_ALERT_EMAILS))
    return channels
