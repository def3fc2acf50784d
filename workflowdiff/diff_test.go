package workflowdiff

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/aslrun/aslrun/api"
)

const (
	v1 = `{"Comment":"triage","StartAt":"Check","States":{
"Check":{"Type":"Choice","Choices":[{"Variable":"$.x","NumericEquals":1,"Next":"Done"}],"Default":"Review"},
"Review":{"Type":"Task","Agent":"reviewer","TimeoutSeconds":30,"Next":"Done"},
"Old":{"Type":"Pass","End":true},
"Done":{"Type":"Succeed"}}}`
	v2 = `{"StartAt":"Check","TimeoutSeconds":600,"States":{
"Check":{"Type":"Choice","Choices":[{"Variable":"$.x","NumericEquals":2,"Next":"Done"}],"Default":"Research"},
"Research":{"Type":"Task","Agent":"researcher","Next":"Review"},
"Review":{"Type":"Task","Agent":"reviewer","TimeoutSeconds":60,"Next":"Done","Catch":[{"ErrorEquals":["States.ALL"],"Next":"Done"}]},
"Done":{"Type":"Succeed"}}}`
)

func TestWorkflowVersionDiff(t *testing.T) {
	d, err := Diff([]byte(v1), []byte(v2))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(d.Added, []string{"Research"}) || !slices.Equal(d.Removed, []string{"Old"}) {
		t.Errorf("Added, Removed = %q, %q, want [Research], [Old]", d.Added, d.Removed)
	}
	got := map[string]api.FieldChange{}
	var changed []string
	for _, c := range d.Changed {
		changed = append(changed, c.State)
		for _, f := range c.Changes {
			got[f.Pointer] = f
		}
	}
	if want := []string{"Check", "Review"}; !slices.Equal(changed, want) {
		t.Errorf("Changed = %q, want %q", changed, want)
	}
	for _, tt := range []struct{ pointer, before, after string }{
		{"/States/Check/Choices/0/NumericEquals", "1", "2"},
		{"/States/Check/Default", `"Review"`, `"Research"`},
		{"/States/Review/TimeoutSeconds", "30", "60"},
		{"/States/Review/Catch", "", `[{"ErrorEquals":["States.ALL"],"Next":"Done"}]`},
	} {
		f, ok := got[tt.pointer]
		if !ok || string(f.Before) != tt.before || string(f.After) != tt.after {
			t.Errorf("change at %s = %s → %s (%v), want %s → %s", tt.pointer, f.Before, f.After, ok, tt.before, tt.after)
		}
	}
	if len(got) != 4 {
		t.Errorf("changes = %v, want 4", got)
	}
	var fields []string
	for _, f := range d.Fields {
		fields = append(fields, f.Pointer+" "+string(f.Before)+" "+string(f.After))
	}
	if want := []string{`/Comment "triage" `, "/TimeoutSeconds  600"}; !slices.Equal(fields, want) {
		t.Errorf("Fields = %q, want %q", fields, want)
	}
	wantAdded := []api.Edge{{From: "Check", To: "Research", Kind: "default"}, {From: "Research", To: "Review", Kind: "next"}, {From: "Review", To: "Done", Kind: "catch"}}
	wantRemoved := []api.Edge{{From: "Check", To: "Review", Kind: "default"}}
	if !slices.Equal(d.AddedEdges, wantAdded) || !slices.Equal(d.RemovedEdges, wantRemoved) {
		t.Errorf("edges added %v removed %v, want %v and %v", d.AddedEdges, d.RemovedEdges, wantAdded, wantRemoved)
	}
	// A version against itself has no changes.
	same, err := Diff([]byte(v1), []byte(v1))
	if err != nil || len(same.Added)+len(same.Removed)+len(same.Changed)+len(same.Fields)+len(same.AddedEdges)+len(same.RemovedEdges) != 0 {
		t.Errorf("Diff(v1, v1) = %+v, %v, want no changes", same, err)
	}
	// Names with / and ~ are escaped in pointers.
	e, err := Diff([]byte(`{"States":{"a/b~c":{"Type":"Pass","End":true}}}`), []byte(`{"States":{"a/b~c":{"Type":"Pass","End":false}}}`))
	if err != nil || len(e.Changed) != 1 || e.Changed[0].Changes[0].Pointer != "/States/a~1b~0c/End" {
		t.Errorf("Diff of an escaped name = %+v, %v, want /States/a~1b~0c/End", e.Changed, err)
	}
}

func TestWorkflowVersionDiffRefusals(t *testing.T) {
	for _, tt := range []struct{ name, from, to string }{
		{"from not JSON", `{`, v1},
		{"to not JSON", v1, `nope`},
		{"from an array", `[]`, v1},
		{"to null", v1, `null`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if d, err := Diff([]byte(tt.from), []byte(tt.to)); err == nil {
				t.Errorf("Diff(%s, %s) = %+v, want an error", tt.from, tt.to, d)
			}
		})
	}
}

// FuzzDiff checks that Diff never panics, and that what it reports as
// changed round-trips as JSON.
func FuzzDiff(f *testing.F) {
	f.Add(v1, v2)
	f.Add(`{"States":{}}`, `{"States":{"A":{"Next":"B"}}}`)
	f.Add(`{}`, `{"States":[]}`)
	f.Fuzz(func(t *testing.T, from, to string) {
		d, err := Diff([]byte(from), []byte(to))
		if err != nil {
			return
		}
		if _, err := json.Marshal(d); err != nil {
			t.Fatalf("Diff(%q, %q) does not marshal: %v", from, to, err)
		}
	})
}
