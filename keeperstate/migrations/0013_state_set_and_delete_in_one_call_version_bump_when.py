"""State Set and Delete as one function call each, and the version bump's trigger skipped by
writers that bump for it.

* ``keeperstate_set_key`` (keeperstate/state/sql.py): Set overwrites the live key (at the
  expected version, if any) or creates it in one call; creating a key used to cost an UPDATE
  that found nothing, then the creation. ``keeperstate_delete_key``: the delete and its history
  event. PL/pgSQL keeps both functions' plans; the statements they replace were planned on
  every call.
* The version bump's trigger gets a WHEN clause (keeperstate/state/sql.py, VERSION_BUMP_WHEN):
  a writer that already sets ``version = version + 1, updated_at = now()``, as the store does, no
  longer pays for a call of the trigger's function; every other update of value or expires_at is
  bumped as before. Going back keeps the clause: the bump's body is unchanged, so the rule is the
  same with or without it.
"""

from django.db import migrations

# The SQL as this migration installed it (keeperstate/models/state_sql.py at commit 29411fc), frozen here:
# keeperstate/state/sql.py is the current version and may change; what an old migration installs
# must not (tests/state/test_migration_sql.py holds the database equal to the current version).

STATE_TRIGGERS_SQL = """
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
          WHERE t.workflow_id = NEW.workflow_id AND t.key = NEW.key),
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
    ELSIF TG_OP = 'DELETE' THEN
        IF NOT EXISTS (SELECT 1 FROM workflow w WHERE w.id = OLD.workflow_id) THEN
            RETURN NULL;
        END IF;
        INSERT INTO workflow_state_tombstone (workflow_id, key, last_version)
        VALUES (OLD.workflow_id, OLD.key, OLD.version)
        ON CONFLICT (workflow_id, key) DO UPDATE
           SET last_version = GREATEST(workflow_state_tombstone.last_version, EXCLUDED.last_version);
        IF EXISTS (SELECT 1 FROM workflow_state_event e
                    WHERE e.workflow_id = OLD.workflow_id AND e.key = OLD.key
                      AND e.operation = 'delete' AND e.old_version = OLD.version) THEN
            RETURN NULL;
        END IF;
    END IF;
    INSERT INTO workflow_state_event
        (workflow_id, key, operation, old_value, new_value, old_version, new_version, execution_id, created_at)
    VALUES (
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
         WHERE id IN (SELECT e.id FROM workflow_state_event e
                       WHERE e.workflow_id = NEW.workflow_id AND e.key = NEW.key
                       ORDER BY e.id DESC
                      OFFSET COALESCE((SELECT s.value FROM keeperstate_setting s
                                        WHERE s.name = 'history_per_key'), 50));
        ELSE
            INSERT INTO workflow_state_history_due (workflow_id, key) VALUES (NEW.workflow_id, NEW.key)
            ON CONFLICT DO NOTHING;
        END IF;
    END IF;
    RETURN NULL;

END;
$$;
CREATE OR REPLACE TRIGGER keeperstate_state_history AFTER INSERT OR UPDATE OR DELETE ON workflow_state FOR EACH ROW
    EXECUTE FUNCTION keeperstate_state_history();


CREATE OR REPLACE FUNCTION keeperstate_state_usage_insert() RETURNS trigger LANGUAGE plpgsql AS $$

BEGIN

    INSERT INTO organization_state_usage AS u (organization_id, shard, keys, bytes)
    SELECT organization_id, (pg_backend_pid() % 32), count(*), sum(size_bytes) FROM new_rows
     GROUP BY organization_id ORDER BY organization_id
    ON CONFLICT (organization_id, shard) DO UPDATE SET keys = u.keys + EXCLUDED.keys, bytes = u.bytes + EXCLUDED.bytes;
    INSERT INTO workflow_state_usage AS u (workflow_id, keys)
    SELECT workflow_id, count(*) FROM new_rows GROUP BY workflow_id ORDER BY workflow_id
    ON CONFLICT (workflow_id) DO UPDATE SET keys = u.keys + EXCLUDED.keys;
    RETURN NULL;

END;
$$;
CREATE OR REPLACE TRIGGER keeperstate_state_usage_insert AFTER INSERT ON workflow_state REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT
    EXECUTE FUNCTION keeperstate_state_usage_insert();


CREATE OR REPLACE FUNCTION keeperstate_state_usage_delete() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE r record;
BEGIN

    INSERT INTO organization_state_usage AS u (organization_id, shard, keys, bytes)
    SELECT d.organization_id, (32 + pg_backend_pid() % 32), -count(*), -sum(d.size_bytes) FROM old_rows d
     WHERE EXISTS (SELECT 1 FROM organization o WHERE o.id = d.organization_id)
     GROUP BY d.organization_id ORDER BY d.organization_id
    ON CONFLICT (organization_id, shard) DO UPDATE SET keys = u.keys + EXCLUDED.keys, bytes = u.bytes + EXCLUDED.bytes;
    FOR r IN SELECT workflow_id, count(*) AS n FROM old_rows GROUP BY workflow_id ORDER BY workflow_id LOOP
        UPDATE workflow_state_usage SET keys = keys - r.n WHERE workflow_id = r.workflow_id;
    END LOOP;
    RETURN NULL;

END;
$$;
CREATE OR REPLACE TRIGGER keeperstate_state_usage_delete AFTER DELETE ON workflow_state REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT
    EXECUTE FUNCTION keeperstate_state_usage_delete();


CREATE OR REPLACE FUNCTION keeperstate_state_usage_update() RETURNS trigger LANGUAGE plpgsql AS $$

BEGIN

    INSERT INTO organization_state_usage AS u (organization_id, shard, keys, bytes)
    SELECT c.org, CASE WHEN sum(c.keys) > 0 OR sum(c.bytes) > 0 THEN (pg_backend_pid() % 32) ELSE (32 + pg_backend_pid() % 32) END,
           sum(c.keys), sum(c.bytes)
      FROM (VALUES (OLD.organization_id, -1, -OLD.size_bytes), (NEW.organization_id, 1, NEW.size_bytes))
           AS c (org, keys, bytes)
     WHERE EXISTS (SELECT 1 FROM organization o WHERE o.id = c.org)
     GROUP BY c.org ORDER BY c.org
    ON CONFLICT (organization_id, shard) DO UPDATE SET keys = u.keys + EXCLUDED.keys, bytes = u.bytes + EXCLUDED.bytes;
    RETURN NULL;

END;
$$;
CREATE OR REPLACE TRIGGER keeperstate_state_usage_update AFTER UPDATE ON workflow_state FOR EACH ROW WHEN (OLD."size_bytes" IS DISTINCT FROM NEW."size_bytes" OR OLD."organization_id" IS DISTINCT FROM NEW."organization_id")
    EXECUTE FUNCTION keeperstate_state_usage_update();
"""

