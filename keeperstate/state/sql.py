"""The current SQL of workflow state: every function and trigger the database holds for it, and the
fragments the store's statements share ("is this key live?").

This module is the current version, the one place to read what the database runs. Migrations
never import it: each carries the text it installed, frozen (as 0011, 0012 and 0013 do), so an
old migration installs tomorrow what it installed the day it was written. To change a body,
change it here AND add a migration that carries the new text as a literal; a statement here is
``CREATE OR REPLACE``, so the migration can run it as it stands. tests/state/test_migration_sql.py
fails while the migrated database and this module differ.

Kept apart from the models so each rule can be read whole. None of them reads a connection
option or a session setting: behind PgBouncer in transaction mode a connection's settings belong
to whoever used the server connection last, and a transaction-local setting outlives the
statement that meant it. Who made a change is in the row (``updated_by_execution``) or written
by the deleting statement itself (see HISTORY_SQL); the retention comes from a table.
"""

from __future__ import annotations

from keeperstate.core.numbers import MAX_SAFE_INTEGER

# --- Is this key live? -------------------------------------------------------------------------
# A row is live while it has no expiry or its expiry is ahead of now(), the database's clock (the
# transaction's start: every statement of a transaction sees the same instant). Every raw
# statement and every function below says it with these; their ORM twin is
# WorkflowStateQuerySet.live() / .expired() (keeperstate/state/models.py), on the same clock
# (TransactionNow, not Django's Now(), which is statement_timestamp()). tests/state/test_sql_twins.py
# holds the two equal, the instant of expiry included.


def live(alias: str = "") -> str:
    """A row of workflow_state (under ``alias``, if given) is live."""
    column = f"{alias}.expires_at" if alias else "expires_at"
    return f"({column} IS NULL OR {column} > now())"


def expired(alias: str = "") -> str:
    """A row of workflow_state has expired and awaits the sweeper: exactly the rows not live()."""
    column = f"{alias}.expires_at" if alias else "expires_at"
    return f"{column} <= now()"


LIVE_SQL = live()
EXPIRED_SQL = expired()

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
          WHERE t.organization_id = NEW.organization_id AND t.workflow_id = NEW.workflow_id AND t.key = NEW.key),
        0) + 1;
    RETURN NEW;
