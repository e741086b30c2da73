"""Building one feed file: resolve, serialise, hash, and save a new version only on change.

A build runs in one REPEATABLE READ transaction, so everything it reads is one consistent
snapshot. If another build of the same file committed after that snapshot was taken,
PostgreSQL refuses our write to the document row (a serialization failure): whichever build
is newer, ours may not be, so we stop and report "superseded", and the caller queues one more
build that starts from a fresh snapshot. That is how an older build never overwrites a newer
one, and why `seq` can be taken at the moment of writing, only when the hash differs.
"""

import logging
import time
from dataclasses import dataclass

import psycopg.errors
from django.db import DatabaseError, connection, transaction
from django.utils import timezone

from omnium.database.server_binding import server_binding_cursor
from omnium.feeds.canonical import canonical, dependencies_hash, iso_time
from omnium.feeds.doc_keys import FileKey
from omnium.feeds.models import FeedDefinition
from omnium.feeds.resolvers import PER_RECORD_FEED_TYPES, RESOLVERS
from omnium.feeds.resolvers.base import Resolved
from omnium.feeds.signals import file_version_committed, file_version_saved
from omnium.metrics.families import build_duration

log = logging.getLogger(__name__)

NEW_VERSION, UNCHANGED, SUPERSEDED = "new_version", "unchanged", "superseded"


@dataclass(frozen=True)
class BuildResult:
    doc_key: str
    outcome: str
    seq: int | None
    size: int
    seconds: float


def build_file(doc_key: str) -> BuildResult:
    """Build `doc_key` from the saved data; must not run inside another transaction."""
    started = time.perf_counter()
    key = FileKey.parse(doc_key)
    definition = FeedDefinition.objects.select_related("games").get(
        games__code=key.games_code, feed_type=key.feed_type
    )
    try:
        with transaction.atomic(durable=True):
            _use_one_snapshot()
            outcome, seq, size = _build_and_save(definition, key)
    except DatabaseError as exc:
        if not isinstance(exc.__cause__, (psycopg.errors.SerializationFailure, psycopg.errors.UniqueViolation)):
            raise
        log.info("build of %s superseded by a concurrent build", doc_key)
        outcome, seq, size = SUPERSEDED, None, 0
    duration_s = time.perf_counter() - started
    build_duration().labels(key.feed_type, outcome).observe(duration_s)
    return BuildResult(doc_key, outcome, seq, size, duration_s)


def _use_one_snapshot() -> None:
    with connection.cursor() as cursor:
        cursor.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")


def _build_and_save(definition: FeedDefinition, key: FileKey):
    resolved = RESOLVERS[key.feed_type](definition.games, key.filter)
    changed_at = resolved.changed_at or definition.games.changed_at
    file = canonical({
        "feed": {"games": key.games_code, "type": key.feed_type, "filter": key.filter or None,
                 "name": definition.name},
        "changed_at": iso_time(changed_at),
        "data": resolved.data,
    })
    deps_hash = dependencies_hash(resolved.records)
    doc_key = str(key)
    current = _lock_current(doc_key)
    # A file's records rarely change when its content does (a score, not a new fixture), and
    # rewriting thousands of dependency rows on every version was most of a build's writes.
    dependencies_changed = current is None or bytes(current[1]) != deps_hash
    if current and bytes(current[0]) == file.content_hash:
        if dependencies_changed:
            _replace_dependencies(doc_key, resolved)
            _save_dependencies_hash(doc_key, deps_hash)
        return UNCHANGED, current[2], 0
    seq = _next_seq()
    body = file.body(timezone.now())
    if not _upsert(definition, key, body, file.content_hash, deps_hash, seq, changed_at):
        return SUPERSEDED, None, 0
    if dependencies_changed:  # the upsert saved their hash
        _replace_dependencies(doc_key, resolved)
    _record_version(doc_key, seq, file.content_hash, len(body), changed_at)
    file_version_saved.send(sender=FeedDefinition, doc_key=doc_key, seq=seq, definition_id=definition.pk,
                            filter=key.filter)
    transaction.on_commit(lambda: file_version_committed.send(sender=FeedDefinition, doc_key=doc_key, seq=seq))
    return NEW_VERSION, seq, len(body)


