"""The "behind" alert: a destination owed a version for longer than BEHIND_AFTER_S.

It looks at owed work in PostgreSQL, not at failures, so it also fires when a sender is
stuck or no worker serves the destination. Paused destinations are not "behind": a person
stopped them on purpose (their screen says so).
"""

from django.db import connection

from omnium.alerts.models import Alert
from omnium.alerts.service import open_alert, resolve_alert
from omnium.conf import omnium_setting

KIND = "destination_behind"

BEHIND = """
SELECT ds.destination_id, MIN(ds.wanted_at), COUNT(*) FROM delivery_state ds
JOIN clients_subscription s ON s.id = ds.subscription_id AND s.active
JOIN clients_destination d ON d.id = ds.destination_id AND d.enabled AND NOT d.fenced
JOIN clients_client c ON c.id = d.client_id AND c.active
LEFT JOIN delivery_senderstate ss ON ss.destination_id = ds.destination_id
WHERE ds.wanted_seq > ds.sent_seq AND NOT COALESCE(ss.paused, false)
  AND ds.wanted_at < clock_timestamp() - %s * interval '1 second'
GROUP BY ds.destination_id
"""


def check_behind() -> int:
    """Open an alert per destination that is behind; resolve those that caught up."""
    limit = omnium_setting("BEHIND_AFTER_S")
    with connection.cursor() as cursor:
        cursor.execute(BEHIND, [limit])
        behind = {f"destination:{row[0]}": row for row in cursor.fetchall()}
    # Only the changes: the sweeper runs every 2 s, and opening an alert already open costs
    # three statements (5,000 destinations behind made every sweep take seconds).
    already_open = set(Alert.objects.filter(kind=KIND, resolved_at__isnull=True).values_list("subject", flat=True))
    for subject in behind.keys() - already_open:
        destination_id, oldest, files = behind[subject]
        open_alert(KIND, subject, f"Destination {destination_id} is owed {files} file(s); the oldest since "
                   f"{oldest:%H:%M:%S} UTC (more than {limit:g} s)", destination=destination_id)
    for subject in already_open - behind.keys():
        resolve_alert(KIND, subject)
    return len(behind)
