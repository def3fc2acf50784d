package engine_test

import (
	"context"
	"testing"

	"github.com/aslrun/aslrun/engine"
)

// BenchmarkActivityRoundTrip runs an execution to a Task of an activity
// (committed as WAITING with its task), hands the task to a worker
// (PollActivity: the ActivityStarted commit), and answers it
// (SendTaskSuccess), running the execution to its end: what a task of an
// activity costs the engine, beside the worker's HTTP round trips.
func BenchmarkActivityRoundTrip(b *testing.B) {
	def := `{"StartAt":"Review","States":{"Review":{"Type":"Task","Resource":"arn:aws:states:us-east-1:123456789012:activity:review",
		"Parameters":{"ticket.$":"$.payload.ticket"},"HeartbeatSeconds":60,"TimeoutSeconds":3600,"ResultPath":"$.review","Next":"Done"},
		"Done":{"Type":"Succeed"}}}`
	m, input := benchMachine(b, def)
	answer := map[string]any{"verdict": "ok"}
	for _, sc := range benchStores(b)[1:] {
		b.Run(sc.name, func(b *testing.B) {
			x := engine.New(engine.Config{Store: sc.open(b)})
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				res, err := x.Run(ctx, m, input, engine.StartOptions{})
				if err != nil || res.Status != engine.StatusWaiting {
					b.Fatalf("run: %v %+v", err, res)
				}
				task, err := x.PollActivity(ctx, "review", engine.PollOptions{Worker: "bench"})
				if err != nil || task == nil {
					b.Fatalf("poll: %v %+v", err, task)
				}
				res, err = x.SendTaskSuccess(ctx, task.Token, answer, engine.ResumeOptions{})
				if err != nil || res.Status != engine.StatusSucceeded {
					b.Fatalf("answer: %v %+v", err, res)
				}
			}
		})
	}
}
