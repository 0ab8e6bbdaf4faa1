"""The store's writes are each one call of a function that runs whole on the key's shard.

``keeperstate_increment_key`` (Increment: add to the live whole number, or create the key) and
``keeperstate_write_locked`` (the locked path: lock the key's row, decide, upsert, check the
limits) join ``keeperstate_set_key``, ``keeperstate_create_key`` and ``keeperstate_delete_key``,
so every expiry the store reads or writes is taken on one clock, the key's node's
(docs/state.md), and the locked path's lock waits are one statement's, never a distributed
transaction's (docs/scaling.md). Citus runs a function on a shard only when each statement in it
is a plain one on one table: ``keeperstate_reclaim_expired`` writes its events through a CTE (an
INSERT … SELECT straight from a sharded table is a distributed query), and the history trim, in
``keeperstate_trim_history`` and inline in the history trigger, reads the retention setting in a
statement of its own. Only functions change (keeperstate/state/sql.py holds the current text;
this migration carries it frozen); nothing is locked beyond their catalog rows.
"""

from django.db import migrations

INCREMENT_KEY_FUNCTION_SQL = r"""
CREATE OR REPLACE FUNCTION keeperstate_increment_key(
    p_org bigint, p_wf uuid, p_key text, p_by bigint, p_ttl integer, p_execution uuid, p_exact boolean,
    p_max_wf integer, p_max_keys bigint, p_max_bytes bigint)
RETURNS TABLE (value jsonb, version bigint, expires_at timestamptz, created boolean) LANGUAGE plpgsql AS $$
#variable_conflict use_column
BEGIN
    UPDATE workflow_state AS s
       SET value = ((s.value::text::numeric + p_by)::text)::jsonb, expires_at = now() + p_ttl * interval '1 second',
           updated_by_execution_id = p_execution, version = s.version + 1, updated_at = now()
     WHERE s.organization_id = p_org AND s.workflow_id = p_wf AND s.key = p_key
       AND (s.expires_at IS NULL OR s.expires_at > now()) AND (jsonb_typeof(s.value) = 'number' AND s.value::text ~ '^-?[0-9]+$')
       AND abs(s.value::text::numeric + p_by) <= 9007199254740991
       AND s.size_bytes >= octet_length((s.value::text::numeric + p_by)::text)
    RETURNING s.value, s.version, s.expires_at INTO value, version, expires_at;
    IF FOUND THEN
        created := false;
        RETURN NEXT;
        RETURN;
    END IF;
    RETURN QUERY SELECT to_jsonb(p_by), c.version, c.expires_at, true
      FROM keeperstate_create_key(p_org, p_wf, p_key, to_jsonb(p_by), p_ttl, p_execution, p_exact,
                                  p_max_wf, p_max_keys, p_max_bytes) AS c;
END;
$$;
"""

WRITE_LOCKED_FUNCTION_SQL = r"""
CREATE OR REPLACE FUNCTION keeperstate_write_locked(
    p_org bigint, p_wf uuid, p_key text, p_value jsonb, p_by bigint, p_ttl integer, p_execution uuid,
    p_expected bigint, p_exact boolean, p_max_wf integer, p_max_keys bigint, p_max_bytes bigint)
RETURNS TABLE (outcome text, value jsonb, version bigint, expires_at timestamptz, created boolean)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
    old_value jsonb;
    old_version bigint;
    old_live boolean;
    old_size integer;
    new_value jsonb;
    new_size integer;
BEGIN
    SELECT s.value, s.version, (s.expires_at IS NULL OR s.expires_at > now()), s.size_bytes INTO old_value, old_version, old_live, old_size
      FROM workflow_state s WHERE s.organization_id = p_org AND s.workflow_id = p_wf AND s.key = p_key FOR UPDATE;
    old_live := coalesce(old_live, false);
    IF p_exact THEN
        PERFORM keeperstate_lock_usage(p_org);
    END IF;
    IF p_by IS NULL THEN
        new_value := p_value;
        IF p_expected IS NOT NULL AND p_expected <> (CASE WHEN old_live THEN old_version ELSE 0 END) THEN
            outcome := 'conflict';
        END IF;
    ELSIF NOT old_live THEN
        new_value := to_jsonb(p_by);
    ELSIF NOT (jsonb_typeof(old_value) = 'number' AND old_value::text ~ '^-?[0-9]+$') THEN
        outcome := 'not_integer';
    ELSIF abs(old_value::text::numeric + p_by) > 9007199254740991 THEN
        outcome := 'overflow';
    ELSE
        new_value := ((old_value::text::numeric + p_by)::text)::jsonb;
    END IF;
    IF outcome IS NOT NULL THEN
        value := CASE WHEN old_live THEN old_value END;
        version := CASE WHEN old_live THEN old_version ELSE 0 END;
        RETURN NEXT;
        RETURN;
    END IF;
    INSERT INTO workflow_state AS s
        (organization_id, workflow_id, key, value, version, expires_at, updated_by_execution_id, created_at, updated_at)
    VALUES (p_org, p_wf, p_key, new_value, 1, now() + p_ttl * interval '1 second', p_execution, now(), now())
    ON CONFLICT (organization_id, workflow_id, key) DO UPDATE
       SET value = EXCLUDED.value, expires_at = EXCLUDED.expires_at,
           updated_by_execution_id = EXCLUDED.updated_by_execution_id,
           version = s.version + 1, updated_at = EXCLUDED.updated_at,
           created_at = CASE WHEN s.expires_at IS NULL OR s.expires_at > EXCLUDED.updated_at
                             THEN s.created_at ELSE EXCLUDED.created_at END
    RETURNING s.version, s.expires_at, s.size_bytes INTO version, expires_at, new_size;
    PERFORM keeperstate_check_usage(p_org, p_wf, NOT old_live, new_size > coalesce(old_size, 0), p_exact,
                                    p_max_wf, p_max_keys, p_max_bytes);
    outcome := 'written';
    value := new_value;
    created := NOT old_live;
    RETURN NEXT;
END;
$$;
"""

