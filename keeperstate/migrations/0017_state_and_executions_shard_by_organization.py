"""Every table of workflow state, and the executions, keyed by organization first: the schema a
distributed Postgres (Citus) can shard by ``organization_id`` (docs/scaling.md, ADR 0045).

* ``organization_id bigint NOT NULL`` on workflow_state_event, workflow_state_tombstone,
  workflow_state_usage, workflow_state_history_due and workflow_execution, taken from the
  workflow of each row.
* Primary keys ``(organization_id, id)`` on workflow, workflow_execution, workflow_state,
  workflow_state_event, workflow_state_tombstone and organization_state_usage;
  ``(organization_id, workflow_id)`` on workflow_state_usage and ``(organization_id,
  workflow_id, key)`` on workflow_state_history_due; every unique key leads with the
  organization. Django still addresses these rows by ``id`` (the model's primary key field).
* Foreign keys between them are composite with the organization, ``(organization_id,
  workflow_id) → workflow (organization_id, id)``, ON DELETE CASCADE and no ON UPDATE CASCADE:
  no row changes organization any more (keeperstate/core/sharding.py).
* The state triggers row by row (no transition tables), each lookup naming the organization;
  the history trim takes one organization per call (``keeperstate_trim_history(p_org, p_limit)``).

Online, without locks sized by the tables (non-atomic: each step commits on its own):

1. the columns are added nullable, without a default (a catalog change, instant);
2. the new unique indexes are built ``CONCURRENTLY`` (writers go on);
3. existing rows are filled in batches of BATCH rows, each batch its own transaction, walking
   each table by its key (no batch rescans what the last one did);
4. one short transaction locks the six tables against writes (SHARE ROW EXCLUSIVE: readers go
   on), fills what writers added since step 3 (found through a partial index of the rows still
   empty, built concurrently), and installs the new triggers and functions, which write the
   organization themselves from then on; the new release's ORM writes it for executions;
5. ``NOT NULL`` through a ``CHECK … NOT VALID`` that is then validated (a scan that blocks no
   writer), so ``SET NOT NULL`` itself does not scan;
6. the primary and unique keys are swapped ``USING INDEX`` (a brief exclusive lock each, no
   build), and the composite foreign keys added ``NOT VALID`` and validated.

Going back restores the keys, foreign keys and triggers of 0016 and drops the columns (not
online: a way back, not a deploy). SQL frozen here as installed (keeperstate/state/sql.py at
this commit, and before it for the way back); migrations never import it.
"""

import django.db.models.deletion
from django.db import migrations, models, transaction

BATCH = 5000

# table → (its key columns, for walking it in batches)
FILLED = {
    "workflow_state_event": ("id",),
    "workflow_state_tombstone": ("id",),
    "workflow_state_usage": ("workflow_id",),
    "workflow_state_history_due": ("workflow_id", "key"),
    "workflow_execution": ("id",),
}

