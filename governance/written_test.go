package governance

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/aslrun/aslrun/jsonpath"
)

// writesString writes a written set one write per line: "op path old → new".
func writesString(ws []Write) string {
	var b strings.Builder
	for _, w := range ws {
		fmt.Fprintf(&b, "%s %s %s → %s\n", w.Op, w.Path, showOrDash(w.Old, w.Op == OpAdd), showOrDash(w.New, w.Op == OpRemove))
	}
	return b.String()
}

func showOrDash(v any, absent bool) string {
	if absent {
		return "-"
	}
	return show(v)
}

func TestWritten(t *testing.T) {
	tests := []struct {
		name           string
		prev, proposed string
		want           string
	}{
		{"equal", `{"a": 1, "b": [1, 2]}`, `{"b": [1, 2], "a": 1}`, ``},
		{"numbers by value", `{"a": 2, "b": 0.10, "c": 1e2}`, `{"a": 2.0, "b": 0.1, "c": 100}`, ``},
		{"replace a number", `{"a": 2}`, `{"a": 2.5}`, "replace $.a 2 → 2.5\n"},
		{"add and remove keys", `{"a": 1, "b": 2}`, `{"b": 2, "c": 3}`, "remove $.a 1 → -\nadd $.c - → 3\n"},
		{"nested", `{"a": {"b": {"c": 1, "d": 2}}}`, `{"a": {"b": {"c": 1, "d": 3}}}`, "replace $.a.b.d 2 → 3\n"},
		{"added object is one write", `{}`, `{"p": {"x": {"y": 1}}}`, `add $.p - → {"x":{"y":1}}` + "\n"},
		{"removed object is one write", `{"p": {"x": 1}}`, `{}`, `remove $.p {"x":1} → -` + "\n"},
		{"array grows", `{"a": [1, 2]}`, `{"a": [1, 2, 3, 4]}`, "add $.a[2] - → 3\nadd $.a[3] - → 4\n"},
		{"array shrinks", `{"a": [1, 2, 3]}`, `{"a": [1]}`, "remove $.a[1] 2 → -\nremove $.a[2] 3 → -\n"},
		{"removal in the middle shifts items", `{"a": ["x", "y", "z"]}`, `{"a": ["x", "z"]}`, `replace $.a[1] "y" → "z"` + "\n" + `remove $.a[2] "z" → -` + "\n"},
		{"indexes sort by value", `{"a": [0,0,0,0,0,0,0,0,0,0,0,0]}`, `{"a": [0,0,1,0,0,0,0,0,0,0,0,1]}`, "replace $.a[2] 0 → 1\nreplace $.a[11] 0 → 1\n"},
		{"object to array", `{"a": {}}`, `{"a": []}`, "replace $.a {} → []\n"},
		{"scalar to object", `{"a": "none"}`, `{"a": {"b": 1}}`, `replace $.a "none" → {"b":1}` + "\n"},
		{"object to null", `{"a": {"b": 1}}`, `{"a": null}`, `replace $.a {"b":1} → null` + "\n"},
		{"empty object added", `{}`, `{"a": {}}`, "add $.a - → {}\n"},
		{"empty array added", `{"x": [1]}`, `{"x": [1, []]}`, "add $.x[1] - → []\n"},
		{"emptied object", `{"a": {"b": 1}}`, `{"a": {}}`, "remove $.a.b 1 → -\n"},
		{"boolean to string", `{"a": true}`, `{"a": "true"}`, `replace $.a true → "true"` + "\n"},
		{"null to false", `{"a": null}`, `{"a": false}`, "replace $.a null → false\n"},
		{"root replaced", `[1]`, `{"a": 1}`, `replace $ [1] → {"a":1}` + "\n"},
		{"odd keys", `{}`, `{"a b": 1, "it's": 2}`, "add $['a b'] - → 1\nadd $['it\\'s'] - → 2\n"},
		{"keys sort in byte order", `{"b": 1, "a": {"z": 1, "y": 1}}`, `{"b": 2, "a": {"z": 2, "y": 2}}`, "replace $.a.y 1 → 2\nreplace $.a.z 1 → 2\nreplace $.b 1 → 2\n"},
		{"exact numbers", `{"a": 12345678901234567890}`, `{"a": 12345678901234567891}`, "replace $.a 12345678901234567890 → 12345678901234567891\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := writesString(Written(decode(t, tt.prev), decode(t, tt.proposed)))
			if got != tt.want {
				t.Errorf("Written(%s, %s) =\n%s\nwant\n%s", tt.prev, tt.proposed, got, tt.want)
			}
		})
	}
}

// TestWrittenShared checks that shared containers are not compared and
// that a written set of documents built with Path.Set names only the set
// path.
func TestWrittenShared(t *testing.T) {
	prev := decode(t, `{"big": {"a": [1, 2, 3], "b": {"c": "d"}}, "n": 1}`)
	set := func(doc any, path string, v any) any {
		t.Helper()
		p, err := jsonpath.CompileReference(path)
		if err != nil {
			t.Fatal(err)
		}
		out, err := p.Set(doc, v)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	proposed := set(prev, "$.big.b.c", "e")
	got := writesString(Written(prev, proposed))
	if want := `replace $.big.b.c "d" → "e"` + "\n"; got != want {
		t.Errorf("Written after Set = %s, want %s", got, want)
	}
	if !sameSlice(prev.(map[string]any)["big"].(map[string]any)["a"].([]any), proposed.(map[string]any)["big"].(map[string]any)["a"].([]any)) {
		t.Errorf("Set copied $.big.a, so this test does not test sharing")
	}
	m := map[string]any{"x": json.Number("1")}
	if !sameMap(m, m) || sameMap(m, map[string]any{"x": json.Number("1")}) {
		t.Errorf("sameMap does not tell identity")
	}
	a := []any{1, 2}
	if !sameSlice(a, a) || sameSlice(a, a[:1]) || sameSlice(a, []any{1, 2}) || !sameSlice(nil, []any{}) {
		t.Errorf("sameSlice does not tell identity")
	}
}

func TestWrittenGoValues(t *testing.T) {
	// Values outside the model are never equal to anything, so they are
	// written (and Check reports them).
	prev := decode(t, `{"a": 1, "b": 2}`)
	proposed := map[string]any{"a": json.Number("1"), "b": 2}
	got := writesString(Written(prev, proposed))
	if want := "replace $.b 2 → 2\n"; got != want {
		t.Errorf("Written with a Go int = %q, want %q", got, want)
	}
}
