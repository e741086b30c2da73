"""The resolver contract: what a builder gets back for one file.

A resolver is a function `(games, filter) -> Resolved`, run in the builder's own process and
transaction against PostgreSQL (never over HTTP). It must be deterministic: the same saved
data gives an equal `data`. It raises `UnknownFile` when the filter names nothing in this Games.
"""

from dataclasses import dataclass, field
from datetime import datetime
from uuid import UUID


class UnknownFile(LookupError):
    """The file named does not exist (e.g. a country feed for a NOC not at these Games)."""


@dataclass
class Resolved:
    data: object
    # Every record the file was built from, or whose change could change the file.
    records: set[tuple[str, UUID]] = field(default_factory=set)
    # The newest real change among the records shown; None for a file with no records.
    changed_at: datetime | None = None

    def depends_on(self, kind: str, ids) -> None:
        self.records.update((kind, record_id) for record_id in ids)

    def saw_change(self, *times) -> None:
        newest = max((t for t in times if t is not None), default=None)
        if newest is not None and (self.changed_at is None or newest > self.changed_at):
            self.changed_at = newest
