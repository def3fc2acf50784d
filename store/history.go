package store

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"hash"
	"reflect"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/aslrun/aslrun/engine"
	"github.com/aslrun/aslrun/jsonpath"
)

// A history event is stored as a value of eventHeaderLen bytes of header
// followed by the JSON of its eventRecord:
//
//	[0]      format of the value (eventFormat)
//	[1]      flags: eventSuperseded
//	[2:34]   PrevHash (32 zero bytes for the first event)
//	[34:66]  Hash
//
// Hash is the SHA-256 of the event's canonical encoding (eventDigest)
// followed by PrevHash. Superseded is outside the hash: a rollback sets it
// on events written long before.
const (
	eventFormat     = 1
	eventSuperseded = 1 << 0
	eventPrevAt     = 2
	eventHashAt     = eventPrevAt + sha256.Size
	eventHeaderLen  = eventHashAt + sha256.Size
)

// eventRecord is the body of a stored event. Input, Output and Detail are
// documents; the event's own document is kept only as DocHash.
type eventRecord struct {
	ID        int64           `json:"id,omitempty"`
	Own       int64           `json:"own,omitempty"`
	Type      string          `json:"type"`
	Timestamp string          `json:"timestamp"`
	State     string          `json:"state,omitempty"`
	Scope     string          `json:"scope,omitempty"`
	Input     json.RawMessage `json:"input,omitempty"`
	Output    json.RawMessage `json:"output,omitempty"`
	Error     string          `json:"error,omitempty"`
	Cause     string          `json:"cause,omitempty"`
	Detail    json.RawMessage `json:"detail,omitempty"`
	DocHash   string          `json:"docHash"`
	// Checkpoint is the hash of the record of the checkpoint its commit
	// wrote (checkpointHash), on the one event that binds it.
	Checkpoint string `json:"checkpoint,omitempty"`
}

// preparedEvent is an event encoded outside the transaction: its record
// (documents encoded) and the start of its digest, which only lacks
// PrevHash.
type preparedEvent struct {
	record eventRecord
	digest []byte
}

// prepareEvent encodes e.
func prepareEvent(e *engine.Event, memo *docMemo) (preparedEvent, error) {
	// The strings are hashed as they are stored: made valid UTF-8.
	r := eventRecord{
		ID: e.ID, Own: e.Own, Type: validUTF8(e.Type), Timestamp: e.Timestamp.UTC().Format(time.RFC3339Nano),
		State: validUTF8(e.State), Scope: validUTF8(e.Scope), Error: validUTF8(e.Error), Cause: validUTF8(e.Cause),
	}
	var hashes [3]string
	for i, f := range []struct {
		dst *json.RawMessage
		v   any
		n   string
	}{{&r.Input, e.Input, "input"}, {&r.Output, e.Output, "output"}, {&r.Detail, e.Detail, "detail"}} {
		if f.v == nil {
			continue
		}
		var err error
		if *f.dst, err = memo.raw(f.v); err != nil {
			return preparedEvent{}, fmt.Errorf("%s: %w", f.n, err)
		}
		if hashes[i], err = memo.hash(f.v); err != nil {
			return preparedEvent{}, fmt.Errorf("%s: %w", f.n, err)
		}
	}
	var err error
	if r.DocHash, err = memo.hash(e.Document); err != nil {
		return preparedEvent{}, fmt.Errorf("document: %w", err)
	}
	return preparedEvent{record: r, digest: eventDigest(&r, hashes)}, nil
}

// eventDigest is the canonical encoding of an event's hashed fields, each
// written as its length (uvarint) and its bytes: type, ids, timestamp,
// state, scope, error, cause, the canonical hashes of input, output and
// detail ("" when absent), and DocHash, then, only on an event that binds
// a checkpoint, the checkpoint record's hash. PrevHash comes last, added by
// chainHash.
func eventDigest(r *eventRecord, hashes [3]string) []byte {
	b := make([]byte, 0, 256)
	b = append(b, "aslrun event 1\x00"...)
	add := func(s string) {
		b = binary.AppendUvarint(b, uint64(len(s)))
		b = append(b, s...)
	}
	add(r.Type)
	add(strconv.FormatInt(r.ID, 10))
	add(strconv.FormatInt(r.Own, 10))
	add(r.Timestamp)
	add(r.State)
	add(r.Scope)
	add(r.Error)
	add(r.Cause)
	for _, h := range hashes {
		add(h)
	}
	add(r.DocHash)
	if r.Checkpoint != "" {
		b = appendCheckpointDigest(b, r.Checkpoint)
	}
	return b
}

