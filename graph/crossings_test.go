package graph

import (
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aslrun/aslrun/states"
)

// branchy is a seeded random definition of n states S0…S{n-1}: each a
// Choice with two or three rules (labelled edges) to later states, or a
// Task going on to one of the next two; the last a Succeed. Some are not
// valid (a state no one reaches): callers skip those.
func branchy(r *rand.Rand, n int) string {
	var parts []string
	for i := range n {
		name := fmt.Sprintf("S%d", i)
		if i == n-1 {
			parts = append(parts, fmt.Sprintf(`"%s":{"Type":"Succeed"}`, name))
			continue
		}
		k := 1 + r.Intn(3)
		if k == 1 || i >= n-3 {
			parts = append(parts, fmt.Sprintf(`"%s":{"Type":"Task","Agent":"a","Next":"S%d"}`, name, i+1+r.Intn(min(2, n-1-i))))
			continue
		}
		var rules []string
		for c := range k {
			rules = append(rules, fmt.Sprintf(`{"Variable":"$.x","NumericEquals":%d,"Next":"S%d"}`, c, i+1+r.Intn(n-1-i)))
		}
		parts = append(parts, fmt.Sprintf(`"%s":{"Type":"Choice","Choices":[%s],"Default":"S%d"}`, name, strings.Join(rules, ","), i+1))
	}
	return `{"StartAt":"S0","States":{` + strings.Join(parts, ",") + `}}`
}

// branchies are the valid definitions of branchy's first 300 with a
// fixed seed, by their index among the 300.
func branchies() map[int]*states.Machine {
	r := rand.New(rand.NewSource(1))
	out := map[int]*states.Machine{}
	for i := range 300 {
		def := branchy(r, 5+r.Intn(6))
		if m, err := states.Parse([]byte(def)); err == nil {
			out[i] = m
		}
	}
	return out
}

// cycle6 puts a 6-cycle (A-X-B-Z-C-Y) between two layers: at least one
// crossing whatever the order.
const cycle6 = `{"StartAt":"P","States":{
	"P":{"Type":"Choice","Choices":[{"Variable":"$.x","NumericEquals":1,"Next":"A"},{"Variable":"$.x","NumericEquals":2,"Next":"B"}],"Default":"C"},
	"A":{"Type":"Choice","Choices":[{"Variable":"$.x","NumericEquals":1,"Next":"X"}],"Default":"Y"},
	"B":{"Type":"Choice","Choices":[{"Variable":"$.x","NumericEquals":1,"Next":"X"}],"Default":"Z"},
	"C":{"Type":"Choice","Choices":[{"Variable":"$.x","NumericEquals":1,"Next":"Y"}],"Default":"Z"},
	"X":{"Type":"Succeed"},"Y":{"Type":"Succeed"},"Z":{"Type":"Succeed"}}}`

// TestCrossings: the edges that cross between layers, before (two
// barycenter sweeps, as the layout was) and now (sweeps until they stop
// helping, neighbour swaps, the best order kept). The workflows shipped
// and the small shapes have none (code-review one, as before); branchy
// random definitions have fewer.
func TestCrossings(t *testing.T) {
	t.Parallel()
	random := branchies()
	for _, tc := range []struct {
		name          string
		m             *states.Machine
		before, after int
	}{
		{"chain", parse(t, chain), 0, 0},
		{"choice that joins", parse(t, join), 0, 0},
		{"loop", parse(t, loop), 0, 0},
		{"parallel", parse(t, parallel), 0, 0},
		{"nested map", parse(t, nestedMap), 0, 0},
		{"6-cycle", parse(t, cycle6), 2, 2},
		{"branchy 41", random[41], 15, 10},
		{"branchy 107", random[107], 13, 11},
		{"branchy 196", random[196], 12, 10},
		{"branchy 219", random[219], 10, 7},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.m == nil {
				t.Fatal("no such definition")
			}
			if got := Build(tc.m).layoutAll().crossings; got != tc.after {
				t.Errorf("crossings = %d, want %d (%d before)", got, tc.after, tc.before)
			}
		})
	}
	t.Run("branchy total", func(t *testing.T) {
		total := 0
		for _, m := range random {
			total += Build(m).layoutAll().crossings
		}
		const before, after = 379, 356
		if total != after {
			t.Errorf("crossings over %d definitions = %d, want %d (%d before)", len(random), total, after, before)
		}
	})
	t.Run("workflows", func(t *testing.T) {
		files, err := filepath.Glob(filepath.Join("..", "workflows", "*", "workflow.json"))
		if err != nil || len(files) == 0 {
			t.Fatalf("no workflows (%v)", err)
		}
		for _, f := range files {
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			m, err := states.Parse(data)
			if err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			// code-review's one crossing was there before too.
			want := map[string]int{"code-review": 1}[filepath.Base(filepath.Dir(f))]
			if got := Build(m).layoutAll().crossings; got != want {
				t.Errorf("%s: crossings = %d, want %d", f, got, want)
			}
		}
	})
}
