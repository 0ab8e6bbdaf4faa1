"""A worker's fetch of its next job reads the queue's index in order (ADR 0084).

Procrastinate's ``procrastinate_fetch_job_v2`` takes the first waiting job by priority and id.
The table's statistics are those of a queue that keeps up (analyzed while nearly empty), so the
planner read every waiting job through a bitmap of two indexes, sorted them and kept one: each
fetch cost in proportion to the backlog (5 ms of Postgres CPU with 1,500 jobs waiting, against
0.05 ms from the index), and a backlog drained slower the longer it was. Index scans only, for
this one function, make it read the index of waiting jobs (``priority DESC, id``) from its head
and stop at the first it can lock; they also let each scan mark the entries of jobs already
taken as dead, which a bitmap scan never does. Only the function's catalog row changes.
"""

from django.db import migrations

FETCH = "procrastinate_fetch_job_v2(character varying[], bigint)"


class Migration(migrations.Migration):
    dependencies = [
        ("keeperstate", "0028_state_writes_are_function_calls"),
        # the last of Procrastinate 3.10's: a later one that redefines the function would drop this
        ("procrastinate", "0041_post_retry_failed_job"),
    ]

    operations = [
        migrations.RunSQL(
            f"ALTER FUNCTION {FETCH} SET enable_bitmapscan = off;"
            f"ALTER FUNCTION {FETCH} SET enable_seqscan = off;"
            f"ALTER FUNCTION {FETCH} SET enable_sort = off;",
            f"ALTER FUNCTION {FETCH} RESET ALL;",
        )
    ]
