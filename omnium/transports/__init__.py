"""Push transports: one module per kind of destination behind the contract in ``base``.

Django-free: bytes, a path and a config in; a `Receipt` out, or a `TransportError` that says
permanent or transient. `registry` maps a kind to its class (and gives the form its choices):
`s3`, `sftp`, `ftp`, `webhook`, `redis`, `amqp`, `azure_blob`.
"""

from .base import Deadline, Receipt, Transport, TransportError

__all__ = ["Deadline", "Receipt", "Transport", "TransportError"]
