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
