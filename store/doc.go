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
// payloads) is written by jsonpath.Marshal and read back by
// jsonpath.Decode, so numbers keep their exact text. The records written
// by every commit (heads, scopes, events) are written without reflection
// (recordWriter); the others by encoding/json. Times are stored in UTC.
// The engine's Commit is encoded by the committing goroutine before the
// write transaction starts, and nothing of it is kept.
//
// # History
//
// Each history event is stored with a header (format, flags, PrevHash,
// Hash) and a JSON body. The store computes DocHash, the canonical hash of
// the event's document (the document itself is not kept), and chains the
// events: Hash is the SHA-256 of a canonical encoding of the event's fields
// (type, ids, timestamp in UTC RFC 3339 with nanoseconds, state, scope,
// error, cause, the canonical hashes of input, output and detail, DocHash)
// followed by PrevHash, the previous event's Hash ("" for the first).
// Superseded is a flag outside the hash: a rollback sets it on events
// written long before. VerifyHistory recomputes every hash from the stored
// fields and checks the chain up to the execution's recorded last hash.
//
// # The bbolt layout
//
// Keys are designed for prefix and range scans: nothing but GC's orphan
// sweep reads a whole bucket. Execution ids and checkpoint names never
// contain NUL (written \x00 below), which separates key parts; times are
// 8-byte big-endian Unix nanoseconds; n is an 8-byte big-endian position.
//
//	bucket       key                             value
//	meta         "format", "version"             "aslrun", "1"
//	executions   id                              what never changes: machine name, definition hash, input, start, parent, agents
//	heads        id                              where it stands: status, output, error, wake-up, counters, history length and last hash
//	status       status \x00 id                  (empty) — Unfinished and List by status are prefix scans
//	started      startedAt \x00 id               (empty) — List reads it backwards, newest first
//	scopes       id \x00 scopeKey                a scope of the execution's progress — DropScopes deletes a prefix
//	history      id \x00 n                       the n-th event (from 1) — History is a prefix scan
//	timers       wakeAt \x00 id                  (empty) for WAITING executions with a wake-up time — Due scans up to now
//	checkpoints  id \x00 name                    checkpoint record; its document is in blobs
//	expiry       expiresAt \x00 id \x00 name     (empty) — GC scans up to now
//	definitions  definition hash                 definition text, stored once
//	blobs        blob key                        snapshot record (Codecs.Encode) of a checkpoint document
//	blobrefs     blob key                        number of checkpoints referencing the blob (8 bytes)
//	orphans      blob key                        (empty) blobs no checkpoint references, removed by GC
//
// A blob key is the hex SHA-256 of the document's jsonpath.Marshal form,
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
// The database is opened with a lock timeout, NoFreelistSync and the map
// freelist.
package store