// appendCheckpointDigest adds the hash of a checkpoint's record to an
// event's digest: events that bind no checkpoint (all events before
// format 5) hash as they did.
func appendCheckpointDigest(digest []byte, hash string) []byte {
	digest = append(digest, "checkpoint\x00"...)
	digest = binary.AppendUvarint(digest, uint64(len(hash)))
	return append(digest, hash...)
}

// chainHash completes a digest with the previous event's hash (hex, empty
// for the first event), using hasher h.
func chainHash(h hash.Hash, digest, prev []byte) [sha256.Size]byte {
	h.Reset()
	h.Write(digest)
	var n [binary.MaxVarintLen64]byte
	h.Write(n[:binary.PutUvarint(n[:], uint64(len(prev)))])
	h.Write(prev)
	var sum [sha256.Size]byte
	h.Sum(sum[:0])
	return sum
}

// decodeEvent reads a stored event; with verify it also recomputes the
// event's hash from the stored fields and returns an error wrapping
// ErrTampered when it does not match.
func decodeEvent(v []byte, verify bool) (engine.Event, error) {
	if len(v) < eventHeaderLen || v[0] != eventFormat {
		return engine.Event{}, fmt.Errorf("malformed event record: %w", ErrTampered)
	}
	var r eventRecord
	if err := json.Unmarshal(v[eventHeaderLen:], &r); err != nil {
		return engine.Event{}, fmt.Errorf("event record: %v: %w", err, ErrTampered)
	}
	ts, err := time.Parse(time.RFC3339Nano, r.Timestamp)
	if err != nil {
		return engine.Event{}, fmt.Errorf("event timestamp: %v: %w", err, ErrTampered)
	}
	e := engine.Event{
		ID: r.ID, Own: r.Own, Type: r.Type, Timestamp: ts.UTC(), State: r.State, Scope: r.Scope,
		Error: r.Error, Cause: r.Cause, DocHash: r.DocHash, Superseded: v[1]&eventSuperseded != 0,
		Hash: hex.EncodeToString(v[eventHashAt:eventHeaderLen]),
	}
	if prev := v[eventPrevAt:eventHashAt]; !allZero(prev) {
		e.PrevHash = hex.EncodeToString(prev)
	}
	var hashes [3]string
	for i, f := range []struct {
		dst *any
		raw json.RawMessage
		n   string
	}{{&e.Input, r.Input, "input"}, {&e.Output, r.Output, "output"}, {&e.Detail, r.Detail, "detail"}} {
		if *f.dst, err = decodeDoc(f.raw); err != nil {
			return engine.Event{}, fmt.Errorf("event %s: %v: %w", f.n, err, ErrTampered)
		}
		if verify && *f.dst != nil {
			if hashes[i], err = jsonpath.CanonicalHash(*f.dst); err != nil {
				return engine.Event{}, fmt.Errorf("event %s: %v: %w", f.n, err, ErrTampered)
			}
		}
	}
	if verify {
		sum := chainHash(sha256.New(), eventDigest(&r, hashes), []byte(e.PrevHash))
		if !bytes.Equal(sum[:], v[eventHashAt:eventHeaderLen]) {
			return e, fmt.Errorf("event hash %s does not match its content: %w", e.Hash, ErrTampered)
		}
	}
	return e, nil
}

// eventIDs reads the numbers of a stored event, for Rollback.
func eventIDs(v []byte) (id, own int64, err error) {
	if len(v) < eventHeaderLen {
		return 0, 0, fmt.Errorf("malformed event record")
	}
	var r struct {
		ID  int64 `json:"id"`
		Own int64 `json:"own"`
	}
	if err := json.Unmarshal(v[eventHeaderLen:], &r); err != nil {
		return 0, 0, fmt.Errorf("event record: %w", err)
	}
	return r.ID, r.Own, nil
}

