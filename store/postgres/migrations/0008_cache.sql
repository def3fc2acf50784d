-- The result cache of Tasks: an entry by key (the hex SHA-256 of what it
-- was computed from), where it was made, its result (JSON text, exactly
-- as the store encoded it) and size in bytes. Times are the engine's (Unix
-- nanoseconds), as the callers pass them: created_ns when it was stored,
-- expires_ns when it expires (NULL: never), last_hit_ns when it was last
-- returned (NULL: never), used_ns the later of the two that eviction
-- orders by (last_hit_ns, else created_ns).
CREATE TABLE result_cache (
    key         text COLLATE "C" PRIMARY KEY,
    scope       text NOT NULL CHECK (scope IN ('execution', 'workflow', 'global')),
    workflow    text COLLATE "C" NOT NULL DEFAULT '',
    state       text NOT NULL DEFAULT '',
    agent       text NOT NULL DEFAULT '',
    execution   text NOT NULL DEFAULT '',
    result      bytea NOT NULL,
    size        bigint NOT NULL,
    created_ns  bigint NOT NULL,
    expires_ns  bigint,
    hits        bigint NOT NULL DEFAULT 0,
    last_hit_ns bigint,
    used_ns     bigint NOT NULL
);
-- Eviction reads the least recently used first; listings go by workflow
-- in key order; purges find the expired ones.
CREATE INDEX result_cache_used ON result_cache (used_ns, key);
CREATE INDEX result_cache_workflow ON result_cache (workflow, key);
CREATE INDEX result_cache_expires ON result_cache (expires_ns) WHERE expires_ns IS NOT NULL;

-- The claims: owner computes the entry of key until until_ns (the
-- callers' clock, as the entries' times).
CREATE TABLE cache_claims (
    key      text COLLATE "C" PRIMARY KEY,
    owner    text NOT NULL,
    until_ns bigint NOT NULL
);

-- The entries' count and bytes, one row, kept by the transactions that
-- add and remove entries so that a put need not sum the table.
CREATE TABLE cache_totals (
    id      boolean PRIMARY KEY DEFAULT true CHECK (id),
    entries bigint NOT NULL,
    bytes   bigint NOT NULL
);
INSERT INTO cache_totals (id, entries, bytes) VALUES (true, 0, 0);
