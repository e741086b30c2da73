"""Record ids in file names: a UUID as 26 base32 characters.

A file's filter column holds at most 30 characters and a UUID takes 36, so the per-fixture
and per-athlete files carry the id's base32 form ("fixture/6s5n3…"); the API's addresses use
the ordinary UUID and convert.
"""

import base64
import binascii
import uuid


def compact(record_id) -> str:
    value = record_id if isinstance(record_id, uuid.UUID) else uuid.UUID(str(record_id))
    return base64.b32encode(value.bytes).decode().rstrip("=").lower()


def expand(text: str) -> uuid.UUID:
    """The UUID of a compact id; ValueError if it is not one."""
    try:
        return uuid.UUID(bytes=base64.b32decode(text.upper() + "======"))
    except (binascii.Error, ValueError) as exc:
        raise ValueError(f"{text!r} is not a compact record id") from exc
