"""One way to wait for something on this machine: poll, and fail saying what did not happen."""

import time


def wait_until(predicate, timeout: float = 15.0, interval: float = 0.05, message: str = "condition",
               failure=AssertionError):
    """Poll `predicate` until it returns something truthy, and return that.

    An OSError from the predicate counts as "not yet" (a port that does not answer yet).
    After `timeout` seconds, raise `failure` naming `message`."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            value = predicate()
        except OSError:
            value = None
        if value:
            return value
        if time.monotonic() >= deadline:
            raise failure(f"{message}: not reached within {timeout} s")
        time.sleep(interval)


def live_builds_pending() -> bool:
    """Changes saved and not built yet in the live lane: what a bench or the demo waits for
    after making changes. A new Games' first builds wait in the bulk lane for minutes (some
    16,700 files at Asian Games scale) and are no change of theirs."""
    from omnium.feeds.models import PendingBuild
    from omnium.games.models import OutboxEntry
    from omnium.routing import LIVE

    # A change saved while no worker could act (a broker outage) is an outbox row until a
    # sweep turns it into pending builds: not built either.
    return (PendingBuild.objects.filter(lane=LIVE).exists()
            or OutboxEntry.objects.filter(lane=LIVE, handled_at__isnull=True).exists())
