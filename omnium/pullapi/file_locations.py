"""Where a requested file lives: its Redis key, and how to read it from PostgreSQL instead.

The Redis destinations that `ensure_pull_cache` sets up write these same keys:
  feed:{doc_key}                    a feed file as built, shared by every client
  feed:{client id}:{tag}:{doc_key}  a feed file in one client's own shape (rendered at publish
                                    time); the shape's tag makes a new shape a new key
  pub:{feed type}/{filter}          a public document named without its Games (fixture, career)
"""

from dataclasses import dataclass

from omnium import redis_keys
from omnium.clients.shapes import AS_BUILT, Shape
from omnium.clients.transforms import TRANSFORMS
from omnium.pullapi import database_reads
from omnium.pullapi.database_reads import StoredFile

PUBLIC_TEMPLATE = "{feed_type}/{filter}"
DOC_KEY_TEMPLATE = "{doc_key}"


def own_prefix(client_id: int, shape: Shape) -> str:
    return redis_keys.own_shape_prefix(client_id, shape.tag)


@dataclass(frozen=True, slots=True)
class FeedFileAddress:
    doc_key: str
    shape: Shape = AS_BUILT
    client_id: int | None = None

    @property
    def redis_key(self) -> str:
        prefix = own_prefix(self.client_id, self.shape) if self.shape.own else redis_keys.SHARED_FILE_PREFIX
        return prefix + self.doc_key

    @property
    def content_type(self) -> str:
        return self.shape.content_type

    def load(self) -> StoredFile | None:
        stored = database_reads.current_document(self.doc_key)
        if stored is None or not self.shape.own:
            return stored
        # The same rendering and ETag the client's Redis destination writes at publish time.
        rendered = TRANSFORMS[self.shape.transform].render(stored.body, self.shape.marks(stored.version))
        return StoredFile(stored.version, self.shape.etag(stored.etag), rendered.body)


@dataclass(frozen=True, slots=True)
class PublicDocumentAddress:
    feed_type: str
    filter: str
    content_type: str = "application/json"

    @property
    def redis_key(self) -> str:
        return redis_keys.PUBLIC_FILE_PREFIX + PUBLIC_TEMPLATE.format(feed_type=self.feed_type, filter=self.filter)

    def load(self) -> StoredFile | None:
        return database_reads.newest_public_document(self.feed_type, self.filter)
