-- aslrun_claim_starts takes, for owner who and for ttl_us microseconds,
-- the leases of up to n of the executions ids (starts this process created
-- and queued, oldest first), in the order of ids, skipping those no longer
-- as their queued start left them: no longer in the ready queue (claimed
-- by another process), no longer RUNNING or committed to, with a stop
-- requested (left to aslrun_claim, which delivers it), or whose ready row
-- a concurrent claim holds (SKIP LOCKED). Their ready rows go with their
-- leases. A server runs its own queued starts this way when a slot frees:
-- a lease taken by primary key instead of aslrun_claim's look through
-- everything there is to claim. A loop of statements that each read one
-- row by its primary key, so that no plan can do otherwise: as one
-- statement over ids, a generic plan read every RUNNING execution.
CREATE FUNCTION aslrun_claim_starts(ids text[], n integer, who text, ttl_us bigint)
RETURNS TABLE (execution text, epoch bigint, expires_at timestamptz)
LANGUAGE plpgsql
AS $$
DECLARE
    want     text;
    got      bigint;
    until    timestamptz;
    taken    integer := 0;
BEGIN
    FOREACH want IN ARRAY ids LOOP
        EXIT WHEN taken >= n;
        PERFORM 1 FROM ready r
        WHERE r.execution = want
          AND EXISTS (SELECT 1 FROM executions e WHERE e.id = want AND e.status = 'RUNNING' AND e.commit_seq = 0)
          AND NOT EXISTS (SELECT 1 FROM stop_requests s WHERE s.execution = want)
        FOR UPDATE OF r SKIP LOCKED;
        CONTINUE WHEN NOT FOUND;
        INSERT INTO leases AS l (execution, owner, epoch, acquired_at, expires_at)
        VALUES (want, who, 1, clock_timestamp(), clock_timestamp() + ttl_us * interval '1 microsecond')
        ON CONFLICT ON CONSTRAINT leases_pkey DO UPDATE
           SET owner = EXCLUDED.owner, epoch = l.epoch + 1, acquired_at = EXCLUDED.acquired_at, expires_at = EXCLUDED.expires_at
         WHERE l.owner = '' OR l.expires_at <= clock_timestamp()
        RETURNING l.epoch, l.expires_at INTO got, until;
        CONTINUE WHEN NOT FOUND;
        DELETE FROM ready r WHERE r.execution = want;
        execution := want;
        epoch := got;
        expires_at := until;
        RETURN NEXT;
        taken := taken + 1;
    END LOOP;
END
$$;
