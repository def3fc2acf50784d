package store

import (
	"bytes"
	"encoding/binary"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/aslrun/aslrun/engine"
)

// sealedRecord prepares and seals the history record of events after head
// h.
func sealedRecord(t *testing.T, id string, h *headRecord, events ...engine.Event) preparedHistory {
	t.Helper()
	prepared := make([]preparedEvent, len(events))
	for i := range events {
		var err error
		if prepared[i], err = prepareEvent(&events[i], newDocMemo()); err != nil {
			t.Fatal(err)
		}
	}
	p := newPreparedHistory(id, prepared)
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
	var values [][]byte
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
			if again := encodeHistoryRecord("e1", tt.prev, tt.first, r.events); !bytes.Equal(again, tt.p.record) {
				t.Errorf("encodeHistoryRecord of the parsed record differs from it")
			}
			values = append(values, r.events...)
		})
	}
	if err := verifyHistory("e1", values, h); err != nil {
		t.Errorf("verifyHistory of the records' events = %v", err)
	}
	if h.Events != 3 {
		t.Errorf("head after sealing: %d events, want 3", h.Events)
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

func FuzzParseHistoryRecord(f *testing.F) {
	f.Add(encodeHistoryRecord("e1", 4, 2, [][]byte{[]byte("event one"), []byte("two")}))
	f.Add([]byte{historyFormat})
	f.Fuzz(func(t *testing.T, v []byte) {
		r, err := parseHistoryRecord(v)
		if err != nil {
			return
		}
		// What parses is written back the same.
		if again := encodeHistoryRecord(string(r.id), r.prev, r.first, r.events); !bytes.Equal(again, v) {
			t.Errorf("encodeHistoryRecord(parseHistoryRecord(%x)) = %x", v, again)
		}
	})
}

func TestEncodeHead(t *testing.T) {
	at := time.Date(2025, 3, 14, 15, 9, 26, 535897932, time.UTC)
	tests := []struct {
		name string
		h    headRecord
	}{
		{"running", headRecord{Status: engine.StatusRunning}},
		{"everything", headRecord{
			Status: engine.StatusWaiting, Output: []byte(`{"n":1.50}`), Error: "E", Cause: "c \"quoted\"",
			StoppedAt: at, WakeAt: at.Add(time.Hour), WaitingFor: "Wait", Invocations: map[string]int{"b": 2, "a": 1},
			LastEvent: 12, LastOwnEvent: 3, Seq: 9, Events: 15, LastHash: "ab12", LastRecord: 1 << 40,
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := decodeHead("e1", encodeHead(&tt.h))
			if err != nil {
				t.Fatalf("decodeHead(encodeHead) = %v", err)
			}
			if !reflect.DeepEqual(*got, tt.h) {
				t.Errorf("decodeHead(encodeHead(%+v)) = %+v", tt.h, *got)
			}
			want, err := marshalRecord(&tt.h)
			if err != nil {
				t.Fatal(err)
			}
			if got := encodeHead(&tt.h); !bytes.Equal(got, want) {
				t.Errorf("encodeHead = %s, want %s (encoding/json)", got, want)
			}
		})
	}
}