// supersedes reports whether rollback rb marks the stored event v
// superseded: it is numbered after the rollback point and not superseded
// yet. AWS-numbered events compare by ID, the engine's own events (ID 0)
// by Own.
func supersedes(rb *engine.Rollback, v []byte) (bool, error) {
	if len(v) < eventHeaderLen || v[1]&eventSuperseded != 0 {
		return false, nil
	}
	id, own, err := eventIDs(v)
	if err != nil {
		return false, err
	}
	return (id != 0 && id > rb.ToEvent) || (id == 0 && own > rb.ToOwnEvent), nil
}

// verifyHistory checks stored events in order: each one's hash, its link
// to the one before, that the last is the head's LastHash, and that the
// head agrees with the last event when it ended the execution
// (checkHeadEnding).
func verifyHistory(id string, values [][]byte, h *headRecord) error {
	prev := ""
	for i, v := range values {
		e, err := decodeEvent(v, true)
		if err != nil {
			return fmt.Errorf("execution %s: history event %d: %w", id, i+1, err)
		}
		if e.PrevHash != prev {
			return fmt.Errorf("execution %s: history event %d (%s): previous hash %q, want %q: %w", id, i+1, e.Type, e.PrevHash, prev, ErrTampered)
		}
		prev = e.Hash
	}
	if int64(len(values)) != h.Events || prev != h.LastHash {
		field := "lastHash"
		if int64(len(values)) != h.Events {
			field = "events"
		}
		return &IntegrityError{Execution: id, Field: field, Detail: fmt.Sprintf("the history has %d events ending with hash %q, the head records %d ending with %q",
			len(values), prev, h.Events, h.LastHash)}
	}
	if len(values) == 0 || !mayEnd(values[len(values)-1]) {
		return nil
	}
	var last eventRecord
	if err := json.Unmarshal(values[len(values)-1][eventHeaderLen:], &last); err != nil {
		return fmt.Errorf("execution %s: history event %d: %v: %w", id, len(values), err, ErrTampered)
	}
	return checkHeadEnding(id, h, &last)
}

// validUTF8 returns s with each byte that is not part of valid UTF-8
// replaced by U+FFFD, as JSON encoders write it.
func validUTF8(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b.WriteRune(utf8.RuneError)
		} else {
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}

func allZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

// docMemo remembers the encoding and canonical hash of documents within
// one commit, by identity: the events of a step share one document.
type docMemo struct {
	m map[docIdentity]memoEntry
}

type memoEntry struct {
	raw  []byte
	hash string
}

// docIdentity identifies a map or a non-empty slice by its memory.
type docIdentity struct {
	p uintptr
	n int
}

func newDocMemo() *docMemo { return &docMemo{m: make(map[docIdentity]memoEntry)} }

// identityOf returns v's identity when it is worth remembering: maps and
// non-empty slices (which are never modified once built, so that the same
// memory is the same document).
func identityOf(v any) (docIdentity, bool) {
	switch x := v.(type) {
	case map[string]any:
		if x != nil {
			return docIdentity{p: reflect.ValueOf(x).Pointer(), n: -1}, true
		}
	case []any:
		if len(x) > 0 {
			return docIdentity{p: reflect.ValueOf(x).Pointer(), n: len(x)}, true
		}
	}
	return docIdentity{}, false
}

// raw returns jsonpath.Marshal(v).
func (m *docMemo) raw(v any) ([]byte, error) {
	id, ok := identityOf(v)
	if !ok {
		return jsonpath.Marshal(v)
	}
	ent := m.m[id]
	if ent.raw == nil {
		b, err := jsonpath.Marshal(v)
		if err != nil {
			return nil, err
		}
		ent.raw = b
		m.m[id] = ent
	}
	return ent.raw, nil
}

// hash returns jsonpath.CanonicalHash(v).
func (m *docMemo) hash(v any) (string, error) {
	id, ok := identityOf(v)
	if !ok {
		return jsonpath.CanonicalHash(v)
	}
	ent := m.m[id]
	if ent.hash == "" {
		h, err := jsonpath.CanonicalHash(v)
		if err != nil {
			return "", err
		}
		ent.hash = h
		m.m[id] = ent
	}
	return ent.hash, nil
}
