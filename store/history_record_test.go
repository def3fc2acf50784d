package store

import (
	"bytes"
	"encoding/binary"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/aslrun/aslrun/engine"
	"github.com/aslrun/aslrun/jsonvalue"
)

// sealedRecord prepares and seals the history record of events after head
// h.
func sealedRecord(t *testing.T, id string, h *headRecord, events ...engine.Event) preparedHistory {
	t.Helper()
	memo := newDocMemo()
	docs := newDocWriter(memo, nil, len(events))
	var w eventWriter
	for i := range events {
		if err := w.add(&events[i], memo, docs); err != nil {
			t.Fatal(err)
		}
	}
	p := newPreparedHistory(id, w.events(), docs.buf, docs.n)
	if err := p.seal(h); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestHistoryRecordRoundTrip(t *testing.T) {
	h := &headRecord{}
	at := time.Date(2025, 3, 14, 15, 9, 26, 535897932, time.UTC)
	first := sealedRecord(t, "e1", h,
		engine.Event{ID: 1, Type: "ExecutionStarted", Timestamp: at, Input: map[string]any{"a": "b"}},
		engine.Event{ID: 2, Type: "PassStateEntered", Timestamp: at, State: "P"},
	)
	h.LastRecord = 7
	second := sealedRecord(t, "e1", h, engine.Event{ID: 3, Type: "PassStateExited", Timestamp: at, State: "P"})

	tests := []struct {
		name   string
		p      preparedHistory
		prev   uint64
		first  int64
		events int
	}{
		{"first record", first, 0, 1, 2},
		{"second record", second, 7, 3, 1},
	}
	var records []historyRecord
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := parseHistoryRecord(tt.p.record)
			if err != nil {
				t.Fatalf("parseHistoryRecord = %v", err)
			}
			if r.prev != tt.prev || r.first != tt.first || string(r.id) != "e1" || len(r.events) != tt.events {
				t.Errorf("parseHistoryRecord = prev %d, first %d, id %q, %d events; want %d, %d, e1, %d",
					r.prev, r.first, r.id, len(r.events), tt.prev, tt.first, tt.events)
			}
			if !reflect.DeepEqual(r.events, tt.p.values) {
				t.Errorf("parsed events differ from the prepared values")
			}
			records = append(records, r)
		})
	}
	if err := verifyHistory("e1", records, h); err != nil {
		t.Errorf("verifyHistory of the records' events = %v", err)
	}
	if h.Events != 3 {
		t.Errorf("head after sealing: %d events, want 3", h.Events)
	}
}

// TestEventWriter checks that the events a commit writes are encoded and
// digested as appendEventValue and eventDigest encode them from their
// fields: the reader and VerifyHistory use those.
func TestEventWriter(t *testing.T) {
	at := time.Date(2025, 3, 14, 15, 9, 26, 535897932, time.FixedZone("X", 3600))
	doc := map[string]any{"a": "b", "n": jsonvalue.IntNumber(3)}
	other := []any{"x", 1.5}
	tests := []struct {
		name string
		e    engine.Event
	}{
		{"bare", engine.Event{Type: "ExecutionStarted", Timestamp: at}},
		{"input is the document", engine.Event{ID: 7, Own: 2, Type: "PassStateEntered", State: "P", Scope: "s/1", Timestamp: at, Input: doc, Document: doc}},
		{"output differs", engine.Event{ID: -1, Own: 1 << 40, Type: "TaskStateExited", State: "T", Timestamp: at, Input: doc, Output: other, Document: doc}},
		{"detail, error and cause", engine.Event{Type: "TaskFailed", State: "T", Error: "E", Cause: "c\xffause", Timestamp: at, Detail: map[string]any{"k": "v"}, Document: other}},
		{"invalid strings", engine.Event{Type: "x\xff", State: "\xfe", Scope: "\xc3", Timestamp: time.Time{}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var w eventWriter
			if err := w.add(&tt.e, newDocMemo(), newDocWriter(newDocMemo(), nil, 1)); err != nil {
				t.Fatal(err)
			}
			got := w.events()[0]
			e := &tt.e
			r := eventRecord{
				ID: e.ID, Own: e.Own, Type: validUTF8(e.Type), time: e.Timestamp.UTC(),
				State: validUTF8(e.State), Scope: validUTF8(e.Scope), Error: validUTF8(e.Error), Cause: validUTF8(e.Cause),
			}
			r.Timestamp = r.time.Format(time.RFC3339Nano)
			hash := func(v any) string {
				h, err := jsonvalue.CanonicalHash(v)
				if err != nil {
					t.Fatal(err)
				}
				return h
			}
			r.DocHash = hash(e.Document)
			var hashes [3]string
			if e.Input != nil {
				r.InputHash, r.hasInput, hashes[0] = hash(e.Input), true, hash(e.Input)
			}
			if e.Output != nil {
				r.OutputHash, r.hasOutput, hashes[1] = hash(e.Output), true, hash(e.Output)
			}
			if e.Detail != nil {
				r.Detail, _ = jsonvalue.Marshal(e.Detail)
				hashes[2] = hash(e.Detail)
			}
			if want := appendEventValue(nil, &r); !bytes.Equal(got.value, want) {
				t.Errorf("value = %x, want %x", got.value, want)
			}
			if want := eventDigest(&r, hashes); !bytes.Equal(got.digest, want) {
				t.Errorf("digest = %q, want %q", got.digest, want)
			}
		})
	}
}

