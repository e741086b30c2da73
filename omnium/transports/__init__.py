"""Push transports: one module per kind of destination behind the contract in ``base``.

Django-free: bytes, a path and a config in; a `Receipt` out, or a `TransportError` that says
permanent or transient. `registry` maps a kind to its class (and gives the form its choices):
`s3`, `sftp`, `ftp`, `webhook`, `redis`, `amqp`, `azure_blob`. What several kinds share: `base`
(the contract), `deadline` and `watchdog` (the hard limit of a send), `address_policy`,
`failures`, `http_replies`, `paths`, `probes`, `stale_temporaries`, `urls`, `object_headers`
(Content-Type and Cache-Control per file format), `aws_credentials` (keys, the worker's own
identity, or an assumed role) and `redis_servers` (one Redis server, a managed endpoint, or the
primary Redis Sentinel names; the pull API's clients use it too).
"""

from .base import Deadline, Receipt, Transport, TransportError

__all__ = ["Deadline", "Receipt", "Transport", "TransportError"]