NEW_SQL = """

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


CREATE OR REPLACE FUNCTION keeperstate_lock_usage(p_org bigint) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO organization_state_usage (organization_id, shard, keys, bytes)
    SELECT p_org, s, 0, 0 FROM generate_series(0, 31) AS s
    ON CONFLICT (organization_id, shard) DO NOTHING;
    PERFORM 1 FROM organization_state_usage WHERE organization_id = p_org AND shard < 32 ORDER BY shard FOR UPDATE;
END;
$$;


CREATE OR REPLACE FUNCTION keeperstate_check_usage(
    p_org bigint, p_wf uuid, p_adds_key boolean, p_grew boolean, p_exact boolean,
    p_max_wf integer, p_max_keys bigint, p_max_bytes bigint)
RETURNS void LANGUAGE plpgsql AS $$
DECLARE
    wf_keys bigint;
    org_keys bigint;
    org_bytes bigint;
    slack_keys bigint := CASE WHEN p_exact THEN 0 ELSE 31 END;
    slack_bytes bigint := CASE WHEN p_exact THEN 0 ELSE 31 * 16384 END;
BEGIN
    LOOP
        SELECT coalesce(max(u.keys), 0) INTO wf_keys FROM workflow_state_usage u
         WHERE u.organization_id = p_org AND u.workflow_id = p_wf;
        SELECT coalesce(sum(u.keys), 0), coalesce(sum(u.bytes), 0) INTO org_keys, org_bytes
          FROM organization_state_usage u WHERE u.organization_id = p_org;
        IF p_adds_key AND wf_keys > p_max_wf THEN
            EXIT WHEN keeperstate_reclaim_expired(p_org, p_wf, 1000) = 0;
        ELSIF (p_adds_key AND org_keys + slack_keys > p_max_keys) OR (p_grew AND org_bytes + slack_bytes > p_max_bytes) THEN
            IF NOT p_exact THEN
                RAISE EXCEPTION 'count exactly' USING ERRCODE = 'KS000';
            END IF;
            EXIT WHEN keeperstate_reclaim_expired(p_org, NULL, 1000) = 0;
        ELSE
            RETURN;
        END IF;
    END LOOP;
    -- The write itself is counted: the keys held before it are one fewer.
    IF p_adds_key AND wf_keys > p_max_wf THEN
        RAISE EXCEPTION 'state key limit' USING ERRCODE = 'KS001', DETAIL = (wf_keys - 1)::text;
    ELSIF p_adds_key AND org_keys > p_max_keys THEN
        RAISE EXCEPTION 'organization key budget' USING ERRCODE = 'KS002', DETAIL = (org_keys - 1)::text;
    END IF;
    RAISE EXCEPTION 'organization byte budget' USING ERRCODE = 'KS003', DETAIL = org_bytes::text;
END;
$$;


CREATE OR REPLACE FUNCTION keeperstate_create_key(
    p_org bigint, p_wf uuid, p_key text, p_value jsonb, p_ttl integer, p_execution uuid, p_exact boolean,
    p_max_wf integer, p_max_keys bigint, p_max_bytes bigint)
RETURNS TABLE (version bigint, expires_at timestamptz) LANGUAGE plpgsql AS $$
DECLARE
    v bigint;
    e timestamptz;
BEGIN
    IF p_exact THEN
        PERFORM keeperstate_lock_usage(p_org);
    END IF;
    INSERT INTO workflow_state AS s
        (organization_id, workflow_id, key, value, version, expires_at, updated_by_execution_id)
    VALUES (p_org, p_wf, p_key, p_value, 1, now() + p_ttl * interval '1 second', p_execution)
    ON CONFLICT (organization_id, workflow_id, key) DO NOTHING
    RETURNING s.version, s.expires_at INTO v, e;
    IF NOT FOUND THEN
        RETURN;
    END IF;
    PERFORM keeperstate_check_usage(p_org, p_wf, true, true, p_exact, p_max_wf, p_max_keys, p_max_bytes);
    version := v;
    expires_at := e;
    RETURN NEXT;
END;
$$;


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
CREATE OR REPLACE TRIGGER keeperstate_state_history AFTER INSERT OR UPDATE OR DELETE ON workflow_state FOR EACH ROW
    EXECUTE FUNCTION keeperstate_state_history();


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
CREATE OR REPLACE TRIGGER keeperstate_state_usage_update AFTER UPDATE ON workflow_state FOR EACH ROW WHEN (OLD."size_bytes" IS DISTINCT FROM NEW."size_bytes")
    EXECUTE FUNCTION keeperstate_state_usage_update();


CREATE OR REPLACE FUNCTION keeperstate_workflow_state_history_gone() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM workflow_state_event WHERE organization_id = OLD.organization_id AND workflow_id = OLD.id;
    DELETE FROM workflow_state_tombstone WHERE organization_id = OLD.organization_id AND workflow_id = OLD.id;
    DELETE FROM workflow_state_history_due WHERE organization_id = OLD.organization_id AND workflow_id = OLD.id;
    RETURN NULL;
END;
$$;
CREATE OR REPLACE TRIGGER keeperstate_workflow_state_history_gone
    AFTER DELETE ON workflow FOR EACH ROW EXECUTE FUNCTION keeperstate_workflow_state_history_gone();

DROP TRIGGER IF EXISTS keeperstate_state_usage_insert ON workflow_state;
DROP FUNCTION IF EXISTS keeperstate_state_usage_insert();
DROP TRIGGER IF EXISTS keeperstate_state_usage_delete ON workflow_state;
DROP FUNCTION IF EXISTS keeperstate_state_usage_delete();
DROP FUNCTION IF EXISTS keeperstate_trim_history(integer);
"""