func TestParseHistoryRecordRejects(t *testing.T) {
	good := encodeHistoryRecord("e1", 4, 2, [][]byte{[]byte("event one"), []byte("two")})
	modified := func(f func(r []byte) []byte) []byte { return f(bytes.Clone(good)) }
	tests := []struct {
		name string
		v    []byte
	}{
		{"empty", nil},
		{"header cut short", good[:historyHeaderLen-1]},
		{"other format", modified(func(r []byte) []byte { r[0] = 9; return r })},
		{"id longer than the record", modified(func(r []byte) []byte {
			binary.BigEndian.PutUint32(r[historyIDLenAt:], 1<<30)
			return r
		})},
		{"no events", encodeHistoryRecord("e1", 4, 2, nil)},
		{"first event 0", encodeHistoryRecord("e1", 4, 0, [][]byte{[]byte("x")})},
		{"more events than bytes", modified(func(r []byte) []byte {
			binary.BigEndian.PutUint32(r[historyCountAt:], 1<<31)
			return r
		})},
		{"an event cut short", good[:len(good)-1]},
		{"an event longer than the record", modified(func(r []byte) []byte {
			binary.BigEndian.PutUint32(r[historyHeaderLen+2:], 1<<30)
			return r
		})},
		{"trailing bytes", append(bytes.Clone(good), 0)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if r, err := parseHistoryRecord(tt.v); !errors.Is(err, ErrTampered) {
				t.Errorf("parseHistoryRecord = %+v, %v, want ErrTampered", r, err)
			}
		})
	}
	if _, err := parseHistoryRecord(good); err != nil {
		t.Errorf("parseHistoryRecord(good) = %v", err)
	}
}

// FuzzParseHistoryRecord checks that reading a history record, its
// documents and events never panics, and that a record of format 1 that
// parses is written back the same.
func FuzzParseHistoryRecord(f *testing.F) {
	f.Add(encodeHistoryRecord("e1", 4, 2, [][]byte{[]byte("event one"), []byte("two")}))
	f.Add([]byte{historyFormat})
	l := newStateLoop(f, "e1")
	for range 2 {
		p, err := prepareCommit(l.next(), nil, CodecNone, &docCache{})
		if err != nil {
			f.Fatal(err)
		}
		f.Add(p.history.record)
	}
	f.Fuzz(func(t *testing.T, v []byte) {
		r, err := parseHistoryRecord(v)
		if err != nil {
			return
		}
		if r.format == historyFormatV1 {
			if again := encodeHistoryRecord(string(r.id), r.prev, r.first, r.events); !bytes.Equal(again, v) {
				t.Errorf("encodeHistoryRecord(parseHistoryRecord(%x)) = %x", v, again)
			}
		}
		hr := newHistoryReader(string(r.id), true)
		if err := hr.record(&r, nil); err != nil && !errors.Is(err, ErrTampered) {
			t.Errorf("reading record %x: %v, want an error wrapping ErrTampered", v, err)
		}
	})
}

