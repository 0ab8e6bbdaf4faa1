"""The SQL bodies of workflow_state's triggers, installed by migration 0012 (see STATE_TRIGGERS_SQL).

Kept apart from the models so each rule can be read whole. None of them reads a connection
option or a session setting: behind PgBouncer in transaction mode a connection's settings belong
to whoever used the server connection last, and a transaction-local setting outlives the
statement that meant it. Who made a change is in the row (``updated_by_execution``) or written
by the deleting statement itself (see HISTORY_SQL); the retention comes from a table.
"""

from __future__ import annotations

VERSION_BUMP_SQL = """
    NEW.version := OLD.version + 1;
    NEW.updated_at := now();
    RETURN NEW;
"""
# The bump's WHEN clause (evaluated without calling any function): a writer that already sets
# exactly what the bump would (the store does: ``version = version + 1, updated_at = now()``)
# skips the call; any other update of value or expires_at gets the bump, so the rule holds for
# every writer.
VERSION_BUMP_WHEN = 'NEW."version" IS DISTINCT FROM OLD."version" + 1 OR NEW."updated_at" IS DISTINCT FROM now()'

VERSION_START_SQL = """
    NEW.version := COALESCE(
        (SELECT t.last_version FROM workflow_state_tombstone t
          WHERE t.workflow_id = NEW.workflow_id AND t.key = NEW.key),
        0) + 1;
    RETURN NEW;
"""

# Every change of a key becomes one event. Who made it: an insert or update names the
# execution on the row. A delete has no new row, so a deleter that knows more than "the
# database" (a run, an admin, the sweeper) writes the event itself in the same statement
# (``WITH gone AS (DELETE … RETURNING …) INSERT INTO workflow_state_event …``, see
# keeperstate/state/db.py); the trigger then finds that event (a key's version is never
# reused, so workflow, key and old version name one deletion) and adds nothing. A raw SQL
# delete gets its event here, by "database".
#
# A row deleted while its workflow still exists also leaves a tombstone with its last version
# (the key's next life continues from there). When the workflow itself is being deleted there
# is nothing to remember and nothing to record: its history goes with it. Tombstone and event
# share one trigger so a delete checks the workflow once. An UPDATE that leaves the version
# alone (a workflow moved to another organization, an execution deleted) is not a change of the
# key.
#
# Retention, off the write path: trimming a key's history deletes one old event per new one,
# which cost a writer as much as writing its own event. So every HISTORY_MARK_EVERY-th version
# of a key only marks the key in workflow_state_history_due (one small upsert per 16 writes),
# and the worker's housekeeping and the sweeper trim the marked keys to the newest
# ``history_per_key`` events (keeperstate_setting) in batches (keeperstate_trim_history). A key
# thus holds history_per_key + HISTORY_MARK_EVERY - 1 events plus what it gains between two
# housekeeping passes (a few seconds). Without any worker or sweeper, every
# HISTORY_TRIM_INLINE_EVERY-th version trims the key itself, so retention stays bounded
# (history_per_key + 255) on any deployment.
HISTORY_MARK_EVERY = 16
HISTORY_TRIM_INLINE_EVERY = 256
_TRIM_KEY = """
        DELETE FROM workflow_state_event
         WHERE id IN (SELECT e.id FROM workflow_state_event e
                       WHERE e.workflow_id = {wf} AND e.key = {key}
                       ORDER BY e.id DESC
                      OFFSET COALESCE((SELECT s.value FROM keeperstate_setting s
                                        WHERE s.name = 'history_per_key'), 50));"""
HISTORY_SQL = f"""
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
    IF TG_OP <> 'DELETE' AND NEW.version % {HISTORY_MARK_EVERY} = 0 THEN
        IF NEW.version % {HISTORY_TRIM_INLINE_EVERY} = 0 THEN{_TRIM_KEY.format(wf="NEW.workflow_id", key="NEW.key")}
        ELSE
            INSERT INTO workflow_state_history_due (workflow_id, key) VALUES (NEW.workflow_id, NEW.key)
            ON CONFLICT DO NOTHING;
        END IF;
    END IF;
    RETURN NULL;
"""