"""

# Every change of a key becomes one event. Who made it: an insert or update names the
# execution on the row. A delete has no new row, so a deleter that knows more than "the
# database" (a run, an admin, the sweeper) writes the event itself, from the locked row, in the
# statement before its delete (keeperstate_delete_key, keeperstate_reclaim_expired,
# keeperstate/state/db.py); the trigger then finds that event (a key's version is never
# reused, so workflow, key and old version name one deletion) and adds nothing. A raw SQL
# delete gets its event here, by "database".
#
# A row deleted while its workflow still exists also leaves a tombstone with its last version
# (the key's next life continues from there). When the workflow itself is being deleted there
# is nothing to remember and nothing to record: its history goes with it. An UPDATE that leaves
# the version alone (an execution deleted) is not a change of the key.
#
# The store's delete (keeperstate_delete_key, every run's and API client's) does all of that
# itself, in the statement before its delete: event, tombstone and usage counters, in one
# statement, as the bound of docs/benchmarks.md writes them. Its tombstone then already holds
# the row's version, which no other deletion can leave: a key's live version is always above its
# tombstone (a new life starts one past it, and versions only grow). So the trigger's first
# check, one lookup of the tombstone's primary key, tells such a delete and returns. Every other
# deleter gets the bookkeeping from the trigger (ADR 0069).
#
# Every row carries its organization and every lookup names it first: the tables shard by
# organization_id (docs/scaling.md), so each statement here stays on the row's own shard.
# History is ordered by (created_at, id): ids made on different nodes do not follow time.
#
# Retention, off the write path: trimming a key's history deletes one old event per new one,
# which cost a writer as much as writing its own event. So every HISTORY_MARK_EVERY-th version
# of a key only marks the key in workflow_state_history_due (one small upsert per 16 writes),
# and the worker's housekeeping and the sweeper trim the marked keys to the newest
# ``history_per_key`` events (keeperstate_setting) in batches, organization by organization
# (keeperstate_trim_history). A key thus holds history_per_key + HISTORY_MARK_EVERY - 1 events
# plus what it gains between two housekeeping passes (a few seconds). Without any worker or
# sweeper, every HISTORY_TRIM_INLINE_EVERY-th version trims the key itself, so retention stays
# bounded (history_per_key + 255) on any deployment.
#
# Usage counters: rows per workflow, and rows and bytes per organization, kept exact for every
# writer by this trigger (inserts and deletes) and USAGE_UPDATE_SQL (a resize). They count rows,
# expired ones included until they are deleted; the store turns "rows" into "live keys" only
# when a limit would be passed (keeperstate_check_usage reclaims the scope's expired rows and
# counts again), so a write never scans.
#
# An organization's counter is split in rows whose sum is its usage: a transaction adds to the
# row of its connection (pg_backend_pid() modulo USAGE_SHARDS), so creators in one organization
# do not queue on one row lock until each commit's flush. Decreases go to a second set of rows
# (shards USAGE_SHARDS…2×USAGE_SHARDS-1), which the exact path never needs to lock: a decrease in
# flight only makes a count cautious. How the store stays exact with shards is told in
# keeperstate_check_usage (CHECK_USAGE_FUNCTION_SQL, below).
#
# Row by row (ADR 0046): a statement-level trigger with a transition table is what a distributed
# planner cannot fire (Citus accepts it and fails on the first write), and for the store's writes,
# one row each, the row trigger is also the cheaper one (no tuplestore). History and usage share
# one function, so an insert or delete pays one trigger call. Locks are taken in one order
# everywhere: the organization's shard, then the workflow's usage row; a multi-row delete (the
# sweeper's batch) takes its rows in workflow order (maintenance.py), so two cannot deadlock on
# them. A deleted organization or workflow takes its usage rows along (foreign keys ON DELETE
# CASCADE); the EXISTS guards skip it mid-cascade. (pg_trigger_depth() cannot tell a cascade: the
# cascaded rows' triggers fire at depth 1, after the workflow's own AFTER triggers; tried in
# tests/state/test_history.py::test_history_goes_with_the_workflow.)
HISTORY_MARK_EVERY = 16
HISTORY_TRIM_INLINE_EVERY = 256
USAGE_SHARDS = 32
_SHARD = f"(pg_backend_pid() % {USAGE_SHARDS})"
_DECREASE_SHARD = f"({USAGE_SHARDS} + pg_backend_pid() % {USAGE_SHARDS})"
# What a deleted row does to its key's tombstone and its organization's decrease shard, said once
# for both deleters that write them: the history trigger (any deleter) and keeperstate_delete_key
# (the store's). A tombstone keeps the highest version a key reached; a decrease adds up.
_TOMBSTONE_MERGE = """ON CONFLICT (organization_id, workflow_id, key) DO UPDATE
           SET last_version = GREATEST(t.last_version, EXCLUDED.last_version)"""
_DECREASE_MERGE = (
    "ON CONFLICT (organization_id, shard) DO UPDATE SET keys = u.keys - 1, bytes = u.bytes + EXCLUDED.bytes"
)
# The key's rows by its whole key, the primary key's prefix; the ids past the
# newest ``history_per_key`` are gathered once into an array (not IN, which the planner ran again
# for every row of the key). Three statements, each on one table: a statement that reads the
# settings' reference table while it deletes from a sharded one is what Citus refuses on a shard.
_TRIM_KEY = """
        SELECT s.value INTO keep FROM keeperstate_setting s WHERE s.name = 'history_per_key';
        doomed := ARRAY(SELECT e.id FROM workflow_state_event e
                         WHERE e.organization_id = {org} AND e.workflow_id = {wf} AND e.key = {key}
                         ORDER BY e.created_at DESC, e.id DESC OFFSET coalesce(keep, 50));
        DELETE FROM workflow_state_event
         WHERE organization_id = {org} AND workflow_id = {wf} AND key = {key} AND id = ANY(doomed);"""
_TRIM_DECLARE = """DECLARE
    keep integer;
    doomed bigint[];"""
_TRIM_NEW = _TRIM_KEY.format(org="NEW.organization_id", wf="NEW.workflow_id", key="NEW.key")
HISTORY_SQL = f"""
    IF TG_OP = 'UPDATE' THEN
        IF NEW.version = OLD.version THEN
            RETURN NULL;
        END IF;
    ELSIF TG_OP = 'INSERT' THEN
        INSERT INTO organization_state_usage AS u (organization_id, shard, keys, bytes)
        VALUES (NEW.organization_id, {_SHARD}, 1, NEW.size_bytes)
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
        SELECT OLD.organization_id, {_DECREASE_SHARD}, -1, -OLD.size_bytes
         WHERE EXISTS (SELECT 1 FROM organization o WHERE o.id = OLD.organization_id)
        {_DECREASE_MERGE};
        INSERT INTO workflow_state_tombstone AS t (organization_id, workflow_id, key, last_version)
        SELECT OLD.organization_id, OLD.workflow_id, OLD.key, OLD.version
         WHERE EXISTS (SELECT 1 FROM workflow w
                        WHERE w.organization_id = OLD.organization_id AND w.id = OLD.workflow_id)
        {_TOMBSTONE_MERGE};
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
    IF NEW.version % {HISTORY_MARK_EVERY} = 0 THEN
        IF NEW.version % {HISTORY_TRIM_INLINE_EVERY} = 0 THEN{_TRIM_NEW}
        ELSE
            INSERT INTO workflow_state_history_due (organization_id, workflow_id, key)
            VALUES (NEW.organization_id, NEW.workflow_id, NEW.key)
            ON CONFLICT DO NOTHING;
        END IF;
    END IF;
    RETURN NULL;
