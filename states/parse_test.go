package states

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/aslrun/aslrun/jsonvalue"
)

func TestParseNotJSON(t *testing.T) {
	for _, in := range []string{``, `{"StartAt": `, `not json`} {
		t.Run(in, func(t *testing.T) {
			m, err := Parse([]byte(in))
			var je *jsonvalue.JSONError
			if m != nil || !errors.As(err, &je) {
				t.Errorf("Parse(%q) = %v, %v; want nil and a *jsonvalue.JSONError", in, m, err)
			}
		})
	}
}

func TestErrorListErr(t *testing.T) {
	var empty ErrorList
	if err := empty.Err(); err != nil {
		t.Errorf("ErrorList{}.Err() = %v, want nil", err)
	}
	list := ErrorList{{Pointer: "", Msg: "top"}, {Pointer: "/States/A", State: "A", Msg: "inner"}}
	if got, want := list.Err().Error(), "/: top\n/States/A (A): inner"; got != want {
		t.Errorf("ErrorList.Err().Error() = %q, want %q", got, want)
	}
}

// testdataFiles returns every definition under testdata/valid and
// testdata/invalid.
func testdataFiles(tb testing.TB) []string {
	tb.Helper()
	var files []string
	for _, dir := range []string{"valid", "invalid"} {
		found, err := filepath.Glob(filepath.Join("testdata", dir, "*.json"))
		if err != nil {
			tb.Fatal(err)
		}
		files = append(files, found...)
	}
	return files
}

// FuzzParse checks that Parse never panics, returns either a machine or an
// error, reports only well-formed problems, and reports them in the same
// order every time (the golden files rely on that).
func FuzzParse(f *testing.F) {
	for _, file := range testdataFiles(f) {
		data, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := Parse(data)
		if (m == nil) == (err == nil) {
			t.Fatalf("Parse = %v, %v; want exactly one of a machine and an error", m, err)
		}
		if err == nil {
			return
		}
		var je *jsonvalue.JSONError
		if errors.As(err, &je) {
			return
		}
		var list ErrorList
		if !errors.As(err, &list) || len(list) == 0 {
			t.Fatalf("Parse error = %T %v, want a non-empty ErrorList or a *jsonvalue.JSONError", err, err)
		}
		for _, e := range list {
			if e.Msg == "" || (e.Pointer != "" && !strings.HasPrefix(e.Pointer, "/")) {
				t.Errorf("malformed problem %q (pointer %q)", e.Error(), e.Pointer)
			}
		}
		_, again := Parse(data)
		if again == nil || again.Error() != err.Error() {
			t.Errorf("Parse reported\n%v\nthen\n%v", err, again)
		}
	})
}

