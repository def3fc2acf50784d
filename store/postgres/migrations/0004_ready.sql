-- The ready queue: the RUNNING executions no process holds, each waiting
-- for a server with room to claim it. A row is added in the transaction
-- that leaves the execution so (a start left to any server, a lease
-- released with work left) and removed by the claim or acquisition that
-- takes its lease, or by the commit that ends it. Claims read the oldest
-- rows of this table instead of every RUNNING execution, so a claim costs
-- the same with ten executions queued or ten thousand. The executions
-- whose holder died are found by their expired leases (leases_held); the
-- WAITING ones by executions_due. No foreign key, as for leases: it is a
-- hot table, written while another transaction commits to the execution.
CREATE TABLE ready (
    execution text COLLATE "C" PRIMARY KEY,
    since     bigint NOT NULL
);
CREATE INDEX ready_since ON ready (since, execution);

-- The leases a process holds (released ones have no owner), by expiry: a
-- claim takes over the expired ones without reading the released leases
-- of every execution that ever ran.
CREATE INDEX leases_held ON leases (expires_at) WHERE owner <> '';

-- The RUNNING executions that no live lease holds when this runs.
INSERT INTO ready (execution, since)
SELECT e.id, e.started_ns FROM executions e
WHERE e.status = 'RUNNING'
  AND NOT EXISTS (SELECT 1 FROM leases l WHERE l.execution = e.id AND l.owner <> '' AND l.expires_at > clock_timestamp());

-- aslrun_claim takes the leases of up to n executions with something to
-- run at at_ns (Unix ns), for owner who, for ttl_us microseconds, oldest
-- first, and returns them with their stop requests and what Load would
-- read of them (saving each its read). A function of simple
-- statements that keep their plans: the claim as one statement was planned
-- afresh at every call, and the planning cost more than the claim.
--
-- The candidates come from small indexed sets, never from every RUNNING
-- execution: the oldest rows of the ready queue (locked FOR UPDATE SKIP
-- LOCKED, so concurrent claims read different rows), the oldest expired
-- leases still held (their process died), the WAITING executions due, and
-- the stop requests; n of each at most. They are locked FOR NO KEY UPDATE
-- SKIP LOCKED, so concurrent claims never take the same execution nor wait
-- for each other; a candidate whose lease row is locked (a commit checking
-- its fence holds it FOR SHARE) is skipped too, rather than waited for. The
-- upsert's condition (no live owner) is what grants a lease, as in Acquire;
-- it raises the epoch of a lease taken over.
--
-- The claim removes the ready rows it read that have nothing left to
-- claim: those of the executions it claimed, of the ones no longer RUNNING,
-- and of the ones a live lease holds (a sweep that raced a claim queued
-- one; its holder queues it again when it releases it with work left, an
-- upsert that waits for this claim's lock on the row, so that the two
-- cannot cross).
CREATE FUNCTION aslrun_claim(at_ns bigint, n integer, who text, ttl_us bigint)
RETURNS TABLE (execution text, epoch bigint, expires_at timestamptz, stop boolean, stop_error text, stop_cause text,
    spec bytea, head bytea, commit_seq bigint, definition bytea, scope_keys text[], scope_bodies bytea[], namespaces text[])
LANGUAGE plpgsql
-- Each statement keeps its generic plan: making one for its values at
-- every call cost more than running it. Every statement reads by an index,
-- whatever the statistics say when the plan is made (a new database's
-- tables are empty, and a plan made then would scan them as they grow):
-- sequential scans, hash and merge joins are ruled out. No JIT: a ruled
-- out plan's cost would have every call compile its statements (60 ms).
SET plan_cache_mode = force_generic_plan
SET jit = off
SET enable_seqscan = off
SET enable_hashjoin = off
SET enable_mergejoin = off
AS $$
DECLARE
    queued   text[];
    expired  text[];
    due      text[];
    stopping text[];
    cand     text[];
    free     text[];
    ids      text[];
    epochs   bigint[];
    expiries timestamptz[];