RECLAIM_EXPIRED_FUNCTION_SQL = r"""
CREATE OR REPLACE FUNCTION keeperstate_reclaim_expired(p_org bigint, p_wf uuid, p_limit integer)
RETURNS integer LANGUAGE plpgsql AS $$
DECLARE
    n integer;
    ids bigint[];
    wfs uuid[];
BEGIN
    IF p_wf IS NULL THEN
        SELECT array_agg(p.id ORDER BY p.workflow_id, p.id), array_agg(DISTINCT p.workflow_id) INTO ids, wfs
          FROM (SELECT id, workflow_id FROM workflow_state
                 WHERE organization_id = p_org AND expires_at <= now()
                 ORDER BY workflow_id, id
                 LIMIT p_limit FOR UPDATE SKIP LOCKED) p;
    ELSE
        SELECT array_agg(p.id ORDER BY p.workflow_id, p.id), array_agg(DISTINCT p.workflow_id) INTO ids, wfs
          FROM (SELECT id, workflow_id FROM workflow_state
                 WHERE organization_id = p_org AND workflow_id = p_wf AND expires_at <= now()
                 ORDER BY workflow_id, id
                 LIMIT p_limit FOR UPDATE SKIP LOCKED) p;
    END IF;
    IF ids IS NULL THEN
        RETURN 0;
    END IF;
    -- The row trigger counts each deleted row; its locks are taken here first, in the order every
    -- writer takes them (the organization's shard, then workflows by id), so two sweepers of one
    -- organization cannot deadlock on them.
    INSERT INTO organization_state_usage AS u (organization_id, shard, keys, bytes)
    VALUES (p_org, (32 + pg_backend_pid() % 32), 0, 0)
    ON CONFLICT (organization_id, shard) DO UPDATE SET keys = u.keys;
    PERFORM 1 FROM workflow_state_usage u WHERE u.organization_id = p_org AND u.workflow_id = ANY(wfs)
      ORDER BY u.workflow_id FOR UPDATE;
    -- The events first (the rows are locked), then the delete, whose trigger finds them. The
    -- insert reads the rows through a CTE: an INSERT … SELECT straight from a sharded table is
    -- planned as a distributed query, which Citus refuses inside a function on a shard.
    WITH gone AS (
        SELECT organization_id, workflow_id, key, value, version FROM workflow_state
         WHERE organization_id = p_org AND id = ANY(ids)
    ), logged AS (
        INSERT INTO workflow_state_event
            (organization_id, workflow_id, key, operation, old_value, old_version, actor, created_at)
        SELECT organization_id, workflow_id, key, 'delete', value, version, 'sweeper', clock_timestamp() FROM gone
        RETURNING 1
    )
    SELECT count(*) INTO n FROM logged;
    DELETE FROM workflow_state WHERE organization_id = p_org AND id = ANY(ids);
    GET DIAGNOSTICS n = ROW_COUNT;
    RETURN n;
END;
$$;
"""

