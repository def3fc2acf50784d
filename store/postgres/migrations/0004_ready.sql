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
