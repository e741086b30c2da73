"""Writing outbox rows: the "what changed" note that commits with the change itself."""

import uuid
from collections.abc import Iterable
from datetime import date
from uuid import UUID

from django.db import transaction

from omnium.games.models import Games, OutboxEntry
from omnium.games.signals import changes_committed
from omnium.routing import LIVE

RecordRef = tuple[str, UUID]

# The ids of "day" records: a day of a Games is no row, but a fixture moved into a day
# names that day, so that the day's file depends on its own fixtures and its own day only.
# It depended on every fixture that could still move, and each scheduled fixture's first
# score rebuilt all of the Games' day files for nothing: the largest single cost of the
# builders during a replayed day (bench/deliver.py: 276 unchanged day builds, 0.43 s each).
_DAY_IDS = uuid.UUID("5d1f1c2e-4b7a-4f7e-9a51-0c6a0d3b2e11")


def day_record(games_id, day: date) -> RecordRef:
    """The record standing for day `day` of the Games `games_id` (UTC, as the calendar)."""
    return "day", uuid.uuid5(_DAY_IDS, f"{games_id}/{day.isoformat()}")


def record_change(games: Games, action: str, records: Iterable[RecordRef], lane: str = LIVE):
    """Note in the current transaction that `records` changed; hint the readers after commit."""
    if not transaction.get_connection().in_atomic_block:
        raise RuntimeError("record_change must run inside the transaction that made the change")
    refs = sorted({(kind, str(record_id)) for kind, record_id in records})
    entry = OutboxEntry.objects.create(games=games, action=action, lane=lane, records=refs)
    transaction.on_commit(lambda: changes_committed.send(sender=OutboxEntry, lane=lane))
    return entry
