"""Every push transport by kind. Adding one is a new module plus one line here; the same
mapping gives the destination model its ``choices``."""

from __future__ import annotations

from .amqp import AMQPTransport
from .azure_blob import AzureBlobTransport
from .base import Transport, TransportError
from .ftp import FTPTransport
from .redis import RedisTransport
from .s3 import S3Transport
from .sftp import SFTPTransport
from .webhook import WebhookTransport

TRANSPORTS: dict[str, type[Transport]] = {
    "s3": S3Transport,
    "sftp": SFTPTransport,
    "ftp": FTPTransport,
    "webhook": WebhookTransport,
    "redis": RedisTransport,
    "amqp": AMQPTransport,
    "azure_blob": AzureBlobTransport,
}


def choices() -> list[tuple[str, str]]:
    """``(kind, label)`` pairs for a model field's ``choices``."""
    return [(kind, transport.label) for kind, transport in TRANSPORTS.items()]


def transport_for(kind: str, config: dict, credentials: dict) -> Transport:
    """A transport of ``kind``; raises a permanent TransportError for an unknown kind or a
    config its schema rejects."""
    if kind not in TRANSPORTS:
        raise TransportError(f"unknown transport kind {kind!r}", permanent=True)
    return TRANSPORTS[kind](config, credentials)
