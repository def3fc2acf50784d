package engine_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/aslrun/aslrun"
	"github.com/aslrun/aslrun/engine"
	"github.com/aslrun/aslrun/store"
)

// TestPayloadLimit: the limit is Config.MaxPayloadSize; a document past it
// fails the execution with AWS's cause, and the Result and the history say
// the size and the limit.
func TestPayloadLimit(t *testing.T) {
	def := `{"StartAt":"Big","States":{"Big":{"Type":"Pass","Parameters":{"s.$":"States.ArrayRange(1, 300, 1)"},"End":true}}}`
	ctx := context.Background()
	for _, tc := range []struct {
		limit    int
		wantFail bool
	}{
		{limit: 100, wantFail: true},
		{limit: 2000, wantFail: false},
		{limit: -1, wantFail: false},
	} {
		st := store.NewMemory()
		x := engine.New(engine.Config{Store: st, MaxPayloadSize: tc.limit})
		res, err := x.Run(ctx, mustParse(t, def), mustJSON(t, `{}`), engine.StartOptions{ID: "p"})
		if err != nil {
			t.Fatalf("limit %d: %v", tc.limit, err)
		}
		if !tc.wantFail {
			if res.Status != engine.StatusSucceeded || res.Payload != nil {
				t.Errorf("limit %d: %s %s %+v, want SUCCEEDED", tc.limit, res.Status, res.Cause, res.Payload)
			}
			continue
		}
		if res.Error != string(asl.ErrDataLimitExceeded) || !strings.HasPrefix(res.Cause, "The state/task 'Big' returned a result") {
			t.Errorf("limit %d: %s %q, want States.DataLimitExceeded with AWS's cause", tc.limit, res.Error, res.Cause)
		}
		// {"s":[1,2,…,300]}: 792 digits, 299 commas and 8 more bytes.
		if p := res.Payload; p == nil || p.Size != 1099 || p.Limit != tc.limit || p.State != "Big" {
			t.Errorf("limit %d: Payload = %+v, want Big, 1099 bytes, limit %d", tc.limit, p, tc.limit)
		}
		h, err := st.History(ctx, "p")
		if err != nil {
			t.Fatal(err)
		}
		last := h[len(h)-1]
		d, _ := last.Detail.(map[string]any)
		if last.Type != engine.EventExecutionFailed || d["limit"] == nil || d["size"] == nil {
			t.Errorf("last event %s %v, want ExecutionFailed with size and limit", last.Type, last.Detail)
		}
	}
	x := engine.New(engine.Config{MaxPayloadSize: 10})
	_, err := x.Run(ctx, mustParse(t, def), mustJSON(t, `{"a":"0123456789"}`), engine.StartOptions{})
	var pe *engine.PayloadError
	if !errors.Is(err, engine.ErrInvalidInput) || !errors.As(err, &pe) || pe.Size != 18 || pe.Limit != 10 {
		t.Errorf("an input over the limit: %v (%+v), want ErrInvalidInput with a PayloadError of 18 bytes, limit 10", err, pe)
	}
}

// TestStoredPayloadLimit: an execution's own limit (StartOptions) is
// stored with it and kept when another executor, with a limit of its own,
// resumes it after a long Wait; a fork inherits it. Without one, the
// resuming executor's limit applies.
func TestStoredPayloadLimit(t *testing.T) {
	// Big makes a document of 1,099 bytes: {"s":[1,2,…,300]}.
	def := `{"StartAt":"Saved","States":{
		"Saved":{"Type":"Checkpoint","Name":"saved","Next":"Sleep"},
		"Sleep":{"Type":"Wait","Seconds":3600,"Next":"Big"},
		"Big":{"Type":"Pass","Parameters":{"s.$":"States.ArrayRange(1, 300, 1)"},"End":true}}}`
	for _, tc := range []struct {
		name      string
		own       int // StartOptions.MaxPayloadSize
		wantOwn   int // Execution.MaxPayload
		wantLimit int // the limit Big passes, 0: it passes none
	}{
		{name: "own limit", own: 2000, wantOwn: 2000},
		{name: "no limit", own: -5, wantOwn: -1},
		{name: "executor's", own: 0, wantOwn: 0, wantLimit: 100},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				ctx := t.Context()
				st := store.NewMemory()
				first := engine.New(engine.Config{Store: st, MaxPayloadSize: 5000})
				res, err := first.Run(ctx, mustParse(t, def), mustJSON(t, `{}`), engine.StartOptions{ID: "p", MaxPayloadSize: tc.own})
				if err != nil {
					t.Fatal(err)
				}
				if res.Status != engine.StatusWaiting {
					t.Fatalf("Run: %s, want WAITING", res.Status)
				}
				if e, err := st.Load(ctx, "p"); err != nil {
					t.Fatal(err)
				} else if e.MaxPayload != tc.wantOwn {
					t.Fatalf("Load(p).MaxPayload = %d, want %d", e.MaxPayload, tc.wantOwn)
				}
				time.Sleep(time.Hour)
				second := engine.New(engine.Config{Store: st, MaxPayloadSize: 100})
				res, err = second.Resume(ctx, "p", engine.ResumeOptions{})
				if err != nil {
					t.Fatal(err)
				}
				switch {
				case tc.wantLimit == 0 && res.Status != engine.StatusSucceeded:
					t.Errorf("Resume: %s %s %+v, want SUCCEEDED", res.Status, res.Error, res.Payload)
				case tc.wantLimit != 0 && (res.Error != string(asl.ErrDataLimitExceeded) || res.Payload == nil || res.Payload.Limit != tc.wantLimit):
					t.Errorf("Resume: %s %s %+v, want States.DataLimitExceeded at limit %d", res.Status, res.Error, res.Payload, tc.wantLimit)
				}
				if _, err := second.Fork(ctx, "p", "saved", engine.ResumeOptions{ForkID: "f"}); err != nil {
					t.Fatal(err)
				}
				if e, err := st.Load(ctx, "f"); err != nil {
					t.Fatal(err)
				} else if e.MaxPayload != tc.wantOwn {
					t.Errorf("Load(f).MaxPayload = %d, want %d (the parent's)", e.MaxPayload, tc.wantOwn)
				}
			})
		})
	}
}