TRIM_HISTORY_FUNCTION_SQL = r"""
CREATE OR REPLACE FUNCTION keeperstate_trim_history(p_org bigint, p_limit integer) RETURNS integer
LANGUAGE plpgsql AS $$
DECLARE
    d record;
    n integer := 0;
    keep integer;
    doomed bigint[];
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
        SELECT s.value INTO keep FROM keeperstate_setting s WHERE s.name = 'history_per_key';
        doomed := ARRAY(SELECT e.id FROM workflow_state_event e
                         WHERE e.organization_id = p_org AND e.workflow_id = d.workflow_id AND e.key = d.key
                         ORDER BY e.created_at DESC, e.id DESC OFFSET coalesce(keep, 50));
        DELETE FROM workflow_state_event
         WHERE organization_id = p_org AND workflow_id = d.workflow_id AND key = d.key AND id = ANY(doomed);
        n := n + 1;
    END LOOP;
    RETURN n;
END;
$$;
"""

STATE_TRIGGERS_SQL = r"""
CREATE OR REPLACE FUNCTION keeperstate_state_version_bump() RETURNS trigger LANGUAGE plpgsql AS $$

BEGIN

    NEW.version := OLD.version + 1;
    NEW.updated_at := now();
    RETURN NEW;

END;
$$;
CREATE OR REPLACE TRIGGER keeperstate_state_version_bump BEFORE UPDATE OF value, expires_at ON workflow_state FOR EACH ROW WHEN (NEW."version" IS DISTINCT FROM OLD."version" + 1 OR NEW."updated_at" IS DISTINCT FROM now())
    EXECUTE FUNCTION keeperstate_state_version_bump();


CREATE OR REPLACE FUNCTION keeperstate_state_version_start() RETURNS trigger LANGUAGE plpgsql AS $$

BEGIN

    NEW.version := COALESCE(
        (SELECT t.last_version FROM workflow_state_tombstone t
          WHERE t.organization_id = NEW.organization_id AND t.workflow_id = NEW.workflow_id AND t.key = NEW.key),
        0) + 1;
    RETURN NEW;

END;
$$;
CREATE OR REPLACE TRIGGER keeperstate_state_version_start BEFORE INSERT ON workflow_state FOR EACH ROW
    EXECUTE FUNCTION keeperstate_state_version_start();


CREATE OR REPLACE FUNCTION keeperstate_state_history() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    keep integer;
    doomed bigint[];
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
        SELECT s.value INTO keep FROM keeperstate_setting s WHERE s.name = 'history_per_key';
        doomed := ARRAY(SELECT e.id FROM workflow_state_event e
                         WHERE e.organization_id = NEW.organization_id AND e.workflow_id = NEW.workflow_id AND e.key = NEW.key
                         ORDER BY e.created_at DESC, e.id DESC OFFSET coalesce(keep, 50));
        DELETE FROM workflow_state_event
         WHERE organization_id = NEW.organization_id AND workflow_id = NEW.workflow_id AND key = NEW.key AND id = ANY(doomed);
        ELSE
            INSERT INTO workflow_state_history_due (organization_id, workflow_id, key)
            VALUES (NEW.organization_id, NEW.workflow_id, NEW.key)
            ON CONFLICT DO NOTHING;
        END IF;
    END IF;
    RETURN NULL;

END;
$$;
CREATE OR REPLACE TRIGGER keeperstate_state_history AFTER INSERT OR UPDATE OR DELETE ON workflow_state FOR EACH ROW
    EXECUTE FUNCTION keeperstate_state_history();


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
CREATE OR REPLACE TRIGGER keeperstate_state_usage_update AFTER UPDATE ON workflow_state FOR EACH ROW WHEN (OLD."size_bytes" IS DISTINCT FROM NEW."size_bytes")
    EXECUTE FUNCTION keeperstate_state_usage_update();
"""

