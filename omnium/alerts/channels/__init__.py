"""The configured alert channels, read from settings at call time."""

from django.conf import settings

from omnium.alerts.channels.base import Channel, ChannelError, Notice
from omnium.alerts.channels.email import EmailChannel
from omnium.alerts.channels.operator_webhook import OperatorWebhookChannel
from omnium.alerts.channels.opsgenie import OpsgenieChannel
from omnium.alerts.channels.pagerduty import PagerDutyChannel
from omnium.alerts.channels.slack import SlackChannel

__all__ = ["Channel", "ChannelError", "Notice", "configured_channels"]


def configured_channels() -> list[Channel]:
    channels = []
    if settings.OMNIUM_ALERT_SLACK_URL:
        channels.append(SlackChannel(settings.OMNIUM_ALERT_SLACK_URL))
    if settings.OMNIUM_ALERT_EMAILS:
        channels.append(EmailChannel(settings.OMNIUM_ALERT_EMAILS))
    if settings.OMNIUM_ALERT_PAGERDUTY_ROUTING_KEY:
        channels.append(PagerDutyChannel(settings.OMNIUM_ALERT_PAGERDUTY_ROUTING_KEY, settings.OMNIUM_ALERT_PAGERDUTY_URL))
    if settings.OMNIUM_ALERT_OPSGENIE_API_KEY:
        channels.append(OpsgenieChannel(settings.OMNIUM_ALERT_OPSGENIE_API_KEY, settings.OMNIUM_ALERT_OPSGENIE_URL))
    if settings.OMNIUM_OPERATOR_WEBHOOK_URL:
        channels.append(OperatorWebhookChannel(settings.OMNIUM_OPERATOR_WEBHOOK_URL,
                                               settings.OMNIUM_OPERATOR_WEBHOOK_SECRET))
    return channels
