-- The first schema of aslrun's PostgreSQL store. docs/deploy.md ("What is
-- kept where") explains each table.
--
-- Conventions:
--   * Ids, names and keys are text COLLATE "C": byte order, so that a
--     prefix (a scope key's) is a range of the primary key's index.
--   * Times the engine sets are bigint Unix nanoseconds (*_ns): timestamptz
--     keeps microseconds, and these times are hashed into the history chain
--     and read back by workflows ($$.Execution.StartTime), so they must come
--     back exactly as written. Times the database sets (leases, registration)
--     are timestamptz from the database's clock, the one clock every server
--     shares.
--   * Hashes are bytea, the 32 bytes of a SHA-256.
--   * The parts no query filters on are bytea in the store's own record
--     encoding, not jsonb: jsonb reorders keys and rewrites numbers, and
--     the documents' exact bytes are what their hashes are of.

-- Definitions, stored once by the hex SHA-256 of their canonical form
-- (executions' and registered workflows').
CREATE TABLE definitions (
    hash       text COLLATE "C" PRIMARY KEY,
    body       bytea NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now()
);

-- Registered workflow versions, numbered 1, 2, … per name.
CREATE TABLE workflows (
    name            text COLLATE "C" NOT NULL,
    version         integer NOT NULL CHECK (version > 0),
    definition_hash text COLLATE "C" NOT NULL REFERENCES definitions (hash),
    created_at      timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (name, version)
);

-- One row per execution: the head. The columns are what listing,
-- filtering, scheduling and the hash-chain binding need; spec is what never
-- changes after the start (agents file, trace context, payload limit,
-- durability) and head the rest of where the execution stands (counters,
-- usage, notices, memory namespaces, redrives).
CREATE TABLE executions (
    id                text COLLATE "C" PRIMARY KEY,
    machine_name      text COLLATE "C" NOT NULL,
    definition_hash   text COLLATE "C" NOT NULL REFERENCES definitions (hash),
    status            text NOT NULL CHECK (status IN ('RUNNING', 'WAITING', 'SUCCEEDED', 'FAILED', 'TIMED_OUT', 'ABORTED')),
    started_ns        bigint NOT NULL,
    stopped_ns        bigint,
    wake_ns           bigint,
    waiting_for       text NOT NULL DEFAULT '',
    parent            text COLLATE "C",
    parent_checkpoint text COLLATE "C",
    input_hash        bytea NOT NULL,
    output_hash       bytea,
    error             text NOT NULL DEFAULT '',
    cause             text NOT NULL DEFAULT '',
    -- commit_seq counts the commits applied (a commit must bring the next);
    -- event_count and last_hash bind the head to its history's chain.
    commit_seq        bigint NOT NULL DEFAULT 0,
    event_count       bigint NOT NULL DEFAULT 0,
    last_hash         bytea,
    spec              bytea NOT NULL,
    head              bytea NOT NULL
);
-- List: newest first, all, by status, by machine; the id breaks ties and is
-- the page cursor.
CREATE INDEX executions_started ON executions (started_ns DESC, id DESC);
CREATE INDEX executions_status_started ON executions (status, started_ns DESC, id DESC);
CREATE INDEX executions_machine_started ON executions (machine_name, started_ns DESC, id DESC);
-- Due: the WAITING executions with a wake-up time, earliest first.
CREATE INDEX executions_due ON executions (wake_ns) WHERE status = 'WAITING' AND wake_ns IS NOT NULL;
-- Unfinished: the RUNNING executions, which a crashed server left.
CREATE INDEX executions_running ON executions (id) WHERE status = 'RUNNING';
-- Forks of an execution.
CREATE INDEX executions_parent ON executions (parent) WHERE parent IS NOT NULL;

-- Documents, content-addressed by the SHA-256 of their canonical form,
-- stored once per execution: the state input an Entered event records,
-- the output its Exited event records and the scope that goes on from it are
-- one row. Per execution rather than global: almost all repetition is
-- within an execution; only the server holding its lease writes it, so two
-- executions never contend on a row; and deleting an execution deletes its
-- documents without reference counts.
CREATE TABLE documents (
    execution text COLLATE "C" NOT NULL REFERENCES executions (id) ON DELETE CASCADE,
    hash      bytea NOT NULL,
    body      bytea NOT NULL,
    PRIMARY KEY (execution, hash)
);

-- History: one row per event, in order (seq counts every event of the
-- execution from 1). event_id is the AWS-numbered id (0 for the engine's
-- own events) and own_id the own events' numbering. hash chains the
-- events: SHA-256 of the event's canonical fields (at_ns and doc_hash
-- among them) followed by prev_hash. superseded is outside the hash: a
-- rollback sets it. body holds the rest (input, output and detail by
-- document hash, error, cause).
CREATE TABLE history_events (
    execution  text COLLATE "C" NOT NULL REFERENCES executions (id) ON DELETE CASCADE,
    seq        bigint NOT NULL CHECK (seq > 0),
    commit_seq bigint NOT NULL,
    event_id   bigint NOT NULL,
    own_id     bigint NOT NULL,
    type       text NOT NULL,
    at_ns      bigint NOT NULL,
    state      text NOT NULL DEFAULT '',
    scope      text COLLATE "C" NOT NULL DEFAULT '',
    doc_hash   bytea NOT NULL,
    prev_hash  bytea,
    hash       bytea NOT NULL,
    superseded boolean NOT NULL DEFAULT false,
    body       bytea NOT NULL,
    PRIMARY KEY (execution, seq)
);

