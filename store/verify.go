package store

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/aslrun/aslrun/engine"
)

// Checkpoints against the history, for a backend without Bolt's links.
// Bolt stores a checkpoint behind the key of the history record that
// binds it (integrity.go); another backend keeps, beside the record, the
// position of the binding event in the history (CheckpointWrite.Event)
// and the fields it indexes. VerifyCheckpoints checks those against the
// chain as Bolt's VerifyHistory checks its own, and such a backend's
// checkpoint loads call it, as Bolt's loads check what binds the
// checkpoints they return.

// VerifyCheckpoints checks an execution's checkpoints against its history
// records (in order, read with the checkpoints; VerifyHistory verifies
// the records first, a checkpoint load does not) as Bolt's VerifyHistory
// and loads check its checkpoints. It parses each record once a call,
// however many checkpoints it is given. Each checkpoint is as the backend
// keeps it: its record and the fields Apply's CheckpointWrite gave beside
// it (Snapshot is not read). For each:
//
//   - its record decodes;
//   - the history event at position Event exists and records the
//     record's hash (checkpointHash), and when that event is the
//     CheckpointSaved one, the record's document hash too;
//   - DocHash, Blob, CreatedAt and ExpiresAt are the record's.
//
// A checkpoint that names no event (Event 0) is one whose commit had none,
// or one a Bolt head bound, copied (Export drops that binding): no event
// may record its record's hash, and no CheckpointSaved event of its name
// may bind a checkpoint, or the binding was taken off it; beyond that only
// its fields are checked. The first checkpoint that disagrees gives an
// *IntegrityError naming it and the field: "record" (its record does not
// decode, or is not the one the event recorded), "event", "docHash",
// "blob", "createdAt" or "expiresAt".
func VerifyCheckpoints(id string, records [][]byte, checkpoints []CheckpointWrite) error {
	if len(checkpoints) == 0 {
		return nil
	}
	b, err := newBindings(id, records)
	if err != nil {
		return err
	}
	for i := range checkpoints {
		if err := b.check(&checkpoints[i]); err != nil {
			return err
		}
	}
	return nil
}

// bindings are the events of an execution's history by position (from 1),
// and, read once when needed, what they bind.
type bindings struct {
	id     string
	events [][]byte
	// byHash is the position of the last event recording each
	// checkpoint hash, byName that of the last CheckpointSaved event of
	// each checkpoint name that records one; nil until scanned.
	byHash, byName map[string]int64
}

func newBindings(id string, records [][]byte) (*bindings, error) {
	b := &bindings{id: id}
	for _, v := range records {
		r, err := parseHistoryRecord(v)
		if err != nil {
			return nil, fmt.Errorf("execution %s: %w", id, err)
		}
		b.events = append(b.events, r.events...)
	}
	return b, nil
}

// event decodes the event at position pos.
func (b *bindings) event(pos int64) (eventRecord, error) {
	e, err := parseEvent(b.events[pos-1])
	if err != nil {
		return e, fmt.Errorf("execution %s: history event %d: %w", b.id, pos, err)
	}
	return e, nil
}

// scan fills byHash and byName.
func (b *bindings) scan() error {
	if b.byHash != nil {
		return nil
	}
	b.byHash, b.byName = make(map[string]int64), make(map[string]int64)
	for i := range b.events {
		pos := int64(i + 1)
		e, err := b.event(pos)
		if err != nil {
			return err
		}
		if e.Checkpoint == "" {
			continue
		}
		b.byHash[e.Checkpoint] = pos
		if e.Type != engine.EventCheckpointSaved {
			continue
		}
		var d struct {
			Name string `json:"name"`
		}
		if json.Unmarshal(e.Detail, &d) == nil && d.Name != "" {
			b.byName[d.Name] = pos
		}
	}
	return nil
}

// check checks one checkpoint.
func (b *bindings) check(cp *CheckpointWrite) error {
	bad := func(field, format string, args ...any) error {
		return &IntegrityError{Execution: b.id, Checkpoint: cp.Name, Field: field, Detail: fmt.Sprintf(format, args...)}
	}
	_, r, err := decodeCheckpoint(b.id, cp.Name, cp.Record, false)
	if err != nil {
		return bad("record", "it does not decode: %v", err)
	}
	sum := checkpointHash(b.id, cp.Name, cp.Record)
	switch n := int64(len(b.events)); {
	case cp.Event < 0 || cp.Event > n:
		return bad("event", "it names history event %d, the history has %d events", cp.Event, n)
	case cp.Event == 0:
		if err := b.scan(); err != nil {
			return err
		}
		if at, ok := b.byHash[sum]; ok {
			return bad("event", "it names no history event, history event %d records it", at)
		}
		if at, ok := b.byName[cp.Name]; ok {
			return bad("event", "it names no history event, history event %d (%s) bound a checkpoint of its name", at, engine.EventCheckpointSaved)
		}
	default:
		e, err := b.event(cp.Event)
		if err != nil {
			return err
		}
		if e.Checkpoint != sum {
			if err := b.scan(); err != nil {
				return err
			}
			if at, ok := b.byHash[sum]; ok {
				return bad("event", "it names history event %d (%s), which does not record it, history event %d does", cp.Event, e.Type, at)
			}
		}
		if e.Type == engine.EventCheckpointSaved && e.DocHash != r.DocHash {
			return bad("docHash", "document hash %s, history event %d (%s) says %s", r.DocHash, cp.Event, e.Type, e.DocHash)
		}
		if e.Checkpoint != sum {
			return bad("record", "its record hashes to %s, history event %d (%s) recorded %q", sum, cp.Event, e.Type, e.Checkpoint)
		}
	}
	for _, f := range []struct{ field, got, want string }{{"docHash", cp.DocHash, r.DocHash}, {"blob", cp.Blob, r.Blob}} {
		got, err1 := HashBytes(f.got)
		want, err2 := HashBytes(f.want)
		if err1 != nil || err2 != nil || !bytes.Equal(got, want) {
			return bad(f.field, "%s beside the record, the record says %s", f.got, f.want)
		}
	}
	if TimeKey(cp.CreatedAt) != TimeKey(r.CreatedAt) {
		return bad("createdAt", "%s beside the record, the record says %s", cp.CreatedAt, r.CreatedAt)
	}
	if cp.ExpiresAt.IsZero() != r.ExpiresAt.IsZero() || TimeKey(cp.ExpiresAt) != TimeKey(r.ExpiresAt) {
		return bad("expiresAt", "%s beside the record, the record says %s", cp.ExpiresAt, r.ExpiresAt)
	}
	return nil
}
