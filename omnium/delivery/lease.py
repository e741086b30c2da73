"""One sender per destination at a time, across every worker process and host.

The lease is a token with an expiry in the destination's SenderState row (PostgreSQL, so a
Redis restart cannot let a second sender in). It is taken with a conditional upsert and
released with a token check; while the sender works, its process renews it (see
omnium.claim_renewal), so the expiry is short (OMNIUM_CLAIM_TTL_S): a sender that dies or
freezes loses its destination within seconds. A frozen sender that wakes up cannot make an
older version visible after its successor's newer one: the transports ask `held()` just
before the rename or write that makes a file visible, and `held()` turns false on this
process's own clock, which ran on while it was frozen.
"""

import uuid

from omnium import claim_renewal
from omnium.server_binding import server_binding_cursor

# Returns the row only when it took the lease (a drain takes it with its first owed files:
# delivery.owed_files.take_lease).
ACQUIRE = """
INSERT INTO delivery_senderstate AS s
    (destination_id, lease_token, lease_until, consecutive_failures, last_error, paused, paused_reason)
VALUES (%(destination)s, %(token)s, clock_timestamp() + %(ttl)s * interval '1 second', 0, '', false, '')
ON CONFLICT (destination_id) DO UPDATE
    SET lease_token = EXCLUDED.lease_token, lease_until = EXCLUDED.lease_until
    WHERE s.lease_until IS NULL OR s.lease_until < clock_timestamp()
"""


def acquire(destination_id: int) -> uuid.UUID | None:
    """The lease's token, or None if another sender holds it."""
    token = uuid.uuid4()
    with server_binding_cursor() as cursor:
        cursor.execute(ACQUIRE + "RETURNING lease_token",
                       {"destination": destination_id, "token": token, "ttl": claim_renewal.ttl_s()})
        return token if cursor.fetchone() else None


def renew(destination_id: int, token: uuid.UUID) -> bool:
    """Extend the lease; False if it was lost (expired and taken), so the holder must stop."""
    with server_binding_cursor() as cursor:  # prepared: every 2 s per lease held
        cursor.execute(
            "UPDATE delivery_senderstate SET lease_until = clock_timestamp() + %s * interval '1 second'"
            " WHERE destination_id = %s AND lease_token = %s",
            [claim_renewal.ttl_s(), destination_id, token],
        )
        return cursor.rowcount == 1


def release(destination_id: int, token: uuid.UUID) -> None:
    with server_binding_cursor() as cursor:  # prepared: after a drain that did not let go in its proof
        cursor.execute(
            "UPDATE delivery_senderstate SET lease_token = NULL, lease_until = NULL"
            " WHERE destination_id = %s AND lease_token = %s",
            [destination_id, token],
        )
