from django.db import migrations


class Migration(migrations.Migration):
    """Versions come from one sequence, taken only when a file's content hash changes."""

    dependencies = [("feeds", "0001_initial")]

    operations = [
        migrations.RunSQL(
            "CREATE SEQUENCE IF NOT EXISTS feed_document_seq",
            "DROP SEQUENCE IF EXISTS feed_document_seq",
        ),
    ]