OLD_SQL = """
DROP TRIGGER IF EXISTS keeperstate_workflow_state_history_gone ON workflow;
DROP FUNCTION IF EXISTS keeperstate_trim_history(bigint, integer);

CREATE OR REPLACE FUNCTION keeperstate_reclaim_expired(p_org bigint, p_wf uuid, p_limit integer)
RETURNS integer LANGUAGE plpgsql AS $$
DECLARE
    n integer;
BEGIN
    IF p_wf IS NULL THEN
        WITH picked AS MATERIALIZED (
            SELECT id FROM workflow_state
             WHERE organization_id = p_org AND expires_at <= now()
             LIMIT p_limit FOR UPDATE SKIP LOCKED
        ), gone AS (
            DELETE FROM workflow_state WHERE id IN (SELECT id FROM picked)
            RETURNING workflow_id, key, value, version
        ), logged AS (
            INSERT INTO workflow_state_event (workflow_id, key, operation, old_value, old_version, actor, created_at)
            SELECT workflow_id, key, 'delete', value, version, 'sweeper', clock_timestamp() FROM gone
        )
        SELECT count(*) INTO n FROM gone;
    ELSE
        WITH picked AS MATERIALIZED (
            SELECT id FROM workflow_state
             WHERE organization_id = p_org AND workflow_id = p_wf AND expires_at <= now()
             LIMIT p_limit FOR UPDATE SKIP LOCKED
        ), gone AS (
            DELETE FROM workflow_state WHERE id IN (SELECT id FROM picked)
            RETURNING workflow_id, key, value, version
        ), logged AS (
            INSERT INTO workflow_state_event (workflow_id, key, operation, old_value, old_version, actor, created_at)
            SELECT workflow_id, key, 'delete', value, version, 'sweeper', clock_timestamp() FROM gone
        )
        SELECT count(*) INTO n FROM gone;
    END IF;
    RETURN n;
END;
$$;


CREATE OR REPLACE FUNCTION keeperstate_lock_usage(p_org bigint) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO organization_state_usage (organization_id, shard, keys, bytes)
    SELECT p_org, s, 0, 0 FROM generate_series(0, 31) AS s
    ON CONFLICT (organization_id, shard) DO NOTHING;
    PERFORM 1 FROM organization_state_usage WHERE organization_id = p_org AND shard < 32 ORDER BY shard FOR UPDATE;
END;
$$;


CREATE OR REPLACE FUNCTION keeperstate_check_usage(
    p_org bigint, p_wf uuid, p_adds_key boolean, p_grew boolean, p_exact boolean,
    p_max_wf integer, p_max_keys bigint, p_max_bytes bigint)
RETURNS void LANGUAGE plpgsql AS $$
DECLARE
    wf_keys bigint;
    org_keys bigint;
    org_bytes bigint;
    slack_keys bigint := CASE WHEN p_exact THEN 0 ELSE 31 END;
    slack_bytes bigint := CASE WHEN p_exact THEN 0 ELSE 31 * 16384 END;
BEGIN
    LOOP
        SELECT coalesce(max(u.keys), 0) INTO wf_keys FROM workflow_state_usage u WHERE u.workflow_id = p_wf;
        SELECT coalesce(sum(u.keys), 0), coalesce(sum(u.bytes), 0) INTO org_keys, org_bytes
          FROM organization_state_usage u WHERE u.organization_id = p_org;
        IF p_adds_key AND wf_keys > p_max_wf THEN
            EXIT WHEN keeperstate_reclaim_expired(p_org, p_wf, 1000) = 0;
        ELSIF (p_adds_key AND org_keys + slack_keys > p_max_keys) OR (p_grew AND org_bytes + slack_bytes > p_max_bytes) THEN
            IF NOT p_exact THEN
                RAISE EXCEPTION 'count exactly' USING ERRCODE = 'KS000';
            END IF;
            EXIT WHEN keeperstate_reclaim_expired(p_org, NULL, 1000) = 0;
        ELSE
            RETURN;
        END IF;
    END LOOP;
    -- The write itself is counted: the keys held before it are one fewer.
    IF p_adds_key AND wf_keys > p_max_wf THEN
        RAISE EXCEPTION 'state key limit' USING ERRCODE = 'KS001', DETAIL = (wf_keys - 1)::text;
    ELSIF p_adds_key AND org_keys > p_max_keys THEN
        RAISE EXCEPTION 'organization key budget' USING ERRCODE = 'KS002', DETAIL = (org_keys - 1)::text;
    END IF;
    RAISE EXCEPTION 'organization byte budget' USING ERRCODE = 'KS003', DETAIL = org_bytes::text;
END;
$$;


CREATE OR REPLACE FUNCTION keeperstate_create_key(
    p_org bigint, p_wf uuid, p_key text, p_value jsonb, p_ttl integer, p_execution uuid, p_exact boolean,
    p_max_wf integer, p_max_keys bigint, p_max_bytes bigint)
RETURNS TABLE (version bigint, expires_at timestamptz) LANGUAGE plpgsql AS $$
DECLARE
    v bigint;
    e timestamptz;
BEGIN
    IF p_exact THEN
        PERFORM keeperstate_lock_usage(p_org);
    END IF;
    INSERT INTO workflow_state AS s
        (organization_id, workflow_id, key, value, version, expires_at, updated_by_execution_id)
    VALUES (p_org, p_wf, p_key, p_value, 1, now() + p_ttl * interval '1 second', p_execution)
    ON CONFLICT (organization_id, workflow_id, key) DO NOTHING
    RETURNING s.version, s.expires_at INTO v, e;
    IF NOT FOUND THEN
        RETURN;
    END IF;
    PERFORM keeperstate_check_usage(p_org, p_wf, true, true, p_exact, p_max_wf, p_max_keys, p_max_bytes);
    version := v;
    expires_at := e;
    RETURN NEXT;
END;
$$;


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


CREATE OR REPLACE FUNCTION keeperstate_trim_history(p_limit integer) RETURNS integer
LANGUAGE plpgsql AS $$
DECLARE
    d record;
    n integer := 0;
BEGIN
    FOR d IN
        WITH picked AS MATERIALIZED (
            SELECT workflow_id, key FROM workflow_state_history_due LIMIT p_limit FOR UPDATE SKIP LOCKED
        )
        DELETE FROM workflow_state_history_due h USING picked p
         WHERE h.workflow_id = p.workflow_id AND h.key = p.key
        RETURNING h.workflow_id, h.key
    LOOP
        DELETE FROM workflow_state_event
         WHERE id IN (SELECT e.id FROM workflow_state_event e
                       WHERE e.workflow_id = d.workflow_id AND e.key = d.key
                       ORDER BY e.id DESC
                      OFFSET COALESCE((SELECT s.value FROM keeperstate_setting s
                                        WHERE s.name = 'history_per_key'), 50));
        n := n + 1;
    END LOOP;
    RETURN n;
END;
$$;


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


CREATE OR REPLACE FUNCTION keeperstate_workflow_state_history_gone() RETURNS trigger LANGUAGE plpgsql AS $$
                BEGIN
                    DELETE FROM workflow_state_event WHERE workflow_id IN (SELECT id FROM gone);
                    DELETE FROM workflow_state_tombstone WHERE workflow_id IN (SELECT id FROM gone);
                    RETURN NULL;
                END;
                $$;
CREATE OR REPLACE TRIGGER keeperstate_workflow_state_history_gone
    AFTER DELETE ON workflow REFERENCING OLD TABLE AS gone
    FOR EACH STATEMENT EXECUTE FUNCTION keeperstate_workflow_state_history_gone();

"""


