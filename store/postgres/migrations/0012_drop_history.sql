-- A commit may drop its execution's history (engine.Commit.DropHistory:
-- the commit that ends a Distributed Map child that succeeded, every
-- commit of an EXPRESS child): its history records and its checkpoints
-- go, in the commit's transaction; the snapshot blobs only those
-- checkpoints referred to are left to GC, which deletes the blobs no
-- checkpoint refers to (as it does after a checkpoint is replaced), under
-- the lock that keeps commits naming a blob out meanwhile. The head stays
-- (its event count and last hash reset, so that the empty history
-- verifies, and marked as dropped in its record).
--
-- executions.history_dropped says so as a column, for queries; the head
-- record says it to the store. Added last, after spec: its value changes
-- once, so an update's WAL leaves it out with the row's unchanged end. A
-- column with a constant default is added without rewriting the table.
ALTER TABLE executions ADD COLUMN history_dropped boolean NOT NULL DEFAULT false;

-- aslrun_commit as migration 0011 made it, with drop_history. The
-- function of 0011 (18 arguments) stays for the servers of schema 11 still
-- running, which never drop a history.
--
--   drop_history  delete the execution's history records (history_body
--                 is then not added) and its checkpoints, and set
--                 history_dropped.
CREATE FUNCTION aslrun_commit(exec_id text, at_seq bigint, fence_epoch bigint,
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
            wake_ns = new_wake, waiting_for = new_waiting, error = new_error, event_count = new_events, last_hash = new_last_hash,
            history_dropped = true
        WHERE id = exec_id AND commit_seq = at_seq;
    ELSE
        UPDATE executions SET head = new_head, commit_seq = at_seq + 1, status = new_status, stopped_ns = new_stopped,
            wake_ns = new_wake, waiting_for = new_waiting, error = new_error, event_count = new_events, last_hash = new_last_hash
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
