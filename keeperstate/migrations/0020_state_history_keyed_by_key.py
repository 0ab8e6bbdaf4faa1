"""State history is keyed by what reads it: (organization_id, workflow_id, key, created_at, id).

The history table had two indexes: its primary key (organization_id, id) and
state_event_key_time_idx (organization_id, workflow_id, key, created_at DESC, id DESC), which
every reader uses (a key's history, the trim, the charts, the delete trigger's check for its
deleter's event). For an organization the statistics took for small (a new one, before the
next ANALYZE), the planner found both equally cheap and took the primary key, the smaller: the
delete trigger's check then read every event of the organization on every delete (found with
auto_explain; bench_state's delete at 0.60-0.71 of its bound, 0.83-0.84 after). Nothing looks
an event up by its id alone, so the key's order becomes the primary key and the table keeps one
index: no choice to get wrong, and one index entry less for every write's event.

Online: the new key is built CONCURRENTLY, the swap takes the table's lock only to switch
constraints (its columns are all NOT NULL already, so nothing is scanned under the lock), and
the old index is dropped CONCURRENTLY. The trim deletes by the whole key, not by organization
and id, so it stays on the key's rows, and gathers the ids to delete once (the two functions' new text below; keeperstate/state/sql.py
is the current version).
"""

from django.db import migrations

HISTORY_AND_TRIM_FUNCTIONS_SQL = r"""
CREATE OR REPLACE FUNCTION keeperstate_state_history() RETURNS trigger LANGUAGE plpgsql AS $$

BEGIN

    IF TG_OP = 'UPDATE' THEN
        IF NEW.version = OLD.version THEN
            RETURN NULL;
        END IF;
    ELSIF TG_OP = 'INSERT' THEN
        INSERT INTO organization_state_usage AS u (organization_id, shard, keys, bytes)
        VALUES (NEW.organization_id, (pg_backend_pid() % 32), 1, NEW.size_bytes)
        ON CONFLICT (organization_id, shard) DO UPDATE SET keys = u.keys + 1, bytes = u.bytes + EXCLUDED.bytes;
        INSERT INTO workflow_state_usage AS u (organization_id, workflow_id, keys)
        VALUES (NEW.organization_id, NEW.workflow_id, 1)
        ON CONFLICT (organization_id, workflow_id) DO UPDATE SET keys = u.keys + 1;
    ELSE
        IF EXISTS (SELECT 1 FROM organization o WHERE o.id = OLD.organization_id) THEN
            INSERT INTO organization_state_usage AS u (organization_id, shard, keys, bytes)
            VALUES (OLD.organization_id, (32 + pg_backend_pid() % 32), -1, -OLD.size_bytes)
            ON CONFLICT (organization_id, shard) DO UPDATE SET keys = u.keys - 1, bytes = u.bytes + EXCLUDED.bytes;
        END IF;
        IF NOT EXISTS (SELECT 1 FROM workflow w
                        WHERE w.organization_id = OLD.organization_id AND w.id = OLD.workflow_id) THEN
            RETURN NULL;
        END IF;
        UPDATE workflow_state_usage SET keys = keys - 1
         WHERE organization_id = OLD.organization_id AND workflow_id = OLD.workflow_id;
        INSERT INTO workflow_state_tombstone AS t (organization_id, workflow_id, key, last_version)
        VALUES (OLD.organization_id, OLD.workflow_id, OLD.key, OLD.version)
        ON CONFLICT (organization_id, workflow_id, key) DO UPDATE
           SET last_version = GREATEST(t.last_version, EXCLUDED.last_version);
        IF EXISTS (SELECT 1 FROM workflow_state_event e
                    WHERE e.organization_id = OLD.organization_id AND e.workflow_id = OLD.workflow_id
                      AND e.key = OLD.key AND e.operation = 'delete' AND e.old_version = OLD.version) THEN
            RETURN NULL;
        END IF;
    END IF;
    INSERT INTO workflow_state_event
        (organization_id, workflow_id, key, operation, old_value, new_value, old_version, new_version, execution_id,
         created_at)
    VALUES (
        COALESCE(NEW.organization_id, OLD.organization_id),
        COALESCE(NEW.workflow_id, OLD.workflow_id),
        COALESCE(NEW.key, OLD.key),
        lower(TG_OP),
        CASE WHEN TG_OP = 'INSERT' THEN NULL ELSE OLD.value END,
        CASE WHEN TG_OP = 'DELETE' THEN NULL ELSE NEW.value END,
        CASE WHEN TG_OP = 'INSERT' THEN NULL ELSE OLD.version END,
        CASE WHEN TG_OP = 'DELETE' THEN NULL ELSE NEW.version END,
        CASE WHEN TG_OP = 'DELETE' THEN NULL ELSE NEW.updated_by_execution_id END,
        clock_timestamp()
    );
    IF TG_OP <> 'DELETE' AND NEW.version % 16 = 0 THEN
        IF NEW.version % 256 = 0 THEN
        DELETE FROM workflow_state_event
         WHERE organization_id = NEW.organization_id AND workflow_id = NEW.workflow_id AND key = NEW.key
           AND id = ANY (ARRAY(SELECT e.id FROM workflow_state_event e
                                WHERE e.organization_id = NEW.organization_id AND e.workflow_id = NEW.workflow_id AND e.key = NEW.key
                                ORDER BY e.created_at DESC, e.id DESC
                               OFFSET COALESCE((SELECT s.value FROM keeperstate_setting s
                                                 WHERE s.name = 'history_per_key'), 50)));
        ELSE
            INSERT INTO workflow_state_history_due (organization_id, workflow_id, key)
            VALUES (NEW.organization_id, NEW.workflow_id, NEW.key)
            ON CONFLICT DO NOTHING;
        END IF;
    END IF;
    RETURN NULL;

END;
$$;
CREATE OR REPLACE FUNCTION keeperstate_trim_history(p_org bigint, p_limit integer) RETURNS integer
LANGUAGE plpgsql AS $$
DECLARE
    d record;
    n integer := 0;
BEGIN
    FOR d IN
        WITH picked AS MATERIALIZED (
            SELECT workflow_id, key FROM workflow_state_history_due WHERE organization_id = p_org
             LIMIT p_limit FOR UPDATE SKIP LOCKED
        )
        DELETE FROM workflow_state_history_due h USING picked p
         WHERE h.organization_id = p_org AND h.workflow_id = p.workflow_id AND h.key = p.key
        RETURNING h.workflow_id, h.key
    LOOP
        DELETE FROM workflow_state_event
         WHERE organization_id = p_org AND workflow_id = d.workflow_id AND key = d.key
           AND id = ANY (ARRAY(SELECT e.id FROM workflow_state_event e
                                WHERE e.organization_id = p_org AND e.workflow_id = d.workflow_id AND e.key = d.key
                                ORDER BY e.created_at DESC, e.id DESC
                               OFFSET COALESCE((SELECT s.value FROM keeperstate_setting s
                                                 WHERE s.name = 'history_per_key'), 50)));
        n := n + 1;
    END LOOP;
    RETURN n;
END;
$$;
"""

