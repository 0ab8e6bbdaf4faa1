"""The demo's tables, taken over from the core app (keeperstate migration 0015). State only:
keeperstate's migrations 0006 and 0008 created them, on every database, so they exist already."""

from django.db import migrations, models


class Migration(migrations.Migration):

    initial = True

    dependencies = [
        ('keeperstate', '0015_demo_moves_to_its_own_app'),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.CreateModel(
                    name='DemoSeed',
                    fields=[
                        ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                        ('key', models.CharField(max_length=100, unique=True)),
                        ('workflow_id', models.UUIDField(blank=True, null=True)),
                        ('created_at', models.DateTimeField(auto_now_add=True)),
                    ],
                    options={
                        'db_table': 'demo_seed',
                    },
                ),
                migrations.CreateModel(
                    name='DemoAlert',
                    fields=[
                        ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                        ('received_at', models.DateTimeField(auto_now_add=True, db_index=True)),
                        ('payload', models.JSONField()),
                    ],
                    options={
                        'db_table': 'demo_alert',
                        'ordering': ['-received_at', '-id'],
                    },
                ),
            ],
            database_operations=[],
        ),
    ]
