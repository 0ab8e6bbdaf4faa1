"""A state delete's trigger work in fewer statements: each guard rides in the write it guards.

The history trigger's delete branch checked the organization, then wrote its usage; checked the
workflow, then wrote the tombstone; looked for the deleter's event, then wrote one: six
statements, where PL/pgSQL's cost of starting each was most of what a delete spent in the
server beyond its writes (docs/benchmarks.md). Each check is now the WHERE of its write
(``INSERT … SELECT … WHERE [NOT] EXISTS``), four statements, with the same rules: nothing is
counted for an organization mid-delete, nothing remembered or recorded for a workflow
mid-delete, and an event the deleter wrote in an earlier statement is not written twice. The
resize trigger's organization check goes the same way. Only the two functions' bodies change
(keeperstate/state/sql.py holds the current text; this migration carries it frozen): no table
is touched, nothing is locked beyond the functions' catalog rows.
"""

from django.db import migrations

TRIGGER_FUNCTIONS_SQL = r"""
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
        -- A delete: each guard rides in the statement it guards (one statement each, where a
        -- check and a write were two: PL/pgSQL's cost per statement was most of a delete's).
        INSERT INTO organization_state_usage AS u (organization_id, shard, keys, bytes)
        SELECT OLD.organization_id, (32 + pg_backend_pid() % 32), -1, -OLD.size_bytes
         WHERE EXISTS (SELECT 1 FROM organization o WHERE o.id = OLD.organization_id)
        ON CONFLICT (organization_id, shard) DO UPDATE SET keys = u.keys - 1, bytes = u.bytes + EXCLUDED.bytes;
        INSERT INTO workflow_state_tombstone AS t (organization_id, workflow_id, key, last_version)
        SELECT OLD.organization_id, OLD.workflow_id, OLD.key, OLD.version
         WHERE EXISTS (SELECT 1 FROM workflow w
                        WHERE w.organization_id = OLD.organization_id AND w.id = OLD.workflow_id)
        ON CONFLICT (organization_id, workflow_id, key) DO UPDATE
           SET last_version = GREATEST(t.last_version, EXCLUDED.last_version);
        IF NOT FOUND THEN
            RETURN NULL;  -- its workflow is being deleted
        END IF;
        UPDATE workflow_state_usage SET keys = keys - 1
         WHERE organization_id = OLD.organization_id AND workflow_id = OLD.workflow_id;
        INSERT INTO workflow_state_event
            (organization_id, workflow_id, key, operation, old_value, old_version, created_at)
        SELECT OLD.organization_id, OLD.workflow_id, OLD.key, 'delete', OLD.value, OLD.version, clock_timestamp()
         WHERE NOT EXISTS (SELECT 1 FROM workflow_state_event e
                            WHERE e.organization_id = OLD.organization_id AND e.workflow_id = OLD.workflow_id
                              AND e.key = OLD.key AND e.operation = 'delete' AND e.old_version = OLD.version);
        RETURN NULL;
    END IF;
    INSERT INTO workflow_state_event
        (organization_id, workflow_id, key, operation, old_value, new_value, old_version, new_version, execution_id,
         created_at)
    VALUES (
        NEW.organization_id, NEW.workflow_id, NEW.key, lower(TG_OP),
        CASE WHEN TG_OP = 'INSERT' THEN NULL ELSE OLD.value END, NEW.value,
        CASE WHEN TG_OP = 'INSERT' THEN NULL ELSE OLD.version END, NEW.version,
        NEW.updated_by_execution_id, clock_timestamp()
    );
    IF NEW.version % 16 = 0 THEN
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

CREATE OR REPLACE FUNCTION keeperstate_state_usage_update() RETURNS trigger LANGUAGE plpgsql AS $$

BEGIN

    INSERT INTO organization_state_usage AS u (organization_id, shard, keys, bytes)
    SELECT NEW.organization_id, CASE WHEN NEW.size_bytes > OLD.size_bytes THEN (pg_backend_pid() % 32) ELSE (32 + pg_backend_pid() % 32) END,
           0, NEW.size_bytes - OLD.size_bytes
     WHERE EXISTS (SELECT 1 FROM organization o WHERE o.id = NEW.organization_id)
    ON CONFLICT (organization_id, shard) DO UPDATE SET bytes = u.bytes + EXCLUDED.bytes;
    RETURN NULL;

END;
$$;
"""

PREVIOUS_TRIGGER_FUNCTIONS_SQL = r"""
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

CREATE OR REPLACE FUNCTION keeperstate_state_usage_update() RETURNS trigger LANGUAGE plpgsql AS $$

BEGIN

    IF EXISTS (SELECT 1 FROM organization o WHERE o.id = NEW.organization_id) THEN
        INSERT INTO organization_state_usage AS u (organization_id, shard, keys, bytes)
        VALUES (NEW.organization_id,
                CASE WHEN NEW.size_bytes > OLD.size_bytes THEN (pg_backend_pid() % 32) ELSE (32 + pg_backend_pid() % 32) END,
                0, NEW.size_bytes - OLD.size_bytes)
        ON CONFLICT (organization_id, shard) DO UPDATE SET bytes = u.bytes + EXCLUDED.bytes;
    END IF;
    RETURN NULL;

END;
$$;
"""


class Migration(migrations.Migration):
    dependencies = [("keeperstate", "0023_executions_and_workflows_found_by_id")]

    operations = [migrations.RunSQL(TRIGGER_FUNCTIONS_SQL, PREVIOUS_TRIGGER_FUNCTIONS_SQL)]
