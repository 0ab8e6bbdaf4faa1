"""The rate limits' counters live in an unlogged table (ADR 0061).

A rate window's counter is worth a minute: it needs no WAL. A transaction that writes only
unlogged tables commits without waiting for the disk, which took two of the four flushes an API
run waited for (the token's rate and the organization's runs per minute). After a crash of
Postgres, or on a promoted replica, the table starts empty: every window starts again once.

SET UNLOGGED rewrites the table under an ACCESS EXCLUSIVE lock; it holds one row per counter
(each new window deletes the counter's older ones), so the lock lasts milliseconds.
"""

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [("keeperstate", "0018_workflow_versions")]

    operations = [
        migrations.RunSQL("ALTER TABLE rate_counter SET UNLOGGED", reverse_sql="ALTER TABLE rate_counter SET LOGGED"),
    ]
