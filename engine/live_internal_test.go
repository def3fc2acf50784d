package engine

import (
	"context"
	"fmt"
	"strings"
	"sync"
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
	if len(first.Chunks) != 0 || first.Epoch != "" || first.Mirror || first.Running {
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
	r := x.Live("e", "", 0)
	if r.Epoch == "" || r.Mirror {
		t.Fatalf("a feed written here reads %+v", r)
	}
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

// fakeRelay records what an executor tells its LiveRelay.
type fakeRelay struct {
	mu      sync.Mutex
	wants   []string
	settled []string
}

func (r *fakeRelay) Want(id string, want bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.wants = append(r.wants, fmt.Sprintf("%s:%v", id, want))
}

func (r *fakeRelay) Settle(_ context.Context, id string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.settled = append(r.settled, id)
	return nil
}

// TestLiveMirror: chunks relayed from another process keep their epoch
// and numbers, gaps count as missed, chunks held already are skipped, a
// relayed feed of another epoch replaces the mirror (its readers woken),
// and a state that streams here replaces a mirror with a feed of its own.
func TestLiveMirror(t *testing.T) {
	x := New(Config{})
	empty := x.Live("e", "", 0)
	x.MirrorLive("e", "remote1", []Chunk{{Seq: 1, Kind: ChunkStart, State: "Draft"}, {Seq: 2, Kind: ChunkText, Text: "Hel"}})
	select {
	case <-empty.Changed:
	default:
		t.Fatal("a relayed chunk did not wake the reader")
	}
	r := x.Live("e", "", 0)
	if r.Epoch != "remote1" || !r.Mirror || len(r.Chunks) != 2 || r.Missed != 0 {
		t.Fatalf("mirror reads %+v", r)
	}
	// Seq 2 again is skipped; 3 was lost on the way: one missed.
	x.MirrorLive("e", "remote1", []Chunk{{Seq: 2, Kind: ChunkText, Text: "Hel"}, {Seq: 4, Kind: ChunkText, Text: "lo"}})
	r = x.Live("e", "remote1", 2)
	if len(r.Chunks) != 1 || r.Chunks[0].Seq != 4 || r.Missed != 1 {
		t.Fatalf("after a gap: %+v", r)
	}
	if ep, seq := x.LivePosition("e"); ep != "remote1" || seq != 4 {
		t.Errorf("position %s %d", ep, seq)
	}
	// Another epoch: the execution ran again elsewhere.
	x.MirrorLive("e", "remote2", []Chunk{{Seq: 1, Kind: ChunkStart, State: "Draft"}})
	select {
	case <-r.Changed:
	default:
		t.Fatal("a new epoch did not wake the reader")
	}
	r = x.Live("e", "remote1", 4)
	if r.Epoch != "remote2" || len(r.Chunks) != 1 || r.Missed != 4 {
		t.Fatalf("another epoch: %+v", r)
	}
	// The execution runs here now: a feed of its own.
	s := x.startStream("e", "Draft", "Draft#1", 1, streamShape{})
	s.write(0, "x")
	s.end("")
	r = x.Live("e", "", 0)
	if r.Mirror || r.Epoch == "remote2" || len(r.Chunks) != 3 || r.Chunks[0].Kind != ChunkStart {
		t.Fatalf("a stream here after a mirror: %+v", r)
	}
	// A relayed feed of another epoch while a state streams here is of
	// a process that lost the execution: dropped.
	s = x.startStream("e", "Next", "Next#1", 1, streamShape{})
	x.MirrorLive("e", "stale", []Chunk{{Seq: 9, Kind: ChunkText, Text: "old"}})
	if got := x.Live("e", "", 0); got.Mirror || got.Epoch != r.Epoch || !got.Running {
		t.Errorf("a stale relay replaced a running feed: %+v", got)
	}
	s.end("")
}

// TestLiveFollowAndFlush: FollowLive tells the relay of the first reader
// and the last; a stream's end waits for a relay watching the feed to
// publish it, and SettleLive asks the relay only for feeds not written
// here.
func TestLiveFollowAndFlush(t *testing.T) {
	x := New(Config{})
	fr := &fakeRelay{}
	x.SetLiveRelay(fr)
	a, b := x.FollowLive("e"), x.FollowLive("e")
	a()
	a() // twice is once
	b()
	if got := strings.Join(fr.wants, " "); got != "e:true e:false" {
		t.Errorf("wants %s", got)
	}
	if err := x.SettleLive(context.Background(), "e"); err != nil || len(fr.settled) != 1 {
		t.Errorf("settle of a feed not written here: %v %v", err, fr.settled)
	}
	synctest.Test(t, func(t *testing.T) {
		x := New(Config{})
		x.SetLiveRelay(&fakeRelay{})
		release := x.WatchLive("e")
		s := x.startStream("e", "Draft", "Draft#1", 1, streamShape{})
		ended := make(chan struct{})
		go func() {
			s.end("")
			close(ended)
		}()
		synctest.Wait()
		select {
		case <-ended:
			t.Fatal("the stream ended before the relay published it")
		default:
		}
		ep, seq := x.LivePosition("e")
		x.PublishedLive("e", ep, seq)
		synctest.Wait()
		select {
		case <-ended:
		default:
			t.Fatal("publishing did not end the stream")
		}
		if err := x.SettleLive(context.Background(), "e"); err != nil {
			t.Fatal(err)
		}
		// Unpublished, the end waits liveFlushWait at most.
		s = x.startStream("e", "Draft", "Draft#2", 1, streamShape{})
		start := time.Now()
		s.end("")
		if waited := time.Since(start); waited != liveFlushWait {
			t.Errorf("an unpublished end waited %v", waited)
		}
		release()
		s = x.startStream("e", "Draft", "Draft#3", 1, streamShape{})
		start = time.Now()
		s.end("")
		if waited := time.Since(start); waited != 0 {
			t.Errorf("with no relay watching, the end waited %v", waited)
		}
	})
}