"""

# An update changes usage only when the value's size changes (nothing moves a row to another
# organization: organization_id is never rewritten, docs/scaling.md); the trigger's WHEN clause
# (evaluated without calling any function) skips the common case, a same-size overwrite of a
# cursor or counter. A growth goes to the connection's shard, a shrink to its decrease shard.
USAGE_UPDATE_WHEN = 'OLD."size_bytes" IS DISTINCT FROM NEW."size_bytes"'
USAGE_UPDATE_SQL = f"""
    INSERT INTO organization_state_usage AS u (organization_id, shard, keys, bytes)
    SELECT NEW.organization_id, CASE WHEN NEW.size_bytes > OLD.size_bytes THEN {_SHARD} ELSE {_DECREASE_SHARD} END,
           0, NEW.size_bytes - OLD.size_bytes
     WHERE EXISTS (SELECT 1 FROM organization o WHERE o.id = NEW.organization_id)
    ON CONFLICT (organization_id, shard) DO UPDATE SET bytes = u.bytes + EXCLUDED.bytes;
    RETURN NULL;
"""

# The exact path: hold every increase shard (0…USAGE_SHARDS-1) of the organization, so no other
# writer has an increase in flight that this transaction cannot see. Shards are created first
# (all of them, so none can appear later outside the lock) and locked in shard order. Decrease
# shards are not locked.
LOCK_USAGE_FUNCTION_SQL = f"""
CREATE OR REPLACE FUNCTION keeperstate_lock_usage(p_org bigint) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO organization_state_usage (organization_id, shard, keys, bytes)
    SELECT p_org, s, 0, 0 FROM generate_series(0, {USAGE_SHARDS - 1}) AS s
    ON CONFLICT (organization_id, shard) DO NOTHING;
    PERFORM 1 FROM organization_state_usage WHERE organization_id = p_org AND shard < {USAGE_SHARDS} ORDER BY shard FOR UPDATE;
