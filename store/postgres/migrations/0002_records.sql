-- The store keeps the records package store encodes, the same bytes as
-- the embedded store's, so that every event hashes and chains alike on
-- both (and a history copied from one to the other verifies):
--   * a commit's events are one history record, which holds the
--     documents they introduce; history_records replaces history_events
--     and documents;
--   * an execution's definition may be absent, and its input is in its
--     spec record;
--   * the memory namespaces an execution's commits used get a table;
--   * the checkpoint binding its history event is optional;
--   * a commit's checks that must fail inside the database (its lease
--     fence, its head unchanged since it was read) call aslrun_refuse.

DROP TABLE history_events;
DROP TABLE documents;

-- One row per history record: a commit's events, in order. first_event is
-- the position of the record's first event in the history (from 1), so
-- the records of an execution in order of first_event are its history.
CREATE TABLE history_records (
    execution   text COLLATE "C" NOT NULL REFERENCES executions (id) ON DELETE CASCADE,
    first_event bigint NOT NULL CHECK (first_event > 0),
    body        bytea NOT NULL,
    PRIMARY KEY (execution, first_event)
);

ALTER TABLE executions DROP CONSTRAINT executions_definition_hash_fkey;
ALTER TABLE executions ALTER COLUMN definition_hash DROP NOT NULL;
ALTER TABLE executions ALTER COLUMN input_hash DROP NOT NULL;
ALTER TABLE checkpoints ALTER COLUMN event_seq DROP NOT NULL;

-- The memory namespaces an execution's commits used.
CREATE TABLE memory_namespaces (
    execution text COLLATE "C" NOT NULL REFERENCES executions (id) ON DELETE CASCADE,
    namespace text COLLATE "C" NOT NULL,
    PRIMARY KEY (execution, namespace)
);

-- aslrun_refuse fails the statement (and so the transaction) with the
-- SQLSTATE code and message given: a check queued in a commit's batch of
-- statements, which runs on the server, must fail there for the commit
-- to write nothing.
CREATE FUNCTION aslrun_refuse(code text, message text) RETURNS boolean
LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION USING ERRCODE = code, MESSAGE = message;
END
$$;
