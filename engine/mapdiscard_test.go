package engine_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	asl "github.com/aslrun/aslrun"
	"github.com/aslrun/aslrun/agents"
	"github.com/aslrun/aslrun/engine"
	"github.com/aslrun/aslrun/jsonvalue"
	"github.com/aslrun/aslrun/store"
)

// TestMapDiscardingResultsCounted: a Map whose results are thrown away
// under a payload limit keeps none of them but counts their size, so that
// it fails with States.DataLimitExceeded exactly when the array it drops
// passes the limit (its size the array's), and passes its input on
// otherwise — inline and distributed, run through and resumed after a
// death mid-way (the items ended before it counted from their committed
// outputs).
func TestMapDiscardingResultsCounted(t *testing.T) {
	const items = 40
	work := agents.DirectFunc(func(_ context.Context, req *agents.Request) (any, error) {
		in := req.Input.(map[string]any)
		return map[string]any{"i": in["i"], "pad": strings.Repeat("x", 40)}, nil
	})
	list := make([]any, items)
	results := make([]any, items)
	for i := range list {
		list[i] = map[string]any{"i": jsonvalue.IntNumber(int64(i))}
		results[i] = map[string]any{"i": jsonvalue.IntNumber(int64(i)), "pad": strings.Repeat("x", 40)}
	}
	input := map[string]any{"items": list}
	size := jsonvalue.Size(results)
	for _, mode := range []string{"INLINE", "DISTRIBUTED"} {
		def := mustParse(t, fmt.Sprintf(`{"StartAt":"M","States":{"M":{"Type":"Map","ItemsPath":"$.items","MaxConcurrency":3,"ResultPath":null,
			"ItemProcessor":{"ProcessorConfig":{"Mode":%q},"StartAt":"T","States":{"T":{"Type":"Task","Agent":"Work","Next":"P"},"P":{"Type":"Pass","End":true}}},"End":true}}}`, mode))
		for _, tc := range []struct {
			limit int
			fails bool
		}{{size + 200, false}, {size - 1, true}} {
			for _, die := range []int64{0, 9} {
				name := fmt.Sprintf("%s/limit %d/die at %d", mode, tc.limit, die)
				st := &dyingStore{Memory: store.NewMemory(), dieAt: die}
				x := engine.New(engine.Config{Agents: registry(t, work, "Work"), Store: st, MaxPayloadSize: tc.limit})
				res, err := x.Run(context.Background(), def, input, engine.StartOptions{ID: "m"})
				if die > 0 {
					if err == nil {
						t.Fatalf("%s: the run went on: %s %s %s", name, res.Status, res.Error, res.Cause)
					}
					st.dieAt = 0
					res, err = x.Resume(context.Background(), "m", engine.ResumeOptions{})
				}
				if err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				if !tc.fails {
					if res.Status != engine.StatusSucceeded || !jsonvalue.Equal(res.Output, input) {
						t.Errorf("%s: %s %s %s, output %v; want SUCCEEDED with the input", name, res.Status, res.Error, res.Cause, res.Output)
					}
					continue
				}
				if res.Status != engine.StatusFailed || res.Error != string(asl.ErrDataLimitExceeded) {
					t.Fatalf("%s: %s %s %s, want FAILED with States.DataLimitExceeded", name, res.Status, res.Error, res.Cause)
				}
				if !strings.Contains(res.Cause, "'M'") {
					t.Errorf("%s: cause %q does not name the state", name, res.Cause)
				}
			}
		}
	}
}

// TestMapCountedSize: the size a discarding Map counts is the size of the
// array it does not build: a limit one byte short of it fails the Map, a
// limit of exactly its size does not.
func TestMapCountedSize(t *testing.T) {
	def := mustParse(t, `{"StartAt":"M","States":{"M":{"Type":"Map","ItemsPath":"$.items","ResultPath":null,
		"ItemProcessor":{"StartAt":"P","States":{"P":{"Type":"Pass","Parameters":{"v.$":"$","s":"ééé"},"End":true}}},"End":true}}}`)
	list := []any{"a", jsonvalue.IntNumber(7), map[string]any{"k": []any{true, nil}}}
	var built []any
	for _, v := range list {
		built = append(built, map[string]any{"v": v, "s": "ééé"})
	}
	want := jsonvalue.Size(built)
	input := map[string]any{"items": list}
	if jsonvalue.Size(input) >= want {
		t.Fatalf("the input (%d bytes) must be smaller than the results (%d)", jsonvalue.Size(input), want)
	}
	for _, tc := range []struct {
		limit int
		fails bool
	}{{want - 1, true}, {want, false}} {
		res, err := engine.New(engine.Config{MaxPayloadSize: tc.limit}).Run(context.Background(), def, input, engine.StartOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if failed := res.Status == engine.StatusFailed && res.Error == string(asl.ErrDataLimitExceeded); failed != tc.fails {
			t.Errorf("limit %d (the results: %d bytes): %s %s, want DataLimitExceeded %v", tc.limit, want, res.Status, res.Error, tc.fails)
		}
	}
}
