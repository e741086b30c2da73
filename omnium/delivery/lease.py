"""One sender per destination at a time, across every worker process and host.

The lease is a token with an expiry in the destination's SenderState row (PostgreSQL, so a
Redis restart cannot let a second sender in). It is taken with a conditional upsert, renewed
between files and released with a token check. Its TTL is longer than the hard send deadline
plus the time to record a proof, so a zombie sender has given up before its lease can pass on.
"""

import uuid

from django.db import connection

from omnium.conf import omnium_setting

ACQUIRE = """
INSERT INTO delivery_senderstate AS s
    (destination_id, lease_token, lease_until, consecutive_failures, last_error, paused, paused_reason)
VALUES (%(id)s, %(token)s, clock_timestamp() + %(ttl)s * interval '1 second', 0, '', false, '')
ON CONFLICT (destination_id) DO UPDATE
    SET lease_token = EXCLUDED.lease_token, lease_until = EXCLUDED.lease_until
    WHERE s.lease_until IS NULL OR s.lease_until < clock_timestamp()
RETURNING lease_token
"""


def lease_seconds(send_timeout_s: float) -> float:
    return send_timeout_s + omnium_setting("DELIVERY_LEASE_MARGIN_S")


def acquire(destination_id: int, send_timeout_s: float) -> uuid.UUID | None:
    """The lease's token, or None if another sender holds it."""
    token = uuid.uuid4()
    with connection.cursor() as cursor:
        cursor.execute(ACQUIRE, {"id": destination_id, "token": token, "ttl": lease_seconds(send_timeout_s)})
        return token if cursor.fetchone() else None


def renew(destination_id: int, token: uuid.UUID, send_timeout_s: float) -> bool:
    """Extend the lease; False if it was lost (expired and taken), so the caller must stop."""
    with connection.cursor() as cursor:
        cursor.execute(
            "UPDATE delivery_senderstate SET lease_until = clock_timestamp() + %s * interval '1 second'"
            " WHERE destination_id = %s AND lease_token = %s",
            [lease_seconds(send_timeout_s), destination_id, token],
        )
        return cursor.rowcount == 1


def release(destination_id: int, token: uuid.UUID) -> None:
    with connection.cursor() as cursor:
        cursor.execute(
            "UPDATE delivery_senderstate SET lease_token = NULL, lease_until = NULL"
            " WHERE destination_id = %s AND lease_token = %s",
            [destination_id, token],
        )


# The destination waiting longest for a sender, leased in the same statement. It walks owed
# files oldest first (index delivery_state_waiting), so its cost grows with the number of
# destinations being sent right now, not with the backlog. SKIP LOCKED lets many idle threads
# claim at once without queueing behind one another's row locks. The conditions are the
# sender's own gates, so a claimed destination has a file to send. Only destinations that had a
# sender before (a SenderState row) are seen; a new destination's first drain is its own kick's.
CLAIM_WAITING = """
WITH waiting AS (
    SELECT ss.destination_id FROM delivery_state ds
    JOIN delivery_senderstate ss ON ss.destination_id = ds.destination_id
    JOIN clients_subscription s ON s.id = ds.subscription_id AND s.active
    JOIN clients_destination d ON d.id = ds.destination_id AND d.enabled AND NOT d.fenced
    JOIN clients_client c ON c.id = d.client_id AND c.active
    WHERE (ds.wanted_seq > ds.sent_seq OR ds.force_resend) AND ds.dead_lettered_at IS NULL
      AND (ss.lease_until IS NULL OR ss.lease_until < clock_timestamp())
      AND (ss.retry_at IS NULL OR ss.retry_at <= clock_timestamp()) AND NOT ss.paused
    ORDER BY ds.wanted_at
    LIMIT 1
    FOR UPDATE OF ss SKIP LOCKED)
UPDATE delivery_senderstate ss SET lease_token = %(token)s,
    lease_until = clock_timestamp() + %(ttl)s * interval '1 second'
FROM waiting WHERE ss.destination_id = waiting.destination_id
RETURNING ss.destination_id
"""


def claim_waiting(send_timeout_s: float) -> tuple[int, uuid.UUID] | None:
    """Lease the destination that has waited longest for a sender: (its id, the token), or None.

    `send_timeout_s` should cover any destination's deadline (the admin's upper bound); the
    caller renews for a destination whose deadline was set beyond it."""
    token = uuid.uuid4()
    with connection.cursor() as cursor:
        cursor.execute(CLAIM_WAITING, {"token": token, "ttl": lease_seconds(send_timeout_s)})
        row = cursor.fetchone()
    return (row[0], token) if row else None
