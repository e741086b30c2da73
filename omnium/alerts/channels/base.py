"""The channel contract: `send(notice)` delivers one alert notice or raises ChannelError."""

from dataclasses import dataclass


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


class Channel:
    name = ""

    def send(self, notice: Notice) -> None:
        raise NotImplementedError
