-- Stop requests: a Stop that reaches a server that does not hold the
-- execution's lease records here what the execution is to be stopped with,
-- and notifies; the holder (or whoever takes the lease over) ends the
-- execution as ABORTED, and the commit that ends it removes the request.
-- No foreign key, as for leases: the row is written by one process while
-- another commits to the execution.
CREATE TABLE stop_requests (
    execution    text COLLATE "C" PRIMARY KEY,
    error        text NOT NULL,
    cause        text NOT NULL,
    requested_at timestamptz NOT NULL DEFAULT now()
);
