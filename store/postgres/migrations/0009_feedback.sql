-- Feedback on states' outputs: one row by id (a UUIDv7, so id order is
-- time order), what it is about (execution, workflow, the state as the
-- history names it, the step), who gave it and in which role, the
-- block's type, the value and the state's output (JSON text, exactly as
-- the store encoded it; output NULL when it was not recorded), the
-- comment, and created_ns when it was given (the engine's Unix
-- nanoseconds; NULL for none). No foreign key to executions: feedback
-- outlives the execution it is about.
CREATE TABLE feedback (
    id         text COLLATE "C" PRIMARY KEY,
    execution  text COLLATE "C" NOT NULL DEFAULT '',
    workflow   text COLLATE "C" NOT NULL DEFAULT '',
    state      text COLLATE "C" NOT NULL DEFAULT '',
    step       text NOT NULL DEFAULT '',
    by_name    text NOT NULL DEFAULT '',
    role       text NOT NULL DEFAULT '',
    type       text NOT NULL DEFAULT '',
    value      bytea NOT NULL,
    comment    text NOT NULL DEFAULT '',
    output     bytea,
    created_ns bigint
);
-- Listings go by workflow (and state), or by execution, in id order.
CREATE INDEX feedback_workflow ON feedback (workflow, state, id);
CREATE INDEX feedback_execution ON feedback (execution, id);
