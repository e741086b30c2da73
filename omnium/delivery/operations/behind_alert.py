"""The "behind" alert: a destination owed a version for longer than BEHIND_AFTER_S, or whose
file has had a change waiting to be built that long (a live build that lags, or fails, leaves
every subscriber behind as surely as a stuck sender: counted from the oldest unbuilt change).

It looks at owed work in PostgreSQL, not at failures, so it also fires when a sender is
stuck, no worker serves the destination or no builder builds its file. Bulk-lane files (full
rebuilds, first builds of a new Games) may wait: they do not count. Paused destinations are not "behind": a person
stopped them on purpose (their screen says so).

When more destinations are behind at once than BEHIND_GROUP_OVER, one alert speaks for them
all (subject MANY) and no alert is opened for each: a worker outage or a bulk provisioning
puts thousands behind together, and one notice each was thousands of e-mails about one cause
(and, in bench/scale.py, 2,835 alerts opened and resolved, 5,670 notice tasks beside the
fan-out they were about). The alerts open before the storm stay open until their own
destination catches up; once the storm is down to BEHIND_GROUP_OVER or fewer, the group
alert is resolved and the destinations still behind get their own.
"""

from django.db import connection

from omnium.alerts.models import Alert
from omnium.alerts.service import open_alert, resolve_alert
from omnium.conf import omnium_setting

KIND = "destination_behind"
MANY = "destinations:many"
NAMED_IN_GROUP = 20  # destinations a group alert names (it counts them all)

DESTINATIONS_SERVED = """
FROM delivery_state ds
JOIN clients_subscription s ON s.id = ds.subscription_id AND s.active
JOIN clients_destination d ON d.id = ds.destination_id AND d.enabled AND NOT d.fenced
JOIN clients_client c ON c.id = d.client_id AND c.active
LEFT JOIN delivery_senderstate ss ON ss.destination_id = ds.destination_id
"""
# Owed a version too long (the partial index delivery_state_waiting serves it).
OWED = """
SELECT ds.destination_id, MIN(ds.wanted_at), COUNT(*) """ + DESTINATIONS_SERVED + """
WHERE ds.wanted_seq > ds.sent_seq AND NOT COALESCE(ss.paused, false)
  AND ds.wanted_at < clock_timestamp() - %(limit)s * interval '1 second'
GROUP BY ds.destination_id
"""
# Live files with a change unbuilt too long: a few rows of a small table, read first, so the
# subscribers' query below runs only while a build lags.
LAGGING_BUILDS = """
SELECT doc_key, first_change_at FROM feeds_pendingbuild
WHERE lane = 'live' AND first_change_at < clock_timestamp() - %(limit)s * interval '1 second'
"""
WAITING_ON_A_BUILD = """
SELECT ds.destination_id, ds.doc_key """ + DESTINATIONS_SERVED + """
WHERE ds.doc_key = ANY(%(doc_keys)s) AND NOT COALESCE(ss.paused, false)
"""


def destinations_behind(limit: float) -> list[tuple[int, object, int]]:
    """(destination id, oldest owed version or unbuilt change, files), oldest first."""
    with connection.cursor() as cursor:
        cursor.execute(OWED, {"limit": limit})
        behind = {row[0]: [row[1], row[2]] for row in cursor.fetchall()}
        cursor.execute(LAGGING_BUILDS, {"limit": limit})
        lagging = dict(cursor.fetchall())
        if lagging:
            cursor.execute(WAITING_ON_A_BUILD, {"doc_keys": list(lagging)})
            for destination_id, doc_key in cursor.fetchall():
                entry = behind.setdefault(destination_id, [lagging[doc_key], 0])
                entry[0], entry[1] = min(entry[0], lagging[doc_key]), entry[1] + 1
    return sorted(((d, oldest, files) for d, (oldest, files) in behind.items()), key=lambda row: (row[1], row[0]))


def check_behind() -> int:
    """Open the alerts of destinations behind (one for them all in a storm); resolve those
    that caught up. Returns how many destinations are behind."""
    limit = omnium_setting("BEHIND_AFTER_S")
    rows = destinations_behind(limit)
    behind = {f"destination:{row[0]}": row for row in rows}
    # Only the changes: the sweeper runs every 2 s, and opening an alert already open costs
    # three statements.
    already_open = set(Alert.objects.filter(kind=KIND, resolved_at__isnull=True).values_list("subject", flat=True))
    storm = len(rows) > omnium_setting("BEHIND_GROUP_OVER")
    if storm and MANY not in already_open:
        open_alert(KIND, MANY, _group_message(rows, limit), destinations=len(rows))
    elif not storm and MANY in already_open:
        resolve_alert(KIND, MANY)
    if not storm:
        for subject in behind.keys() - already_open:
            destination_id, oldest, files = behind[subject]
            open_alert(KIND, subject, f"Destination {destination_id} is behind on {files} file(s) (a version not "
                       f"yet sent, or a change not yet built); the oldest since {oldest:%H:%M:%S} UTC (more than "
                       f"{limit:g} s)", destination=destination_id)
    for subject in already_open - behind.keys() - {MANY}:
        resolve_alert(KIND, subject)
    return len(rows)


def _group_message(rows, limit: float) -> str:
    named = ", ".join(str(row[0]) for row in rows[:NAMED_IN_GROUP])
    more = f" and {len(rows) - NAMED_IN_GROUP} more" if len(rows) > NAMED_IN_GROUP else ""
    return (f"{len(rows)} destinations are owed files for more than {limit:g} s, the oldest since "
            f"{rows[0][1]:%H:%M:%S} UTC: destinations {named}{more} (longest waiting first). One alert "
            f"for them all while more than {omnium_setting('BEHIND_GROUP_OVER')} are behind; see the status "
            f"overview, filtered by \"behind\".")