PREVIOUS_HISTORY_AND_TRIM_FUNCTIONS_SQL = r"""
CREATE OR REPLACE FUNCTION keeperstate_state_history() RETURNS trigger LANGUAGE plpgsql AS $$

BEGIN

    IF TG_OP = 'UPDATE' THEN
        IF NEW.version = OLD.version THEN
            RETURN NULL;
        END IF;
    ELSIF TG_OP = 'INSERT' THEN
        INSERT INTO organization_state_usage AS u (organization_id, shard, keys, bytes)
        VALUES (NEW.organization_id, (pg_backend_pid() % 32), 1, NEW.size_bytes)
        ON CONFLICT (organization_id, shard) DO UPDATE SET keys = u.keys + 1, bytes = u.bytes + EXCLUDED.bytes;
        INSERT INTO workflow_state_usage AS u (organization_id, workflow_id, keys)
        VALUES (NEW.organization_id, NEW.workflow_id, 1)
        ON CONFLICT (organization_id, workflow_id) DO UPDATE SET keys = u.keys + 1;
    ELSE
        IF EXISTS (SELECT 1 FROM organization o WHERE o.id = OLD.organization_id) THEN
            INSERT INTO organization_state_usage AS u (organization_id, shard, keys, bytes)
            VALUES (OLD.organization_id, (32 + pg_backend_pid() % 32), -1, -OLD.size_bytes)
            ON CONFLICT (organization_id, shard) DO UPDATE SET keys = u.keys - 1, bytes = u.bytes + EXCLUDED.bytes;
        END IF;
        IF NOT EXISTS (SELECT 1 FROM workflow w
                        WHERE w.organization_id = OLD.organization_id AND w.id = OLD.workflow_id) THEN
            RETURN NULL;
        END IF;
        UPDATE workflow_state_usage SET keys = keys - 1
         WHERE organization_id = OLD.organization_id AND workflow_id = OLD.workflow_id;
        INSERT INTO workflow_state_tombstone AS t (organization_id, workflow_id, key, last_version)
        VALUES (OLD.organization_id, OLD.workflow_id, OLD.key, OLD.version)
        ON CONFLICT (organization_id, workflow_id, key) DO UPDATE
           SET last_version = GREATEST(t.last_version, EXCLUDED.last_version);
        IF EXISTS (SELECT 1 FROM workflow_state_event e
                    WHERE e.organization_id = OLD.organization_id AND e.workflow_id = OLD.workflow_id
                      AND e.key = OLD.key AND e.operation = 'delete' AND e.old_version = OLD.version) THEN
            RETURN NULL;
        END IF;
    END IF;
    INSERT INTO workflow_state_event
        (organization_id, workflow_id, key, operation, old_value, new_value, old_version, new_version, execution_id,
         created_at)
    VALUES (
        COALESCE(NEW.organization_id, OLD.organization_id),
        COALESCE(NEW.workflow_id, OLD.workflow_id),
        COALESCE(NEW.key, OLD.key),
        lower(TG_OP),
        CASE WHEN TG_OP = 'INSERT' THEN NULL ELSE OLD.value END,
        CASE WHEN TG_OP = 'DELETE' THEN NULL ELSE NEW.value END,
        CASE WHEN TG_OP = 'INSERT' THEN NULL ELSE OLD.version END,
        CASE WHEN TG_OP = 'DELETE' THEN NULL ELSE NEW.version END,
        CASE WHEN TG_OP = 'DELETE' THEN NULL ELSE NEW.updated_by_execution_id END,
        clock_timestamp()
    );
    IF TG_OP <> 'DELETE' AND NEW.version % 16 = 0 THEN
        IF NEW.version % 256 = 0 THEN
        DELETE FROM workflow_state_event
         WHERE organization_id = NEW.organization_id
           AND id IN (SELECT e.id FROM workflow_state_event e
                       WHERE e.organization_id = NEW.organization_id AND e.workflow_id = NEW.workflow_id AND e.key = NEW.key
                       ORDER BY e.created_at DESC, e.id DESC
                      OFFSET COALESCE((SELECT s.value FROM keeperstate_setting s
                                        WHERE s.name = 'history_per_key'), 50));
        ELSE
            INSERT INTO workflow_state_history_due (organization_id, workflow_id, key)
            VALUES (NEW.organization_id, NEW.workflow_id, NEW.key)
            ON CONFLICT DO NOTHING;
        END IF;
    END IF;
    RETURN NULL;

END;
$$;
CREATE OR REPLACE FUNCTION keeperstate_trim_history(p_org bigint, p_limit integer) RETURNS integer
LANGUAGE plpgsql AS $$
DECLARE
    d record;
    n integer := 0;
BEGIN
    FOR d IN
        WITH picked AS MATERIALIZED (
            SELECT workflow_id, key FROM workflow_state_history_due WHERE organization_id = p_org
             LIMIT p_limit FOR UPDATE SKIP LOCKED
        )
        DELETE FROM workflow_state_history_due h USING picked p
         WHERE h.organization_id = p_org AND h.workflow_id = p.workflow_id AND h.key = p.key
        RETURNING h.workflow_id, h.key
    LOOP
        DELETE FROM workflow_state_event
         WHERE organization_id = p_org
           AND id IN (SELECT e.id FROM workflow_state_event e
                       WHERE e.organization_id = p_org AND e.workflow_id = d.workflow_id AND e.key = d.key
                       ORDER BY e.created_at DESC, e.id DESC
                      OFFSET COALESCE((SELECT s.value FROM keeperstate_setting s
                                        WHERE s.name = 'history_per_key'), 50));
        n := n + 1;
    END LOOP;
    RETURN n;
END;
$$;
"""