SET_KEY_FUNCTION_SQL = """
CREATE OR REPLACE FUNCTION keeperstate_set_key(
    p_org bigint, p_wf uuid, p_key text, p_value jsonb, p_ttl integer, p_execution uuid, p_expected bigint,
    p_exact boolean, p_max_wf integer, p_max_keys bigint, p_max_bytes bigint)
RETURNS TABLE (version bigint, expires_at timestamptz, created boolean) LANGUAGE plpgsql AS $$
#variable_conflict use_column
BEGIN
    UPDATE workflow_state AS s
       SET value = p_value, expires_at = now() + p_ttl * interval '1 second', updated_by_execution_id = p_execution,
           version = s.version + 1, updated_at = now()
     WHERE s.organization_id = p_org AND s.workflow_id = p_wf AND s.key = p_key
       AND (s.expires_at IS NULL OR s.expires_at > now()) AND s.size_bytes >= octet_length(p_value::text)
       AND (p_expected IS NULL OR s.version = p_expected)
    RETURNING s.version, s.expires_at INTO version, expires_at;
    IF FOUND THEN
        created := false;
        RETURN NEXT;
        RETURN;
    ELSIF p_expected IS NOT NULL THEN
        RETURN;
    END IF;
    RETURN QUERY SELECT c.version, c.expires_at, true
      FROM keeperstate_create_key(p_org, p_wf, p_key, p_value, p_ttl, p_execution, p_exact,
                                  p_max_wf, p_max_keys, p_max_bytes) AS c;
END;
$$;
"""

DROP_SET_KEY_FUNCTION_SQL = """DROP FUNCTION keeperstate_set_key(bigint, uuid, text, jsonb, integer, uuid, bigint, boolean, integer, bigint, bigint);"""

DELETE_KEY_FUNCTION_SQL = """
CREATE OR REPLACE FUNCTION keeperstate_delete_key(
    p_org bigint, p_wf uuid, p_key text, p_expected bigint, p_execution uuid)
RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
    v bigint;
BEGIN
    -- One statement: the trigger's check for the event runs at its end, when the event is there.
    WITH gone AS (
        DELETE FROM workflow_state AS s
         WHERE s.organization_id = p_org AND s.workflow_id = p_wf AND s.key = p_key
           AND (s.expires_at IS NULL OR s.expires_at > now()) AND (p_expected IS NULL OR s.version = p_expected)
        RETURNING s.value, s.version
    )
    INSERT INTO workflow_state_event AS e
        (workflow_id, key, operation, old_value, old_version, execution_id, created_at)
    SELECT p_wf, p_key, 'delete', gone.value, gone.version, p_execution, clock_timestamp() FROM gone
    RETURNING e.old_version INTO v;
    RETURN v;
END;
$$;
"""

DROP_DELETE_KEY_FUNCTION_SQL = """DROP FUNCTION keeperstate_delete_key(bigint, uuid, text, bigint, uuid);"""



class Migration(migrations.Migration):

    dependencies = [
        ('keeperstate', '0012_state_triggers_without_pgtrigger_ignore_check'),
    ]

    operations = [
        migrations.RunSQL(sql=STATE_TRIGGERS_SQL, reverse_sql=migrations.RunSQL.noop),
        migrations.RunSQL(sql=SET_KEY_FUNCTION_SQL, reverse_sql=DROP_SET_KEY_FUNCTION_SQL),
        migrations.RunSQL(sql=DELETE_KEY_FUNCTION_SQL, reverse_sql=DROP_DELETE_KEY_FUNCTION_SQL),
    ]
