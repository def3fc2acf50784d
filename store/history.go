package store

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/aslrun/aslrun/engine"
	"github.com/aslrun/aslrun/jsonvalue"
)

// A history event is stored as a value of a few bytes of header followed
// by its body. Format 2, which the store writes, is binary:
//
//	[0]      format of the value (eventFormat)
//	[1]      flags: eventSuperseded
//	[2:34]   Hash
//	then     ID and Own (varints), the timestamp (Unix seconds, varint,
//	         and nanoseconds, uvarint), type, state, scope, error and cause
//	         (each its length, uvarint, and its bytes), the references to
//	         DocHash, the input and the output (appendRef), the detail
//	         (length and jsonvalue.Marshal form, empty when absent) and the
//	         hash of the checkpoint record it binds (a string, often empty)
//
// Its PrevHash is the previous event's Hash: the one before it in its
// history record, or the record's own (history_record.go). The input and
// output are documents of the history record's document table, named by
// their canonical hashes (docs.go). Format 1, written before format 7 of
// the database, has a header of eventHeaderLenV1 bytes (format, flags,
// PrevHash, Hash) and a JSON body (eventRecord) holding input, output and
// detail inline; it is still read.
//
// Hash is the SHA-256 of the event's canonical encoding (eventDigest)
// followed by PrevHash. Superseded is outside the hash: a rollback sets it
// on events written long before.
const (
	eventFormat     = 2
	eventFormatV1   = 1
	eventSuperseded = 1 << 0
	eventHashAt     = 2
	eventHeaderLen  = eventHashAt + sha256.Size

	eventPrevAtV1    = 2
	eventHashAtV1    = eventPrevAtV1 + sha256.Size
	eventHeaderLenV1 = eventHashAtV1 + sha256.Size
)

// eventRecord is the body of a stored event. Input, Output and Detail are
// documents (a format 1 event's input and output inline, a format 2
// event's as InputHash and OutputHash, references to its record's
// document table); the event's own document is kept only as DocHash.
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

	// time is the timestamp, and InputHash and OutputHash the canonical
	// hashes of the input and output (hasInput, hasOutput: present) of a
	// format 2 event.
	time                time.Time
	InputHash           string `json:"-"`
	OutputHash          string `json:"-"`
	hasInput, hasOutput bool
}

// preparedEvent is an event encoded outside the transaction: its stored
// value with Hash left zero and the start of its digest, which only lacks
// PrevHash.
type preparedEvent struct {
	value  []byte
	digest []byte
}

// eventWriter encodes the events of a commit, their values and digests
// each in one buffer.
type eventWriter struct {
	values, digests []byte
	spans           [][2][2]int // each event's value and digest in the buffers
}

// add encodes e, adding its input and output to the commit's documents.
// The value it appends is appendEventValue's and the digest
// eventDigest's, written from the hashes without spelling them as
// strings.
func (w *eventWriter) add(e *engine.Event, memo *docMemo, docs *docWriter) error {
	// The strings are hashed as they are stored: made valid UTF-8.
	typ, state, scope, errName, cause := validUTF8(e.Type), validUTF8(e.State), validUTF8(e.Scope), validUTF8(e.Error), validUTF8(e.Cause)
	ts := e.Timestamp.UTC()
	doc, err := memo.hash(e.Document)
	if err != nil {
		return fmt.Errorf("document: %w", err)
	}
	var in, out [sha256.Size]byte
	if e.Input != nil {
		if in, err = docs.add(e.Input, scope); err != nil {
			return fmt.Errorf("input: %w", err)
		}
	}
	if e.Output != nil {
		if out, err = docs.add(e.Output, scope); err != nil {
			return fmt.Errorf("output: %w", err)
		}
	}
	var detail []byte
	var detailSum [sha256.Size]byte
	if e.Detail != nil {
		if detail, err = memo.raw(e.Detail); err != nil {
			return fmt.Errorf("detail: %w", err)
		}
		if detailSum, err = memo.hash(e.Detail); err != nil {
			return fmt.Errorf("detail: %w", err)
		}
	}

	var span [2][2]int
	b := w.values
	span[0][0] = len(b)
	b = append(b, eventFormat, 0)
	b = append(b, make([]byte, sha256.Size)...)
	b = binary.AppendVarint(b, e.ID)
	b = binary.AppendVarint(b, e.Own)
	b = appendTime(b, ts)
	b = appendStr(appendStr(appendStr(appendStr(appendStr(b, typ), state), scope), errName), cause)
	b = append(append(b, refSum), doc[:]...)
	b = appendSumRef(b, in, doc, e.Input != nil)
	b = appendSumRef(b, out, doc, e.Output != nil)
	b = appendBytes(b, detail)
	b = appendStr(b, "")
	span[0][1] = len(b)
	w.values = b

	d := w.digests
	span[1][0] = len(d)
	d = append(d, "aslrun event 1\x00"...)
	d = appendStr(d, typ)
	d = appendDecimal(d, e.ID)
	d = appendDecimal(d, e.Own)
	var tbuf [64]byte
	d = appendBytes(d, ts.AppendFormat(tbuf[:0], time.RFC3339Nano))
	d = appendStr(appendStr(appendStr(appendStr(d, state), scope), errName), cause)
	d = appendHexSum(d, in, e.Input != nil)
	d = appendHexSum(d, out, e.Output != nil)
	d = appendHexSum(d, detailSum, e.Detail != nil)
	d = appendHexSum(d, doc, true)
	span[1][1] = len(d)
	w.digests = d
	w.spans = append(w.spans, span)
	return nil
}