func BenchmarkParse(b *testing.B) {
	for _, name := range []string{"core-all-states.json", "agent-task-blocks.json", "example-customer-support.json"} {
		data, err := os.ReadFile(filepath.Join("testdata", "valid", name))
		if err != nil {
			b.Fatal(err)
		}
		b.Run(strings.TrimSuffix(name, ".json"), func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(data)))
			for b.Loop() {
				if _, err := Parse(data); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// problemPointers parses def and returns the pointer and state of every
// problem reported, failing the test when def parses.
func problemPointers(t *testing.T, def string) []string {
	t.Helper()
	m, err := Parse([]byte(def))
	var list ErrorList
	if !errors.As(err, &list) {
		t.Fatalf("Parse(%s) = %v, %v; want an ErrorList", def, m, err)
	}
	var got []string
	for _, e := range list {
		got = append(got, e.Pointer+" ("+e.State+")")
	}
	return got
}

// TestNoTerminalState checks that a machine, nested ones included, with no
// state that can end it is refused at the pointer of its States, as AWS
// refuses it (MISSING_END_STATE), and that any End, Succeed or Fail counts.
func TestNoTerminalState(t *testing.T) {
	loop := `{"StartAt":"A","States":{"A":{"Type":"Pass","Next":"B"},"B":{"Type":"Pass","Next":"A"}}}`
	ends := `{"StartAt":"E","States":{"E":{"Type":"Pass","End":true}}}`
	tests := []struct {
		name string
		def  string
		want []string // pointer (state) of each problem; none: the definition parses
	}{
		{"top-level loop", loop, []string{"/States ()"}},
		{"self loop", `{"StartAt":"A","States":{"A":{"Type":"Pass","Next":"A"}}}`, []string{"/States ()"}},
		{"choice loop", `{"StartAt":"C","States":{"C":{"Type":"Choice","Choices":[{"Variable":"$.x","IsPresent":true,"Next":"C"}],"Default":"W"},"W":{"Type":"Wait","Seconds":1,"Next":"C"}}}`,
			[]string{"/States ()"}},
		{"map item processor", `{"StartAt":"M","States":{"M":{"Type":"Map","ItemProcessor":` + loop + `,"End":true}}}`,
			[]string{"/States/M/ItemProcessor/States (M)"}},
		{"map iterator", `{"StartAt":"M","States":{"M":{"Type":"Map","Iterator":` + loop + `,"End":true}}}`,
			[]string{"/States/M/Iterator/States (M)"}},
		{"parallel branch", `{"StartAt":"P","States":{"P":{"Type":"Parallel","Branches":[` + ends + `,` + loop + `],"End":true}}}`,
			[]string{"/States/P/Branches/1/States (P)"}},
		{"an inner End does not end the outer machine", `{"StartAt":"P","States":{"P":{"Type":"Parallel","Branches":[` + ends + `],"Next":"P"}}}`,
			[]string{"/States ()"}},
		{"succeed", `{"StartAt":"A","States":{"A":{"Type":"Pass","Next":"S"},"S":{"Type":"Succeed"}}}`, nil},
		{"fail", `{"StartAt":"F","States":{"F":{"Type":"Fail"}}}`, nil},
		{"loop with an exit", `{"StartAt":"A","States":{"A":{"Type":"Choice","Choices":[{"Variable":"$.x","IsPresent":true,"Next":"A"}],"Default":"E"},"E":{"Type":"Pass","End":true}}}`, nil},
		{"approval end", `{"StartAt":"A","States":{"A":{"Type":"Approval","Prompt":"ok?","End":true}}}`, nil},
		{"debate end", `{"StartAt":"D","States":{"D":{"Type":"Debate","Agents":["a","b"],"End":true}}}`, nil},
		{"checkpoint end", `{"StartAt":"C","States":{"C":{"Type":"Checkpoint","Name":"c","End":true}}}`, nil},
		// A state with other problems still counts as terminal: no second
		// problem is reported for the machine.
		{"broken terminal state", `{"StartAt":"W","States":{"W":{"Type":"Wait","Seconds":-1,"End":true}}}`, []string{"/States/W/Seconds (W)"}},
		// Nor when a state's own problem may be a missing End.
		{"missing Next and End", `{"StartAt":"A","States":{"A":{"Type":"Pass"}}}`, []string{"/States/A (A)"}},
		{"End false", `{"StartAt":"A","States":{"A":{"Type":"Pass","End":false}}}`, []string{"/States/A/End (A)"}},
		{"unknown type", `{"StartAt":"A","States":{"A":{"Type":"Stop"}}}`, []string{"/States/A/Type (A)"}},
		{"approval routing by choices loops", `{"StartAt":"A","States":{"A":{"Type":"Approval","Prompt":"ok?","Choices":[{"Variable":"$.approval","StringEquals":"approve","Next":"A"}],"Default":"A"}}}`,
			[]string{"/States ()"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.want == nil {
				if _, err := Parse([]byte(tt.def)); err != nil {
					t.Fatalf("Parse(%s): %v", tt.def, err)
				}
				return
			}
			got := problemPointers(t, tt.def)
			if !slices.Equal(got, tt.want) {
				t.Errorf("Parse(%s) problems at %q, want %q", tt.def, got, tt.want)
			}
		})
	}
}