class Migration(migrations.Migration):
    atomic = False  # CREATE and DROP INDEX CONCURRENTLY

    dependencies = [("keeperstate", "0019_rate_counters_unlogged")]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[
                migrations.RunSQL(
                    "CREATE UNIQUE INDEX CONCURRENTLY IF NOT EXISTS workflow_state_event_key_pkey "
                    "ON workflow_state_event (organization_id, workflow_id, key, created_at, id);",
                    "DROP INDEX CONCURRENTLY IF EXISTS workflow_state_event_key_pkey;",
                ),
                migrations.RunSQL(
                    "ALTER TABLE workflow_state_event DROP CONSTRAINT workflow_state_event_pkey, "
                    "ADD CONSTRAINT workflow_state_event_pkey PRIMARY KEY USING INDEX workflow_state_event_key_pkey;",
                    [
                        "CREATE UNIQUE INDEX CONCURRENTLY IF NOT EXISTS workflow_state_event_org_pkey "
                        "ON workflow_state_event (organization_id, id);",
                        "ALTER TABLE workflow_state_event DROP CONSTRAINT workflow_state_event_pkey, "
                        "ADD CONSTRAINT workflow_state_event_pkey PRIMARY KEY USING INDEX workflow_state_event_org_pkey;",
                    ],
                ),
                migrations.RunSQL(
                    "DROP INDEX CONCURRENTLY IF EXISTS state_event_key_time_idx;",
                    "CREATE INDEX CONCURRENTLY IF NOT EXISTS state_event_key_time_idx ON workflow_state_event "
                    "(organization_id, workflow_id, key, created_at DESC, id DESC);",
                ),
                migrations.RunSQL(HISTORY_AND_TRIM_FUNCTIONS_SQL, PREVIOUS_HISTORY_AND_TRIM_FUNCTIONS_SQL),
            ],
            state_operations=[
                migrations.RemoveIndex(model_name="workflowstateevent", name="state_event_key_time_idx"),
            ],
        ),
    ]
