package engine_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/aslrun/aslrun/agents"
	"github.com/aslrun/aslrun/engine"
	"github.com/aslrun/aslrun/store"
)

// feedbackWaitFlow asks for a rating on Answer's output and waits for it
// before Send runs.
const feedbackWaitFlow = `{"StartAt":"Answer","States":{
	"Answer":{"Type":"Task","Agent":"Writer","ResultPath":"$.draft","Feedback":{"Type":"rating","Wait":true%s},"Next":"Send"},
	"Send":{"Type":"Task","Agent":"Sender","ResultPath":"$.sent","End":true}}}`

// feedbackWaitAgents are a Writer and a Sender that count their calls.
type feedbackWaitAgents struct{ writes, sends atomic.Int64 }

func (a *feedbackWaitAgents) registry(t *testing.T) *agents.Registry {
	t.Helper()
	reg := registry(t, agents.Func(func(context.Context, *agents.Request) (any, error) {
		a.writes.Add(1)
		return map[string]any{"text": "hello"}, nil
	}), "Writer")
	if err := reg.Register("Sender", agents.Func(func(context.Context, *agents.Request) (any, error) {
		a.sends.Add(1)
		return "ok", nil
	})); err != nil {
		t.Fatal(err)
	}
	return reg
}

// feedbackFor is a rating of 4 on the visit step of execution id.
func feedbackFor(id, step string) *engine.Feedback {
	return &engine.Feedback{ID: "fb-" + step, Execution: id, Workflow: "w", State: "Answer", Step: step, By: "ann", Role: "approver",
		Type: "rating", Value: 4.0, CreatedAt: time.Now().UTC()}
}