def _batches(cursor, table, keys):
    """Fill organization_id from the row's workflow, BATCH rows at a time in key order."""
    columns = ", ".join(keys)
    last = None
    while True:
        after = f"WHERE ({columns}) > ({', '.join(['%s'] * len(keys))})" if last else ""
        cursor.execute(
            f"""
            WITH batch AS (SELECT {columns} FROM {table} {after} ORDER BY {columns} LIMIT {BATCH}),
            filled AS (
                UPDATE {table} t SET organization_id = w.organization_id
                  FROM batch b, workflow w
                 WHERE {" AND ".join(f"t.{k} = b.{k}" for k in keys)} AND w.id = t.workflow_id
                   AND t.organization_id IS NULL
            )
            SELECT {columns} FROM batch ORDER BY {columns} DESC LIMIT 1
            """,
            list(last or ()),
        )
        row = cursor.fetchone()
        if row is None:
            return
        last = row


def fill_in_batches(apps, schema_editor):
    with schema_editor.connection.cursor() as cursor:
        for table, keys in FILLED.items():
            _batches(cursor, table, keys)


def fill_the_rest_and_switch(apps, schema_editor):
    """Step 4: what writers added since the batches, then the triggers that write it themselves."""
    connection = schema_editor.connection
    with transaction.atomic(using=connection.alias), connection.cursor() as cursor:
        cursor.execute(
            "LOCK TABLE workflow_state, workflow_state_event, workflow_state_tombstone, workflow_state_usage, "
            "workflow_state_history_due, workflow_execution IN SHARE ROW EXCLUSIVE MODE"
        )
        for table in FILLED:
            cursor.execute(
                f"UPDATE {table} t SET organization_id = w.organization_id FROM workflow w "
                f"WHERE t.organization_id IS NULL AND w.id = t.workflow_id"
            )
            # A mark or a usage row of a workflow deleted before: nothing to keep.
            cursor.execute(f"DELETE FROM {table} WHERE organization_id IS NULL")
        for statement in schema_editor.connection.ops.prepare_sql_script(NEW_SQL):
            cursor.execute(statement)


