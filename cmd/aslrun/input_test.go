package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/aslrun/aslrun/jsonvalue"
)

// countingReader is an endless JSON array of 1s ("[1,1,1,…") that counts
// what was read of it.
type countingReader struct{ read int }

func (r *countingReader) Read(p []byte) (int, error) {
	for i := range p {
		switch {
		case r.read+i == 0:
			p[i] = '['
		case (r.read+i)%2 == 1:
			p[i] = '1'
		default:
			p[i] = ','
		}
	}
	r.read += len(p)
	return len(p), nil
}

// TestReadBoundedStops: an input past the limit is refused after reading
// about the limit, not the whole of it.
func TestReadBoundedStops(t *testing.T) {
	t.Parallel()
	r := &countingReader{}
	_, err := readBounded(r, 1000)
	if !errors.Is(err, errTooLarge) {
		t.Fatalf("readBounded(endless, 1000) = %v, want errTooLarge", err)
	}
	if r.read > 1000+64<<10 {
		t.Errorf("readBounded read %d bytes for a limit of 1000, want at most the limit and one buffer", r.read)
	}
}

func TestReadBounded(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		in    string
		limit int
		want  string // "" for errTooLarge
	}{
		{"within", `{"a":[1,2]}`, 11, `{"a":[1,2]}`},
		{"one past", `{"a":[1,2]}`, 10, ""},
		{"whitespace is not counted", "{ \"a\" :\n\t[1, 2] }\r\n", 11, "{ \"a\" :\n\t[1, 2] }\r\n"},
		{"spaces in strings are", `{"a":"x y"}`, 10, ""},
		{"escaped quotes stay in the string", `["\" "]`, 7, `["\" "]`},
		{"escaped quotes stay in the string, one past", `["\" "]`, 6, ""},
		{"no limit", strings.Repeat("1", 100), -1, strings.Repeat("1", 100)},
		{"empty", "", 0, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := readBounded(strings.NewReader(tc.in), tc.limit)
			switch {
			case tc.want == "" && tc.in != "" && !errors.Is(err, errTooLarge):
				t.Errorf("readBounded(%q, %d) = %q, %v; want errTooLarge", tc.in, tc.limit, got, err)
			case tc.want != "" && (err != nil || string(got) != tc.want):
				t.Errorf("readBounded(%q, %d) = %q, %v; want %q", tc.in, tc.limit, got, err, tc.want)
			}
		})
	}
	// Past four times the limit, whitespace between tokens is dropped:
	// padding does not fill memory, and the document decodes the same.
	padded := "[" + strings.Repeat(" ", 10000) + "1," + strings.Repeat("\n", 10000) + "\"a b\"]"
	got, err := readBounded(strings.NewReader(padded), 10)
	if err != nil || len(got) > 4*10+4096+10 {
		t.Fatalf("readBounded(padded) kept %d bytes, %v", len(got), err)
	}
	if v, err := jsonvalue.Decode(got); err != nil || !jsonvalue.Equal(v, []any{jsonvalue.IntNumber(1), "a b"}) {
		t.Errorf("the padded document read decodes as %v, %v", v, err)
	}
}

