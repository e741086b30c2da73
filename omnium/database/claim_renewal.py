"""Claims this process holds in PostgreSQL, kept alive by a thread while the process lives.

A claim is a row that says "this worker is doing that": a destination's lease, a pending
build's claim, a stat job's. Each carries a short expiry (OMNIUM_CLAIM_TTL_S, 6 s) that a
thread of the holding process renews every third of it. When the process dies (kill -9, OOM,
its host gone) or freezes (SIGSTOP), renewals stop and its claims expire within the TTL, so
another worker takes the work over in seconds, not after a whole send deadline.

A holder that froze and woke up may not know yet that its claim passed on. `held()` answers
from this process's monotonic clock, which runs on while a process is stopped: a claim counts
as held only until the TTL after the last renewal was *sent*, less a safety second, so it is
never believed held after PostgreSQL let it go. Work checks `held()` before making its effect
visible (the fence: a rename over the final file, the proof).
"""

import logging
import os
import threading
import time
from collections.abc import Callable

from django.db import connection

from omnium.conf import omnium_setting

log = logging.getLogger(__name__)

# Renewal and clock may disagree by this much: the claim is given up this early.
SAFETY_S = 1.0


def ttl_s() -> float:
    return omnium_setting("CLAIM_TTL_S")


class HeldClaim:
    """One claim, renewed by `renew()` (a conditional UPDATE: False once the claim is not ours)."""

    def __init__(self, name: str, renew: Callable[[], bool], claimed_at: float):
        self.name = name
        self._renew = renew
        self._valid_from = claimed_at  # monotonic time just before the claiming statement
        self._lost = False
        # Set while the holder runs a statement that may let the claim go itself (the sender's
        # last proof): a renewal that finds it gone then is no news.
        self.may_end = False

    def held(self) -> bool:
        return not self._lost and time.monotonic() < self._valid_from + ttl_s() - SAFETY_S

    def renew(self) -> None:
        sent_at = time.monotonic()
        if self._renew():
            self._valid_from = sent_at
        else:
            self._lost = True
            if not self.may_end:
                log.warning("claim %s was lost (expired and taken, or finished elsewhere)", self.name)


_claims: set[HeldClaim] = set()
_lock = threading.Lock()
_renewer_pid: int | None = None


def hold(name: str, renew: Callable[[], bool], claimed_at: float) -> HeldClaim:
    """Keep renewing a claim just taken (`claimed_at`: monotonic time before it was taken)."""
    claim = HeldClaim(name, renew, claimed_at)
    with _lock:
        _claims.add(claim)
        _start_renewer()
    return claim


def let_go(claim: HeldClaim) -> None:
    with _lock:
        _claims.discard(claim)


def _start_renewer() -> None:
    global _renewer_pid
    if _renewer_pid != os.getpid():  # none yet, or this is a forked child (threads do not fork)
        _renewer_pid = os.getpid()
        threading.Thread(target=_renew_forever, daemon=True, name="claim-renewal").start()


def _renew_forever() -> None:
    while True:
        time.sleep(ttl_s() / 3)
        with _lock:
            claims = list(_claims)
        for claim in claims:
            try:
                claim.renew()
            except Exception as exc:  # PostgreSQL away: the claim expires unless a later renewal lands
                log.warning("could not renew claim %s: %s: %s", claim.name, type(exc).__name__, exc)
                connection.close()
        if not claims:
            connection.close()  # nothing held: no connection kept open for nothing