def switch_back(apps, schema_editor):
    with schema_editor.connection.cursor() as cursor:
        for statement in schema_editor.connection.ops.prepare_sql_script(OLD_SQL):
            cursor.execute(statement)


def _not_null(table):
    return f"""
        ALTER TABLE {table} ADD CONSTRAINT {table}_org_not_null CHECK (organization_id IS NOT NULL) NOT VALID;
        ALTER TABLE {table} VALIDATE CONSTRAINT {table}_org_not_null;
        ALTER TABLE {table} ALTER COLUMN organization_id SET NOT NULL;
        ALTER TABLE {table} DROP CONSTRAINT {table}_org_not_null;
    """


ADD_COLUMNS = "".join(f"ALTER TABLE {table} ADD COLUMN organization_id bigint;\n" for table in FILLED)
DROP_COLUMNS = "".join(f"ALTER TABLE {table} DROP COLUMN organization_id;\n" for table in FILLED)

# (index, table, columns, condition): built concurrently before the swap.
NEW_INDEXES = (
    ("workflow_org_pkey", "workflow", "(organization_id, id)", ""),
    ("workflow_execution_org_pkey", "workflow_execution", "(organization_id, id)", ""),
    ("workflow_state_org_pkey", "workflow_state", "(organization_id, id)", ""),
    ("workflow_state_event_org_pkey", "workflow_state_event", "(organization_id, id)", ""),
    ("workflow_state_tombstone_org_pkey", "workflow_state_tombstone", "(organization_id, id)", ""),
    ("organization_state_usage_org_pkey", "organization_state_usage", "(organization_id, id)", ""),
    ("workflow_state_usage_org_pkey", "workflow_state_usage", "(organization_id, workflow_id)", ""),
    ("workflow_state_history_due_org_pkey", "workflow_state_history_due", "(organization_id, workflow_id, key)", ""),
    ("workflow_state_tombstone_org_key", "workflow_state_tombstone", "(organization_id, workflow_id, key)", ""),
    ("execution_one_per_tick_org", "workflow_execution", "(organization_id, workflow_id, scheduled_for)",
     "WHERE scheduled_for IS NOT NULL"),
    ("execution_idempotency_key_org", "workflow_execution", "(organization_id, workflow_id, idempotency_key)",
     "WHERE idempotency_key IS NOT NULL"),
)
BUILD_INDEXES = [
    f"CREATE UNIQUE INDEX CONCURRENTLY IF NOT EXISTS {name} ON {table} {columns} {condition};"
    for name, table, columns, condition in NEW_INDEXES
] + [
    "CREATE INDEX CONCURRENTLY IF NOT EXISTS state_event_key_time_idx ON workflow_state_event "
    "(organization_id, workflow_id, key, created_at DESC, id DESC);",
    *(f"CREATE INDEX CONCURRENTLY IF NOT EXISTS {table}_org_unfilled ON {table} ((1)) WHERE organization_id IS NULL;"
      for table in FILLED),
]
DROP_NEW_INDEXES = "".join(f"DROP INDEX IF EXISTS {name};\n" for name, *_ in NEW_INDEXES) + (
    "DROP INDEX IF EXISTS state_event_key_time_idx;\n"
)
DROP_UNFILLED = [f"DROP INDEX CONCURRENTLY IF EXISTS {table}_org_unfilled;" for table in FILLED]