def _lock_current(doc_key: str):
    """(content_hash, dependencies_hash, seq) of the saved version, locked; None if none yet.

    Raises a serialization failure if another build changed the row after our snapshot.
    """
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT content_hash, dependencies_hash, seq FROM feeds_feeddocument"
            " WHERE doc_key = %s FOR UPDATE",
            [doc_key],
        )
        return cursor.fetchone()


def _next_seq() -> int:
    with connection.cursor() as cursor:
        cursor.execute("SELECT nextval('feed_document_seq')")
        return cursor.fetchone()[0]


UPSERT = """
INSERT INTO feeds_feeddocument AS doc
    (doc_key, definition_id, games_id, feed_type, filter, body, size, content_hash,
     dependencies_hash, seq, changed_at, built_at)
VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, clock_timestamp())
ON CONFLICT (doc_key) DO UPDATE SET
    body = EXCLUDED.body, size = EXCLUDED.size, content_hash = EXCLUDED.content_hash,
    dependencies_hash = EXCLUDED.dependencies_hash, seq = EXCLUDED.seq,
    changed_at = EXCLUDED.changed_at, built_at = EXCLUDED.built_at
WHERE EXCLUDED.seq > doc.seq
"""


def _upsert(definition, key: FileKey, body, content_hash, deps_hash, seq, changed_at) -> bool:
    """Save the new version; False if a newer version is already saved."""
    with server_binding_cursor() as cursor:
        cursor.execute(UPSERT, [
            str(key), definition.pk, definition.games_id, key.feed_type, key.filter, body, len(body),
            content_hash, deps_hash, seq, changed_at,
        ])
        return cursor.rowcount == 1


def _replace_dependencies(doc_key: str, resolved: Resolved) -> None:
    kinds, ids = zip(*resolved.records) if resolved.records else ((), ())
    with connection.cursor() as cursor:
        cursor.execute("DELETE FROM feed_dependency WHERE doc_key = %s", [doc_key])
        cursor.execute(
            "INSERT INTO feed_dependency (record_kind, record_id, doc_key)"
            " SELECT kind, id, %s FROM unnest(%s::text[], %s::uuid[]) AS t(kind, id)",
            [doc_key, list(kinds), list(ids)],
        )


def _save_dependencies_hash(doc_key: str, deps_hash: bytes) -> None:
    with connection.cursor() as cursor:
        cursor.execute(
            "UPDATE feeds_feeddocument SET dependencies_hash = %s WHERE doc_key = %s", [deps_hash, doc_key]
        )


def _record_version(doc_key: str, seq: int, content_hash: bytes, size: int, changed_at) -> None:
    with connection.cursor() as cursor:
        cursor.execute(
            "INSERT INTO feeds_feedversion (doc_key, seq, content_hash, size, changed_at, committed_at, snapshot)"
            " VALUES (%s, %s, %s, %s, %s, clock_timestamp(), pg_current_snapshot())",
            [doc_key, seq, content_hash, size, changed_at],
        )


def files_of(games_code: str) -> list[str]:
    """Every doc_key of a Games' enabled definitions (per-NOC ones: NOCs with entries), but
    the per-record pull files, which are listed from their records where they are set up."""
    from omnium.games.models import Entry

    definitions = (FeedDefinition.objects.filter(games__code=games_code, enabled=True)
                   .exclude(feed_type__in=PER_RECORD_FEED_TYPES).order_by("feed_type"))
    nocs = sorted(set(Entry.objects.filter(games__code=games_code).values_list("noc__code", flat=True)))
    keys = []
    for definition in definitions:
        filters = nocs if definition.per_noc else [""]
        keys.extend(str(FileKey(games_code, definition.feed_type, f)) for f in filters)
    return keys