# Usage counters: rows per workflow, and rows and bytes per organization, kept exact for every
# writer by these triggers. They count rows, expired ones included until they are deleted; the
# store turns "rows" into "live keys" only when a limit would be passed (keeperstate_check_usage
# reclaims the scope's expired rows and counts again), so a write never scans.
#
# An organization's counter is split in rows whose sum is its usage: a transaction adds to the
# row of its connection (pg_backend_pid() modulo USAGE_SHARDS), so creators in one organization
# do not queue on one row lock until each commit's flush. Decreases go to a second set of rows
# (shards USAGE_SHARDS…2×USAGE_SHARDS-1), which the exact path never needs to lock: a decrease in
# flight only makes a count cautious. How the store stays exact with shards is told in
# keeperstate_check_usage (migration 0010).
#
# Inserts and deletes are counted per statement from transition tables: the sweeper's batch of
# 1,000 rows is one update per organization and per workflow, not 1,000. Locks are taken in one
# order everywhere: organization shards (by organization), then workflows (by id), so two
# multi-row statements cannot deadlock on them. A deleted organization or workflow takes its
# usage rows along (foreign keys ON DELETE CASCADE); the EXISTS guards skip it mid-cascade.
USAGE_SHARDS = 32
_SHARD = f"(pg_backend_pid() % {USAGE_SHARDS})"
_DECREASE_SHARD = f"({USAGE_SHARDS} + pg_backend_pid() % {USAGE_SHARDS})"
USAGE_INSERT_SQL = f"""
    INSERT INTO organization_state_usage AS u (organization_id, shard, keys, bytes)
    SELECT organization_id, {_SHARD}, count(*), sum(size_bytes) FROM new_rows
     GROUP BY organization_id ORDER BY organization_id
    ON CONFLICT (organization_id, shard) DO UPDATE SET keys = u.keys + EXCLUDED.keys, bytes = u.bytes + EXCLUDED.bytes;
    INSERT INTO workflow_state_usage AS u (workflow_id, keys)
    SELECT workflow_id, count(*) FROM new_rows GROUP BY workflow_id ORDER BY workflow_id
    ON CONFLICT (workflow_id) DO UPDATE SET keys = u.keys + EXCLUDED.keys;
    RETURN NULL;
"""

USAGE_DELETE_SQL = f"""
    INSERT INTO organization_state_usage AS u (organization_id, shard, keys, bytes)
    SELECT d.organization_id, {_DECREASE_SHARD}, -count(*), -sum(d.size_bytes) FROM old_rows d
     WHERE EXISTS (SELECT 1 FROM organization o WHERE o.id = d.organization_id)
     GROUP BY d.organization_id ORDER BY d.organization_id
    ON CONFLICT (organization_id, shard) DO UPDATE SET keys = u.keys + EXCLUDED.keys, bytes = u.bytes + EXCLUDED.bytes;
    FOR r IN SELECT workflow_id, count(*) AS n FROM old_rows GROUP BY workflow_id ORDER BY workflow_id LOOP
        UPDATE workflow_state_usage SET keys = keys - r.n WHERE workflow_id = r.workflow_id;
    END LOOP;
    RETURN NULL;
"""

# An update changes usage only when the value's size changes or the workflow moved to another
# organization; the trigger's WHEN clause (evaluated without calling any function) skips the
# common case, a same-size overwrite of a cursor or counter.
USAGE_UPDATE_WHEN = (
    'OLD."size_bytes" IS DISTINCT FROM NEW."size_bytes" OR OLD."organization_id" IS DISTINCT FROM NEW."organization_id"'
)
USAGE_UPDATE_SQL = f"""
    INSERT INTO organization_state_usage AS u (organization_id, shard, keys, bytes)
    SELECT c.org, CASE WHEN sum(c.keys) > 0 OR sum(c.bytes) > 0 THEN {_SHARD} ELSE {_DECREASE_SHARD} END,
           sum(c.keys), sum(c.bytes)
      FROM (VALUES (OLD.organization_id, -1, -OLD.size_bytes), (NEW.organization_id, 1, NEW.size_bytes))
           AS c (org, keys, bytes)
     WHERE EXISTS (SELECT 1 FROM organization o WHERE o.id = c.org)
     GROUP BY c.org ORDER BY c.org
    ON CONFLICT (organization_id, shard) DO UPDATE SET keys = u.keys + EXCLUDED.keys, bytes = u.bytes + EXCLUDED.bytes;
    RETURN NULL;
"""

