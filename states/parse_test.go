package states

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aslrun/aslrun/jsonpath"
)

func TestParseNotJSON(t *testing.T) {
	for _, in := range []string{``, `{"StartAt": `, `not json`} {
		t.Run(in, func(t *testing.T) {
			m, err := Parse([]byte(in))
			var je *jsonpath.JSONError
			if m != nil || !errors.As(err, &je) {
				t.Errorf("Parse(%q) = %v, %v; want nil and a *jsonpath.JSONError", in, m, err)
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
		var je *jsonpath.JSONError
		if errors.As(err, &je) {
			return
		}
		var list ErrorList
		if !errors.As(err, &list) || len(list) == 0 {
			t.Fatalf("Parse error = %T %v, want a non-empty ErrorList or a *jsonpath.JSONError", err, err)
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
