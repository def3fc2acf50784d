package store

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/aslrun/aslrun/engine"
	"github.com/aslrun/aslrun/jsonvalue"
)

// longHistory commits n steps of one execution to m: each step's
// document changes one field of the one before (stored as a delta), and
// the execution's input is shown again in every step (stored once).
func longHistory(t testing.TB, m *Memory, id string, n int) {
	t.Helper()
	ctx := t.Context()
	if err := m.Create(ctx, &engine.Execution{ID: id, MachineName: "M", Definition: []byte(`{}`), DefinitionHash: "h", Status: engine.StatusRunning, StartedAt: time.Unix(0, 0)}); err != nil {
		t.Fatal(err)
	}
	input, err := jsonvalue.Decode([]byte(`{"input":"the execution's input","n":[1,2,3]}`))
	if err != nil {
		t.Fatal(err)
	}
	for c := range n {
		doc, err := jsonvalue.Decode(fmt.Appendf(nil, `{"counter":%d,"payload":{"keep":"the same text in every step","list":[1,2,3]}}`, c))
		if err != nil {
			t.Fatal(err)
		}
		evs := []engine.Event{
			{ID: int64(2*c + 1), Type: engine.EventTaskScheduled, Timestamp: time.Unix(int64(c), 0), State: "S", Document: doc, Input: input},
			{ID: int64(2*c + 2), Type: engine.EventTaskSucceeded, Timestamp: time.Unix(int64(c), 1), State: "S", Document: doc, Output: doc},
		}
		if err := m.Commit(ctx, &engine.Commit{Execution: id, Seq: int64(c + 1), Status: engine.StatusRunning, Events: evs, LastEvent: int64(2*c + 2)}); err != nil {
			t.Fatal(err)
		}
	}
}

// TestHistoryRangeReadsBoundedRecords: the last page of a long history
// reads the records of the page and at most 64 records (maxDocReach) before
// them for its documents, not the whole history, although its documents
// are deltas of deltas and its input was first stored at the start.
func TestHistoryRangeReadsBoundedRecords(t *testing.T) {
	m := NewMemory()
	longHistory(t, m, "e1", 1000)
	records := m.execs["e1"].history
	all, err := ReadHistory("e1", records)
	if err != nil {
		t.Fatal(err)
	}
	for _, page := range []struct{ after, end int64 }{{1990, 2000}, {1000, 1010}, {0, 10}} {
		read := 0
		i := len(records)
		next := func() ([]byte, error) {
			if i == 0 {
				return nil, nil
			}
			i--
			read++
			return records[i], nil
		}
		got, err := readHistoryRange("e1", page.after, page.end, next)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != int(page.end-page.after) || got[0].Hash != all[page.after].Hash || text(t, got[len(got)-1].Output) != text(t, all[page.end-1].Output) {
			t.Fatalf("events %d to %d: got %d events, not the history's", page.after+1, page.end, len(got))
		}
		// Records from the newest down to the page's are read to find it
		// (a backend that finds records by position starts at the page).
		skipped := len(records) - int(page.end/2)
		if n := read - skipped; n > int(page.end-page.after)/2+65 {
			t.Errorf("events %d to %d: read %d records for the page and its documents, want at most %d", page.after+1, page.end, n, int(page.end-page.after)/2+65)
		}
	}
}

func text(t testing.TB, v any) string {
	t.Helper()
	b, err := jsonvalue.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// FuzzReadHistoryRange: a history record changed in any way gives an
// error or events, never a panic or a hang, for any page.
func FuzzReadHistoryRange(f *testing.F) {
	m := NewMemory()
	longHistory(f, m, "e1", 3)
	for _, r := range m.execs["e1"].history {
		f.Add(r, int64(0), 0)
		f.Add(r, int64(4), 1)
	}
	f.Fuzz(func(t *testing.T, record []byte, after int64, limit int) {
		records := [][]byte{append([]byte(nil), m.execs["e1"].history[0]...), record}
		_, _, err := ReadHistoryRange("e1", after, limit, records)
		if err != nil && !errors.Is(err, ErrTampered) && after >= 0 {
			t.Fatalf("ReadHistoryRange = %v, want nil or ErrTampered", err)
		}
	})
}