-- Scopes: the resumable progress of each machine of an execution (key ''
-- for the top level, "Review#1.0/2/" for a Parallel branch…). doc_hash is
-- the scope's document; body holds the rest (next state, variables, visits,
-- step progress, how it ended). A finished Map drops its items' scopes as
-- one key range.
CREATE TABLE scopes (
    execution text COLLATE "C" NOT NULL REFERENCES executions (id) ON DELETE CASCADE,
    key       text COLLATE "C" NOT NULL,
    doc_hash  bytea,
    body      bytea NOT NULL,
    PRIMARY KEY (execution, key)
);

-- Checkpoint snapshots: the compressed document of a checkpoint, keyed by
-- the SHA-256 of its encoded form (which its load verifies), and stored
-- once across checkpoints and executions. Already compressed: PostgreSQL
-- is told not to compress it again.
CREATE TABLE snapshot_blobs (
    key        bytea PRIMARY KEY,
    codec      text NOT NULL CHECK (codec IN ('zstd', 'gzip', 'none')),
    format     integer NOT NULL,
    body       bytea NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now()
);
ALTER TABLE snapshot_blobs ALTER COLUMN body SET STORAGE EXTERNAL;

-- Checkpoints: one per execution and name (a later Checkpoint state of the
-- same name replaces it). blob is its snapshot (a blob no checkpoint refers
-- to is removed by GC; the foreign key keeps GC from removing one that
-- a commit refers to meanwhile); doc_hash the document's canonical hash, its
-- identity; event_seq the history event that recorded it, which binds it to
-- the chain. body holds the rest (state, next, variables, context, memory,
-- budget, counters).
CREATE TABLE checkpoints (
    execution  text COLLATE "C" NOT NULL REFERENCES executions (id) ON DELETE CASCADE,
    name       text COLLATE "C" NOT NULL,
    blob       bytea NOT NULL REFERENCES snapshot_blobs (key),
    doc_hash   bytea NOT NULL,
    event_seq  bigint NOT NULL,
    created_ns bigint NOT NULL,
    expires_ns bigint,
    body       bytea NOT NULL,
    PRIMARY KEY (execution, name)
);
CREATE INDEX checkpoints_expiry ON checkpoints (expires_ns) WHERE expires_ns IS NOT NULL;
CREATE INDEX checkpoints_blob ON checkpoints (blob);

-- Agent memory: shared by every execution, so not tied to one; execution
-- is the last writer. value is the JSON value's exact text.
CREATE TABLE agent_memory (
    namespace  text COLLATE "C" NOT NULL,
    key        text COLLATE "C" NOT NULL,
    value      bytea NOT NULL,
    updated_ns bigint NOT NULL,
    expires_ns bigint,
    execution  text COLLATE "C" NOT NULL DEFAULT '',
    PRIMARY KEY (namespace, key)
);
CREATE INDEX agent_memory_expiry ON agent_memory (expires_ns) WHERE expires_ns IS NOT NULL;

-- Leases: which process runs an execution, until when, and the fencing
-- epoch every commit checks. A row is never deleted while its execution
-- exists (a release empties owner), so epochs only grow. No foreign key:
-- this is the hot table (renewed every few seconds per running execution)
-- and stays narrow and apart from the records commits write.
CREATE TABLE leases (
    execution   text COLLATE "C" PRIMARY KEY,
    owner       text NOT NULL,
    epoch       bigint NOT NULL CHECK (epoch > 0),
    acquired_at timestamptz NOT NULL,
    expires_at  timestamptz NOT NULL
);
CREATE INDEX leases_expires ON leases (expires_at);
