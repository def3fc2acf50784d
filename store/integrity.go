package store

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"

	"github.com/aslrun/aslrun/engine"
	"github.com/aslrun/aslrun/jsonvalue"
)

// Integrity of the records outside the history. The history's events are
// chained by their hashes (history.go); Bolt binds the other records that
// say what an execution did to that chain:
//
//   - The head records the hash of the last event (LastHash) and the key of
//     the last history record; a load compares them with the record. When
//     the history ends with an event that ends the execution
//     (ExecutionSucceeded, ExecutionFailed, ExecutionTimedOut,
//     ExecutionAborted), the head's status, output, error and cause must be
//     the event's. And the head is
//     stored sealed: headSealLen bytes of header, whose seal is the SHA-256
//     of the execution id and the head's JSON, so that an edit of a field
//     the history does not repeat (a running execution's status, its
//     counters) is found too.
//   - A checkpoint's record is hashed (checkpointHash), and the hash is
//     written into a history event of the commit that wrote it (the
//     CheckpointSaved event of that name, else the commit's last event),
//     where the chain covers it; the stored checkpoint value starts with
//     the key of that event's history record and its position. A
//     checkpoint committed without any event, or written before format 5,
//     is bound to the head instead: the head lists its hash under
//     unboundCheckpoints, and the seal covers that.
//
// A record that does not match is an *IntegrityError (ErrTampered).

// IntegrityError reports a stored record that disagrees with the history's
// hash chain: an execution's head, or one of its checkpoints, was changed
// after it was written. It matches ErrTampered.
type IntegrityError struct {
	// Execution is the execution's id, and Checkpoint the checkpoint's
	// name ("" for the head).
	Execution  string
	Checkpoint string
	// Field names what disagrees: for the head "status", "output",
	// "error", "cause", "lastHash", "events" or "seal" (a field the
	// history does not repeat); for a checkpoint "docHash" or "record"
	// (any other field of its record), and, where a backend keeps them
	// beside the record (VerifyCheckpoints), "event", "blob",
	// "createdAt" or "expiresAt".
	Field string
	// Detail says how it disagrees.
	Detail string
}

// Error names the execution, the record and the field.
func (e *IntegrityError) Error() string {
	what := "head"
	if e.Checkpoint != "" {
		what = fmt.Sprintf("checkpoint %q", e.Checkpoint)
	}
	return fmt.Sprintf("execution %s: %s: %s disagrees with the history: %s: %v", e.Execution, what, e.Field, e.Detail, ErrTampered)
}

// Is makes the error match ErrTampered.
func (e *IntegrityError) Is(target error) bool { return target == ErrTampered }

// A head is stored as headSealLen bytes of header followed by its
// encoding (head.go):
//
//	[0]     format of the value (headFormat; headFormatV6 for the sealed
//	        JSON of format 6 of the database, still read)
//	[1:33]  seal: SHA-256 of "aslrun head 1\x00", the execution id's
//	        length (uvarint) and bytes, and the encoding
const (
	headFormat   = 7
	headFormatV6 = 5
	headSealAt   = 1
	headSealLen  = headSealAt + sha256.Size
)

// headSeal computes the seal of an execution's head JSON.
func headSeal(id string, body []byte) [sha256.Size]byte {
	h := sha256.New()
	h.Write([]byte("aslrun head 1\x00"))
	var n [binary.MaxVarintLen64]byte
	h.Write(n[:binary.PutUvarint(n[:], uint64(len(id)))])
	h.Write([]byte(id))
	h.Write(body)
	var sum [sha256.Size]byte
	h.Sum(sum[:0])
	return sum
}

// encodeSealedHead writes the stored value of an execution's head.
func encodeSealedHead(id string, h *headRecord) []byte {
	v := appendHead(make([]byte, headSealLen, headSealLen+256+len(h.Output)), h)
	v[0] = headFormat
	sum := headSeal(id, v[headSealLen:])
	copy(v[headSealAt:headSealLen], sum[:])
	return v
}

// decodeSealedHead reads the stored value of an execution's head; a value
// without a header is a recordError (a damaged database), one whose seal
// does not match an *IntegrityError.
func decodeSealedHead(id string, v []byte) (*headRecord, error) {
	if len(v) < headSealLen || (v[0] != headFormat && v[0] != headFormatV6) {
		return nil, &recordError{fmt.Errorf("execution %s: head record has no seal", id)}
	}
	decode := decodeHead
	if v[0] == headFormatV6 {
		decode = decodeHeadJSON
	}
	h, err := decode(id, v[headSealLen:])
	if err != nil {
		return nil, err
	}
	if sum := headSeal(id, v[headSealLen:]); !bytes.Equal(sum[:], v[headSealAt:headSealLen]) {
		// The history may say which field was changed.
		return h, &IntegrityError{Execution: id, Field: "seal", Detail: "the head record does not match its seal"}
	}
	return h, nil
}