func TestEncodeHead(t *testing.T) {
	at := time.Date(2025, 3, 14, 15, 9, 26, 535897932, time.UTC)
	tests := []struct {
		name string
		h    headRecord
	}{
		{"empty", headRecord{}},
		{"running", headRecord{Status: engine.StatusRunning}},
		{"everything", headRecord{
			Status: engine.StatusWaiting, Output: []byte(`{"n":1.50}`), Error: "E", Cause: "c \"quoted\"",
			StoppedAt: at, WakeAt: at.Add(time.Hour), WaitingFor: "Wait", Invocations: map[string]int{"b": 2, "a": 1},
			Usage: engine.Usage{InputTokens: 10, OutputTokens: -3, Tokens: 7, Cost: 0.125}, Notices: []string{"n1", ""},
			LastEvent: 12, LastOwnEvent: 3, Seq: 9, Events: 15, LastHash: "ab12", LastRecord: 1 << 40,
			Unbound: map[string]string{"cp": "h1", "a": ""}, RedriveCount: 2, RedrivenAt: time.Date(1, 1, 1, 0, 0, 0, 1, time.UTC),
			HistoryDropped: true,
		}},
		{"before 1970", headRecord{StoppedAt: time.Date(1900, 1, 1, 0, 0, 0, 5, time.UTC)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			enc := encodeHead(&tt.h)
			got, err := decodeHead("e1", enc)
			if err != nil {
				t.Fatalf("decodeHead(encodeHead) = %v", err)
			}
			if !reflect.DeepEqual(*got, tt.h) {
				t.Errorf("decodeHead(encodeHead(%+v)) = %+v", tt.h, *got)
			}
			if again := encodeHead(got); !bytes.Equal(again, enc) {
				t.Errorf("encodeHead(decodeHead(%x)) = %x", enc, again)
			}
			// Format 6 heads, JSON, read the same.
			old, err := decodeHeadJSON("e1", encodeHeadJSON(&tt.h))
			if err != nil || !reflect.DeepEqual(*old, tt.h) {
				t.Errorf("decodeHeadJSON(encodeHeadJSON(%+v)) = %+v, %v", tt.h, old, err)
			}
		})
	}
}

func TestDecodeHeadRejects(t *testing.T) {
	good := encodeHead(&headRecord{Status: engine.StatusRunning, Seq: 3, Invocations: map[string]int{"a": 1}})
	tests := []struct {
		name string
		v    []byte
	}{
		{"unknown field", append(bytes.Clone(good), 99, 0)},
		{"field out of order", append(bytes.Clone(good), headStatus, 1, 'X')},
		{"field repeated", append(append([]byte{}, good...), headSeq, 2)},
		{"cut short", good[:len(good)-1]},
		{"string longer than the record", []byte{headStatus, 40, 'R'}},
		{"too many invocations", []byte{headInvocations, 100, 1, 'a', 2}},
		{"agent counted twice", []byte{headInvocations, 2, 1, 'a', 2, 1, 'a', 4}},
		{"bad nanoseconds", []byte{headStoppedAt, 0, 0xff, 0xff, 0xff, 0xff, 0x0f}},
		{"history dropped other than 1", []byte{headHistoryDropped, 4}},
		{"negative redrive count", []byte{headRedriveCount, 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h, err := decodeHead("e1", tt.v)
			var re *recordError
			if !errors.As(err, &re) {
				t.Fatalf("decodeHead(%x) = %+v, %v, want a recordError", tt.v, h, err)
			}
			t.Log(err)
		})
	}
}

// FuzzDecodeHead checks that decodeHead never panics, and that what it
// accepts encodes to a head that decodes the same.
func FuzzDecodeHead(f *testing.F) {
	f.Add(encodeHead(&headRecord{Status: engine.StatusRunning, Seq: 3}))
	f.Add(encodeHead(&headRecord{
		Status: engine.StatusSucceeded, Output: []byte(`[1]`), Invocations: map[string]int{"a": 1, "b": 2},
		Usage: engine.Usage{Tokens: 4, Cost: 1.5}, Notices: []string{"x"}, Unbound: map[string]string{"cp": "h"},
		StoppedAt: time.Unix(5, 6), LastHash: "ab", LastRecord: 9,
	}))
	f.Fuzz(func(t *testing.T, v []byte) {
		h, err := decodeHead("e1", v)
		if err != nil {
			return
		}
		again, err := decodeHead("e1", encodeHead(h))
		if err != nil || !reflect.DeepEqual(again, h) {
			t.Errorf("decodeHead(encodeHead(%+v)) = %+v, %v", h, again, err)
		}
	})
}
