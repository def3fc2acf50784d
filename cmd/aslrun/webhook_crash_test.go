package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/aslrun/aslrun/api"
	"github.com/aslrun/aslrun/client"
	"github.com/aslrun/aslrun/engine"
	"github.com/aslrun/aslrun/store"
)

// hookReceiver counts the webhook deliveries it gets by id, checking
// each signature, and signals every time its count of deliveries reaches
// a mark.
type hookReceiver struct {
	mu       sync.Mutex
	received map[string]int
	total    int
	reached  chan int
	// got is signalled after every delivery (not blocking: one signal
	// stands for any number).
	got chan struct{}
}

// TestWebhookSurvivesKills: `aslrun serve` is SIGKILLed 5 times while an
// execution emitting 203 events to a webhook channel runs (the kills come
// as the receiver's count of deliveries passes marks); each serve resumes
// the execution and the deliveries. In the end every event in the outbox
// is DELIVERED and reached the receiver at least once, with a valid
// signature, and the receiver got no event that is not in the outbox.
func TestWebhookSurvivesKills(t *testing.T) {
	const secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	t.Setenv("ASLRUN_WEBHOOK_SECRET", secret)
	wh, err := standardwebhooks.NewWebhook(secret)
	if err != nil {
		t.Fatal(err)
	}
	rc := &hookReceiver{received: map[string]int{}, reached: make(chan int, 100), got: make(chan struct{}, 1)}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if err := wh.Verify(body, r.Header); err != nil {
			t.Errorf("a delivery's signature does not verify: %v", err)
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		rc.mu.Lock()
		rc.received[r.Header.Get("webhook-id")]++
		rc.total++
		if rc.total%30 == 0 {
			rc.reached <- rc.total
		}
		rc.mu.Unlock()
		select {
		case rc.got <- struct{}{}:
		default:
		}
	}))
	defer srv.Close()

	dir := t.TempDir()
	db := filepath.Join(dir, "hooks.db")
	host := strings.TrimPrefix(srv.URL, "http://")
	def := json.RawMessage(`{"StartAt": "Each",
	  "Events": {"Channels": {"hooks": {"Type": "webhook", "Url": "` + srv.URL + `/events"}},
	    "OnStateChange": {"Channel": "hooks"}, "OnComplete": {"Channel": "hooks"}},
	  "States": {"Each": {"Type": "Map", "ItemsPath": "$.items", "MaxConcurrency": 1, "End": true,
	    "ItemProcessor": {"StartAt": "A", "States": {
	      "A": {"Type": "Pass", "Next": "B"},
	      "B": {"Type": "Task", "Agent": "Work", "End": true}}}}}}`)
	mock := json.RawMessage(`{"Work": {"0-999": {"Return": "ok", "DelaySeconds": 0.02}}}`)
	items := make([]int, 50)
	input, _ := json.Marshal(map[string]any{"items": items})
	p := startServe(t, db, "--allow-host", host, "--webhook-timeout", "500ms")
	c := client.NewUnix(p.sock)
	ctx := context.Background()
	if _, err := c.Start(ctx, api.StartExecution{Definition: def, Mock: mock, Name: "hooks", Input: input}); err != nil {
		t.Fatal(err)
	}
	for kill := 1; kill <= 5; kill++ {
		select {
		case n := <-rc.reached:
			p.stop(t, syscall.SIGKILL)
			t.Logf("kill %d after %d deliveries", kill, n)
		case <-time.After(time.Minute):
			t.Fatalf("kill %d: no deliveries came; serve log:\n%s", kill, p.log)
		}
		p = startServe(t, db, "--allow-host", host, "--webhook-timeout", "500ms")
	}
	c = client.NewUnix(p.sock)
	waitCtx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	if e, err := c.Wait(waitCtx, "hooks", 20*time.Millisecond); err != nil || e.Status != "SUCCEEDED" {
		t.Fatalf("the execution: %+v %v; log:\n%s", e, err, p.log)
	}
	// Every delivery of the outbox reaches the receiver and is recorded:
	// while some are not DELIVERED (their attempt was cut by a kill), a
	// serve runs until each of them reaches the receiver once more.
	outboxIDs := func() (ids, pending []string) {
		p.stop(t, syscall.SIGTERM)
		st, err := store.OpenBolt(db, store.BoltOptions{})
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		after := ""
		for {
			page, err := st.ListDeliveries(ctx, engine.DeliveryFilter{After: after, Limit: 100})
			if err != nil {
				t.Fatal(err)
			}
			for _, d := range page {
				ids = append(ids, d.ID)
				if d.Status != engine.DeliveryDelivered {
					pending = append(pending, d.ID)
				}
			}
			if len(page) < 100 {
				return ids, pending
			}
			after = page[len(page)-1].ID
		}
	}
	ids, pending := outboxIDs()
	for round := 0; len(pending) > 0; round++ {
		if round == 5 {
			t.Fatalf("%d deliveries still not delivered: %v", len(pending), pending)
		}
		rc.mu.Lock()
		before := map[string]int{}
		for _, id := range pending {
			before[id] = rc.received[id]
		}
		rc.mu.Unlock()
		p = startServe(t, db, "--allow-host", host, "--webhook-timeout", "500ms")
		for waiting := true; waiting; {
			rc.mu.Lock()
			waiting = false
			for _, id := range pending {
				if rc.received[id] == before[id] {
					waiting = true
				}
			}
			rc.mu.Unlock()
			if !waiting {
				break
			}
			select {
			case <-rc.got:
			case <-time.After(30 * time.Second):
				t.Fatalf("the deliveries %v were not sent again; log:\n%s", pending, p.log)
			}
		}
		ids, pending = outboxIDs()
	}
	if len(ids) != 203 {
		t.Errorf("%d events in the outbox, want 203 (4 per item, the Map's 2, the end)", len(ids))
	}
	rc.mu.Lock()
	defer rc.mu.Unlock()
	inOutbox := map[string]bool{}
	for _, id := range ids {
		inOutbox[id] = true
		if rc.received[id] == 0 {
			t.Errorf("event %s never reached the receiver", id)
		}
	}
	again := 0
	for id, n := range rc.received {
		if !inOutbox[id] {
			t.Errorf("the receiver got %s, which is not in the outbox", id)
		}
		again += n - 1
	}
	t.Logf("%d events, %d deliveries, %d sent again after a kill", len(ids), rc.total, again)
}
