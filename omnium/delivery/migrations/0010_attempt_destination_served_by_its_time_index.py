import django.db.models.deletion
from django.db import migrations, models

# The attempts' destination_id index goes: (destination, -started_at) serves every lookup by
# destination, and each index is written twice per send. Only the index is dropped: Django's
# own operation would also drop and re-add the foreign key, which checks every attempt row
# while it blocks writes to the table.
INDEX = "delivery_deliveryattempt_destination_id_a74c8034"


class Migration(migrations.Migration):

    dependencies = [
        ("clients", "0005_destination_disabled_who_when_why"),
        ("delivery", "0009_owed_index_in_pick_order"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.AlterField(
                    model_name="deliveryattempt",
                    name="destination",
                    field=models.ForeignKey(db_index=False, on_delete=django.db.models.deletion.CASCADE,
                                            related_name="attempts", to="clients.destination"),
                ),
            ],
            database_operations=[
                migrations.RunSQL(f"DROP INDEX IF EXISTS {INDEX}",
                                  reverse_sql=f"CREATE INDEX IF NOT EXISTS {INDEX} ON delivery_deliveryattempt (destination_id)"),
            ],
        ),
    ]