END;
$$;
"""  # noqa: E501 - the text as installed: a rewrapped line would be another body

# After a write that added a live key (p_adds_key) or grew the stored bytes (p_grew), in the
# writer's transaction. The trigger has counted the write on the workflow's row (locked until
# commit: the ceiling is exact) and on one shard of the organization (the connection's).
#
# The organization's usage is the sum of its shards. Another writer's increase is invisible
# until it commits, but each writer in flight holds the one shard it added to and added at most
# one key (and at most 16,384 bytes, the largest value as jsonb renders it), so the true usage
# is at most the visible sum plus USAGE_SHARDS-1 keys (as many times 16,384 bytes). Far from the
# budget that margin is harmless and no writer waits for another (the fast path, p_exact false).
# Within the margin it raises KS000, and the store writes again on the exact path (p_exact
# true): it first holds every increase shard (keeperstate_lock_usage), so no increase is in
# flight and the sum is exact (decreases in flight only make it cautious). A caller's own
# transaction, which may write several keys, always takes the exact path: it locks all shards in
# order before its first increase, so two such transactions cannot deadlock.
#
# Counters count rows, expired ones too; only when a limit is passed are the scope's expired
# rows reclaimed and the counters read again. Still over: raise, which undoes the write. Errors
# carry SQLSTATE KS001 (workflow ceiling), KS002 (organization keys), KS003 (organization bytes)
# with the usage before the write in DETAIL (keeperstate/state/store.py turns them into coded
# errors).
CHECK_USAGE_FUNCTION_SQL = f"""
CREATE OR REPLACE FUNCTION keeperstate_check_usage(
    p_org bigint, p_wf uuid, p_adds_key boolean, p_grew boolean, p_exact boolean,
    p_max_wf integer, p_max_keys bigint, p_max_bytes bigint)
RETURNS void LANGUAGE plpgsql AS $$
DECLARE
    wf_keys bigint;
    org_keys bigint;
    org_bytes bigint;
    slack_keys bigint := CASE WHEN p_exact THEN 0 ELSE {USAGE_SHARDS - 1} END;
    slack_bytes bigint := CASE WHEN p_exact THEN 0 ELSE {USAGE_SHARDS - 1} * 16384 END;
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
"""  # noqa: E501 - the text as installed: a rewrapped line would be another body

# Delete up to p_limit expired rows of an organization (p_wf NULL) or of one workflow: the
# sweeper calls it organization by organization (keeperstate/state/maintenance.py), and a write
# that would pass a limit calls it for its own scope. Tombstones keep their versions, and the
# events name the sweeper. Rows are taken in workflow order, the order of the usage rows' locks.
# The picked ids are kept in an array (as an IN subquery the planner may run it again and pass the
# limit). SKIP LOCKED: a row someone holds is being revived or
# swept; waiting for it while holding usage rows could deadlock.
_RECLAIM = """
        SELECT array_agg(p.id ORDER BY p.workflow_id, p.id), array_agg(DISTINCT p.workflow_id) INTO ids, wfs
          FROM (SELECT id, workflow_id FROM workflow_state
                 WHERE {scope} AND {expired}
                 ORDER BY workflow_id, id
                 LIMIT p_limit FOR UPDATE SKIP LOCKED) p;"""
RECLAIM_EXPIRED_FUNCTION_SQL = f"""
CREATE OR REPLACE FUNCTION keeperstate_reclaim_expired(p_org bigint, p_wf uuid, p_limit integer)
RETURNS integer LANGUAGE plpgsql AS $$
DECLARE
    n integer;
    ids bigint[];
    wfs uuid[];
