package storetest

import (
	"errors"
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/aslrun/aslrun/engine"
	"github.com/aslrun/aslrun/store"
)

// testHistoryRange checks that every page HistoryRange reads is the
// same part of what History returns, hashes, links, documents and
// superseded flags included, in a history long enough that its documents
// rest on records far before the page (deltas, and documents stored
// once and shown again much later), with a rollback in it.
func testHistoryRange(t *testing.T, s store.Store) {
	create(t, s, newExecution(t, "e1"), newExecution(t, "empty"))
	ctx := t.Context()
	input := Doc(t, `{"input":"the execution's input, shown again and again","n":[1,2,3]}`)
	var id, own int64
	for c := range 150 {
		doc := Doc(t, fmt.Sprintf(`{"counter":%d,"payload":{"keep":"the same text in every step","list":[1,2,3]},"note":"step %d"}`, c, c%7))
		evs := []engine.Event{}
		for k := range 1 + c%3 {
			id++
			e := engine.Event{ID: id, Type: engine.EventTaskScheduled, Timestamp: at(time.Duration(id) * time.Millisecond), State: fmt.Sprintf("S%d", k), Scope: "", Document: doc, Input: doc}
			switch (c + k) % 4 {
			case 1:
				e.Output = input
			case 2:
				e.Type, e.Output, e.Scope = engine.EventTaskSucceeded, Doc(t, fmt.Sprintf(`{"item":%d}`, c)), "Map#1.0/3/"
			case 3:
				id--
				own++
				e.ID, e.Own, e.Type, e.Detail, e.Error, e.Cause = 0, own, "CheckpointSaved", Doc(t, `{"name":"cp"}`), "Custom.Error", "why"
			}
			evs = append(evs, e)
		}
		cm := &engine.Commit{Execution: "e1", Seq: int64(c + 1), Status: engine.StatusRunning, Events: evs, LastEvent: id, LastOwnEvent: own}
		if c == 120 {
			cm.Rollback = &engine.Rollback{ToEvent: id - 20, ToOwnEvent: own - 5}
		}
		commit(t, s, cm)
	}
	all := history(t, s, "e1")
	total := int64(len(all))
	// The texts of History's documents, made once: the loop below compares
	// each of them with many pages'.
	type texts struct{ input, output, detail string }
	wantTexts := make([]texts, len(all))
	for i, e := range all {
		wantTexts[i] = texts{text(e.Input), text(e.Output), text(e.Detail)}
	}
	for after := int64(0); after <= total+1; after++ {
		for _, limit := range []int{0, 1, 3, 17, 1000} {
			got, n, err := s.HistoryRange(ctx, "e1", after, limit)
			if err != nil {
				t.Fatalf("HistoryRange(e1, %d, %d) = %v", after, limit, err)
			}
			if n != total {
				t.Errorf("HistoryRange(e1, %d, %d) total = %d, want %d", after, limit, n, total)
			}
			var want []engine.Event
			var wt []texts
			if after < total {
				want, wt = all[after:], wantTexts[after:]
				if limit > 0 && limit < len(want) {
					want = want[:limit]
				}
			}
			if len(got) != len(want) {
				t.Fatalf("HistoryRange(e1, %d, %d) has %d events, want %d", after, limit, len(got), len(want))
			}
			for i := range want {
				g, w := got[i], want[i]
				if g.ID != w.ID || g.Own != w.Own || g.Type != w.Type || g.State != w.State || g.Scope != w.Scope || g.Error != w.Error || g.Cause != w.Cause ||
					!g.Timestamp.Equal(w.Timestamp) || g.Hash != w.Hash || g.PrevHash != w.PrevHash || g.DocHash != w.DocHash || g.Superseded != w.Superseded ||
					text(g.Input) != wt[i].input || text(g.Output) != wt[i].output || text(g.Detail) != wt[i].detail {
					t.Fatalf("HistoryRange(e1, %d, %d) event %d = %+v, want %+v", after, limit, after+int64(i)+1, g, w)
				}
			}
		}
	}

	// The length alone, and a limit that would overflow.
	if got, n, err := s.HistoryRange(ctx, "e1", math.MaxInt64, 1); err != nil || len(got) != 0 || n != total {
		t.Errorf("HistoryRange(e1, MaxInt64, 1) = %d events, %d, %v, want none, %d, nil", len(got), n, err, total)
	}
	if got, n, err := s.HistoryRange(ctx, "e1", total-1, math.MaxInt); err != nil || len(got) != 1 || n != total || got[0].Hash != all[total-1].Hash {
		t.Errorf("HistoryRange(e1, %d, MaxInt) = %d events, %d, %v, want the last, %d, nil", total-1, len(got), n, err, total)
	}

	got, n, err := s.HistoryRange(ctx, "empty", 0, 10)
	if err != nil || len(got) != 0 || n != 0 {
		t.Errorf("HistoryRange(empty, 0, 10) = %d events, %d, %v, want none, 0, nil", len(got), n, err)
	}
	if _, _, err := s.HistoryRange(ctx, "nope", 0, 10); !errors.Is(err, engine.ErrNotFound) {
		t.Errorf("HistoryRange(nope) = %v, want ErrNotFound", err)
	}
	if _, _, err := s.HistoryRange(ctx, "e1", -1, 10); err == nil {
		t.Errorf("HistoryRange(e1, -1, 10) = nil error, want one")
	}
}