PREVIOUS_RECLAIM_EXPIRED_FUNCTION_SQL = r"""
CREATE OR REPLACE FUNCTION keeperstate_reclaim_expired(p_org bigint, p_wf uuid, p_limit integer)
RETURNS integer LANGUAGE plpgsql AS $$
DECLARE
    n integer;
    ids bigint[];
    wfs uuid[];
BEGIN
    IF p_wf IS NULL THEN
        SELECT array_agg(p.id ORDER BY p.workflow_id, p.id), array_agg(DISTINCT p.workflow_id) INTO ids, wfs
          FROM (SELECT id, workflow_id FROM workflow_state
                 WHERE organization_id = p_org AND expires_at <= now()
                 ORDER BY workflow_id, id
                 LIMIT p_limit FOR UPDATE SKIP LOCKED) p;
    ELSE
        SELECT array_agg(p.id ORDER BY p.workflow_id, p.id), array_agg(DISTINCT p.workflow_id) INTO ids, wfs
          FROM (SELECT id, workflow_id FROM workflow_state
                 WHERE organization_id = p_org AND workflow_id = p_wf AND expires_at <= now()
                 ORDER BY workflow_id, id
                 LIMIT p_limit FOR UPDATE SKIP LOCKED) p;
    END IF;
    IF ids IS NULL THEN
        RETURN 0;
    END IF;
    -- The row trigger counts each deleted row; its locks are taken here first, in the order every
    -- writer takes them (the organization's shard, then workflows by id), so two sweepers of one
    -- organization cannot deadlock on them.
    INSERT INTO organization_state_usage AS u (organization_id, shard, keys, bytes)
    VALUES (p_org, (32 + pg_backend_pid() % 32), 0, 0)
    ON CONFLICT (organization_id, shard) DO UPDATE SET keys = u.keys;
    PERFORM 1 FROM workflow_state_usage u WHERE u.organization_id = p_org AND u.workflow_id = ANY(wfs)
      ORDER BY u.workflow_id FOR UPDATE;
    -- The events first (the rows are locked), then the delete, whose trigger finds them.
    INSERT INTO workflow_state_event
        (organization_id, workflow_id, key, operation, old_value, old_version, actor, created_at)
    SELECT organization_id, workflow_id, key, 'delete', value, version, 'sweeper', clock_timestamp()
      FROM workflow_state WHERE organization_id = p_org AND id = ANY(ids);
    DELETE FROM workflow_state WHERE organization_id = p_org AND id = ANY(ids);
    GET DIAGNOSTICS n = ROW_COUNT;
    RETURN n;
END;
$$;
"""

PREVIOUS_TRIM_HISTORY_FUNCTION_SQL = r"""
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

PREVIOUS_STATE_TRIGGERS_SQL = r"""
CREATE OR REPLACE FUNCTION keeperstate_state_version_bump() RETURNS trigger LANGUAGE plpgsql AS $$

BEGIN

    NEW.version := OLD.version + 1;
    NEW.updated_at := now();
    RETURN NEW;

END;
$$;
CREATE OR REPLACE TRIGGER keeperstate_state_version_bump BEFORE UPDATE OF value, expires_at ON workflow_state FOR EACH ROW WHEN (NEW."version" IS DISTINCT FROM OLD."version" + 1 OR NEW."updated_at" IS DISTINCT FROM now())
    EXECUTE FUNCTION keeperstate_state_version_bump();


CREATE OR REPLACE FUNCTION keeperstate_state_version_start() RETURNS trigger LANGUAGE plpgsql AS $$

BEGIN

    NEW.version := COALESCE(
        (SELECT t.last_version FROM workflow_state_tombstone t
          WHERE t.organization_id = NEW.organization_id AND t.workflow_id = NEW.workflow_id AND t.key = NEW.key),
        0) + 1;
    RETURN NEW;

END;
$$;
CREATE OR REPLACE TRIGGER keeperstate_state_version_start BEFORE INSERT ON workflow_state FOR EACH ROW
    EXECUTE FUNCTION keeperstate_state_version_start();


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
CREATE OR REPLACE TRIGGER keeperstate_state_history AFTER INSERT OR UPDATE OR DELETE ON workflow_state FOR EACH ROW
    EXECUTE FUNCTION keeperstate_state_history();


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
CREATE OR REPLACE TRIGGER keeperstate_state_usage_update AFTER UPDATE ON workflow_state FOR EACH ROW WHEN (OLD."size_bytes" IS DISTINCT FROM NEW."size_bytes")
    EXECUTE FUNCTION keeperstate_state_usage_update();
"""

DROP_NEW_FUNCTIONS_SQL = """
DROP FUNCTION keeperstate_increment_key(bigint, uuid, text, bigint, integer, uuid, boolean, integer, bigint, bigint);
DROP FUNCTION keeperstate_write_locked(bigint, uuid, text, jsonb, bigint, integer, uuid, bigint, boolean, integer,
                                       bigint, bigint);
"""


class Migration(migrations.Migration):
    dependencies = [("keeperstate", "0027_workflow_settings_and_error_runs")]

    operations = [
        migrations.RunSQL(
            INCREMENT_KEY_FUNCTION_SQL + WRITE_LOCKED_FUNCTION_SQL + RECLAIM_EXPIRED_FUNCTION_SQL
            + TRIM_HISTORY_FUNCTION_SQL + STATE_TRIGGERS_SQL,
            DROP_NEW_FUNCTIONS_SQL + PREVIOUS_RECLAIM_EXPIRED_FUNCTION_SQL + PREVIOUS_TRIM_HISTORY_FUNCTION_SQL
            + PREVIOUS_STATE_TRIGGERS_SQL,
        )
    ]
