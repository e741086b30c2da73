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
