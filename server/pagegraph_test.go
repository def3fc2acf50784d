package server

import (
	"testing"

	"github.com/aslrun/aslrun/states"
)

// TestGraphName: history names map to the graph's nodes: a Map's items are
// one cluster, a Parallel's branches are numbered.
func TestGraphName(t *testing.T) {
	m, err := states.Parse([]byte(`{"StartAt":"Each","States":{
		"Each":{"Type":"Map","ItemProcessor":{"StartAt":"Work","States":{"Work":{"Type":"Pass","End":true}}},"Next":"Par"},
		"Par":{"Type":"Parallel","Branches":[
			{"StartAt":"L","States":{"L":{"Type":"Pass","End":true}}},
			{"StartAt":"Inner","States":{"Inner":{"Type":"Map","ItemProcessor":{"StartAt":"X","States":{"X":{"Type":"Pass","End":true}}},"End":true}}}],"End":true}}}`))
	if err != nil {
		t.Fatal(err)
	}
	for in, want := range map[string]string{
		"Each":            "Each",
		"Each/3/Work":     "Each/*/Work",
		"Par/0/L":         "Par/0/L",
		"Par/1/Inner/7/X": "Par/1/Inner/*/X",
		"Par/9/L":         "Par/9/L",
		"Nope/1/X":        "Nope/1/X",
	} {
		if got := graphName(m, in); got != want {
			t.Errorf("graphName(%q) = %q, want %q", in, got, want)
		}
	}
}
