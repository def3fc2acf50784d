package history

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aslrun/aslrun/engine"
	"github.com/aslrun/aslrun/jsonvalue"
	"github.com/aslrun/aslrun/server"
	"github.com/aslrun/aslrun/store"
)

// viewers is how many streams follow the execution in
// BenchmarkHistoryStreamViewers.
const viewers = 200

// cpuTime is the CPU time the process has used, user and system.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkHistoryStreamViewers: 200 streams (each its own caller)
// follow one execution over HTTP on bbolt, whose history already holds
// 1,000 events; each operation commits 10 more events and waits until
// every stream has sent them. It reports the wall time of an operation
// (mostly the streams' poll interval), the process's CPU time per
// operation (cpu-ms/op: server and clients) and allocations.
func BenchmarkHistoryStreamViewers(b *testing.B) {
	dir := b.TempDir()
	st, err := store.OpenBolt(filepath.Join(dir, "bench.db"), store.BoltOptions{})
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	const id = "watched"
	fill(b, st, id, 1000)
	tokensFile := filepath.Join(dir, "tokens")
	tokens := make([]string, viewers)
	for i := range tokens {
		if tokens[i], err = server.CreateToken(tokensFile, fmt.Sprint("viewer-", i), server.RoleViewer); err != nil {
			b.Fatal(err)
		}
	}
	toks, err := server.LoadTokens(tokensFile)
	if err != nil {
		b.Fatal(err)
	}
	srv, err := server.New(server.Config{Store: st, Executor: engine.New(engine.Config{Store: st}), Tokens: toks,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		b.Fatal(err)
	}
	hs := httptest.NewServer(srv.Handler())
	defer hs.Close()
	defer srv.Close()

	// Each viewer sends the id of every event its stream gives.
	seen := make([]chan int64, viewers)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: viewers}}
	for i := range seen {
		seen[i] = make(chan int64, 4096)
		req, err := http.NewRequestWithContext(ctx, "GET", hs.URL+"/v1/executions/"+id+"/events?after=1000", nil)
		if err != nil {
			b.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+tokens[i])
		resp, err := client.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		if resp.StatusCode != http.StatusOK {
			b.Fatalf("viewer %d: %s", i, resp.Status)
		}
		go func(ch chan<- int64, body io.ReadCloser) {
			defer body.Close()
			defer close(ch)
			sc := bufio.NewScanner(body)
			sc.Buffer(nil, 1<<20)
			for sc.Scan() {
				if v, ok := strings.CutPrefix(sc.Text(), "id: "); ok {
					n, _ := strconv.ParseInt(v, 10, 64)
					ch <- n
				}
			}
		}(seen[i], resp.Body)
	}

	doc, err := jsonvalue.Decode(fmt.Appendf(nil, `{"counter":0,"payload":%q}`, payload))
	if err != nil {
		b.Fatal(err)
	}
	seq, last := int64(1000/eventsPerCommit), int64(1000)
	b.ReportAllocs()
	b.ResetTimer()
	cpu := cpuTime()
	for range b.N {
		events := make([]engine.Event, eventsPerCommit)
		for k := range events {
			last++
			events[k] = engine.Event{ID: last, Type: "PassStateExited", Timestamp: time.Now(), State: "S", Document: doc, Output: doc}
		}
		seq++
		if err := st.Commit(ctx, &engine.Commit{Execution: id, Seq: seq, Status: engine.StatusRunning, Events: events, LastEvent: last}); err != nil {
			b.Fatal(err)
		}
		for i, ch := range seen {
			reached := false
			for n := range ch {
				if n >= last {
					reached = true
					break
				}
			}
			if !reached {
				b.Fatalf("viewer %d: the stream ended before event %d", i, last)
			}
		}
	}
	b.StopTimer()
	b.ReportMetric(float64((cpuTime()-cpu).Microseconds())/1000/float64(b.N), "cpu-ms/op")
}