// A checkpoint is stored as checkpointPrefixLen bytes followed by its
// record's JSON:
//
//	[0]      format of the value (checkpointFormat)
//	[1:9]    key of the history record holding the event that binds it (0: bound to the head)
//	[9:17]   position of that event in the history (from 1)
const (
	checkpointFormat    = 5
	checkpointKeyAt     = 1
	checkpointPosAt     = checkpointKeyAt + 8
	checkpointPrefixLen = checkpointPosAt + 8
)

// checkpointHash is the hex SHA-256 of "aslrun checkpoint 1\x00", the
// execution id and checkpoint name (each as its length, uvarint, and its
// bytes) and the checkpoint's record JSON.
func checkpointHash(id, name string, record []byte) string {
	b := make([]byte, 0, 64+len(id)+len(name))
	b = append(b, "aslrun checkpoint 1\x00"...)
	for _, s := range []string{id, name} {
		b = binary.AppendUvarint(b, uint64(len(s)))
		b = append(b, s...)
	}
	h := sha256.New()
	h.Write(b)
	h.Write(record)
	var sum [sha256.Size]byte
	return hex.EncodeToString(h.Sum(sum[:0]))
}

// checkpointBinding locates the history event that binds a stored
// checkpoint: the key of its history record and its position (both 0 when
// the head binds it).
type checkpointBinding struct {
	key uint64
	pos int64
}

// encodeCheckpointValue writes the stored value of a checkpoint.
func encodeCheckpointValue(b checkpointBinding, record []byte) []byte {
	v := make([]byte, checkpointPrefixLen, checkpointPrefixLen+len(record))
	v[0] = checkpointFormat
	binary.BigEndian.PutUint64(v[checkpointKeyAt:], b.key)
	binary.BigEndian.PutUint64(v[checkpointPosAt:], uint64(b.pos))
	return append(v, record...)
}

// splitCheckpointValue returns the binding and the record of a stored
// checkpoint; a value without the prefix is a recordError.
func splitCheckpointValue(id, name string, v []byte) (checkpointBinding, []byte, error) {
	if len(v) < checkpointPrefixLen || v[0] != checkpointFormat {
		return checkpointBinding{}, nil, &recordError{fmt.Errorf("execution %s checkpoint %q: malformed checkpoint value", id, name)}
	}
	b := checkpointBinding{
		key: binary.BigEndian.Uint64(v[checkpointKeyAt:]),
		pos: int64(binary.BigEndian.Uint64(v[checkpointPosAt:])),
	}
	return b, v[checkpointPrefixLen:], nil
}

// bindingEvent returns the index of the event of a commit that records the
// hash of the commit's checkpoint named name: its CheckpointSaved event of
// that name, else its last event; -1 when it has no event.
func bindingEvent(events []engine.Event, name string) int {
	for i := range events {
		if events[i].Type != engine.EventCheckpointSaved {
			continue
		}
		if d, ok := events[i].Detail.(map[string]any); ok && d["name"] == name {
			return i
		}
	}
	return len(events) - 1
}

// checkBoundCheckpoint checks a checkpoint's record against the event that
// binds it: the event at position b.pos of the execution's history record
// b.key must carry the record's hash, and, when it is the CheckpointSaved
// event, the document's hash too. (VerifyHistory checks that the event
// itself is what the chain says.)
func checkBoundCheckpoint(id, name string, b checkpointBinding, record []byte, docHash string, rec []byte) error {
	bad := func(field, format string, args ...any) error {
		return &IntegrityError{Execution: id, Checkpoint: name, Field: field, Detail: fmt.Sprintf(format, args...)}
	}
	if rec == nil {
		return bad("record", "history record %d that binds it is missing", b.key)
	}
	r, err := parseHistoryRecord(rec)
	if err != nil {
		return bad("record", "history record %d that binds it: %v", b.key, err)
	}
	i := b.pos - r.first
	if string(r.id) != id || i < 0 || i >= int64(len(r.events)) {
		return bad("record", "history record %d holds no event %d of the execution", b.key, b.pos)
	}
	e, err := parseEvent(r.events[i])
	if err != nil {
		return bad("record", "history event %d: %v", b.pos, err)
	}
	if e.Type == engine.EventCheckpointSaved && e.DocHash != docHash {
		return bad("docHash", "document hash %s, history event %d (%s) says %s", docHash, b.pos, e.Type, e.DocHash)
	}
	if sum := checkpointHash(id, name, record); sum != e.Checkpoint {
		return bad("record", "its record hashes to %s, history event %d (%s) recorded %q", sum, b.pos, e.Type, e.Checkpoint)
	}
	return nil
}

// checkUnboundCheckpoint checks a checkpoint bound to the head: the head
// lists its record's hash.
func checkUnboundCheckpoint(id, name string, h *headRecord, record []byte) error {
	want, ok := h.Unbound[name]
	if !ok {
		return &IntegrityError{Execution: id, Checkpoint: name, Field: "record", Detail: "no history event records it, and the head does not list it"}
	}
	if sum := checkpointHash(id, name, record); sum != want {
		return &IntegrityError{Execution: id, Checkpoint: name, Field: "record", Detail: fmt.Sprintf("its record hashes to %s, the head recorded %s", sum, want)}
	}
	return nil
}