# Foreign keys into workflow go first: they hang on its primary key.
SWAP_KEYS = """
ALTER TABLE workflow_state DROP CONSTRAINT workflow_state_workflow_org_fk;
ALTER TABLE workflow_state_usage DROP CONSTRAINT workflow_state_usage_workflow_fk;
ALTER TABLE workflow_execution DROP CONSTRAINT workflow_execution_workflow_id_53557214_fk_workflow_id;
ALTER TABLE workflow DROP CONSTRAINT workflow_id_organization_unique;
ALTER TABLE workflow DROP CONSTRAINT workflow_pkey, ADD CONSTRAINT workflow_pkey PRIMARY KEY USING INDEX workflow_org_pkey;
ALTER TABLE workflow_execution DROP CONSTRAINT workflow_execution_pkey,
    ADD CONSTRAINT workflow_execution_pkey PRIMARY KEY USING INDEX workflow_execution_org_pkey;
ALTER TABLE workflow_state DROP CONSTRAINT workflow_state_pkey,
    ADD CONSTRAINT workflow_state_pkey PRIMARY KEY USING INDEX workflow_state_org_pkey;
ALTER TABLE workflow_state_event DROP CONSTRAINT workflow_state_event_pkey,
    ADD CONSTRAINT workflow_state_event_pkey PRIMARY KEY USING INDEX workflow_state_event_org_pkey;
ALTER TABLE workflow_state_tombstone DROP CONSTRAINT workflow_state_tombstone_pkey,
    ADD CONSTRAINT workflow_state_tombstone_pkey PRIMARY KEY USING INDEX workflow_state_tombstone_org_pkey;
ALTER TABLE organization_state_usage DROP CONSTRAINT organization_state_usage_pkey,
    ADD CONSTRAINT organization_state_usage_pkey PRIMARY KEY USING INDEX organization_state_usage_org_pkey;
ALTER TABLE workflow_state_usage DROP CONSTRAINT workflow_state_usage_pkey,
    ADD CONSTRAINT workflow_state_usage_pkey PRIMARY KEY USING INDEX workflow_state_usage_org_pkey;
ALTER TABLE workflow_state_history_due DROP CONSTRAINT workflow_state_history_due_pkey,
    ADD CONSTRAINT workflow_state_history_due_pkey PRIMARY KEY USING INDEX workflow_state_history_due_org_pkey;
ALTER TABLE workflow_state_tombstone DROP CONSTRAINT workflow_state_tombstone_unique_key,
    ADD CONSTRAINT workflow_state_tombstone_unique_key UNIQUE USING INDEX workflow_state_tombstone_org_key;
DROP INDEX execution_one_per_tick;
ALTER INDEX execution_one_per_tick_org RENAME TO execution_one_per_tick;
DROP INDEX execution_idempotency_key;
ALTER INDEX execution_idempotency_key_org RENAME TO execution_idempotency_key;
ALTER TABLE workflow_state ADD CONSTRAINT workflow_state_workflow_org_fk FOREIGN KEY (organization_id, workflow_id)
    REFERENCES workflow (organization_id, id) ON DELETE CASCADE NOT VALID;
ALTER TABLE workflow_state_usage ADD CONSTRAINT workflow_state_usage_workflow_fk FOREIGN KEY (organization_id, workflow_id)
    REFERENCES workflow (organization_id, id) ON DELETE CASCADE NOT VALID;
ALTER TABLE workflow_execution ADD CONSTRAINT workflow_execution_workflow_org_fk FOREIGN KEY (organization_id, workflow_id)
    REFERENCES workflow (organization_id, id) ON DELETE CASCADE NOT VALID;
ALTER TABLE workflow_state VALIDATE CONSTRAINT workflow_state_workflow_org_fk;
ALTER TABLE workflow_state_usage VALIDATE CONSTRAINT workflow_state_usage_workflow_fk;
ALTER TABLE workflow_execution VALIDATE CONSTRAINT workflow_execution_workflow_org_fk;
"""

