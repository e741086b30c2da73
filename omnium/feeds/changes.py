"""The outbox reader: from "records changed" to "files owe a build".

It reads outbox rows that are not yet handled, never "after my cursor", so a transaction that
commits late (with a lower id than rows already handled) is still read (ARCHITECTURE rule 10).
Rows are locked with SKIP LOCKED, so readers on several hosts share the work, and each row is
marked handled in the same transaction that notes its files' pending builds: handling a row
twice is impossible, and a crash before commit leaves it unhandled for the next reader.
"""

import json
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import datetime

from django.db import connection, transaction

from omnium.feeds import debounce

BATCH = 500

TAKE_UNHANDLED = """
SELECT id, records, created_at, lane FROM games_outbox
WHERE handled_at IS NULL ORDER BY id LIMIT %s FOR UPDATE SKIP LOCKED
"""

FILES_OF_RECORDS = """
SELECT d.record_kind, d.record_id::text, d.doc_key
FROM feed_dependency d
JOIN unnest(%s::text[], %s::uuid[]) AS t(kind, id) ON d.record_kind = t.kind AND d.record_id = t.id
"""


@dataclass
class HandledBatch:
    rows: int = 0
    files: set = field(default_factory=set)
    due: dict = field(default_factory=dict)  # lane -> earliest due time


def handle_batch(limit: int = BATCH) -> HandledBatch:
    """Handle up to `limit` unhandled outbox rows in one transaction."""
    batch = HandledBatch()
    with transaction.atomic():
        with connection.cursor() as cursor:
            cursor.execute(TAKE_UNHANDLED, [limit])
            rows = cursor.fetchall()
        if not rows:
            return batch
        files_of = _files_of_records({(kind, rid) for _, records, _, _ in rows for kind, rid in _refs(records)})
        for _, records, created_at, lane in rows:
            touched = set().union(*(files_of.get(ref, ()) for ref in _refs(records)))
            _note(batch, touched, created_at, lane)
        with connection.cursor() as cursor:
            cursor.execute(
                "UPDATE games_outbox SET handled_at = clock_timestamp() WHERE id = ANY(%s)",
                [[row[0] for row in rows]],
            )
    batch.rows = len(rows)
    return batch


def _refs(records):
    """[kind, id] pairs from an outbox row's `records`. Django sets psycopg to hand jsonb over
    as text (its JSONField parses it), so a raw cursor gets a string to parse."""
    if isinstance(records, str):
        records = json.loads(records)
    return [(kind, str(record_id)) for kind, record_id in records]


def _files_of_records(refs) -> dict:
    if not refs:
        return {}
    kinds, ids = zip(*refs)
    with connection.cursor() as cursor:
        cursor.execute(FILES_OF_RECORDS, [list(kinds), list(ids)])
        found = defaultdict(set)
        for kind, record_id, doc_key in cursor.fetchall():
            found[(kind, record_id)].add(doc_key)
    return found


def _note(batch: HandledBatch, files: set, changed_at: datetime, lane: str) -> None:
    for due in debounce.note_changes(files, changed_at, lane):
        if lane not in batch.due or due < batch.due[lane]:
            batch.due[lane] = due
    batch.files |= files


def handle_all() -> HandledBatch:
    """Handle every unhandled row, batch after batch; returns the combined account."""
    total = HandledBatch()
    while True:
        batch = handle_batch()
        if not batch.rows:
            return total
        total.rows += batch.rows
        total.files |= batch.files
        for lane, due in batch.due.items():
            if lane not in total.due or due < total.due[lane]:
                total.due[lane] = due
