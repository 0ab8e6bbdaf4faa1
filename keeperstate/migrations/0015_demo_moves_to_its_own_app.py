"""The demo's tables (demo_seed, demo_alert) now belong to the demo app (keeperstate.demo), which
is installed only where the demo is wanted. State only: the tables stay where they are, with their
rows; the demo app's first migration takes them over. Without the demo app they stay unused."""

from django.db import migrations


class Migration(migrations.Migration):

    dependencies = [
        ('keeperstate', '0014_state_execution_without_index_or_constraint'),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.DeleteModel(name='DemoSeed'),
                migrations.DeleteModel(name='DemoAlert'),
            ],
            database_operations=[],
        ),
    ]
