package main

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aslrun/aslrun/api"
	"github.com/aslrun/aslrun/client"
)

// TestPostgresStreamAcrossServers: two servers share a database; a
// client of each follows an execution whose state streams, which only
// one of them runs. Both clients get the streamed text while the state
// runs (the first chunk before the model's answer ends), every chunk
// once, under the same event ids, and then `end`: the server that does
// not run it relays the chunks through the database.
func TestPostgresStreamAcrossServers(t *testing.T) {
	if testing.Short() {
		t.Skip("skipped in -short mode")
	}
	url, _ := pgDatabase(t)
	dir := t.TempDir()
	fake := &streamFake{}
	hold := fake.holding(true)
	_, agentsFile := streamSetup(t, dir, fake)
	servers := startServers(t, url, 2, "--agents", agentsFile)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	def := []byte(`{"StartAt":"Ask","States":{"Ask":{"Type":"Task","Agent":"Greeter","Streaming":{},"ResultPath":"$.answer","Next":"Done"},"Done":{"Type":"Pass","End":true}}}`)
	if _, err := client.NewUnix(servers[0].sock).Start(ctx, api.StartExecution{Definition: def, Name: "s1"}); err != nil {
		t.Fatal(err)
	}
	type seen struct {
		mu     sync.Mutex
		text   strings.Builder
		ids    []string
		ended  bool
		first  chan struct{}
		closed bool
	}
	follow := func(sock string, s *seen) {
		for ev, err := range client.NewUnix(sock).Stream(ctx, "s1", client.StreamOptions{}) {
			if err != nil {
				t.Errorf("%s: %v", sock, err)
				return
			}
			s.mu.Lock()
			switch ev.Event {
			case "chunk":
				var c struct{ Text string }
				if err := json.Unmarshal(ev.Data, &c); err != nil {
					t.Error(err)
				}
				s.text.WriteString(c.Text)
				s.ids = append(s.ids, ev.ID[strings.Index(ev.ID, ":"):])
				if !s.closed {
					s.closed = true
					close(s.first)
				}
			case "end":
				s.ended = true
			}
			s.mu.Unlock()
		}
	}
	got := []*seen{{first: make(chan struct{})}, {first: make(chan struct{})}}
	var wg sync.WaitGroup
	for i, s := range got {
		wg.Add(1)
		go func() {
			defer wg.Done()
			follow(servers[i].sock, s)
		}()
	}
	// Both have the first chunk while the model still holds its answer.
	for i, s := range got {
		select {
		case <-s.first:
		case <-ctx.Done():
			t.Fatalf("server %d's client never got the first chunk of the running state; logs:\n%s", i, serverLogs(servers)())
		}
	}
	close(hold)
	wg.Wait()
	for i, s := range got {
		if s.text.String() != "Hello, streamed world." || !s.ended {
			t.Errorf("server %d's client got %q (ended %v)", i, s.text.String(), s.ended)
		}
	}
	if a, b := strings.Join(got[0].ids, " "), strings.Join(got[1].ids, " "); a != b {
		t.Errorf("the chunks' ids differ between the servers: %s and %s", a, b)
	}
}
