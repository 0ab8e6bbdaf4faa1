"""Every stored workflow's configs in the one form the field parsers store (keeperstate.engine.fields).

Until now only the editor's saves parsed configs; a graph saved through the API kept them as sent
(``" 3600 "``, a Schedule interval of ``"60"``, headers as JSON text), and the runner typed them
as it went. Saves now parse every field on every way in and the runner only resolves references,
so the graphs stored before are parsed once here, field by field; a field no parser takes keeps
its value as it is (the validator reports it on the next save).

Deliberately the live parser, not a frozen copy: this brings old rows to the form the running
code reads, whatever release runs it, and it does nothing on a fresh database (no workflows yet).
SQL in migrations stays frozen (migrations 0012 and 0013).
"""

from django.db import migrations


def parse_stored_configs(apps, schema_editor):
    from keeperstate.engine.validation import validate_graph

    Workflow = apps.get_model("keeperstate", "Workflow")
    for workflow in Workflow.objects.only("id", "nodes", "edges").iterator(chunk_size=200):
        parsed = validate_graph(workflow.nodes, workflow.edges).nodes
        if isinstance(parsed, list) and parsed != workflow.nodes:
            Workflow.objects.filter(pk=workflow.pk).update(nodes=parsed)


class Migration(migrations.Migration):

    dependencies = [
        ('keeperstate', '0015_demo_moves_to_its_own_app'),
    ]

    operations = [
        migrations.RunPython(parse_stored_configs, migrations.RunPython.noop),
    ]