UNSWAP_KEYS = """
ALTER TABLE workflow_execution DROP CONSTRAINT workflow_execution_workflow_org_fk;
ALTER TABLE workflow_state_usage DROP CONSTRAINT workflow_state_usage_workflow_fk;
ALTER TABLE workflow_state DROP CONSTRAINT workflow_state_workflow_org_fk;
ALTER TABLE workflow_state_tombstone DROP CONSTRAINT workflow_state_tombstone_unique_key,
    ADD CONSTRAINT workflow_state_tombstone_unique_key UNIQUE (workflow_id, key);
ALTER TABLE workflow_state_history_due DROP CONSTRAINT workflow_state_history_due_pkey,
    ADD CONSTRAINT workflow_state_history_due_pkey PRIMARY KEY (workflow_id, key);
ALTER TABLE workflow_state_usage DROP CONSTRAINT workflow_state_usage_pkey,
    ADD CONSTRAINT workflow_state_usage_pkey PRIMARY KEY (workflow_id);
ALTER TABLE organization_state_usage DROP CONSTRAINT organization_state_usage_pkey,
    ADD CONSTRAINT organization_state_usage_pkey PRIMARY KEY (id);
ALTER TABLE workflow_state_tombstone DROP CONSTRAINT workflow_state_tombstone_pkey,
    ADD CONSTRAINT workflow_state_tombstone_pkey PRIMARY KEY (id);
ALTER TABLE workflow_state_event DROP CONSTRAINT workflow_state_event_pkey,
    ADD CONSTRAINT workflow_state_event_pkey PRIMARY KEY (id);
ALTER TABLE workflow_state DROP CONSTRAINT workflow_state_pkey, ADD CONSTRAINT workflow_state_pkey PRIMARY KEY (id);
ALTER TABLE workflow_execution DROP CONSTRAINT workflow_execution_pkey,
    ADD CONSTRAINT workflow_execution_pkey PRIMARY KEY (id);
ALTER TABLE workflow DROP CONSTRAINT workflow_pkey, ADD CONSTRAINT workflow_pkey PRIMARY KEY (id);
ALTER TABLE workflow ADD CONSTRAINT workflow_id_organization_unique UNIQUE (id, organization_id);
DROP INDEX execution_one_per_tick;
CREATE UNIQUE INDEX execution_one_per_tick ON workflow_execution (workflow_id, scheduled_for)
    WHERE scheduled_for IS NOT NULL;
DROP INDEX execution_idempotency_key;
CREATE UNIQUE INDEX execution_idempotency_key ON workflow_execution (workflow_id, idempotency_key)
    WHERE idempotency_key IS NOT NULL;
CREATE INDEX state_event_key_idx ON workflow_state_event (workflow_id, key, id DESC);
DROP INDEX state_event_key_time_idx;
ALTER TABLE workflow_state ADD CONSTRAINT workflow_state_workflow_org_fk FOREIGN KEY (workflow_id, organization_id)
    REFERENCES workflow (id, organization_id) ON UPDATE CASCADE ON DELETE CASCADE;
ALTER TABLE workflow_state_usage ADD CONSTRAINT workflow_state_usage_workflow_fk FOREIGN KEY (workflow_id)
    REFERENCES workflow (id) ON DELETE CASCADE;
ALTER TABLE workflow_execution ADD CONSTRAINT workflow_execution_workflow_id_53557214_fk_workflow_id
    FOREIGN KEY (workflow_id) REFERENCES workflow (id) DEFERRABLE INITIALLY DEFERRED;
"""