BEGIN
    IF p_wf IS NULL THEN{_RECLAIM.format(scope="organization_id = p_org", expired=expired())}
    ELSE{_RECLAIM.format(scope="organization_id = p_org AND workflow_id = p_wf", expired=expired())}
    END IF;
    IF ids IS NULL THEN
        RETURN 0;
    END IF;
    -- The row trigger counts each deleted row; its locks are taken here first, in the order every
    -- writer takes them (the organization's shard, then workflows by id), so two sweepers of one
    -- organization cannot deadlock on them.
    INSERT INTO organization_state_usage AS u (organization_id, shard, keys, bytes)
    VALUES (p_org, {_DECREASE_SHARD}, 0, 0)
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

# The trim of an organization's keys marked due (workflow_state_history_due, model
# StateHistoryDue): up to p_limit marked keys, each taken with SKIP LOCKED (several workers share
# the work, none waits) and trimmed to the newest history_per_key events; returns how many keys it
# trimmed. One organization per call, so every statement stays on its shard; the caller goes
# through the organizations that have marks (keeperstate/state/maintenance.py).
TRIM_HISTORY_FUNCTION_SQL = f"""
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
    LOOP{_TRIM_KEY.format(org="p_org", wf="d.workflow_id", key="d.key")}
        n := n + 1;
    END LOOP;
    RETURN n;
END;
$$;
"""

# A key with no row at all (never written, or deleted or swept: the tombstone continues its
# versions), in one round trip: insert, then check the limits. No row returned: the key has a
# row (live, or expired and waiting to be revived), which the store's locked path handles.
CREATE_KEY_FUNCTION_SQL = """
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
"""

# Set in one round trip (the store's usual write: a cursor moving on, a marker written):
# overwrite the live key in place when the value does not grow (with p_expected, only at that
# version: compare-and-set), else, with no expected version, create the key if it has no row
# (keeperstate_create_key, below, checks the limits). No row back: the key has a row
# that is expired or would grow, or another version, which the store's locked path decides.
# Being a function also lets PL/pgSQL keep the UPDATE's plan, where a statement sent by the
# client is planned each time.
SET_KEY_FUNCTION_SQL = f"""
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
       AND {live("s")} AND s.size_bytes >= octet_length(p_value::text)
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

# Increment in one round trip: add p_by to the live whole number in place when the sum stays a
# safe integer and the stored value does not grow; else, for a key with no row, create it at p_by
# (keeperstate_create_key checks the limits). No row back: the key has a row that is expired, not
# a whole number, would pass ±2^53−1 or grow, which the locked path decides. The sum is a cast, not
# to_jsonb(): a STABLE function over a column in an UPDATE is what a distributed planner refuses
# (docs/scaling.md); the text of a whole number is its JSON.
_WHOLE_NUMBER = "(jsonb_typeof({v}) = 'number' AND {v}::text ~ '^-?[0-9]+$')"
INCREMENT_KEY_FUNCTION_SQL = f"""
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
       AND {live("s")} AND {_WHOLE_NUMBER.format(v="s.value")}
       AND abs(s.value::text::numeric + p_by) <= {MAX_SAFE_INTEGER}
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

# The locked path, in one call, for a key the calls above could not write (a row that is expired
# and to be revived, growing, at another version, not a whole number; or a row gone meanwhile):
# lock the row, decide, upsert, check the limits. With p_by, an Increment (the sum, or p_by when
# the key is not live); else a Set of p_value, a compare-and-set with p_expected. The outcome is
# 'written', or a refusal that writes nothing: 'conflict' (the live version is not p_expected),
# 'not_integer', 'overflow' (an Increment of a value that is not a whole number, or past ±2^53−1),
# each with the key's live value and version (0 when not live), which the store turns into its
# errors (keeperstate/state/store.py). Lock order: the key's row, then the usage shards, then the
# workflow's usage row. One call runs whole on the key's shard (docs/scaling.md): its lock waits
# are a local transaction's, and its clock is the key's node's (docs/state.md). No now() in DO
# UPDATE SET (a distributed planner wants only immutable functions there): the inserted row
# carries the transaction's clock, EXCLUDED.updated_at; reviving an expired row restarts its
# created_at.
WRITE_LOCKED_FUNCTION_SQL = f"""
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
    SELECT s.value, s.version, {live("s")}, s.size_bytes INTO old_value, old_version, old_live, old_size
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
    ELSIF NOT {_WHOLE_NUMBER.format(v="old_value")} THEN
        outcome := 'not_integer';
    ELSIF abs(old_value::text::numeric + p_by) > {MAX_SAFE_INTEGER} THEN
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

# Delete in one call: the live key (at the expected version, if any), its history event with the
# deleting execution, its tombstone and the usage counters, all written by one statement before
# the delete, under the row's lock; the delete's trigger finds the tombstone at the row's version
# and does nothing more (HISTORY_SQL). The trigger's own bookkeeping, for every other deleter,
# is four statements: about 38 µs of a 160 µs delete in the database, where the contract's bound
# writes the same rows in one (ADR 0069). Everything is written by a statement before the
# delete, so a trigger on a sharded database sees it too (where the parts of one statement reach
# a shard one by one, docs/scaling.md). The usage rows are locked in the order every writer
# locks them: the organization's shard, then the workflow's row (``wf`` reads ``org``). Returns
# the deleted version, NULL when nothing was deleted. A function for the same reason as
# keeperstate_set_key: its plans are kept, where the same statements sent by the client are
# planned on every delete.
DELETE_KEY_FUNCTION_SQL = f"""
CREATE OR REPLACE FUNCTION keeperstate_delete_key(
    p_org bigint, p_wf uuid, p_key text, p_expected bigint, p_execution uuid)
RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
    v bigint;
BEGIN
    WITH s AS MATERIALIZED (
        SELECT value, version, size_bytes FROM workflow_state
         WHERE organization_id = p_org AND workflow_id = p_wf AND key = p_key
           AND {live()} AND (p_expected IS NULL OR version = p_expected)
           FOR UPDATE
    ), event AS (
        INSERT INTO workflow_state_event
            (organization_id, workflow_id, key, operation, old_value, old_version, execution_id, created_at)
        SELECT p_org, p_wf, p_key, 'delete', s.value, s.version, p_execution, clock_timestamp() FROM s
        RETURNING old_version
    ), tombstone AS (
        INSERT INTO workflow_state_tombstone AS t (organization_id, workflow_id, key, last_version)
        SELECT p_org, p_wf, p_key, s.version FROM s
        {_TOMBSTONE_MERGE}
    ), org AS (
        INSERT INTO organization_state_usage AS u (organization_id, shard, keys, bytes)
        SELECT p_org, {_DECREASE_SHARD}, -1, -s.size_bytes FROM s
        {_DECREASE_MERGE}
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

# How the triggers above are installed: as plain functions and triggers, not
# through django-pgtrigger. pgtrigger wraps every trigger function in a check of its
# ``pgtrigger.ignore`` setting that opens a subtransaction and catches an error on every call
# (``_pgtrigger_should_ignore``); on this table that was most of what a write cost beyond the
# physical floor. Nothing here is ever ignored, so the check bought nothing. Only
# the read-only rule, whose WHEN clause keeps its function from running at all, stays with
# pgtrigger (keeperstate/state/models.py).
#
# Every trigger is FOR EACH ROW (no transition tables: docs/scaling.md). Order: Postgres fires a
# table's triggers of one timing in name order. None of these depends on
# another's side effects except through NEW, and the version is set in BEFORE triggers, before
# any AFTER trigger reads it; so their order among themselves does not matter.
# To change a body, change it here and add a migration that carries the new text frozen, as
# 0013 does (every statement is CREATE OR REPLACE).
_TRIGGERS = (
    # (name, timing and events, level and condition, declarations, body)
    ("version_bump", "BEFORE UPDATE OF value, expires_at", f"FOR EACH ROW WHEN ({VERSION_BUMP_WHEN})", "",
     VERSION_BUMP_SQL),
    ("version_start", "BEFORE INSERT", "FOR EACH ROW", "", VERSION_START_SQL),
    ("history", "AFTER INSERT OR UPDATE OR DELETE", "FOR EACH ROW", _TRIM_DECLARE, HISTORY_SQL),
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

# History, tombstones and due marks go with their workflow, for the ORM and raw SQL alike: they
# have no foreign key to it, whose referential check locked the workflow's row (FOR KEY SHARE, a
# write) on every history event. Row by row, each delete on the workflow's own shard.
WORKFLOW_HISTORY_GONE_SQL = """
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
"""

# Everything above that the database holds, as the migrated database must hold it
# (tests/state/test_migration_sql.py compares the two). A new function or trigger of the state
# goes here too.
CURRENT_SQL = (
    RECLAIM_EXPIRED_FUNCTION_SQL,
    LOCK_USAGE_FUNCTION_SQL,
    CHECK_USAGE_FUNCTION_SQL,
    CREATE_KEY_FUNCTION_SQL,
    SET_KEY_FUNCTION_SQL,
    INCREMENT_KEY_FUNCTION_SQL,
    WRITE_LOCKED_FUNCTION_SQL,
    DELETE_KEY_FUNCTION_SQL,
    TRIM_HISTORY_FUNCTION_SQL,
    STATE_TRIGGERS_SQL,
    WORKFLOW_HISTORY_GONE_SQL,
)
