package server

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/aslrun/aslrun/api"
	"github.com/aslrun/aslrun/engine"
	"github.com/aslrun/aslrun/store/postgres"
	"github.com/aslrun/aslrun/store/postgres/pgtest"
)

// TestActivityTwoServersPostgres: two servers share one PostgreSQL; the
// tasks one of them schedules are found by the other's polls too, and
// each goes to exactly one of the many workers polling both.
func TestActivityTwoServersPostgres(t *testing.T) {
	base := pgtest.Fresh(t)
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "tokens")
	op, err := CreateToken(path, "ops", RoleOperator)
	if err != nil {
		t.Fatal(err)
	}
	worker, err := CreateToken(path, "py", RoleWorker)
	if err != nil {
		t.Fatal(err)
	}
	tokens, err := LoadTokens(path)
	if err != nil {
		t.Fatal(err)
	}
	var urls []string
	for range 2 {
		db, err := postgres.Open(ctx, base, postgres.Options{Migrate: true})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		s, err := New(Config{Store: db, Executor: engine.New(engine.Config{Store: db}), Tokens: tokens, Poll: 50 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		s.log = discardLogger()
		hs := httptest.NewServer(s.Handler())
		runCtx, cancel := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() { s.Run(runCtx); close(done) }()
		t.Cleanup(func() { hs.Close(); cancel(); <-done; s.Close() })
		urls = append(urls, hs.URL)
	}
	post := func(url, tok, path string, body any, out any) int {
		t.Helper()
		b, _ := json.Marshal(body)
		req, _ := http.NewRequest("POST", url+path, bytesReader(b))
		req.Header.Set("Authorization", "Bearer "+tok)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Error(err)
			return 0
		}
		defer resp.Body.Close()
		if out != nil && resp.StatusCode == 200 {
			json.NewDecoder(resp.Body).Decode(out)
		}
		return resp.StatusCode
	}
	const tasks, pollers = 8, 16
	for i := range tasks {
		start := map[string]any{"definition": json.RawMessage(activityDefinition), "input": map[string]any{"doc": i}, "name": fmt.Sprintf("e%d", i)}
		if code := post(urls[0], op, "/v1/executions", start, nil); code != http.StatusCreated {
			t.Fatalf("start: %d", code)
		}
	}
	var (
		mu  sync.Mutex
		got = map[string][]string{} // execution → tokens handed out
		wg  sync.WaitGroup
	)
	for i := range pollers {
		wg.Go(func() {
			var task api.ActivityTask
			if code := post(urls[i%2], worker, "/v1/activities/review/poll?wait=2", map[string]any{"workerName": fmt.Sprint("w", i)}, &task); code == http.StatusOK {
				mu.Lock()
				got[task.Execution] = append(got[task.Execution], task.TaskToken)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if len(got) != tasks {
		t.Errorf("%d executions' tasks handed out, want %d: %v", len(got), tasks, got)
	}
	for id, toks := range got {
		if len(toks) != 1 {
			t.Errorf("the task of %s went to %d workers", id, len(toks))
		}
		// Answered through the other server than the one that ran it.
		if code := post(urls[1], worker, "/v1/task-tokens/success", map[string]any{"token": toks[0], "output": "ok"}, nil); code != http.StatusAccepted {
			t.Errorf("answer for %s: %d", id, code)
		}
	}
	for id := range got {
		deadline := time.Now().Add(20 * time.Second)
		for {
			req, _ := http.NewRequest("GET", urls[0]+"/v1/executions/"+id, nil)
			req.Header.Set("Authorization", "Bearer "+op)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			var e api.Execution
			json.NewDecoder(resp.Body).Decode(&e)
			resp.Body.Close()
			if e.Status == "SUCCEEDED" {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s is %s, want SUCCEEDED", id, e.Status)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
}
