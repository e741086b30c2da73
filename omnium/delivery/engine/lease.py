"""One sender per destination at a time, across every worker process and host.

The lease is a token with an expiry in the destination's SenderState row (PostgreSQL, so a
Redis restart cannot let a second sender in). It is taken with a conditional upsert and
released with a token check; while the sender works, its process renews it (see
omnium.database.claim_renewal), so the expiry is short (OMNIUM_CLAIM_TTL_S): a sender that dies or
freezes loses its destination within seconds. A frozen sender that wakes up cannot make an
older version visible after its successor's newer one: the transports ask `held()` just
before the rename or write that makes a file visible, and `held()` turns false on this
process's own clock, which ran on while it was frozen.
"""

import uuid

from omnium.database import claim_renewal
from omnium.database.server_binding import server_binding_cursor

# Takes the lease when it is free or expired. A statement that takes it (lease.acquire, and a
# drain with its first owed files: delivery.engine.owed_files.take_lease) adds its own RETURNING:
# no row comes back when another sender holds it. Parameters: `acquiring`.
ACQUIRE = """
INSERT INTO delivery_senderstate AS s
    (destination_id, lease_token, lease_until, consecutive_failures, last_error, paused, paused_reason)
VALUES (%(destination)s, %(token)s, clock_timestamp() + %(ttl)s * interval '1 second', 0, '', false, '')
ON CONFLICT (destination_id) DO UPDATE
    SET lease_token = EXCLUDED.lease_token, lease_until = EXCLUDED.lease_until
    WHERE s.lease_until IS NULL OR s.lease_until < clock_timestamp()
"""

RENEW = """
UPDATE delivery_senderstate SET lease_until = clock_timestamp() + %(ttl)s * interval '1 second'
WHERE destination_id = %(destination)s AND lease_token = %(token)s
"""

RELEASE = """
UPDATE delivery_senderstate SET lease_token = NULL, lease_until = NULL
WHERE destination_id = %(destination)s AND lease_token = %(token)s
"""


def released_if(condition: str) -> str:
    """SET items of an UPDATE of delivery_senderstate that let the lease %(token)s go when
    `condition` (SQL) holds: a proof's statement releases it with the last send
    (delivery.engine.proofs.RECORD_PROOFS)."""
    letting_go = f"({condition}) AND lease_token = %(token)s"
    return (f"lease_token = CASE WHEN {letting_go} THEN NULL ELSE lease_token END, "
            f"lease_until = CASE WHEN {letting_go} THEN NULL ELSE lease_until END")


def acquiring(destination_id: int) -> dict:
    """ACQUIRE's parameters, with a new token: the lease's if the statement returns a row."""
    return {"destination": destination_id, "token": uuid.uuid4(), "ttl": claim_renewal.ttl_s()}


def acquire(destination_id: int) -> uuid.UUID | None:
    """The lease's token, or None if another sender holds it."""
    parameters = acquiring(destination_id)
    with server_binding_cursor() as cursor:
        cursor.execute(ACQUIRE + "RETURNING lease_token", parameters)
        return parameters["token"] if cursor.fetchone() else None


def renew(destination_id: int, token: uuid.UUID) -> bool:
    """Extend the lease; False if it was lost (expired and taken), so the holder must stop."""
    with server_binding_cursor() as cursor:  # prepared: every 2 s per lease held
        cursor.execute(RENEW, {"destination": destination_id, "token": token, "ttl": claim_renewal.ttl_s()})
        return cursor.rowcount == 1


def release(destination_id: int, token: uuid.UUID) -> None:
    with server_binding_cursor() as cursor:  # prepared: after a drain that did not let go in its proof
        cursor.execute(RELEASE, {"destination": destination_id, "token": token})