// FuzzReadBounded: for any bytes and limit, readBounded never panics; a
// JSON document is refused exactly when its compact form (as
// encoding/json compacts it) is longer than the limit, and what it keeps
// decodes as the document does.
func FuzzReadBounded(f *testing.F) {
	for _, s := range []string{`{"a":[1,2]}`, "{ \"a\" :\n\t[1, 2] }", `["\" \\"]`, `"\u00e9 \t"`, `[1 , 2 ,3]`, `not json`, `"unterminated`} {
		f.Add([]byte(s), 8)
	}
	f.Fuzz(func(t *testing.T, data []byte, limit int) {
		limit %= 64
		got, err := readBounded(bytes.NewReader(data), limit)
		var compact bytes.Buffer
		if !json.Valid(data) || json.Compact(&compact, data) != nil {
			return
		}
		switch {
		case limit >= 0 && compact.Len() > limit:
			if !errors.Is(err, errTooLarge) {
				t.Fatalf("readBounded(%q, %d) = %q, %v; its compact form has %d bytes, want errTooLarge", data, limit, got, err, compact.Len())
			}
		case err != nil:
			t.Fatalf("readBounded(%q, %d): %v; its compact form has %d bytes", data, limit, err, compact.Len())
		default:
			var a, b any
			if json.Unmarshal(data, &a) != nil || json.Unmarshal(got, &b) != nil || !jsonvalue.Equal(a, b) {
				t.Fatalf("readBounded(%q, %d) = %q, which does not decode as the document", data, limit, got)
			}
		}
	})
}

// TestRunBigInputFile: a 200 MB --input file (sparse: no disk) is refused
// by the payload limit, naming it, after reading about the limit; so is
// one on standard input; --max-payload -1 lets a large one through.
func TestRunBigInputFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	db := filepath.Join(dir, "big.db")
	wf := writeFile(t, dir, "p.json", `{"StartAt":"P","States":{"P":{"Type":"Pass","End":true}}}`)
	big := filepath.Join(dir, "big.json")
	f, err := os.Create(big)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(`{"a":"`); err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(200 << 20); err != nil {
		t.Fatal(err)
	}
	f.Close()
	code, _, errOut := invoke(t, "", "run", wf, "--input", "@"+big, "--db", db)
	want := "input from " + big + ": the execution input of more than 262144 bytes (" + big + " is 209715200 bytes) passes the payload limit of 262144 bytes; raise the limit with --max-payload BYTES"
	if code != exitUsage || !strings.Contains(errOut, want) || strings.Contains(errOut, "execution:") {
		t.Errorf("a 200 MB input file: exit %d, stderr %q; want 2 and %q", code, errOut, want)
	}
	code, _, errOut = invoke(t, "", "run", wf, "--input", "@"+big, "--max-payload", "1000", "--db", db)
	if code != exitUsage || !strings.Contains(errOut, "passes the payload limit of 1000 bytes") {
		t.Errorf("with --max-payload 1000: exit %d, stderr %q", code, errOut)
	}

	// Standard input: read up to the limit and one buffer, no more.
	stdin := &countingReader{}
	var out, errBuf bytes.Buffer
	err = dispatch(t.Context(), &cmdContext{stdin: stdin, stdout: &out, stderr: &errBuf}, []string{"run", wf, "--input", "-", "--max-payload", "5000", "--db", db})
	var ee *exitError
	if !errors.As(err, &ee) || ee.code != exitUsage || !strings.Contains(ee.msg, "input from standard input: the execution input of more than 5000 bytes passes the payload limit of 5000 bytes") {
		t.Errorf("an endless standard input: %v", err)
	}
	if stdin.read > 5000+64<<10 {
		t.Errorf("run read %d bytes of standard input for a limit of 5000", stdin.read)
	}

	// Within the limit, pretty-printed past it: its compact form counts.
	doc := map[string]any{"items": strings.Split(strings.Repeat("x,", 200), ",")}
	pretty, _ := json.MarshalIndent(doc, "", "                ")
	compact, _ := json.Marshal(doc)
	limit := len(compact) + 10
	if len(pretty) <= limit {
		t.Fatalf("the pretty document (%d bytes) is not past the limit %d", len(pretty), limit)
	}
	in := writeFile(t, dir, "pretty.json", string(pretty))
	if code, out, errOut := invoke(t, "", "run", wf, "--input", "@"+in, "--max-payload", strconv.Itoa(limit), "--db", db); code != 0 || !jsonEqual(t, out, string(compact)) {
		t.Errorf("a pretty-printed input within the limit: exit %d, %s %s", code, out, errOut)
	}
}
