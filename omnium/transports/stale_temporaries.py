"""Finding the temporary files that cut or killed sends left behind (SFTP and FTP).

A send uploads to a hidden temporary name and renames it into place; when its connection is
cut (a deadline, a pause) or its worker killed, nobody is left to delete that file. The next
connection that uploads into the same folder removes the ones of ours that are stale.
"""

from __future__ import annotations

import time
from collections.abc import Iterable

from .base import is_temporary_name

# A server clock running behind ours makes its files look older than they are; the margin
# keeps such a skew from passing a live upload for a stale one.
CLOCK_SKEW_MARGIN_S = 60.0


class StaleTemporaries:
    """Which folders are due a look, and which of the files found there are stale.

    A temporary file is stale once it is older than the send deadline (plus the margin): the
    send that wrote it has ended by then, one way or the other, so no live upload is touched.
    Only names of our temporary shape are ever offered for removal. A transport looks at a
    folder on its first upload there, then at most once per ``stale_after`` seconds: a file
    younger than that could not be removed anyway, and one look per upload would cost FTP a
    data connection per send.
    """

    def __init__(self, send_timeout: float):
        self.stale_after = send_timeout + CLOCK_SKEW_MARGIN_S
        self._looked_at: dict[str, float] = {}

    def due(self, folder: str) -> bool:
        """True (and noted) when ``folder`` should be looked at now."""
        now = time.monotonic()
        last = self._looked_at.get(folder)
        if last is not None and now - last < self.stale_after:
            return False
        self._looked_at[folder] = now
        return True

    def stale(self, entries: Iterable[tuple[str, float]]) -> list[str]:
        """The names among ``(name, modified at, epoch seconds)`` entries to remove."""
        oldest_live = time.time() - self.stale_after
        return [name for name, modified in entries if is_temporary_name(name) and modified < oldest_live]