// eventCount counts the events of type typ in execution id's history.
func eventCount(t *testing.T, st *store.Memory, id, typ string) int {
	t.Helper()
	h, err := st.History(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range h {
		if e.Type == typ {
			n++
		}
	}
	return n
}

func TestFeedbackCollectWaitWokenByFeedback(t *testing.T) {
	st := store.NewMemory()
	a := &feedbackWaitAgents{}
	x := engine.New(engine.Config{Agents: a.registry(t), Store: st})
	ctx := context.Background()
	res, err := x.Run(ctx, mustParse(t, fmt.Sprintf(feedbackWaitFlow, "")), map[string]any{}, engine.StartOptions{ID: "f"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != engine.StatusWaiting || res.WaitingFor != engine.WaitingForFeedback || res.State != "Answer" || !res.WakeAt.IsZero() {
		t.Fatalf("run = %+v, want WAITING for Feedback at Answer, never woken by time", res)
	}
	if a.writes.Load() != 1 || a.sends.Load() != 0 {
		t.Fatalf("calls = %d writes, %d sends, want 1 and 0", a.writes.Load(), a.sends.Load())
	}
	e, err := st.Load(ctx, "f")
	if err != nil {
		t.Fatal(err)
	}
	waiting := engine.WaitingFeedbackOf(e)
	if len(waiting) != 1 || waiting[0].ID != "Answer#1" || waiting[0].Next != "Send" || waiting[0].Given != nil {
		t.Fatalf("WaitingFeedbackOf = %+v, want one wait on Answer#1 going on to Send", waiting)
	}
	if e.WaitingFor != engine.WaitingForFeedback {
		t.Errorf("stored WaitingFor = %q, want %q", e.WaitingFor, engine.WaitingForFeedback)
	}

	// A resume before feedback (a worker's sweep) changes nothing.
	if res, err = x.Resume(ctx, "f", engine.ResumeOptions{}); err != nil || res.Status != engine.StatusWaiting {
		t.Fatalf("Resume = %+v, %v, want still WAITING", res, err)
	}
	// Feedback on another visit wakes nothing.
	if _, err := x.GiveFeedback(ctx, "f", feedbackFor("f", "Answer#2"), engine.ResumeOptions{}); !errors.Is(err, engine.ErrNotWaitingForFeedback) {
		t.Fatalf("GiveFeedback(Answer#2) = %v, want ErrNotWaitingForFeedback", err)
	}

	res, err = x.GiveFeedback(ctx, "f", feedbackFor("f", "Answer#1"), engine.ResumeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	wantOutput(t, res, `{"draft":{"text":"hello"},"sent":"ok"}`)
	if a.writes.Load() != 1 || a.sends.Load() != 1 {
		t.Errorf("calls = %d writes, %d sends, want 1 each", a.writes.Load(), a.sends.Load())
	}
	list, err := st.ListFeedback(ctx, engine.FeedbackFilter{Execution: "f"})
	if err != nil || len(list) != 1 || list[0].ID != "fb-Answer#1" {
		t.Fatalf("ListFeedback = %+v, %v, want the feedback given", list, err)
	}
	if got, ok := list[0].Output.(map[string]any); !ok || got["draft"] == nil {
		t.Errorf("stored feedback's output = %v, want Answer's output", list[0].Output)
	}
	if n := eventCount(t, st, "f", engine.EventFeedbackReceived); n != 1 {
		t.Errorf("%d FeedbackReceived events, want 1", n)
	}
	// The wait is over: more feedback is refused as a wake-up.
	if _, err := x.GiveFeedback(ctx, "f", feedbackFor("f", "Answer#1"), engine.ResumeOptions{}); !errors.Is(err, engine.ErrNotWaitingForFeedback) {
		t.Errorf("GiveFeedback after the wait = %v, want ErrNotWaitingForFeedback", err)
	}
}

// TestFeedbackCollectWaitSurvivesRestart: the executor stops while the
// execution waits, and again right after the wake-up was committed (before
// the feedback reached the feedback store); a new executor continues it,
// storing the feedback once.
func TestFeedbackCollectWaitSurvivesRestart(t *testing.T) {
	st := store.NewMemory()
	a := &feedbackWaitAgents{}
	ctx := context.Background()
	x := engine.New(engine.Config{Agents: a.registry(t), Store: st})
	if res, err := x.Run(ctx, mustParse(t, fmt.Sprintf(feedbackWaitFlow, "")), map[string]any{}, engine.StartOptions{ID: "r"}); err != nil || res.Status != engine.StatusWaiting {
		t.Fatalf("run = %+v, %v", res, err)
	}
	y := engine.New(engine.Config{Agents: a.registry(t), Store: st})
	res, err := y.GiveFeedback(ctx, "r", feedbackFor("r", "Answer#1"), engine.ResumeOptions{RecordOnly: true})
	if err != nil || res.Status != engine.StatusRunning {
		t.Fatalf("GiveFeedback(RecordOnly) = %+v, %v, want RUNNING", res, err)
	}
	if list, _ := st.ListFeedback(ctx, engine.FeedbackFilter{Execution: "r"}); len(list) != 0 {
		t.Fatalf("feedback stored before the run went on: %+v", list)
	}
	z := engine.New(engine.Config{Agents: a.registry(t), Store: st})
	if res, err = z.Resume(ctx, "r", engine.ResumeOptions{}); err != nil {
		t.Fatal(err)
	}
	wantOutput(t, res, `{"draft":{"text":"hello"},"sent":"ok"}`)
	if a.writes.Load() != 1 || a.sends.Load() != 1 {
		t.Errorf("calls = %d writes, %d sends, want 1 each", a.writes.Load(), a.sends.Load())
	}
	list, err := st.ListFeedback(ctx, engine.FeedbackFilter{Execution: "r"})
	if err != nil || len(list) != 1 || list[0].By != "ann" {
		t.Errorf("ListFeedback = %+v, %v, want the feedback once", list, err)
	}
}

func TestFeedbackCollectWaitTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := store.NewMemory()
		a := &feedbackWaitAgents{}
		x := engine.New(engine.Config{Agents: a.registry(t), Store: st})
		ctx := context.Background()
		res, err := x.Run(ctx, mustParse(t, fmt.Sprintf(feedbackWaitFlow, `,"Timeout":"1h"`)), map[string]any{}, engine.StartOptions{ID: "t"})
		if err != nil || res.Status != engine.StatusWaiting || res.WaitingFor != engine.WaitingForFeedback {
			t.Fatalf("run = %+v, %v, want WAITING for Feedback", res, err)
		}
		start := time.Now()
		if !res.WakeAt.Equal(start.Add(time.Hour)) {
			t.Errorf("wake at %v, want the Timeout an hour after %v", res.WakeAt, start)
		}
		time.Sleep(time.Until(start.Add(time.Hour)))
		if res, err = x.Resume(ctx, "t", engine.ResumeOptions{}); err != nil {
			t.Fatal(err)
		}
		wantOutput(t, res, `{"draft":{"text":"hello"},"sent":"ok"}`)
		if n := eventCount(t, st, "t", engine.EventFeedbackTimedOut); n != 1 {
			t.Errorf("%d FeedbackTimedOut events, want 1", n)
		}
		if list, _ := st.ListFeedback(ctx, engine.FeedbackFilter{Execution: "t"}); len(list) != 0 {
			t.Errorf("feedback stored on a timeout: %+v", list)
		}
	})
}

// TestFeedbackCollectWaitEndsAndStops: a waiting Task that ends the
// execution ends it with its output once feedback comes; one that is
// stopped while it waits is ABORTED; without a store the wait is a
// runtime error.
func TestFeedbackCollectWaitEndsAndStops(t *testing.T) {
	const def = `{"StartAt":"Answer","States":{"Answer":{"Type":"Task","Agent":"Writer","Feedback":{"Type":"thumbs","Wait":true},"End":true}}}`
	st := store.NewMemory()
	a := &feedbackWaitAgents{}
	x := engine.New(engine.Config{Agents: a.registry(t), Store: st})
	ctx := context.Background()
	for _, id := range []string{"end", "stop"} {
		if res, err := x.Run(ctx, mustParse(t, def), map[string]any{}, engine.StartOptions{ID: id}); err != nil || res.Status != engine.StatusWaiting {
			t.Fatalf("run %s = %+v, %v, want WAITING", id, res, err)
		}
	}
	res, err := x.GiveFeedback(ctx, "end", feedbackFor("end", "Answer#1"), engine.ResumeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	wantOutput(t, res, `{"text":"hello"}`)
	if res, err = x.Stop(ctx, "stop", "", ""); err != nil || res.Status != engine.StatusAborted {
		t.Fatalf("Stop = %+v, %v, want ABORTED", res, err)
	}
	if _, err := x.GiveFeedback(ctx, "stop", feedbackFor("stop", "Answer#1"), engine.ResumeOptions{}); !errors.Is(err, engine.ErrNotWaitingForFeedback) {
		t.Errorf("GiveFeedback after Stop = %v, want ErrNotWaitingForFeedback", err)
	}

	// Without a store it is refused before it runs, as an Approval is.
	mem := engine.New(engine.Config{Agents: a.registry(t)})
	_, err = mem.Run(ctx, mustParse(t, def), map[string]any{}, engine.StartOptions{})
	if !errors.Is(err, engine.ErrDurability) || !strings.Contains(err.Error(), `state "Answer" waits for feedback (Feedback Wait), which needs a store`) {
		t.Errorf("Run without a store = %v, want ErrDurability naming the state", err)
	}
}

// diesAfterExit is a store whose process dies (every commit fails) once
// the commit holding the completion of state is written.
type diesAfterExit struct {
	*store.Memory
	state string
	dead  atomic.Bool
}

func (d *diesAfterExit) Commit(ctx context.Context, c *engine.Commit) error {
	if d.dead.Load() {
		return errors.New("the process died")
	}
	if err := d.Memory.Commit(ctx, c); err != nil {
		return err
	}
	for _, ev := range c.Events {
		if ev.Type == "TaskStateExited" && ev.State == d.state {
			d.dead.Store(true)
		}
	}
	return nil
}

// TestFeedbackCollectWaitCrashAfterCompletion: a process that dies right
// after the commit of the Task's completion resumes the wait: the Task is
// not run again and the state after it does not run before feedback.
func TestFeedbackCollectWaitCrashAfterCompletion(t *testing.T) {
	st := &diesAfterExit{Memory: store.NewMemory(), state: "Answer"}
	a := &feedbackWaitAgents{}
	ctx := context.Background()
	x := engine.New(engine.Config{Agents: a.registry(t), Store: st})
	if res, err := x.Run(ctx, mustParse(t, fmt.Sprintf(feedbackWaitFlow, "")), map[string]any{}, engine.StartOptions{ID: "c"}); err == nil {
		t.Fatalf("run = %+v, want the store's failure", res)
	}
	y := engine.New(engine.Config{Agents: a.registry(t), Store: st.Memory})
	res, err := y.Resume(ctx, "c", engine.ResumeOptions{})
	if err != nil || res.Status != engine.StatusWaiting || res.WaitingFor != engine.WaitingForFeedback {
		t.Fatalf("resume = %+v, %v, want WAITING for Feedback", res, err)
	}
	if a.writes.Load() != 1 || a.sends.Load() != 0 {
		t.Errorf("calls = %d writes, %d sends, want 1 and 0", a.writes.Load(), a.sends.Load())
	}
	if res, err = y.GiveFeedback(ctx, "c", feedbackFor("c", "Answer#1"), engine.ResumeOptions{}); err != nil {
		t.Fatal(err)
	}
	wantOutput(t, res, `{"draft":{"text":"hello"},"sent":"ok"}`)
}