// endingStatus is the status an event that ends an execution leaves it
// in; ok is false for other events.
func endingStatus(eventType string) (s engine.Status, ok bool) {
	switch eventType {
	case engine.EventExecutionSucceeded:
		return engine.StatusSucceeded, true
	case engine.EventExecutionFailed:
		return engine.StatusFailed, true
	case engine.EventExecutionTimedOut:
		return engine.StatusTimedOut, true
	case engine.EventExecutionAborted:
		return engine.StatusAborted, true
	}
	return "", false
}

// mayEnd reports whether a stored event value may be one that ends an
// execution, without decoding it: a format 1 event's JSON names such a
// type (a format 2 event is decoded, which is cheap).
func mayEnd(v []byte) bool {
	return len(v) == 0 || v[0] != eventFormatV1 ||
		bytes.Contains(v, []byte(`"type":"ExecutionSucceeded"`)) ||
		bytes.Contains(v, []byte(`"type":"ExecutionFailed"`)) ||
		bytes.Contains(v, []byte(`"type":"ExecutionTimedOut"`)) ||
		bytes.Contains(v, []byte(`"type":"ExecutionAborted"`))
}

// checkHeadEnding checks the head against the history's last event when
// that event ended the execution: the head's status, output, error and
// cause must be the event's. Outputs are compared as stored, then by
// canonical hash.
func checkHeadEnding(id string, h *headRecord, last *eventRecord) error {
	status, ok := endingStatus(last.Type)
	if !ok {
		return nil
	}
	bad := func(field, format string, args ...any) error {
		return &IntegrityError{Execution: id, Field: field, Detail: fmt.Sprintf(format, args...)}
	}
	switch {
	case h.Status != status:
		return bad("status", "status %s, the history ends with %s", h.Status, last.Type)
	case h.Error != last.Error:
		return bad("error", "error %q, %s says %q", h.Error, last.Type, last.Error)
	case h.Cause != last.Cause:
		return bad("cause", "cause %q, %s says %q", h.Cause, last.Type, last.Cause)
	}
	if last.Output != nil {
		// A format 1 event holds its output.
		if !bytes.Equal(h.Output, last.Output) {
			got, err1 := rawHash(h.Output)
			want, err2 := rawHash(last.Output)
			if err1 != nil || err2 != nil || got != want {
				return bad("output", "output hash %s, %s recorded %s", got, last.Type, want)
			}
		}
		return nil
	}
	got, err := rawHash(h.Output)
	if err != nil || got != last.OutputHash {
		return bad("output", "output hash %s, %s recorded %s", got, last.Type, last.OutputHash)
	}
	return nil
}

// rawHash is the canonical hash of a stored document, "" when absent.
func rawHash(raw json.RawMessage) (string, error) {
	v, err := decodeDoc(raw)
	if err != nil || v == nil {
		return "", err
	}
	return jsonvalue.CanonicalHash(v)
}

// checkHeadChain checks the head against its last history record, as a
// load does: the record belongs to the execution and ends at the head's
// event count, its last event's hash is the head's LastHash, and when that
// event may have ended the execution, the head agrees with it. rec is the
// record's value (nil when missing or when the head has none).
func checkHeadChain(id string, h *headRecord, rec []byte) error {
	bad := func(field, format string, args ...any) error {
		return &IntegrityError{Execution: id, Field: field, Detail: fmt.Sprintf(format, args...)}
	}
	if h.LastRecord == 0 {
		if h.Events != 0 || h.LastHash != "" {
			return bad("lastHash", "the head records %d events ending with hash %q but no history record", h.Events, h.LastHash)
		}
		return nil
	}
	if rec == nil {
		return bad("lastHash", "its last history record %d is missing", h.LastRecord)
	}
	r, err := parseHistoryRecord(rec)
	if err != nil {
		return fmt.Errorf("execution %s: history record %d: %w", id, h.LastRecord, err)
	}
	if string(r.id) != id {
		return bad("lastHash", "its last history record %d belongs to execution %q", h.LastRecord, r.id)
	}
	if end := r.first + int64(len(r.events)) - 1; end != h.Events {
		return bad("events", "the head records %d events, the history ends at event %d", h.Events, end)
	}
	last := r.events[len(r.events)-1]
	sum := eventHash(last)
	if sum == nil {
		return fmt.Errorf("execution %s: history event %d: malformed event record: %w", id, h.Events, ErrTampered)
	}
	if got := hex.EncodeToString(sum); got != h.LastHash {
		return bad("lastHash", "last hash %q, history event %d has hash %s", h.LastHash, h.Events, got)
	}
	if !h.Status.Ended() && !mayEnd(last) {
		return nil
	}
	e, err := parseEvent(last)
	if err != nil {
		return fmt.Errorf("execution %s: history event %d: %w", id, h.Events, err)
	}
	return checkHeadEnding(id, h, &e)
}
