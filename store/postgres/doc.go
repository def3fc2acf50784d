// Package postgres keeps aslrun's executions in a PostgreSQL database that
// many servers, on many machines, share.
//
// This package holds, so far, what does not depend on how a commit is
// encoded: opening the database (Open, a pgx connection pool), its schema
// and the runner that migrates it, execution leases with fencing, and
// LISTEN/NOTIFY wake-ups. The store itself (commit, load, history, listing)
// comes on top of them. docs/deploy.md says what is kept in which table.
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
// # Wake-ups
//
// A commit that gives an execution something to run (a start, a decision,
// a resume) notifies WakeChannel with the execution's id (Notify, sent
// when the transaction commits). Servers listen with a Notifier on a
// connection of their own, made again when it drops. Notifications are a
// hint that makes servers prompt, never the only way work is found:
// servers also poll for due timers and expired leases, so a notification
// lost while a connection was down only delays work until the next poll
// (and the Notifier says Missed when it reconnects).
//
// # Errors
//
// Every error names the database by its URL without the password (Redact).
package postgres
