package server

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/aslrun/aslrun/api"
	"github.com/aslrun/aslrun/engine"
	"github.com/aslrun/aslrun/store"
)

// boltServer is a test server on a bbolt database.
func boltServer(t testing.TB) (*httptest.Server, string) {
	t.Helper()
	dir := t.TempDir()
	tokens := filepath.Join(dir, "tokens")
	tok, err := CreateToken(tokens, "ops", RoleOperator)
	if err != nil {
		t.Fatal(err)
	}
	ts, err := LoadTokens(tokens)
	if err != nil {
		t.Fatal(err)
	}
	st, err := store.OpenBolt(filepath.Join(dir, "b.db"), store.BoltOptions{})
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(Config{Store: st, Executor: engine.New(engine.Config{Store: st}), Tokens: ts, Logger: discardLogger(), Poll: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(s.Handler())
	t.Cleanup(func() {
		hs.Close()
		s.Close()
		st.Close()
	})
	return hs, tok
}

// start posts one start request and returns the status.
func start(hc *http.Client, url, token string, body []byte) (int, error) {
	req, err := http.NewRequest("POST", url+"/v1/executions", bytesReader(body))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := hc.Do(req)
	if err != nil {
		return 0, err
	}
	resp.Body.Close()
	return resp.StatusCode, nil
}

// TestConcurrentStarts: 200 starts at once over HTTP on bbolt all
// complete.
func TestConcurrentStarts(t *testing.T) {
	hs, tok := boltServer(t)
	def := json.RawMessage(`{"StartAt":"A","States":{"A":{"Type":"Pass","Result":1,"ResultPath":"$.a","Next":"B"},"B":{"Type":"Pass","End":true}}}`)
	var wg sync.WaitGroup
	codes := make([]int, 200)
	for i := range codes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			body, _ := json.Marshal(api.StartExecution{Definition: def, Name: fmt.Sprintf("c%03d", i), Input: json.RawMessage(fmt.Sprintf(`{"i":%d}`, i))})
			code, err := start(hs.Client(), hs.URL, tok, body)
			if err != nil {
				t.Error(err)
			}
			codes[i] = code
		}()
	}
	wg.Wait()
	if slices.ContainsFunc(codes, func(c int) bool { return c != http.StatusCreated }) {
		t.Fatalf("start codes %v, want 201 each", codes)
	}
	deadline := time.Now().Add(time.Minute)
	for {
		req, _ := http.NewRequest("GET", hs.URL+"/v1/executions?status=SUCCEEDED&limit=1000", nil)
		req.Header.Set("Authorization", "Bearer "+tok)
		resp, err := hs.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var l api.ExecutionList
		err = json.NewDecoder(resp.Body).Decode(&l)
		resp.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		if len(l.Executions) == 200 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of 200 executions succeeded", len(l.Executions))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// BenchmarkStartOverHTTP measures a start call over HTTP on bbolt (a
// two-state workflow: the call answers once the execution exists), and
// reports starts per second and the p50 and p99 of a call.
func BenchmarkStartOverHTTP(b *testing.B) {
	hs, tok := boltServer(b)
	def := json.RawMessage(`{"StartAt":"A","States":{"A":{"Type":"Pass","Result":1,"ResultPath":"$.a","Next":"B"},"B":{"Type":"Pass","End":true}}}`)
	body, _ := json.Marshal(api.StartExecution{Definition: def, Input: json.RawMessage(`{"x":1}`)})
	var mu sync.Mutex
	var lat []time.Duration
	b.ResetTimer()
	start0 := time.Now()
	b.RunParallel(func(pb *testing.PB) {
		var mine []time.Duration
		for pb.Next() {
			t0 := time.Now()
			code, err := start(hs.Client(), hs.URL, tok, body)
			if err != nil || code != http.StatusCreated {
				b.Errorf("start: %d %v", code, err)
				return
			}
			mine = append(mine, time.Since(t0))
		}
		mu.Lock()
		lat = append(lat, mine...)
		mu.Unlock()
	})
	elapsed := time.Since(start0)
	b.StopTimer()
	if len(lat) == 0 {
		return
	}
	slices.Sort(lat)
	b.ReportMetric(float64(len(lat))/elapsed.Seconds(), "starts/s")
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
}
