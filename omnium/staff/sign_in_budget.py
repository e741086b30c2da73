"""At most one password check a second per admin process, so that a flood of sign-ins from
many addresses (which no lockout stops: each address and user name is new) cannot take the
cores the pull API serves from (docs/decisions/006-admin-sign-in-flood.md).

A password check is a PBKDF2 hash of about half a second of CPU, made for unknown user names
too. One a second is half a core at most. Beyond it, an attempt is refused before any hash is
made, with a sentence that says to try again in a moment; during a flood that is also what a
member of staff sees, which is the price, and the reason the admin belongs on an address only
staff reach (docs/operations/deploy.md).
"""

import logging
import threading
import time

log = logging.getLogger(__name__)

CHECKS_PER_S = 1.0
BURST = 2  # a person who mistypes and types again at once is not refused
SAID_EVERY_S = 60.0  # a flood is logged once a minute with its count, not once an attempt


class TokenBucket:
    def __init__(self, per_s: float, burst: int):
        self.per_s, self.burst = per_s, burst
        self.tokens, self.updated = float(burst), time.monotonic()
        self.lock = threading.Lock()

    def take(self) -> bool:
        """One token if there is one (refilled at `per_s` a second, up to `burst`)."""
        with self.lock:
            now = time.monotonic()
            self.tokens = min(self.burst, self.tokens + (now - self.updated) * self.per_s)
            self.updated = now
            if self.tokens < 1:
                return False
            self.tokens -= 1
            return True


password_checks = TokenBucket(CHECKS_PER_S, BURST)
_refused = {"count": 0, "said_at": 0.0}
_refused_lock = threading.Lock()


def allow_password_check() -> bool:
    """Whether this sign-in may have its password checked now; refusals are logged."""
    if password_checks.take():
        return True
    with _refused_lock:
        _refused["count"] += 1
        now = time.monotonic()
        if now - _refused["said_at"] < SAID_EVERY_S:
            return False
        count, _refused["count"], _refused["said_at"] = _refused["count"], 0, now
    log.warning("%d sign-in attempt(s) refused unchecked: more arrive than this process checks "
                "(%g a second); someone may be trying passwords from many addresses", count, CHECKS_PER_S)
    return False
