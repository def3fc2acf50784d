package engine

import (
	"fmt"
	"strings"
	"testing"
	"testing/synctest"
	"time"
)

// TestLiveFeed: a reader gets the chunks after its position, is woken
// when more come, is told how many it missed when the ring dropped them
// or its epoch is not the feed's, and a state streaming again in the
// same feed opens with a restart.
func TestLiveFeed(t *testing.T) {
	x := New(Config{})
	first := x.Live("e", "", 0)
	if len(first.Chunks) != 0 || first.Epoch == "" {
		t.Fatalf("an empty feed reads %+v", first)
	}
	s := x.startStream("e", "Draft", "Draft#1", 1, streamShape{})
	select {
	case <-first.Changed:
	default:
		t.Fatal("starting a stream did not wake the reader")
	}
	s.write(1, "Hello ")
	s.write(1, "world")
	s.end("")
	r := x.Live("e", first.Epoch, 0)
	var kinds []string
	for _, c := range r.Chunks {
		kinds = append(kinds, c.Kind+":"+c.Text)
	}
	if got := strings.Join(kinds, "|"); got != "start:|chunk:Hello |chunk:world|end:" {
		t.Fatalf("chunks %s", got)
	}
	if r.Chunks[1].Seq != 2 || r.Chunks[1].Turn != 1 || r.Chunks[1].State != "Draft" || r.Chunks[1].Step != "Draft#1" {
		t.Errorf("chunk %+v", r.Chunks[1])
	}
	if after := x.Live("e", r.Epoch, 2); len(after.Chunks) != 2 || after.Chunks[0].Seq != 3 || after.Missed != 0 {
		t.Errorf("after 2: %+v", after)
	}
	if other := x.Live("e", "another-epoch", 3); other.Missed != 3 || len(other.Chunks) != 4 {
		t.Errorf("another epoch: missed %d, %d chunks; want 3 missed and the whole feed", other.Missed, len(other.Chunks))
	}
	again := x.startStream("e", "Draft", "Draft#1", 2, streamShape{})
	again.end("States.Timeout")
	r = x.Live("e", r.Epoch, 4)
	if len(r.Chunks) != 2 || r.Chunks[0].Kind != ChunkRestart || r.Chunks[0].Attempt != 2 || r.Chunks[1].Error != "States.Timeout" {
		t.Errorf("a retry's stream: %+v", r.Chunks)
	}
	// The ring keeps the latest liveKeep chunks.
	big := x.startStream("e", "Long", "Long#1", 1, streamShape{})
	for range liveKeep + 10 {
		big.write(0, "x")
	}
	r = x.Live("e", r.Epoch, 1)
	if len(r.Chunks) != liveKeep || r.Missed != int64(6+liveKeep+10+1-liveKeep-1) {
		t.Errorf("%d chunks, %d missed", len(r.Chunks), r.Missed)
	}
	if last := r.Chunks[len(r.Chunks)-1]; last.Seq != int64(6+1+liveKeep+10) {
		t.Errorf("the last chunk is %d", last.Seq)
	}
}

// TestProgressCountsTrailing: a Map's count that comes within the
// interval of the last report is sent when the interval ends, once, and
// the final count at once.
func TestProgressCountsTrailing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		x := New(Config{})
		x.Live("e", "", 0)
		c := &counts{x: x, id: "e", state: "Each", step: "Each#1", total: 3}
		reports := func() []string {
			var out []string
			for _, ch := range x.Live("e", "", 0).Chunks {
				out = append(out, fmt.Sprintf("%d/%d", ch.Progress.Completed, ch.Progress.Total))
			}
			return out
		}
		c.start()
		c.start()
		c.end(0, false) // reported at once
		c.end(1, false) // within the interval: held back
		if got := fmt.Sprint(reports()); got != "[1/3]" {
			t.Fatalf("reports %s, want the first only", got)
		}
		time.Sleep(progressEvery)
		synctest.Wait()
		if got := fmt.Sprint(reports()); got != "[1/3 2/3]" {
			t.Fatalf("after the interval: %s", got)
		}
		c.start()
		c.end(2, false) // the last: at once, though within the interval
		time.Sleep(time.Second)
		synctest.Wait()
		if got := fmt.Sprint(reports()); got != "[1/3 2/3 3/3]" {
			t.Fatalf("reports %s", got)
		}
	})
}

// TestProgressCombines: the parts of a Map or Parallel combine by count,
// average, minimum or weights.
func TestProgressCombines(t *testing.T) {
	parts := map[int]float64{0: 100, 1: 50, 2: 0}
	for _, tc := range []struct {
		how     string
		weights []float64
		want    float64
	}{
		{"count", nil, 100.0 / 3}, // one of three ended
		{"average", nil, 50},
		{"minimum", nil, 0},
		{"weighted", []float64{1, 2, 1}, 50},
		{"weighted", []float64{2, 1, 1}, 62.5},
	} {
		c := &counts{how: tc.how, weights: tc.weights, total: 3, completed: 1, parts: parts}
		if got := c.percentLocked(); fmt.Sprintf("%.4f", got) != fmt.Sprintf("%.4f", tc.want) {
			t.Errorf("%s %v: %v, want %v", tc.how, tc.weights, got, tc.want)
		}
	}
}
