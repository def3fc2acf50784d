-- Fewer bytes per commit, continued (migration 11 began).
--
-- From this version on, the store compresses history records itself
-- (Zstandard, records.go) before it writes them to history_records.body:
-- smaller than PostgreSQL's lz4 of the same record, and under the size at
-- which PostgreSQL would compress the row again. The records written
-- before stay as they are, and read back as they are.
--
-- executions.event_count and last_hash repeated what the head record
-- holds (its event count and last hash), which is what VerifyHistory
-- checks the history against; nothing read them. They sit between
-- commit_seq and head, the columns every commit changes, so the WAL of
-- each update held them (41 bytes): a commit now sets them NULL, which
-- takes no bytes in a row (the rows no commit changes again keep theirs:
-- the migration rewrites no row). They stay, nullable, for the servers of
-- schema 11 and 12 still running, whose commits write them.
ALTER TABLE executions ALTER COLUMN event_count DROP NOT NULL;
ALTER TABLE executions ALTER COLUMN event_count DROP DEFAULT;

-- aslrun_commit as migration 0012 made it, but for event_count and
-- last_hash, set NULL (new_events and new_last_hash are not used).
CREATE OR REPLACE FUNCTION aslrun_commit(exec_id text, at_seq bigint, fence_epoch bigint,
    new_head bytea, new_status text, new_stopped bigint, new_wake bigint, new_waiting text, new_error text,
    new_events bigint, new_last_hash bytea, first_event_no bigint, history_body bytea,
    drop_prefixes text[], del_keys text[], put_keys text[], put_bodies bytea[], release_lease boolean,
    drop_history boolean)
RETURNS void
LANGUAGE plpgsql
AS $$
BEGIN
    IF fence_epoch <> 0 THEN
        PERFORM 1 FROM leases l WHERE l.execution = exec_id AND l.epoch = fence_epoch AND l.owner <> '' FOR SHARE;
        IF NOT FOUND THEN
            RAISE EXCEPTION USING ERRCODE = 'AR001', MESSAGE = 'lease fenced off';
        END IF;
    END IF;
    IF drop_history THEN
        UPDATE executions SET head = new_head, commit_seq = at_seq + 1, status = new_status, stopped_ns = new_stopped,
            wake_ns = new_wake, waiting_for = new_waiting, error = new_error, event_count = NULL, last_hash = NULL,
            history_dropped = true
        WHERE id = exec_id AND commit_seq = at_seq;
    ELSE
        UPDATE executions SET head = new_head, commit_seq = at_seq + 1, status = new_status, stopped_ns = new_stopped,
            wake_ns = new_wake, waiting_for = new_waiting, error = new_error, event_count = NULL, last_hash = NULL
        WHERE id = exec_id AND commit_seq = at_seq;
    END IF;
    IF NOT FOUND THEN
        RAISE EXCEPTION USING ERRCODE = 'AR002', MESSAGE = 'execution changed since it was read';
    END IF;
    IF drop_history THEN
        DELETE FROM history_records h WHERE h.execution = exec_id;
        DELETE FROM checkpoints c WHERE c.execution = exec_id;
    ELSIF history_body IS NOT NULL THEN
        INSERT INTO history_records (execution, first_event, body) VALUES (exec_id, first_event_no, history_body);
    END IF;
    IF new_status IN ('SUCCEEDED', 'FAILED', 'TIMED_OUT', 'ABORTED') THEN
        -- A stop requested meanwhile has nothing left to stop, and nothing
        -- is left to claim.
        DELETE FROM stop_requests s WHERE s.execution = exec_id;
        DELETE FROM ready r WHERE r.execution = exec_id;
        IF release_lease AND fence_epoch <> 0 THEN
            UPDATE leases l SET owner = '', expires_at = clock_timestamp() WHERE l.execution = exec_id AND l.epoch = fence_epoch;
        END IF;
    END IF;
    IF cardinality(drop_prefixes) > 0 THEN
        DELETE FROM scopes s WHERE s.execution = exec_id AND s.key ^@ ANY (drop_prefixes);
    END IF;
    IF cardinality(del_keys) > 0 THEN
        DELETE FROM scopes s WHERE s.execution = exec_id AND s.key = ANY (del_keys);
    END IF;
    IF cardinality(put_keys) > 0 THEN
        UPDATE scopes s SET body = t.v FROM unnest(put_keys, put_bodies) AS t(k, v)
        WHERE s.execution = exec_id AND s.key = t.k;
        IF NOT FOUND OR cardinality(put_keys) > 1 THEN
            INSERT INTO scopes AS s (execution, key, body)
            SELECT exec_id, t.k, t.v FROM unnest(put_keys, put_bodies) AS t(k, v)
            WHERE NOT EXISTS (SELECT 1 FROM scopes x WHERE x.execution = exec_id AND x.key = t.k);
        END IF;
    END IF;
END
$$;