// events returns the events encoded, each value and digest clipped so
// that appending to it copies it.
func (w *eventWriter) events() []preparedEvent {
	out := make([]preparedEvent, len(w.spans))
	for i, sp := range w.spans {
		out[i] = preparedEvent{value: w.values[sp[0][0]:sp[0][1]:sp[0][1]], digest: w.digests[sp[1][0]:sp[1][1]:sp[1][1]]}
	}
	return out
}

// appendSumRef appends a reference to a document hash as appendRef does
// to its hex: refSame when it is the event's document's.
func appendSumRef(b []byte, sum, doc [sha256.Size]byte, present bool) []byte {
	switch {
	case !present:
		return append(b, refNone)
	case sum == doc:
		return append(b, refSame)
	}
	return append(append(b, refSum), sum[:]...)
}

// appendHexSum adds a hash to a digest as its hex text's length and
// bytes, or an empty string when absent.
func appendHexSum(d []byte, sum [sha256.Size]byte, present bool) []byte {
	if !present {
		return append(d, 0)
	}
	d = binary.AppendUvarint(d, 2*sha256.Size)
	return hex.AppendEncode(d, sum[:])
}

// appendEventValue appends the stored value of a format 2 event, its Hash
// left zero (or as the record's Checkpoint says nothing of it).
func appendEventValue(b []byte, r *eventRecord) []byte {
	b = append(b, eventFormat, 0)
	b = append(b, make([]byte, sha256.Size)...)
	b = binary.AppendVarint(b, r.ID)
	b = binary.AppendVarint(b, r.Own)
	b = appendTime(b, r.time)
	for _, s := range []string{r.Type, r.State, r.Scope, r.Error, r.Cause} {
		b = appendStr(b, s)
	}
	b = appendRef(b, r.DocHash, "", true)
	b = appendRef(b, r.InputHash, r.DocHash, r.hasInput)
	b = appendRef(b, r.OutputHash, r.DocHash, r.hasOutput)
	b = appendBytes(b, r.Detail)
	return appendStr(b, r.Checkpoint)
}

// setEventCheckpoint records the hash of a checkpoint record on a prepared
// format 2 event value, which ends with it (empty).
func setEventCheckpoint(v []byte, hash string) []byte {
	return appendStr(v[:len(v)-1], hash)
}

// eventHash returns the Hash of a stored event (of either format); nil
// when the value is malformed.
func eventHash(v []byte) []byte {
	switch {
	case len(v) >= eventHeaderLen && v[0] == eventFormat:
		return v[eventHashAt:eventHeaderLen]
	case len(v) >= eventHeaderLenV1 && v[0] == eventFormatV1:
		return v[eventHashAtV1:eventHeaderLenV1]
	}
	return nil
}

