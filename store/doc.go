// Package store keeps executions: Bolt, on a bbolt database file (the
// default, durable), and Memory, in memory (for tests and throwaway runs).
// Both implement Store, which adds to the engine's Store, Checkpoints and
// Scheduler what the command line needs, and both pass the acceptance
// suite in package storetest.
//
// # Records
//
// Record envelopes are JSON objects read by encoding/json; every document
// inside them (inputs, outputs, scope documents, variables, event
// payloads) is written by jsonvalue.Marshal and read back by
// jsonvalue.Decode, so numbers keep their exact text. The records written
// by every commit are written without reflection: heads (head.go), events
// and history records in binary, scopes as JSON by recordWriter; the
// others by encoding/json. Times are stored in UTC.
// The engine's Commit is encoded by the committing goroutine before the
// write transaction starts, and nothing of it is kept.
//
// # History
//
// Each history event is stored with a header (format, flags, Hash) and a
// binary body; the events of one commit are stored together, as one
// history record, with the documents they introduce, each once, whole or
// as a delta (history.go, history_record.go and docs.go have the
// layouts). The store computes DocHash, the canonical hash of the event's
// document (the document itself is not kept), and chains the events: Hash is the SHA-256 of a canonical encoding of the event's fields
// (type, ids, timestamp in UTC RFC 3339 with nanoseconds, state, scope,
// error, cause, the canonical hashes of input, output and detail, DocHash)
// followed by PrevHash, the previous event's Hash ("" for the first).
// Superseded is a flag outside the hash: a rollback sets it on events
// written long before. VerifyHistory recomputes every hash from the stored
// fields and checks the chain up to the execution's recorded last hash.
//
// Bolt binds the records outside the history to the chain (integrity.go):
// a head is sealed and must agree with its last history record (LastHash,
// event count, and the status, output, error and cause of an event that
// ended the execution); a checkpoint record's hash is written into an
// event of the commit that saved it (or, without one, listed in the
// sealed head). Load, List, Checkpoint and ListCheckpoints check what they
// read against them cheaply; VerifyHistory checks all of it. A record that
// disagrees gives an *IntegrityError (ErrTampered) naming the execution,
// the record and the field.
//
// A commit with engine.Commit.DropHistory deletes the execution's history
// records and checkpoints (and its references to their snapshots, which
// GC removes when no other checkpoint refers to them) in its transaction;
// the head stays, marked HistoryDropped, its history empty (no events, no
// last hash or record), so that it verifies. A later commit's events start
// a new chain.
//
// # The bbolt layout
//
// Keys are designed for prefix and range scans: nothing but GC's orphan
// sweep reads a whole bucket. Execution ids and checkpoint names never
// contain NUL (written \x00 below), which separates key parts; times are
// 8-byte big-endian Unix nanoseconds; n is an 8-byte big-endian number.
//
//	bucket       key                             value
//	meta         "format", "version"             "aslrun", "8"
//	executions   id                              what never changes: machine name, definition hash, input, start, parent, agents
//	heads        id                              seal, then where it stands: status, output, error, wake-up, counters, history length, last hash and last record
//	status       status \x00 id                  (empty) — Unfinished and List by status are prefix scans
//	started      startedAt \x00 id               (empty) — List reads it backwards, newest first
//	machines     h(machine) startedAt \x00 id    (empty) — the same, per machine; h is the name's 8-byte FNV-1a hash
//	scopes       id \x00 scopeKey                a scope of the execution's progress — DropScopes deletes a prefix
//	events       n (the bucket's sequence)       a history record: the events one commit added to one execution's history, and the documents they introduced
//	timers       wakeAt \x00 id                  (empty) for WAITING executions with a wake-up time — Due scans up to now
//	checkpoints  id \x00 name                    binding (history record key, event position), then the checkpoint record; its document is in blobs
//	expiry       expiresAt \x00 id \x00 name     (empty) — GC scans up to now
//	definitions  definition hash                 definition text, stored once (executions' and workflows')
//	workflows    name \x00 version (n)           a registered workflow version: definition hash, registration time
//	blobs        blob key                        snapshot record (Codecs.Encode) of a checkpoint document
//	blobrefs     blob key                        number of checkpoints referencing the blob (8 bytes)
//	orphans      blob key                        (empty) blobs no checkpoint references, removed by GC
//	memory       namespace \x00 key               agent memory record: value, when and by which execution it was written, expiry
//	memexpiry    expiresAt \x00 namespace \x00 key (empty) — GC removes expired memory
//	namespaces   id \x00 namespace               (empty) the memory namespaces an execution used — its checkpoints snapshot them
//	outbox       'r' event id                    an outbox delivery: the entry a commit wrote (execution, channel, URL, type, body, creation) and where its delivery stands
//	             's' status \x00 id              (empty) — claims read the PENDING ones in id order
//	             'e' execution \x00 id           (empty) — ListDeliveries of one execution
//	             'd' deliveredAt \x00 id         (empty) for DELIVERED ones — pruning reads them from the start
//
// History records are appended: their keys only grow, so the bucket's
// pages are filled completely (FillPercent 1, as for the start-time index
// and the buckets keyed by execution id) and a commit rewrites no page of
// older records, whichever executions commit together. An execution's records are chained: its head keeps the
// key of its last record, and each record the key of the one before, so
// History reads exactly the execution's records, newest first, and
// returns them oldest first.
//
// HistoryRange reads a page of a history: it follows the links back from
// the head to the newest record of the page, then back through older
// records only as far as the page's documents need (their document
// tables alone), and decodes the page's events and those documents
// (history_range.go). A document is stored again, rather than referred to
// or used as a delta's base, once what it rests on is more than 64
// commits back or 16 deltas deep (maxDocReach, maxDeltaDepth), so that
// the last page of a long history reads about as much as the last page
// of a short one.
//
// A blob key is the hex SHA-256 of the document's jsonvalue.Marshal form,
// so identical documents, across checkpoints and executions, are stored
// once, and each comes back exactly as written. The checkpoint record also
// keeps the document's canonical hash (its identity).
//
// # Group commit and durability
//
// All of Bolt's writes go through one goroutine that applies every request
// queued while the previous transaction was written in one bbolt Update:
// concurrent executions share fsyncs, and a lone commit is written at once.
// A request that fails is answered with its error and the others are
// applied again without it. A Commit that returned nil has been fsynced.
// The commit's records are encoded before it is queued, by the committing
// goroutine; the loop keeps the heads it wrote, decoded, so that it only
// chains hashes and writes bytes. The database is opened with a lock
// timeout, NoFreelistSync and the map freelist, and created with 16 KiB
// pages: bbolt writes each changed page with a call of its own, and
// larger pages make far fewer calls per transaction.
//
// # The outbox
//
// Memory and Bolt implement engine.OutboxStore (outbox.go): a commit's
// Outbox entries are written in the commit's transaction, pending and
// due at their CreatedAt, so an entry exists exactly when its commit
// does; a commit carrying a body over MaxOutboxBody (256 KiB), or an
// entry that is otherwise not valid, is refused whole (ErrOutboxEntry),
// and one whose entry id is taken fails with engine.ErrExists. Claims
// take the oldest (by id) pending deliveries that are due and whose lease
// is free or ran out. Retention: a DELIVERED entry is kept
// DeliveredRetention (7 days) after its delivery, then pruned by the next
// claim or finish that writes; PENDING and FAILED entries are never
// pruned. The outbox is not history: no hash chain covers it, and
// VerifyHistory and Export leave it out.
//
// # Faults
//
// A write that fails (a full disk, a failed fsync) fails the commits of its
// transaction with an error naming the database, and nothing of it is
// written: every earlier commit stays. A commit that cannot apply (an
// unknown execution, a taken id, a damaged record) is found out before it
// writes anything and fails alone, without failing the commits it shares
// its transaction with.
//
// bbolt panics on a page it cannot read. Every bbolt call runs under a
// recover, and a damaged page, or a record that does not decode, gives an
// error wrapping ErrDatabaseCorrupt that names the file ("database PATH is
// corrupt: …"), never a panic; what is still readable stays readable.
// OpenBolt reads every page of an existing file first, because opening it
// for writing makes bbolt walk the pages in a goroutine of its own, where a
// panic could not be recovered (bolt_fault.go).
//
// List pages with a cursor, the last ID of the previous page: it seeks
// the index to that execution's start-time key and goes on backwards, so
// a page reads only the executions it lists. A status filter checks the
// status index for each execution it passes, or, when at most 256
// executions have the status, reads those and sorts them.
//
// Format 8 is this layout. Format 7 had no outbox (OpenBolt adds its
// buckets). Format 6 stored heads as sealed JSON and
// history records of format 1, whose events held their documents inline
// (OpenBolt rewrites the heads; the old records are read as they are).
// Format 5 had no workflows and machines buckets
// (OpenBolt adds them and indexes the executions). Format 4 kept heads and checkpoint records as
// bare JSON (OpenBolt seals the heads and binds the checkpoints to them),
// format 3 had no namespaces bucket and format 2 no agent memory (OpenBolt
// adds their buckets); format 1 also kept each history event under
// "id \x00 n" in bucket history, and OpenBolt converts it. Only a missing
// file makes a new database: it is written beside the path and linked into
// place whole, and an empty file is not a database.
package store
