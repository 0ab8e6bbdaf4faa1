"""workflow_state.updated_by_execution_id loses its index and its key check.

Every run writes a new execution id there. Indexed, that column made each overwrite by a run a
non-HOT update: a new entry in every index of the table (7.5 % more per write, measured with
pgbench), and a deferred key check that locked the execution row at commit. Nothing looks state
up by execution; an execution goes with its workflow, and so does its state.
"""

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('keeperstate', '0013_state_set_and_delete_in_one_call_version_bump_when'),
    ]

    operations = [
        migrations.AlterField(
            model_name='workflowstate',
            name='updated_by_execution',
            field=models.ForeignKey(blank=True, db_constraint=False, db_index=False, null=True, on_delete=django.db.models.deletion.DO_NOTHING, related_name='+', to='keeperstate.workflowexecution'),
        ),
    ]