ORGANIZATION = dict(
    db_constraint=False, db_index=False, on_delete=django.db.models.deletion.DO_NOTHING, related_name="+",
    to="keeperstate.organization",
)

STATE_OPERATIONS = [
    migrations.AlterModelOptions(name="workflowstateevent", options={"ordering": ["-created_at", "-id"]}),
    migrations.RemoveConstraint(model_name="workflow", name="workflow_id_organization_unique"),
    migrations.RemoveConstraint(model_name="workflowexecution", name="execution_one_per_tick"),
    migrations.RemoveConstraint(model_name="workflowexecution", name="execution_idempotency_key"),
    migrations.RemoveConstraint(model_name="workflowstatetombstone", name="workflow_state_tombstone_unique_key"),
    migrations.RemoveIndex(model_name="workflowstateevent", name="state_event_key_idx"),
    migrations.AddField(model_name="statehistorydue", name="organization_id",
                        field=models.BigIntegerField(default=None), preserve_default=False),
    migrations.AddField(model_name="workflowexecution", name="organization",
                        field=models.ForeignKey(default=None, editable=False, **ORGANIZATION), preserve_default=False),
    migrations.AddField(model_name="workflowstateevent", name="organization",
                        field=models.ForeignKey(default=None, **ORGANIZATION), preserve_default=False),
    migrations.AddField(model_name="workflowstatetombstone", name="organization",
                        field=models.ForeignKey(default=None, **ORGANIZATION), preserve_default=False),
    migrations.AddField(model_name="workflowstateusage", name="organization",
                        field=models.ForeignKey(default=None, **ORGANIZATION), preserve_default=False),
    migrations.AlterField(
        model_name="workflowexecution", name="workflow",
        field=models.ForeignKey(db_constraint=False, on_delete=django.db.models.deletion.CASCADE,
                                related_name="executions", to="keeperstate.workflow"),
    ),
    migrations.AddIndex(
        model_name="workflowstateevent",
        index=models.Index(fields=["organization", "workflow", "key", "-created_at", "-id"],
                           name="state_event_key_time_idx"),
    ),
    migrations.AddConstraint(
        model_name="workflowexecution",
        constraint=models.UniqueConstraint(condition=models.Q(("scheduled_for__isnull", False)),
                                           fields=("organization", "workflow", "scheduled_for"),
                                           name="execution_one_per_tick"),
    ),
    migrations.AddConstraint(
        model_name="workflowexecution",
        constraint=models.UniqueConstraint(condition=models.Q(("idempotency_key__isnull", False)),
                                           fields=("organization", "workflow", "idempotency_key"),
                                           name="execution_idempotency_key"),
    ),
    migrations.AddConstraint(
        model_name="workflowstatetombstone",
        constraint=models.UniqueConstraint(fields=("organization", "workflow", "key"),
                                           name="workflow_state_tombstone_unique_key"),
    ),
]


class Migration(migrations.Migration):
    atomic = False  # CREATE INDEX CONCURRENTLY, and batches that commit one by one

    dependencies = [
        ("keeperstate", "0016_workflow_configs_parsed_once"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=STATE_OPERATIONS,
            database_operations=[
                migrations.RunSQL(ADD_COLUMNS, DROP_COLUMNS),
                migrations.RunSQL(BUILD_INDEXES, DROP_NEW_INDEXES),
                migrations.RunPython(fill_in_batches, migrations.RunPython.noop),
                migrations.RunPython(fill_the_rest_and_switch, switch_back),
                migrations.RunSQL(DROP_UNFILLED, migrations.RunSQL.noop),
                migrations.RunSQL("".join(_not_null(table) for table in FILLED), migrations.RunSQL.noop),
                migrations.RunSQL(SWAP_KEYS, UNSWAP_KEYS),
                migrations.RunSQL(["DROP INDEX CONCURRENTLY IF EXISTS state_event_key_idx;"], migrations.RunSQL.noop),
            ],
        ),
    ]
