-- aslrun_commit writes the common part of one commit of an execution, in
-- the order a commit's batch wrote it as separate statements: the fence,
-- the head swap, the history record, what an end clears, the scopes. One
-- statement instead of four to nine: the commit is the hot path of every
-- server, and each statement costs a round of the protocol on both sides.
-- The rarer parts of a commit (agent memory, checkpoints, superseded
-- history records) stay statements of their own in the same transaction.
--
--   fence_epoch   the lease epoch the commit is fenced by; 0: not fenced.
--                 Raises AR001 when the execution's lease is no longer of
--                 that epoch and held, and keeps the lease row locked FOR
--                 SHARE until the transaction ends, so a takeover waits.
--   at_seq        the commit the head must be at; AR002 when it is not.
--   history_body  the history record to add at first_event_no, or NULL.
--   drop_prefixes scopes to delete by key prefix, then del_keys by key,
--                 then put_keys/put_bodies to upsert.
--   release_lease with a status that ends the execution: give the lease
--                 of fence_epoch up in the same transaction (the holder
--                 would release it next, in a transaction of its own).
CREATE FUNCTION aslrun_commit(exec_id text, at_seq bigint, fence_epoch bigint,
    new_head bytea, new_status text, new_stopped bigint, new_wake bigint, new_waiting text, new_error text,
    new_events bigint, new_last_hash bytea, first_event_no bigint, history_body bytea,
    drop_prefixes text[], del_keys text[], put_keys text[], put_bodies bytea[], release_lease boolean)
RETURNS void
LANGUAGE plpgsql
-- No SET clauses, unlike aslrun_claim: every statement here reads or
-- writes one execution's rows by their primary key, which any plan does by
-- index, and saving and restoring settings at each call cost more than
-- the statements' own planning.
AS $$
BEGIN
    IF fence_epoch <> 0 THEN
        PERFORM 1 FROM leases l WHERE l.execution = exec_id AND l.epoch = fence_epoch AND l.owner <> '' FOR SHARE;
        IF NOT FOUND THEN
            RAISE EXCEPTION USING ERRCODE = 'AR001', MESSAGE = 'lease fenced off';
        END IF;
    END IF;
    UPDATE executions SET head = new_head, commit_seq = at_seq + 1, status = new_status, stopped_ns = new_stopped,
        wake_ns = new_wake, waiting_for = new_waiting, error = new_error, event_count = new_events, last_hash = new_last_hash
    WHERE id = exec_id AND commit_seq = at_seq;
    IF NOT FOUND THEN
        RAISE EXCEPTION USING ERRCODE = 'AR002', MESSAGE = 'execution changed since it was read';
    END IF;
    IF history_body IS NOT NULL THEN
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
        INSERT INTO scopes AS s (execution, key, body) SELECT exec_id, k, v FROM unnest(put_keys, put_bodies) AS t(k, v)
        ON CONFLICT (execution, key) DO UPDATE SET body = EXCLUDED.body;
    END IF;
END
$$;
