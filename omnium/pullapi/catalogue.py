"""The catalogue: everything the hot path needs to know about who may pull what, in memory.

Clients, key hashes, entitlements, feed definitions and Games are read from PostgreSQL into
one immutable snapshot, swapped in whole on every reload, so a request sees either the old
catalogue or the new one, never half of each. Reloads follow change notices
(`change_notices`) and happen at least every PULL_CATALOGUE_MAX_AGE_S.
"""

import threading
import time
from dataclasses import dataclass, field

from omnium.clients.models import ApiKey, Entitlement
from omnium.clients.shapes import Shape
from omnium.feeds.models import FeedDefinition
from omnium.feeds.resolvers import PARENT_OF


@dataclass(frozen=True, eq=False)
class PullClient:
    """The identity DRF puts on `request.user` for a request with a valid key."""

    id: int
    name: str
    # (games code, feed type) -> {filter or "" for every filter: Shape}
    entitlements: dict = field(default_factory=dict)
    is_authenticated = True
    is_staff = False

    def shape_for(self, games: str, feed_type: str, filter: str) -> Shape | None:
        """The shape this client gets the file in; None when not entitled."""
        entitled = self.entitlements.get((games, PARENT_OF.get(feed_type, feed_type)))
        if entitled is None:
            return None
        # Split files carry their parent's shape (ensure_pull_cache subscribes them so).
        return entitled.get(filter) or entitled.get("")

    def games_entitled_to(self, feed_type: str) -> set[str]:
        """The Games codes in which this client may read `feed_type` (any filter)."""
        return {games for games, entitled_type in self.entitlements if entitled_type == feed_type}


@dataclass(frozen=True)
class KnownKey:
    key_id: int
    key_hash: str
    client: PullClient
    query_string_allowed: bool
    expires_at: float | None = None  # time.time() from which it is refused; None: never

    def expired(self) -> bool:
        """Asked on every keyed request: the clock is read only for a key that has an expiry."""
        return self.expires_at is not None and time.time() >= self.expires_at


@dataclass(frozen=True)
class Snapshot:
    keys: dict  # lookup id ("omk_AbCd1234") -> KnownKey
    definitions: dict  # (games code, feed type) -> per_noc
    loaded_at: float

    def definition(self, games: str, feed_type: str) -> bool | None:
        """per_noc of an enabled definition, or None when there is no such file kind."""
        return self.definitions.get((games, feed_type))


EMPTY = Snapshot(keys={}, definitions={}, loaded_at=0.0)


def load() -> Snapshot:
    """Read a fresh snapshot from PostgreSQL (four queries)."""
    definitions = {
        (games, feed_type): per_noc
        for games, feed_type, per_noc in FeedDefinition.objects.filter(enabled=True).values_list(
            "games__code", "feed_type", "per_noc")
    }
    entitlements: dict[int, dict] = {}
    for row in Entitlement.objects.filter(active=True, client__active=True, definition__enabled=True).values_list(
            "client_id", "definition__games__code", "definition__feed_type", "filter", "client__transform",
            "client__include_version", "client__include_result_marks"):
        client_id, games, feed_type, filter, *shape = row
        entitlements.setdefault(client_id, {}).setdefault((games, feed_type), {})[filter] = Shape(*shape)
    clients: dict[int, PullClient] = {}
    keys = {}
    for key_id, lookup_id, key_hash, allowed, client_id, name, expires_at in ApiKey.objects.filter(
            revoked_at__isnull=True, client__active=True).values_list(
            "id", "lookup_id", "key_hash", "query_string_allowed", "client_id", "client__name", "expires_at"):
        client = clients.get(client_id) or PullClient(client_id, name, entitlements.get(client_id, {}))
        clients[client_id] = client
        # An expired key is kept, refused at its expiry by each request (no reload needed then).
        keys[lookup_id] = KnownKey(key_id, key_hash, client, allowed, expires_at and expires_at.timestamp())
    return Snapshot(keys=keys, definitions=definitions, loaded_at=time.monotonic())


class CatalogueHolder:
    """The process's current snapshot; `reload()` swaps in a new one."""

    def __init__(self):
        self._snapshot = EMPTY
        self._lock = threading.Lock()

    @property
    def snapshot(self) -> Snapshot:
        return self._snapshot

    def reload(self) -> Snapshot:
        with self._lock:  # two reloads at once would only read the same rows twice
            self._snapshot = load()
        return self._snapshot

    def age_s(self) -> float:
        return time.monotonic() - self._snapshot.loaded_at


holder = CatalogueHolder()
