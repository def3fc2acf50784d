// Package postgres keeps aslrun's executions in a PostgreSQL database that
// many servers, on many machines, share.
//
// A DB is the store (commit, load, history, listing, checkpoints, agent
// memory, workflows), on a pgx connection pool, with its schema and the
// runner that migrates it, execution leases with fencing, dispatch of
// work across the servers sharing the database, wake-ups by
// LISTEN/NOTIFY, stop requests, and group commit. docs/deploy.md says
// what is kept in which table, and how servers share the work.
//
// # Migrations
//
// The schema is made by the SQL files under migrations/, embedded in the
// program and numbered 0001, 0002, …, applied in order by Migrate, and by
// Open when Options.Migrate is set. The runner is our own, a hundred-odd
// lines, rather than a migration library: a handful of forward-only files
// needs none of what those bring (down migrations, sources other than
// embedded files, a command line, dialects), and a library would bring its
// own dependencies and its own table layout. What it does:
//
//   - Each migration runs in a transaction of its own, together with the
//     row it adds to schema_migrations (version, name, SHA-256 of the file,
//     when): a migration is applied entirely or not at all.
//   - Each transaction first takes a transaction-scoped advisory lock,
//     then reads the version: when many servers start at once, they apply
//     each migration once, one after another, and a crash releases the lock
//     with the connection.
//   - A released file is never edited: a migration recorded with another
//     checksum than this program's file is an error, found at Open.
//   - Open refuses a database whose version is newer than this program's
//     last migration (ErrSchemaNewer: upgrade aslrun), and one that lacks
//     migrations (ErrNotMigrated: run `aslrun migrate`) unless told to
//     apply them.
//
// # Leases and fencing
//
// An execution is run by one process at a time: the one holding its lease
// (Acquire, for a time-to-live, DefaultLeaseTTL by default). The holder
// renews it (Renew, or a Renewer every ttl/3); when it stops renewing (it
// crashed, it was paused, it lost the network), the lease expires and
// another process may acquire it, which raises the lease's epoch. Every
// commit checks its epoch inside its transaction (CheckFence) and holds
// the lease row until it ends, so a process whose lease was taken over can
// never commit again (ErrFenced), however late it wakes up. Expiry is
// measured by the database's clock, so servers' clocks need not agree.
//
// # Dispatch and wake-ups
//
// DB is an engine.Dispatcher. An execution with something to run that no
// live process holds (RUNNING, WAITING and due, or with a stop requested)
// is claimed by a server with free slots: Claim takes up to n of them, and
// their leases, in one call of aslrun_claim (migration 0004) whose
// candidates are locked FOR NO KEY UPDATE SKIP LOCKED, so that concurrent
// claims never take the same execution nor wait for each other. The
// RUNNING ones are read from the ready queue (table ready), which the
// statements that leave an execution so add it to, so a claim does not
// read every RUNNING execution. The transactions that leave work for any
// server notify WakeChannel (pg_notify, sent when they commit, never for
// one rolled back): the creation of an execution without its lease (a
// start the receiving server had no room for, while the ready queue is
// short), and the release of a lease after successful commits with work
// left (a decision recorded and left, a drained server). Servers listen with a Notifier (Wakes) on a connection
// of their own, made again when it drops, and claim when woken.
// Notifications are a hint that makes servers prompt, never the only way
// work is found: servers also poll, so a notification lost while a
// connection was down only delays work until the next poll (and the
// Notifier says Missed when it reconnects, after which the server claims
// at once).
//
// # Stop requests
//
// DB is an engine.StopRequester: RequestStop records that an execution is
// to be stopped (table stop_requests) and notifies StopChannel. The
// process holding the lease receives it on the lease's lost channel, as an
// *engine.StopRequest: at once when it listens (Wakes), at its next
// renewal otherwise; a later lease gets it when taken (Lease, Claim). The
// commit that ends the execution removes it.
//
// # Group commit
//
// Concurrent commits of different executions share one transaction (one
// batch, one round trip, one WAL flush): while two commit transactions
// are under way, the commits that come queue and go together. A group
// refused by one commit's check (its fence, its head) wrote nothing, and
// is sent again one commit at a time, so that a fenced execution never
// fails the others.
//
// # Errors
//
// Every error names the database by its URL without the password (Redact).
package postgres
