package states

import (
	"slices"
	"testing"
)

// TestEach visits every state, nested ones with where they are, in order,
// and stops when told.
func TestEach(t *testing.T) {
	m, err := Parse([]byte(`{"StartAt":"A","States":{
		"A":{"Type":"Pass","Next":"M"},
		"M":{"Type":"Map","ItemProcessor":{"StartAt":"I","States":{"I":{"Type":"Pass","End":true}}},"Next":"P"},
		"P":{"Type":"Parallel","End":true,"Branches":[
			{"StartAt":"X","States":{"X":{"Type":"Pass","End":true}}},
			{"StartAt":"Y","States":{"Y":{"Type":"Succeed"}}}]}}}`))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	m.Each(func(within, name string, _ State) bool {
		got = append(got, within+name)
		return true
	})
	if want := []string{"A", "M", "M/I", "P", "P/0/X", "P/1/Y"}; !slices.Equal(got, want) {
		t.Errorf("visited %v, want %v", got, want)
	}
	got = nil
	if m.Each(func(within, name string, _ State) bool {
		got = append(got, within+name)
		return name != "I"
	}) || !slices.Equal(got, []string{"A", "M", "M/I"}) {
		t.Errorf("stopping at I visited %v", got)
	}
}