// parseEvent reads the body of a stored event of either format; its error
// wraps ErrTampered.
func parseEvent(v []byte) (eventRecord, error) {
	var r eventRecord
	switch {
	case len(v) >= eventHeaderLen && v[0] == eventFormat:
		rd := reader{b: v[eventHeaderLen:]}
		r.ID, r.Own = rd.varint(), rd.varint()
		r.time = rd.time()
		r.Type, r.State, r.Scope, r.Error, r.Cause = rd.str(), rd.str(), rd.str(), rd.str(), rd.str()
		r.DocHash, _ = rd.ref("")
		r.InputHash, r.hasInput = rd.ref(r.DocHash)
		r.OutputHash, r.hasOutput = rd.ref(r.DocHash)
		if d := rd.bytes(); len(d) > 0 {
			r.Detail = d
		}
		r.Checkpoint = rd.str()
		if rd.err == nil && len(rd.b) > 0 {
			rd.fail(fmt.Errorf("%d bytes after its fields", len(rd.b)))
		}
		if rd.err != nil {
			return r, fmt.Errorf("event record: %v: %w", rd.err, ErrTampered)
		}
		r.Timestamp = r.time.Format(time.RFC3339Nano)
	case len(v) >= eventHeaderLenV1 && v[0] == eventFormatV1:
		if err := json.Unmarshal(v[eventHeaderLenV1:], &r); err != nil {
			return r, fmt.Errorf("event record: %v: %w", err, ErrTampered)
		}
		ts, err := time.Parse(time.RFC3339Nano, r.Timestamp)
		if err != nil {
			return r, fmt.Errorf("event timestamp: %v: %w", err, ErrTampered)
		}
		r.time = ts.UTC()
	default:
		return r, fmt.Errorf("malformed event record: %w", ErrTampered)
	}
	return r, nil
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
	b = appendDecimal(b, r.ID)
	b = appendDecimal(b, r.Own)
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

// appendDecimal adds a number to a digest as its decimal text's length and
// bytes.
func appendDecimal(b []byte, n int64) []byte {
	var buf [20]byte
	d := strconv.AppendInt(buf[:0], n, 10)
	b = binary.AppendUvarint(b, uint64(len(d)))
	return append(b, d...)
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
// for the first event), in the buffer *scratch.
func chainHash(scratch *[]byte, digest, prev []byte) [sha256.Size]byte {
	b := append((*scratch)[:0], digest...)
	b = appendBytes(b, prev)
	*scratch = b
	return sha256.Sum256(b)
}

// historyReader reads an execution's history records in order: it
// rebuilds their documents and decodes their events, each with the hash
// of the event before it. With verify it also checks every document
// against its hash and every event's hash and link, failing with an error
// wrapping ErrTampered at the first that does not verify.
type historyReader struct {
	id     string
	verify bool
	docs   map[[sha256.Size]byte]any
	n      int64  // events read
	prev   string // the last event's Hash, hex
	hasher []byte // chainHash's buffer
	last   eventRecord
}

func newHistoryReader(id string, verify bool) *historyReader {
	return &historyReader{id: id, verify: verify, docs: make(map[[sha256.Size]byte]any)}
}

// record reads the next history record, calling f (when not nil) with
// each of its events.
func (hr *historyReader) record(r *historyRecord, f func(e engine.Event)) error {
	if r.format == historyFormat {
		got := hexOrEmpty(r.prevHash)
		if hr.verify && got != hr.prev {
			return fmt.Errorf("execution %s: history event %d: previous hash %q, want %q: %w", hr.id, hr.n+1, got, hr.prev, ErrTampered)
		}
		hr.prev = got
		if err := hr.addDocs(r); err != nil {
			return err
		}
	}
	for _, v := range r.events {
		hr.n++
		e, rec, err := hr.event(v)
		if err != nil {
			return fmt.Errorf("execution %s: history event %d: %w", hr.id, hr.n, err)
		}
		if hr.verify && e.PrevHash != hr.prev {
			return fmt.Errorf("execution %s: history event %d (%s): previous hash %q, want %q: %w", hr.id, hr.n, e.Type, e.PrevHash, hr.prev, ErrTampered)
		}
		hr.prev, hr.last = e.Hash, rec
		if f != nil {
			f(e)
		}
	}
	return nil
}

// addDocs adds a record's documents.
func (hr *historyReader) addDocs(r *historyRecord) error {
	for _, d := range r.docs {
		v, err := d.value(hr.docs)
		if err == nil && hr.verify {
			var got string
			if got, err = jsonvalue.CanonicalHash(v); err == nil && got != hex.EncodeToString(d.hash[:]) {
				err = fmt.Errorf("it hashes to %s", got)
			}
		}
		if err != nil {
			return fmt.Errorf("execution %s: history record at event %d: document %x: %v: %w", hr.id, r.first, d.hash, err, ErrTampered)
		}
		hr.docs[d.hash] = v
	}
	return nil
}

// doc returns the document of a format 2 event's reference.
func (hr *historyReader) doc(what, h string) (any, error) {
	var sum [sha256.Size]byte
	if n, err := hex.Decode(sum[:], []byte(h)); err == nil && n == sha256.Size {
		if v, ok := hr.docs[sum]; ok {
			return v, nil
		}
	}
	return nil, fmt.Errorf("event %s: document %q is not in the history: %w", what, h, ErrTampered)
}

// event decodes a stored event that follows the one whose hash is hr.prev.
func (hr *historyReader) event(v []byte) (engine.Event, eventRecord, error) {
	r, err := parseEvent(v)
	if err != nil {
		return engine.Event{}, r, err
	}
	return hr.parsed(v, r)
}

// parsed decodes a stored event v that parseEvent read as r.
func (hr *historyReader) parsed(v []byte, r eventRecord) (engine.Event, eventRecord, error) {
	var err error
	e := engine.Event{
		ID: r.ID, Own: r.Own, Type: r.Type, Timestamp: r.time, State: r.State, Scope: r.Scope,
		Error: r.Error, Cause: r.Cause, DocHash: r.DocHash, Superseded: v[1]&eventSuperseded != 0,
		Hash: hex.EncodeToString(eventHash(v)),
	}
	var hashes [3]string
	if v[0] == eventFormatV1 {
		e.PrevHash = hexOrEmpty(v[eventPrevAtV1:eventHashAtV1])
		for i, f := range []struct {
			dst *any
			raw json.RawMessage
			n   string
		}{{&e.Input, r.Input, "input"}, {&e.Output, r.Output, "output"}} {
			if *f.dst, err = decodeDoc(f.raw); err != nil {
				return e, r, fmt.Errorf("event %s: %v: %w", f.n, err, ErrTampered)
			}
			if hr.verify && *f.dst != nil {
				if hashes[i], err = jsonvalue.CanonicalHash(*f.dst); err != nil {
					return e, r, fmt.Errorf("event %s: %v: %w", f.n, err, ErrTampered)
				}
			}
		}
	} else {
		e.PrevHash = hr.prev
		if r.hasInput {
			if e.Input, err = hr.doc("input", r.InputHash); err != nil {
				return e, r, err
			}
		}
		if r.hasOutput {
			if e.Output, err = hr.doc("output", r.OutputHash); err != nil {
				return e, r, err
			}
		}
		hashes[0], hashes[1] = r.InputHash, r.OutputHash
	}
	if e.Detail, err = decodeDoc(r.Detail); err != nil {
		return e, r, fmt.Errorf("event detail: %v: %w", err, ErrTampered)
	}
	if hr.verify {
		if e.Detail != nil {
			if hashes[2], err = jsonvalue.CanonicalHash(e.Detail); err != nil {
				return e, r, fmt.Errorf("event detail: %v: %w", err, ErrTampered)
			}
		}
		sum := chainHash(&hr.hasher, eventDigest(&r, hashes), []byte(e.PrevHash))
		if !bytes.Equal(sum[:], eventHash(v)) {
			return e, r, fmt.Errorf("event hash %s does not match its content: %w", e.Hash, ErrTampered)
		}
	}
	return e, r, nil
}

// hexOrEmpty is a hash in hex, "" for all zeros (no previous event).
func hexOrEmpty(b []byte) string {
	if allZero(b) {
		return ""
	}
	return hex.EncodeToString(b)
}

// supersedes reports whether rollback rb marks the stored event v
// superseded: it is numbered after the rollback point and not superseded
// yet. AWS-numbered events compare by ID, the engine's own events (ID 0)
// by Own.
func supersedes(rb *engine.Rollback, v []byte) (bool, error) {
	if len(v) < 2 || v[1]&eventSuperseded != 0 {
		return false, nil
	}
	r, err := parseEvent(v)
	if err != nil {
		return false, err
	}
	return (r.ID != 0 && r.ID > rb.ToEvent) || (r.ID == 0 && r.Own > rb.ToOwnEvent), nil
}

// readHistory decodes an execution's history records, in order.
func readHistory(id string, records []storedRecord) ([]engine.Event, error) {
	var out []engine.Event
	hr := newHistoryReader(id, false)
	for i := range records {
		if err := hr.record(&records[i].historyRecord, func(e engine.Event) { out = append(out, e) }); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// verifyHistory checks an execution's history records in order: each
// document against its hash, each event's hash and its link to the one
// before, that the last is the head's LastHash, and that the head agrees
// with the last event when it ended the execution (checkHeadEnding).
func verifyHistory(id string, records []historyRecord, h *headRecord) error {
	hr := newHistoryReader(id, true)
	for i := range records {
		if err := hr.record(&records[i], nil); err != nil {
			return err
		}
	}
	if hr.n != h.Events || hr.prev != h.LastHash {
		field := "lastHash"
		if hr.n != h.Events {
			field = "events"
		}
		return &IntegrityError{Execution: id, Field: field, Detail: fmt.Sprintf("the history has %d events ending with hash %q, the head records %d ending with %q",
			hr.n, hr.prev, h.Events, h.LastHash)}
	}
	if hr.n == 0 {
		return nil
	}
	return checkHeadEnding(id, h, &hr.last)
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
