"""Medal awards became a record kind of their own ("medal_award", the event's id); until now
they were noted as a change of the unit. Files built before this know only their "unit"
dependencies, so each also gets the matching "medal_award" ones: a medal awarded before the
file's next build must still reach it. The next build replaces them with the exact set."""

from django.db import migrations

FORWARD = """
INSERT INTO feed_dependency (record_kind, record_id, doc_key)
SELECT 'medal_award', record_id, doc_key FROM feed_dependency WHERE record_kind = 'unit'
ON CONFLICT DO NOTHING
"""

BACKWARD = "DELETE FROM feed_dependency WHERE record_kind = 'medal_award'"


class Migration(migrations.Migration):
    dependencies = [("feeds", "0002_feed_document_seq")]

    operations = [migrations.RunSQL(FORWARD, BACKWARD)]
