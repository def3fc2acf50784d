package engine_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/aslrun/aslrun/agents"
	"github.com/aslrun/aslrun/engine"
	"github.com/aslrun/aslrun/jsonvalue"
	"github.com/aslrun/aslrun/store"
)

// TestMapOverPackedInput: an inline Map over a packed array (an execution
// input's large array, jsonvalue.DecodePacked) gives what it gives over the
// same array as []any — with an ItemSelector reading the Map's input and
// the item, a Task whose agent gets each item decoded, results kept or
// thrown away — run through and resumed after a death mid-way, and its
// agents never see a packed value.
func TestMapOverPackedInput(t *testing.T) {
	const items = jsonvalue.PackFrom + 7
	work := agents.DirectFunc(func(_ context.Context, req *agents.Request) (any, error) {
		if jsonvalue.HasPacked(req.Input) {
			return nil, fmt.Errorf("the agent got a packed value: %v", req.Input)
		}
		in := req.Input.(map[string]any)
		tags := in["item"].(map[string]any)["tags"].([]any)
		return map[string]any{"id": in["item"].(map[string]any)["id"], "run": in["run"], "tags": len(tags)}, nil
	})
	var b strings.Builder
	b.WriteString(`{"run":"r1","items":[`)
	for i := range items {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"id":%d,"tags":["a","b"],"title":"title %d"}`, i, i)
	}
	b.WriteString(`]}`)
	plain, err := jsonvalue.Decode([]byte(b.String()))
	if err != nil {
		t.Fatal(err)
	}
	packed, err := jsonvalue.DecodePacked([]byte(b.String()), jsonvalue.PackFrom)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := packed.(map[string]any)["items"].(*jsonvalue.Packed); !ok {
		t.Fatal("the items are not packed")
	}
	for _, resultPath := range []string{`"$.out"`, `null`} {
		def := mustParse(t, `{"StartAt":"M","States":{"M":{"Type":"Map","ItemsPath":"$.items","MaxConcurrency":4,"ResultPath":`+resultPath+`,
			"ItemSelector":{"item.$":"$$.Map.Item.Value","run.$":"$.run","first.$":"$.items[0].id"},
			"ItemProcessor":{"StartAt":"T","States":{"T":{"Type":"Task","Agent":"Work","Next":"P"},"P":{"Type":"Pass","End":true}}},"Next":"Count"},
			"Count":{"Type":"Pass","Parameters":{"n.$":"States.ArrayLength($.items)","last.$":"$.items[-1].title","out.$":"$.out"},"End":true}}}`)
		if resultPath == `null` {
			def = mustParse(t, `{"StartAt":"M","States":{"M":{"Type":"Map","ItemsPath":"$.items","MaxConcurrency":4,"ResultPath":null,
				"ItemSelector":{"item.$":"$$.Map.Item.Value","run.$":"$.run"},
				"ItemProcessor":{"StartAt":"T","States":{"T":{"Type":"Task","Agent":"Work","Next":"P"},"P":{"Type":"Pass","End":true}}},"Next":"Count"},
				"Count":{"Type":"Pass","Parameters":{"n.$":"States.ArrayLength($.items)","last.$":"$.items[-1].title"},"End":true}}}`)
		}
		var want any
		for _, input := range []any{plain, packed} {
			for _, die := range []int64{0, 300} {
				name := fmt.Sprintf("ResultPath %s/packed %v/die at %d", resultPath, jsonvalue.HasPacked(input), die)
				st := &dyingStore{Memory: store.NewMemory(), dieAt: die}
				x := engine.New(engine.Config{Agents: registry(t, work, "Work"), Store: st, MaxPayloadSize: -1})
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
				if res.Status != engine.StatusSucceeded {
					t.Fatalf("%s: %s %s %s", name, res.Status, res.Error, res.Cause)
				}
				if want == nil {
					want = res.Output
					n := res.Output.(map[string]any)["n"]
					if !jsonvalue.Equal(n, jsonvalue.IntNumber(items)) {
						t.Fatalf("%s: ArrayLength %v", name, n)
					}
					continue
				}
				if !jsonvalue.Equal(res.Output, want) {
					got, _ := jsonvalue.Marshal(res.Output)
					exp, _ := jsonvalue.Marshal(want)
					t.Errorf("%s: output differs:\n got %.300s\nwant %.300s", name, got, exp)
				}
			}
		}
	}
}
