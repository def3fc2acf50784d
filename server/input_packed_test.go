package server

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/aslrun/aslrun/api"
)

// TestStartPackedInput: an execution input with an array of more than
// jsonvalue.PackFrom elements (kept packed) runs an inline Map over it,
// paths and intrinsic functions read it, and its output is the array as
// it came.
func TestStartPackedInput(t *testing.T) {
	ts := newTestServer(t)
	var b strings.Builder
	b.WriteString(`{"items":[`)
	const n = 2000
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"id":%d}`, i)
	}
	b.WriteString(`]}`)
	def := `{"StartAt":"Each","States":{"Each":{"Type":"Map","ItemsPath":"$.items","ResultPath":"$.ids",
		"ItemProcessor":{"StartAt":"Id","States":{"Id":{"Type":"Pass","OutputPath":"$.id","End":true}}},"Next":"Count"},
		"Count":{"Type":"Pass","Parameters":{"n.$":"States.ArrayLength($.items)","last.$":"$.items[-1].id","ids.$":"$.ids","items.$":"$.items"},"End":true}}}`
	e := ts.startFlow(t, "packed-input", def, b.String(), "", func(e api.Execution) bool { return e.Status != "RUNNING" })
	if e.Status != "SUCCEEDED" {
		t.Fatalf("status %s: %s %s", e.Status, e.Error, e.Cause)
	}
	var out struct {
		N     int               `json:"n"`
		Last  int               `json:"last"`
		IDs   []int             `json:"ids"`
		Items []json.RawMessage `json:"items"`
	}
	if err := json.Unmarshal(e.Output, &out); err != nil {
		t.Fatal(err)
	}
	if out.N != n || out.Last != n-1 || len(out.IDs) != n || out.IDs[n-1] != n-1 || len(out.Items) != n || string(out.Items[7]) != `{"id":7}` {
		t.Errorf("output: n %d, last %d, %d ids, %d items", out.N, out.Last, len(out.IDs), len(out.Items))
	}
}