BEGIN
    queued := ARRAY(SELECT r.execution FROM ready r ORDER BY r.since, r.execution LIMIT n FOR UPDATE SKIP LOCKED);
    expired := ARRAY(SELECT l.execution FROM leases l WHERE l.owner <> '' AND l.expires_at <= clock_timestamp()
                     ORDER BY l.expires_at LIMIT n);
    due := ARRAY(SELECT w.id FROM executions w WHERE w.status = 'WAITING' AND w.wake_ns <= at_ns ORDER BY w.wake_ns LIMIT n);
    stopping := ARRAY(SELECT s.execution FROM stop_requests s ORDER BY s.execution LIMIT n);
    cand := ARRAY(
        SELECT e.id FROM executions e
        WHERE (e.id = ANY (queued || expired) AND e.status = 'RUNNING'
               OR e.id = ANY (due || stopping) AND e.status IN ('RUNNING', 'WAITING'))
          AND NOT coalesce((SELECT l.owner <> '' AND l.expires_at > clock_timestamp() FROM leases l WHERE l.execution = e.id), false)
        ORDER BY coalesce(e.wake_ns, e.started_ns), e.id
        LIMIT n
        FOR NO KEY UPDATE OF e SKIP LOCKED);
    free := ARRAY(SELECT l.execution FROM leases l WHERE l.execution = ANY (cand) FOR UPDATE OF l SKIP LOCKED);
    WITH got AS (
        INSERT INTO leases AS l (execution, owner, epoch, acquired_at, expires_at)
        SELECT c, who, 1, clock_timestamp(), clock_timestamp() + ttl_us * interval '1 microsecond'
        FROM unnest(cand) AS c
        WHERE c = ANY (free) OR (SELECT 1 FROM leases x WHERE x.execution = c) IS NULL
        ON CONFLICT ON CONSTRAINT leases_pkey DO UPDATE
           SET owner = EXCLUDED.owner, epoch = l.epoch + 1, acquired_at = EXCLUDED.acquired_at, expires_at = EXCLUDED.expires_at
         WHERE l.owner = '' OR l.expires_at <= clock_timestamp()
        RETURNING l.execution, l.epoch, l.expires_at)
    SELECT coalesce(array_agg(got.execution), '{}'), coalesce(array_agg(got.epoch), '{}'), coalesce(array_agg(got.expires_at), '{}')
      INTO ids, epochs, expiries FROM got;
    DELETE FROM ready r WHERE r.execution = ANY (ids || ARRAY(
        SELECT q FROM unnest(queued) AS q
        WHERE (SELECT x.status FROM executions x WHERE x.id = q) IS DISTINCT FROM 'RUNNING'
           OR coalesce((SELECT l.owner <> '' AND l.expires_at > clock_timestamp() FROM leases l WHERE l.execution = q), false)));
    -- Each execution claimed as Load reads it, and its commit count:
    -- read after its lease was taken, so as of its last commit.
    RETURN QUERY
        SELECT t.id, t.ep, t.ex, s.execution IS NOT NULL, coalesce(s.error, ''), coalesce(s.cause, ''),
            e.spec, e.head, e.commit_seq, d.body,
            ARRAY(SELECT sc.key FROM scopes sc WHERE sc.execution = t.id ORDER BY sc.key),
            ARRAY(SELECT sc.body FROM scopes sc WHERE sc.execution = t.id ORDER BY sc.key),
            ARRAY(SELECT m.namespace FROM memory_namespaces m WHERE m.execution = t.id ORDER BY m.namespace)
        FROM unnest(ids, epochs, expiries) AS t(id, ep, ex)
        LEFT JOIN LATERAL (SELECT x.spec, x.head, x.commit_seq, x.definition_hash FROM executions x WHERE x.id = t.id) e ON true
        LEFT JOIN LATERAL (SELECT y.body FROM definitions y WHERE y.hash = e.definition_hash) d ON true
        LEFT JOIN LATERAL (SELECT z.execution, z.error, z.cause FROM stop_requests z WHERE z.execution = t.id) s ON true;
END
$$;
