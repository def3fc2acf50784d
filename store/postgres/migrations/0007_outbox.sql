-- The outbox: events an execution emits to its workflow's webhook
-- channels, written by the commit that caused them (in its transaction)
-- and delivered afterwards, at least once, by whichever server claims
-- them. Times are the engine's (Unix nanoseconds), as the callers pass
-- them: created_ns when the commit was made, next_ns when a PENDING one
-- is due, delivered_ns when it was delivered, lease_ns until when owner
-- holds it for an attempt ('' and NULL when no one does). No foreign key
-- to executions: the outbox is written and claimed apart from them, and
-- an entry outlives nothing it needs.
CREATE TABLE outbox (
    id           text COLLATE "C" PRIMARY KEY,
    execution    text COLLATE "C" NOT NULL,
    channel      text NOT NULL,
    url          text NOT NULL,
    secret_env   text NOT NULL DEFAULT '',
    type         text NOT NULL,
    body         bytea NOT NULL,
    created_ns   bigint NOT NULL,
    status       text NOT NULL DEFAULT 'PENDING' CHECK (status IN ('PENDING', 'DELIVERED', 'FAILED')),
    attempts     integer NOT NULL DEFAULT 0,
    last_error   text NOT NULL DEFAULT '',
    next_ns      bigint,
    delivered_ns bigint,
    owner        text NOT NULL DEFAULT '',
    lease_ns     bigint
);
-- Claims read the PENDING ones oldest first (ids are UUIDv7); listings
-- go by status or by execution, in id order.
CREATE INDEX outbox_status ON outbox (status, id);
CREATE INDEX outbox_execution ON outbox (execution, id);
-- Pruning reads the DELIVERED ones oldest delivery first.
CREATE INDEX outbox_delivered ON outbox (delivered_ns) WHERE status = 'DELIVERED';
