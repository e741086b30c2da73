"""Writing outbox rows: the "what changed" note that commits with the change itself."""

from collections.abc import Iterable
from uuid import UUID

from django.db import transaction

from omnium.games.models import Games, OutboxEntry
from omnium.games.signals import changes_committed
from omnium.routing import LIVE

RecordRef = tuple[str, UUID]


def record_change(games: Games, action: str, records: Iterable[RecordRef], lane: str = LIVE):
    """Note in the current transaction that `records` changed; hint the readers after commit."""
    if not transaction.get_connection().in_atomic_block:
        raise RuntimeError("record_change must run inside the transaction that made the change")
    refs = sorted({(kind, str(record_id)) for kind, record_id in records})
    entry = OutboxEntry.objects.create(games=games, action=action, lane=lane, records=refs)
    transaction.on_commit(lambda: changes_committed.send(sender=OutboxEntry, lane=lane))
    return entry
