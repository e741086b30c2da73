"""Email through Django's mail (SMTP, EMAIL_HOST / EMAIL_PORT settings)."""

from django.core.mail import send_mail

from omnium.alerts.channels.base import Channel, ChannelError, Notice


class EmailChannel(Channel):
    name = "email"

    def __init__(self, recipients: list[str]):
        self.recipients = recipients

    def send(self, notice: Notice) -> None:
        try:
            send_mail(notice.title, notice.text, None, self.recipients, fail_silently=False)
        except (OSError, Exception) as exc:  # smtplib errors are OSError or SMTPException
            raise ChannelError(f"email: {exc}") from exc
