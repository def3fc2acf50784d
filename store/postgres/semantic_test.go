package postgres

import (
	"context"
	"fmt"
	"testing"

	"github.com/aslrun/aslrun/engine"
	"github.com/aslrun/aslrun/states"
)

// TestSemanticMemoryPostgres: two servers share a database; what one
// writes to a semantic collection the other recalls by meaning, also
// after it searched the collection once (its index learns of the other's
// writes through the store's fingerprint), and episodic events of both
// are read in time order.
func TestSemanticMemoryPostgres(t *testing.T) {
	url := testServer.Schema(t)
	ctx := context.Background()
	var xs []*engine.Executor
	for range 2 {
		db, err := Open(ctx, url, Options{Migrate: true})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		xs = append(xs, engine.New(engine.Config{Store: db}))
	}
	parse := func(def string) *states.Machine {
		m, err := states.Parse([]byte(def))
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	write := parse(`{"StartAt":"W","States":{"W":{"Type":"Pass","Memory":{"Type":"semantic","Write":{"Collection":"kb","Value.$":"$.text"}},"Next":"E"},
		"E":{"Type":"Pass","Memory":{"Type":"episodic","Write":{"Value.$":"$.text"}},"End":true}}}`)
	recall := parse(`{"StartAt":"R","States":{"R":{"Type":"Pass","Memory":{"Type":"semantic","Read":{"Collection":"kb","Query.$":"$.q","TopK":1,"InjectAt":"$.hit"}},"Next":"E"},
		"E":{"Type":"Pass","Memory":{"Type":"episodic","Read":{"Order":"asc","InjectAt":"$.events"}},"End":true}}}`)
	run := func(x *engine.Executor, m *states.Machine, in map[string]any) map[string]any {
		t.Helper()
		res, err := x.Run(ctx, m, in, engine.StartOptions{})
		if err != nil || res.Status != engine.StatusSucceeded {
			t.Fatalf("%v %+v", err, res)
		}
		return res.Output.(map[string]any)
	}
	run(xs[0], write, map[string]any{"text": "the invoice was paid twice"})
	out := run(xs[1], recall, map[string]any{"q": "paid the invoice twice"})
	if hit := out["hit"].([]any); len(hit) != 1 || hit[0].(map[string]any)["text"] != "the invoice was paid twice" {
		t.Fatalf("server 1 recalled %v", hit)
	}
	run(xs[0], write, map[string]any{"text": "the delivery van broke down"})
	out = run(xs[1], recall, map[string]any{"q": "delivery van broke"})
	if hit := out["hit"].([]any); len(hit) != 1 || hit[0].(map[string]any)["text"] != "the delivery van broke down" {
		t.Errorf("after another server wrote, server 1 recalled %v", hit)
	}
	if events := out["events"].([]any); fmt.Sprint(len(events)) != "2" || events[0].(map[string]any)["event"] != "the invoice was paid twice" {
		t.Errorf("events %v", events)
	}
}
