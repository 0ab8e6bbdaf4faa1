"""The store's delete writes its key's tombstone and usage counters itself; the trigger returns.

keeperstate_delete_key wrote the deleting execution's event, then deleted, and the history
trigger did the rest for it as for any deleter: the organization's and the workflow's usage
counters, the tombstone, and a check for the event, four statements, the largest part of a
delete's time in the database beyond the contract's bound (docs/benchmarks.md, ADR 0069). The
function now writes event, tombstone and both counters in one statement before the delete, and
the trigger's first check (the key's tombstone already at the row's version, which only that
function leaves) returns. Every other deleter (raw SQL, the admin, the sweeper, a cascade) is
handled by the trigger as before. Only functions' bodies change (keeperstate/state/sql.py holds
the current text; this migration carries it frozen): no table is touched, nothing is locked
beyond the functions' catalog rows.
"""

from django.db import migrations

HISTORY_FUNCTION_SQL = r"""
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
        -- A delete. keeperstate_delete_key wrote everything below before deleting: its tombstone
        -- holds the row's version, which no other deletion can leave (see above).
        IF EXISTS (SELECT 1 FROM workflow_state_tombstone t
                    WHERE t.organization_id = OLD.organization_id AND t.workflow_id = OLD.workflow_id
                      AND t.key = OLD.key AND t.last_version = OLD.version) THEN
            RETURN NULL;
        END IF;
        -- Any other deleter: each guard rides in the statement it guards (one statement each,
        -- where a check and a write were two: PL/pgSQL's cost per statement was most of a delete's).
        -- A deleter that records its own event writes it under the row's lock just before the
        -- delete, so it is the key's newest: only that one is read, not the key's whole history.
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
         WHERE NOT EXISTS (SELECT 1 FROM (SELECT e.operation, e.old_version FROM workflow_state_event e
                                           WHERE e.organization_id = OLD.organization_id
                                             AND e.workflow_id = OLD.workflow_id AND e.key = OLD.key
                                           ORDER BY e.created_at DESC, e.id DESC LIMIT 1) AS newest
                            WHERE newest.operation = 'delete' AND newest.old_version = OLD.version);
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
"""

DELETE_KEY_FUNCTION_SQL = r"""
CREATE OR REPLACE FUNCTION keeperstate_delete_key(
    p_org bigint, p_wf uuid, p_key text, p_expected bigint, p_execution uuid)
RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
    v bigint;
BEGIN
    WITH s AS MATERIALIZED (
        SELECT value, version, size_bytes FROM workflow_state
         WHERE organization_id = p_org AND workflow_id = p_wf AND key = p_key
           AND (expires_at IS NULL OR expires_at > now()) AND (p_expected IS NULL OR version = p_expected)
           FOR UPDATE
    ), event AS (
        INSERT INTO workflow_state_event
            (organization_id, workflow_id, key, operation, old_value, old_version, execution_id, created_at)
        SELECT p_org, p_wf, p_key, 'delete', s.value, s.version, p_execution, clock_timestamp() FROM s
        RETURNING old_version
    ), tombstone AS (
        INSERT INTO workflow_state_tombstone AS t (organization_id, workflow_id, key, last_version)
        SELECT p_org, p_wf, p_key, s.version FROM s
        ON CONFLICT (organization_id, workflow_id, key) DO UPDATE
           SET last_version = GREATEST(t.last_version, EXCLUDED.last_version)
    ), org AS (
        INSERT INTO organization_state_usage AS u (organization_id, shard, keys, bytes)
        SELECT p_org, (32 + pg_backend_pid() % 32), -1, -s.size_bytes FROM s
        ON CONFLICT (organization_id, shard) DO UPDATE SET keys = u.keys - 1, bytes = u.bytes + EXCLUDED.bytes
        RETURNING 1
    ), wf AS (
        UPDATE workflow_state_usage SET keys = keys - 1
         WHERE organization_id = p_org AND workflow_id = p_wf AND EXISTS (SELECT 1 FROM org)
    )
    SELECT old_version INTO v FROM event;
    IF v IS NOT NULL THEN
        DELETE FROM workflow_state WHERE organization_id = p_org AND workflow_id = p_wf AND key = p_key;
    END IF;
    RETURN v;
END;
$$;
"""

PREVIOUS_HISTORY_FUNCTION_SQL = r"""
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
        -- A deleter that records its own event writes it under the row's lock just before the
        -- delete, so it is the key's newest: only that one is read, not the key's whole history.
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
         WHERE NOT EXISTS (SELECT 1 FROM (SELECT e.operation, e.old_version FROM workflow_state_event e
                                           WHERE e.organization_id = OLD.organization_id
                                             AND e.workflow_id = OLD.workflow_id AND e.key = OLD.key
                                           ORDER BY e.created_at DESC, e.id DESC LIMIT 1) AS newest
                            WHERE newest.operation = 'delete' AND newest.old_version = OLD.version);
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
"""

PREVIOUS_DELETE_KEY_FUNCTION_SQL = r"""
CREATE OR REPLACE FUNCTION keeperstate_delete_key(
    p_org bigint, p_wf uuid, p_key text, p_expected bigint, p_execution uuid)
RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
    v bigint;
BEGIN
    -- The event first, under the row's lock, then the delete: the trigger finds an event an
    -- earlier statement wrote, which holds on a sharded database too (where the parts of one
    -- statement reach a shard one by one, docs/scaling.md).
    INSERT INTO workflow_state_event AS e
        (organization_id, workflow_id, key, operation, old_value, old_version, execution_id, created_at)
    SELECT p_org, p_wf, p_key, 'delete', s.value, s.version, p_execution, clock_timestamp()
      FROM workflow_state AS s
     WHERE s.organization_id = p_org AND s.workflow_id = p_wf AND s.key = p_key
       AND (s.expires_at IS NULL OR s.expires_at > now()) AND (p_expected IS NULL OR s.version = p_expected)
       FOR UPDATE OF s
    RETURNING e.old_version INTO v;
    IF v IS NOT NULL THEN
        DELETE FROM workflow_state AS s WHERE s.organization_id = p_org AND s.workflow_id = p_wf AND s.key = p_key;
    END IF;
    RETURN v;
END;
$$;
"""


class Migration(migrations.Migration):
    dependencies = [("keeperstate", "0025_state_delete_trigger_reads_the_newest_event")]

    operations = [
        migrations.RunSQL(
            HISTORY_FUNCTION_SQL + DELETE_KEY_FUNCTION_SQL,
            PREVIOUS_HISTORY_FUNCTION_SQL + PREVIOUS_DELETE_KEY_FUNCTION_SQL,
        )
    ]