# The trim of the keys marked due (workflow_state_history_due, model StateHistoryDue): up to
# p_limit marked keys, each taken with SKIP LOCKED (several workers share the work, none waits)
# and trimmed to the newest history_per_key events; returns how many keys it trimmed.
TRIM_HISTORY_FUNCTION_SQL = f"""
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
    LOOP{_TRIM_KEY.format(wf="d.workflow_id", key="d.key")}
        n := n + 1;
    END LOOP;
    RETURN n;
END;
$$;
"""
DROP_TRIM_HISTORY_FUNCTION_SQL = "DROP FUNCTION keeperstate_trim_history(integer);"

# Set in one round trip (the store's usual write: a cursor moving on, a marker written):
# overwrite the live key in place when the value does not grow (with p_expected, only at that
# version: compare-and-set), else, with no expected version, create the key if it has no row
# (keeperstate_create_key, migration 0011, checks the limits). No row back: the key has a row
# that is expired or would grow, or another version, which the store's locked path decides.
# Being a function also lets PL/pgSQL keep the UPDATE's plan, where a statement sent by the
# client is planned each time.
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
DROP_SET_KEY_FUNCTION_SQL = (
    "DROP FUNCTION keeperstate_set_key(bigint, uuid, text, jsonb, integer, uuid, bigint, boolean, integer, bigint, "
    "bigint);"
)

# Delete in one call: the live key (at the expected version, if any) and its history event with
# the deleting execution, as logged_delete_sql (keeperstate/state/db.py) does for the other
# deleters; the history trigger finds the event and adds none. Returns the deleted version, NULL
# when nothing was deleted. A function for the same reason as keeperstate_set_key: its plans are
# kept, where the same statements sent by the client are planned on every delete.
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
DROP_DELETE_KEY_FUNCTION_SQL = "DROP FUNCTION keeperstate_delete_key(bigint, uuid, text, bigint, uuid);"

# How the triggers above are installed: as plain functions and triggers (migration 0012), not
# through django-pgtrigger. pgtrigger wraps every trigger function in a check of its
# ``pgtrigger.ignore`` setting that opens a subtransaction and catches an error on every call
# (``_pgtrigger_should_ignore``); on this table that was most of what a write cost beyond the
# physical floor (issue 13). Nothing here is ever ignored, so the check bought nothing. Only
# the read-only rule, whose WHEN clause keeps its function from running at all, stays with
# pgtrigger (keeperstate/state/models.py).
#
# Order: Postgres fires a table's triggers of one timing in name order. None of these depends on
# another's side effects except through NEW, and the version is set in BEFORE triggers, before
# any AFTER trigger reads it; so their order among themselves does not matter.
# To change a body, change it here and add a migration that runs STATE_TRIGGERS_SQL again
# (every statement is CREATE OR REPLACE).
_TRIGGERS = (
    # (name, timing and events, level and condition, declarations, body)
    ("version_bump", "BEFORE UPDATE OF value, expires_at", f"FOR EACH ROW WHEN ({VERSION_BUMP_WHEN})", "",
     VERSION_BUMP_SQL),
    ("version_start", "BEFORE INSERT", "FOR EACH ROW", "", VERSION_START_SQL),
    ("history", "AFTER INSERT OR UPDATE OR DELETE", "FOR EACH ROW", "", HISTORY_SQL),
    ("usage_insert", "AFTER INSERT", "REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT", "", USAGE_INSERT_SQL),
    ("usage_delete", "AFTER DELETE", "REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT", "DECLARE r record;",
     USAGE_DELETE_SQL),
    ("usage_update", "AFTER UPDATE", f"FOR EACH ROW WHEN ({USAGE_UPDATE_WHEN})", "", USAGE_UPDATE_SQL),
)
STATE_TRIGGERS_SQL = "\n".join(
    f"""
CREATE OR REPLACE FUNCTION keeperstate_state_{name}() RETURNS trigger LANGUAGE plpgsql AS $$
{declare}
BEGIN
{body}
END;
$$;
CREATE OR REPLACE TRIGGER keeperstate_state_{name} {events} ON workflow_state {level}
    EXECUTE FUNCTION keeperstate_state_{name}();
"""
    for name, events, level, declare, body in _TRIGGERS
)
DROP_STATE_TRIGGERS_SQL = "\n".join(
    f"DROP TRIGGER keeperstate_state_{name} ON workflow_state; DROP FUNCTION keeperstate_state_{name}();"
    for name, *_ in _TRIGGERS
)
