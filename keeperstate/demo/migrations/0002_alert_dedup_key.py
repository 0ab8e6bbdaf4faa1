"""The demo alerts sink deduplicates on an alert's dedupKey: a unique column, NULL (no key) for the
alerts kept before, which never collide."""

from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('demo', '0001_initial'),
    ]

    operations = [
        migrations.AddField(
            model_name='demoalert',
            name='dedup_key',
            field=models.CharField(blank=True, max_length=255, null=True, unique=True),
        ),
    ]
