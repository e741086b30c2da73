"""The only PostgreSQL reads of the pull API's request path, made when Redis has no copy."""

from dataclasses import dataclass

from omnium.database.server_binding import server_binding_cursor


@dataclass(frozen=True)
class StoredFile:
    version: int  # feed_document.seq
    etag: str  # the content hash, hex (what the Redis destination stores as etag)
    body: bytes


def current_document(doc_key: str) -> StoredFile | None:
    with server_binding_cursor(binary_results=True) as cursor:
        cursor.execute("SELECT seq, content_hash, body FROM feeds_feeddocument WHERE doc_key = %s", [doc_key])
        return _stored(cursor.fetchone())


def newest_public_document(feed_type: str, filter: str) -> StoredFile | None:
    """A public document named without its Games (a fixture or athlete id is unique)."""
    with server_binding_cursor(binary_results=True) as cursor:
        cursor.execute(
            "SELECT seq, content_hash, body FROM feeds_feeddocument WHERE feed_type = %s AND filter = %s"
            " ORDER BY seq DESC LIMIT 1",
            [feed_type, filter],
        )
        return _stored(cursor.fetchone())


def _stored(row) -> StoredFile | None:
    return None if row is None else StoredFile(row[0], bytes(row[1]).hex(), bytes(row[2]))
