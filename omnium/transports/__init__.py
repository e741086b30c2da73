"""Push transports: one module per kind of destination behind the contract in ``base``."""

from .base import Deadline, Receipt, Transport, TransportError

__all__ = ["Deadline", "Receipt", "Transport", "TransportError"]
