package engine_test

import (
	"context"
	"errors"
	"strings"
	"testing"

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
