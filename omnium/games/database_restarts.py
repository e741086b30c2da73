"""Workflow commands that ride out a database restart: the caller sees a slow answer, not an error.

A command's transaction is run again when the connection to PostgreSQL was lost before the
transaction reached its commit (the database restarted, failed over, or cut the connection):
PostgreSQL rolled that transaction back, so nothing of it was saved and running it again is
safe. A connection lost *during* the commit is not retried: whether it committed cannot be
known, and the error says so. Nor is a command run inside a caller's own transaction: only
the caller can run that again.
"""

import functools
import logging
import time

from django.db import DatabaseError, connection, transaction

log = logging.getLogger(__name__)

# A restart on this machine takes 2-3 s (pg_ctlcluster restart); a failover longer.
GIVE_UP_AFTER_S = 20.0
FIRST_WAIT_S, LONGEST_WAIT_S = 0.2, 2.0


def _lost_the_database() -> bool:
    """True when the failure was the connection itself (not, say, a constraint)."""
    if connection.connection is None:  # it could not even connect: the database is starting up
        return True
    try:
        return not connection.is_usable()
    except DatabaseError:
        return True


def workflow_command(command):
    """`command` in one transaction, run again (within GIVE_UP_AFTER_S) if the database went
    away before the transaction committed."""
    @functools.wraps(command)
    def run(*args, **kwargs):
        retrying = not connection.in_atomic_block
        started, wait = time.monotonic(), FIRST_WAIT_S
        while True:
            reached_commit = False
            try:
                with transaction.atomic():
                    result = command(*args, **kwargs)
                    reached_commit = True
                return result
            except DatabaseError:
                if (not retrying or reached_commit or time.monotonic() - started > GIVE_UP_AFTER_S
                        or not _lost_the_database()):
                    raise
                log.warning("%s: the database went away before the commit; running it again in %.1f s",
                            command.__name__, wait)
            connection.close()
            time.sleep(wait)
            wait = min(LONGEST_WAIT_S, wait * 2)

    return run
