-- Fewer bytes per commit, in the tables and in the WAL. A commit updates
-- its execution's row and its scopes' rows and adds a history record; an
-- update writes a new version of the whole row, and the WAL holds the
-- part of it that differs from the old version when both are on the same
-- page (PostgreSQL leaves out the bytes they share at the start and at
-- the end).
--
-- executions: spec (what never changes after the start, the execution's
-- input among it) becomes the last column, after head, so that the WAL
-- of an update leaves it out with the rest of the row's unchanged end.
-- Inserts leave half of each page free (4096 bytes, twice what a row
-- takes once PostgreSQL has compressed or moved out its long values,
-- 2032 at most): PostgreSQL prunes a page's dead versions as it reads it
-- when less than that is free, so the new version of a row fits on its
-- page, even after a prune that could not be done (another process had
-- the page pinned), and the update is HOT (no index entry, and the WAL
-- holds only the bytes that changed), instead of moving to a new page
-- every few commits (the table grew by a page every five commits of one
-- execution). With 30% free, 6% of the loop's updates were not HOT on a
-- busy server (a checkpoint during the run); more free space would prune
-- the page more often, a WAL record each time.
ALTER TABLE executions ADD COLUMN spec_last bytea;
UPDATE executions SET spec_last = spec;
ALTER TABLE executions DROP COLUMN spec;
ALTER TABLE executions RENAME COLUMN spec_last TO spec;
ALTER TABLE executions ALTER COLUMN spec SET NOT NULL;
ALTER TABLE executions SET (fillfactor = 50);

-- scopes: updated by every commit, as executions.
ALTER TABLE scopes SET (fillfactor = 50);

-- history_records: no foreign key to executions. Its check, at every
-- insert, locked the execution's row FOR KEY SHARE, a WAL record (and a
-- dirtied page) more per commit; the commit that adds a record has just
-- updated that row (aslrun_commit), which is check enough. A trigger
-- keeps ON DELETE CASCADE: deleting an execution deletes its history.
ALTER TABLE history_records DROP CONSTRAINT history_records_execution_fkey;
CREATE FUNCTION aslrun_delete_history() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM history_records h WHERE h.execution = OLD.id;
    RETURN NULL;
END
$$;
CREATE TRIGGER executions_delete_history AFTER DELETE ON executions
FOR EACH ROW EXECUTE FUNCTION aslrun_delete_history();

-- A record stays in its row, compressed, up to the size of a page
-- (MAIN): PostgreSQL moved the records that compressed to more than 2 KiB
-- out of line, to TOAST, a row and an index entry more each. execution
-- too is MAIN, or PostgreSQL would move it out of line first.
ALTER TABLE history_records ALTER COLUMN execution SET STORAGE MAIN;
ALTER TABLE history_records ALTER COLUMN body SET STORAGE MAIN;

-- history_records, the bulk of what a commit writes: lz4 where the
-- server was built with it (PostgreSQL 14 and later, --with-lz4), which
-- compresses these records slightly better than the default, pglz (1374
-- bytes against 1412 for the loop's of 2.2 KiB); otherwise pglz stays.
DO $$
BEGIN
    EXECUTE 'ALTER TABLE history_records ALTER COLUMN body SET COMPRESSION lz4';
EXCEPTION WHEN feature_not_supported OR syntax_error THEN
    NULL;
END
$$;

-- aslrun_commit as migration 0005 made it, but for the scopes it writes.
CREATE OR REPLACE FUNCTION aslrun_commit(exec_id text, at_seq bigint, fence_epoch bigint,
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
        -- The scopes there are updated, then the others added: an upsert
        -- (INSERT … ON CONFLICT DO UPDATE) locks the row it updates, a WAL
        -- record more per scope. The head swap above holds the
        -- execution's row, so no other commit of it adds a scope meanwhile.
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
