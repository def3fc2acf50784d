package states

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/aslrun/aslrun/jsonata"
)

// jsonataDefinition puts expr, as a "{% … %}" string, in every field of a
// JSONata definition that takes an expression.
func jsonataDefinition(expr string) []byte {
	x := "{%" + expr + "%}"
	def := map[string]any{
		"QueryLanguage": "JSONata",
		"StartAt":       "P",
		"States": map[string]any{
			"P": map[string]any{"Type": "Pass", "Output": map[string]any{"k": []any{x}}, "Assign": map[string]any{"v": x}, "Next": "C"},
			"C": map[string]any{"Type": "Choice", "Choices": []any{map[string]any{"Condition": x, "Next": "W"}}, "Default": "W"},
			"W": map[string]any{"Type": "Wait", "Seconds": x, "Next": "M"},
			"M": map[string]any{"Type": "Map", "Items": x, "ItemSelector": x, "MaxConcurrency": x,
				"ItemProcessor": map[string]any{"StartAt": "I", "States": map[string]any{"I": map[string]any{"Type": "Pass", "End": true}}}, "Next": "T"},
			"T": map[string]any{"Type": "Task", "Agent": "A", "Arguments": x, "TimeoutSeconds": x,
				"Catch": []any{map[string]any{"ErrorEquals": []any{"States.ALL"}, "Output": x, "Next": "F"}}, "Next": "F"},
			"F": map[string]any{"Type": "Fail", "Error": x, "Cause": x},
		},
	}
	data, _ := json.Marshal(def)
	return data
}

// FuzzJSONataExpression checks that any expression text a definition may
// hold is either accepted everywhere or reported at the pointer of each
// field that holds it, and that parsing never panics.
func FuzzJSONataExpression(f *testing.F) {
	for _, s := range []string{
		" $states.input ", "$sum($states.input.a) + 1", "$partition([1,2,3], 2)", `"a /* b */ c"`,
		"$states.input.(", "", "function($x){$x}", "/^a\\$/", "{'a': [1..3]}", "$x := 1; $x", "`quoted name`",
		"$states.input[price > 1].name", "&", "(", "'unterminated", "$$.x", "10e999", "$.a ~> $map(function($v){$v})",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, expr string) {
		m, err := Parse(jsonataDefinition(expr))
		if err == nil {
			if m == nil || m.QueryLanguage != JSONata {
				t.Fatalf("Parse = %v, nil; want a JSONata machine", m)
			}
			return
		}
		var list ErrorList
		if !errors.As(err, &list) {
			// Text that is not valid UTF-8 (or not NFC) is refused by the
			// strict decoder before any expression is read.
			return
		}
		for _, e := range list {
			if !strings.HasPrefix(e.Pointer, "/States/") || e.State == "" || e.Msg == "" {
				t.Errorf("problem %q has no pointer into a state", e.Error())
			}
		}
	})
}

func TestJSONataQueryLanguage(t *testing.T) {
	for _, tc := range []struct {
		name, def string
		want      map[string]string // state → its query language
	}{
		{"default", `{"StartAt":"A","States":{"A":{"Type":"Pass","End":true}}}`, map[string]string{"A": JSONPath}},
		{"top", `{"QueryLanguage":"JSONata","StartAt":"A","States":{"A":{"Type":"Pass","End":true}}}`, map[string]string{"A": JSONata}},
		{"state", `{"StartAt":"A","States":{"A":{"Type":"Pass","QueryLanguage":"JSONata","Next":"B"},"B":{"Type":"Pass","End":true}}}`, map[string]string{"A": JSONata, "B": JSONPath}},
		{"nested inherit", `{"QueryLanguage":"JSONata","StartAt":"M","States":{"M":{"Type":"Map","ItemProcessor":{"StartAt":"I","States":{"I":{"Type":"Pass","End":true}}},"End":true}}}`, map[string]string{"M": JSONata, "I": JSONata}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, err := Parse([]byte(tc.def))
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]string{}
			var walk func(m *Machine)
			walk = func(m *Machine) {
				for name, st := range m.States {
					got[name] = st.Base().QueryLanguage
					if mp, ok := st.(*Map); ok {
						walk(mp.Processor)
					}
				}
			}
			walk(m)
			for name, want := range tc.want {
				if got[name] != want {
					t.Errorf("state %s QueryLanguage = %q, want %q", name, got[name], want)
				}
			}
		})
	}
}

func TestJSONataLiteralsKept(t *testing.T) {
	m, err := Parse([]byte(`{"QueryLanguage":"JSONata","StartAt":"W","States":{"W":{"Type":"Wait","Seconds":5,"Next":"M"},
		"M":{"Type":"Map","Items":[1,2],"MaxConcurrency":3,"ToleratedFailureCount":1,"ItemProcessor":{"StartAt":"I","States":{"I":{"Type":"Pass","End":true}}},"Next":"F"},
		"F":{"Type":"Fail","Error":"E","Cause":"{% 'c' %}"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	w := m.States["W"].(*Wait)
	if !w.HasSeconds || w.Seconds != 5 || w.SecondsExpr != nil {
		t.Errorf("Wait = %+v, want literal Seconds 5", w)
	}
	mp := m.States["M"].(*Map)
	if mp.MaxConcurrency != 3 || mp.MaxConcurrencyExpr != nil || !mp.HasToleratedFailureCount || mp.Items == nil {
		t.Errorf("Map = %+v, want literal settings and Items", mp)
	}
	if v, ok := mp.Items.Literal(); !ok || len(v.([]any)) != 2 {
		t.Errorf("Items.Literal() = %v, %v; want the literal array", v, ok)
	}
	f := m.States["F"].(*Fail)
	if f.Error != "E" || f.ErrorExpr != nil || f.CauseExpr == nil {
		t.Errorf("Fail = %+v, want a literal Error and a Cause expression", f)
	}
}

// FuzzHalfExpression: a string in a JSONata field that opens an
// expression with "{%" and does not close it with "%}", or closes one it
// did not open, is refused at its own pointer; any other string is a
// literal or an expression, never refused as half of one.
func FuzzHalfExpression(f *testing.F) {
	for _, s := range []string{"{% 1", "1 %}", "{%}", "{%%}", "{% 1 %}", " {% 1 %} ", "plain", "", "{", "%}", "{%"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		lit, err := json.Marshal(s)
		if err != nil {
			return
		}
		def := `{"QueryLanguage":"JSONata","StartAt":"P","States":{"P":{"Type":"Pass","Output":{"a":[` + string(lit) + `]},"End":true}}}`
		_, err = Parse([]byte(def))
		half := (strings.HasPrefix(s, "{%") || strings.HasSuffix(s, "%}")) && !jsonata.IsExpression(s)
		var list ErrorList
		if !errors.As(err, &list) {
			if half && err == nil {
				t.Fatalf("%q is accepted, want it refused as half an expression", s)
			}
			return // refused before any field is read (not UTF-8, not NFC)
		}
		found := false
		for _, e := range list {
			if e.Pointer == "/States/P/Output/a/0" && strings.Contains(e.Msg, "JSONata expression") {
				found = true
			}
		}
		if half && !found {
			t.Errorf("%q: %v, want a problem at /States/P/Output/a/0", s, err)
		}
		if !half && found && !jsonata.IsExpression(s) {
			t.Errorf("%q is refused as half an expression: %v", s, err)
		}
	})
}
