"""Owed files per destination, read from PostgreSQL at scrape time (the record, not a count
kept by some process that may have died). Only the destinations owed most are named: a label
per destination for thousands of idle ones would bloat every scrape."""

from django.db import connection
from prometheus_client.core import GaugeMetricFamily

TOP_DESTINATIONS = 100

OWED_PER_DESTINATION = """
SELECT ds.destination_id, d.kind, c.name, count(*) AS owed
FROM delivery_state ds
JOIN clients_destination d ON d.id = ds.destination_id
JOIN clients_client c ON c.id = d.client_id
WHERE ds.wanted_seq > ds.sent_seq OR ds.force_resend
GROUP BY ds.destination_id, d.kind, c.name
ORDER BY owed DESC, ds.destination_id
LIMIT %s
"""

OWED_IN_ALL = """
SELECT count(*), count(DISTINCT destination_id) FROM delivery_state WHERE wanted_seq > sent_seq OR force_resend
"""


class OwedFilesCollector:
    def collect(self):
        per_destination = GaugeMetricFamily(
            "omnium_owed_files", f"Files owed to a destination (the {TOP_DESTINATIONS} owed most)",
            labels=["destination", "transport", "client"])
        with connection.cursor() as cursor:
            cursor.execute(OWED_PER_DESTINATION, [TOP_DESTINATIONS])
            for destination_id, kind, client, owed in cursor.fetchall():
                per_destination.add_metric([str(destination_id), kind, client], owed)
            cursor.execute(OWED_IN_ALL)
            files, destinations = cursor.fetchone()
        yield per_destination
        yield GaugeMetricFamily("omnium_owed_files_all", "Files owed, over every destination", value=files)
        yield GaugeMetricFamily("omnium_destinations_owed", "Destinations owed at least one file", value=destinations)
