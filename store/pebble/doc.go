//go:build pebble

// Package pebble is a store.Store on a Pebble database (an LSM tree with a
// write-ahead log): an embedded alternative to store.Bolt. It keeps the
// records package store encodes (store.Records), the same bytes as Bolt's
// and PostgreSQL's, so histories hash and chain the same way on every
// backend.
//
// The package is built with the pebble build tag only
// (go build -tags pebble, go test -tags pebble ./store/pebble): Pebble and
// its dependencies take minutes to compile, which the default build and
// the test suite are spared while Bolt stays the default embedded store
// (docs/performance.md, "Embedded stores compared", has the measurements
// and the decision).
//
// # Durability
//
// A commit is one Pebble batch. An execution of durability strict (or
// none given) is committed with pebble.Sync: the batch is in the WAL and
// the WAL is fdatasynced when Commit returns. An execution of durability
// batched (the engine already writes its commits together) is committed
// without a sync, except the commits that park it (WAITING), end it or
// write a checkpoint, which are synced as in strict mode. Create,
// registrations and GC are always synced.
//
// The commits of one execution are serialised (a commit reads the head it
// applies to and writes the new one); those of different executions run
// together, so that Pebble's commit pipeline shares their WAL syncs,
// except the commits that touch agent memory or the outbox, which
// exclude every other write. Reads take a Pebble snapshot and do not wait
// for commits.
//
// # Keys
//
// Every key starts with one byte naming its kind. Execution ids,
// checkpoint names, workflow names, namespaces and memory keys have no NUL
// byte, which ends them where another part follows; numbers are 8 bytes
// big-endian, so that keys sort by them.
//
//	's' id                      the execution's fixed record (Spec)
//	'h' id                      its head: durability (1 byte), wake time
//	                            (Unix ns, 0 for none), status (1 byte length
//	                            and text), then the head record
//	'c' id 0 scope-key          a scope record
//	'r' id 0 first-event        a history record, by the position of its
//	                            first event (from 1)
//	'k' id 0 name               a checkpoint's row: its record and the
//	                            fields store.VerifyCheckpoints checks
//	'n' id 0 namespace          a memory namespace the execution uses
//	'b' sha256                  a snapshot blob (raw hash)
//	'd' hash                    a definition's text
//	'a' namespace 0 key         an agent memory record
//	'w' name 0 version          a registered workflow version (JSON)
//	'v' name 0 alias            a workflow alias (JSON)
//	'l' started-ns id           List's index: newest first by iterating back
//	'q' wake-ns id              Due's index of WAITING executions
//	'u' id                      Unfinished's index of RUNNING executions
//	'o' id                      an outbox delivery (engine.Delivery, JSON)
//	'f' id                      a feedback item (JSON)
//	'x' key                     a result cache entry (JSON)
//	'm' "format"                the format marker of the database
//
// Besides the engine's interfaces it keeps the outbox
// (engine.OutboxStore, outbox.go), feedback (engine.FeedbackStore,
// feedback.go) and the result cache (engine.CacheStore, cache.go, whose
// claims are held in memory: one process owns the folder).
package pebble
