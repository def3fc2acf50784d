package itemio

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aslrun/aslrun/jsonvalue"
)

var update = flag.Bool("update", false, "rewrite the golden files")

// readAll reads every item of items, as one JSON text per line.
func readAll(t testing.TB, items Items) (string, error) {
	t.Helper()
	var b strings.Builder
	for {
		v, err := items.Next()
		if err == io.EOF {
			return b.String(), nil
		}
		if err != nil {
			return b.String(), err
		}
		text, err := jsonvalue.Marshal(v)
		if err != nil {
			t.Fatalf("Marshal(%v): %v", v, err)
		}
		b.Write(text)
		b.WriteByte('\n')
	}
}

// TestDecodeGolden reads each file of testdata in its format and compares
// the items with its golden file (go test ./itemio -update rewrites them).
func TestDecodeGolden(t *testing.T) {
	cases := []struct {
		file string
		f    Format
	}{
		{"rows.csv", Format{InputType: CSV}},
		{"given.psv", Format{InputType: CSV, CSVHeaderLocation: Given, CSVHeaders: []string{"id", "name", "extra"}, CSVDelimiter: '|'}},
		{"items.jsonl", Format{InputType: JSONL}},
		{"items.json", Format{InputType: JSON}},
	}
	for _, c := range cases {
		t.Run(c.file, func(t *testing.T) {
			f, err := os.Open(filepath.Join("testdata", c.file))
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			items, err := Decode(f, c.f)
			if err != nil {
				t.Fatal(err)
			}
			got, err := readAll(t, items)
			if err != nil {
				t.Fatalf("read: %v", err)
			}
			golden := filepath.Join("testdata", c.file+".golden")
			if *update {
				if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatal(err)
			}
			if got != string(want) {
				t.Errorf("items of %s:\n%s\nwant:\n%s", c.file, got, want)
			}
		})
	}
}

// TestDecodeRefuses checks that malformed objects fail with an error
// saying where, after the items before the problem.
func TestDecodeRefuses(t *testing.T) {
	cases := []struct {
		name, text string
		f          Format
		items      int
		want       string
	}{
		{"json not an array", `{"a":1}`, Format{InputType: JSON}, 0, "must be an array"},
		{"json empty", ``, Format{InputType: JSON}, 0, "empty"},
		{"json bad item", `[1, {"a":}]`, Format{InputType: JSON}, 1, "item 1"},
		{"json duplicate key", `[{"a":1,"a":2}]`, Format{InputType: JSON}, 0, "item 0"},
		{"json trailing", `[1] [2]`, Format{InputType: JSON}, 1, "after its array"},
		{"jsonl bad line", "1\n{\"a\":\n", Format{InputType: JSONL}, 1, "line 2"},
		{"csv long row", "a,b\n1,2,3\n", Format{InputType: CSV}, 0, "line 2"},
		{"csv bad quote", "a\n\"x\n", Format{InputType: CSV}, 0, "CSV"},
		{"csv repeated header", "a,a\n1,2\n", Format{InputType: CSV}, 0, "repeats"},
		{"csv empty", "", Format{InputType: CSV}, 0, "empty"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			items, err := Decode(strings.NewReader(c.text), c.f)
			if err != nil {
				t.Fatal(err)
			}
			got, err := readAll(t, items)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %v, want one containing %q", err, c.want)
			}
			if n := strings.Count(got, "\n"); n != c.items {
				t.Errorf("%d items before the error, want %d", n, c.items)
			}
		})
	}
	for _, f := range []Format{{InputType: "XML"}, {InputType: CSV, CSVHeaderLocation: "LAST"}, {InputType: CSV, CSVHeaderLocation: Given}} {
		if _, err := Decode(strings.NewReader(""), f); err == nil {
			t.Errorf("Decode(%+v) = nil error, want a refusal", f)
		}
	}
}

func TestLimit(t *testing.T) {
	got, err := readAll(t, Limit(Slice([]any{"a", "b", "c"}), 2))
	if err != nil || got != "\"a\"\n\"b\"\n" {
		t.Errorf("Limit 2 = %q, %v", got, err)
	}
}

func TestDirBucket(t *testing.T) {
	ctx := context.Background()
	d := Dir(t.TempDir())
	for _, key := range []string{"in/a.csv", "in/b/c.json", "out.txt"} {
		w, err := d.Create(ctx, key)
		if err != nil {
			t.Fatal(err)
		}
		io.WriteString(w, "data of "+key)
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
	}
	items, err := List(ctx, d, "in/", 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	got, err := readAll(t, items)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Count(got, "\n") != 2 || !strings.Contains(got, `"Key":"in/a.csv"`) || !strings.Contains(got, `"Key":"in/b/c.json"`) || !strings.Contains(got, `"StorageClass":"STANDARD"`) || !strings.Contains(got, `"Size":16`) {
		t.Errorf("listing of in/:\n%s", got)
	}
	for _, key := range []string{"../x", "/abs", "a/../../x", ""} {
		if _, err := d.Open(ctx, key); !errors.Is(err, ErrBadKey) {
			t.Errorf("Open(%q) = %v, want ErrBadKey", key, err)
		}
	}
	if _, err := d.Open(ctx, "missing"); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Open(missing) = %v, want not exist", err)
	}
}

func TestResults(t *testing.T) {
	ctx := context.Background()
	d := Dir(t.TempDir())
	w := NewResults(d, "b", "out/run1", WriterConfig{})
	w.Add(ctx, Succeeded, map[string]any{"Name": "x:0"}, nil)
	w.Add(ctx, Failed, map[string]any{"Name": "x:1"}, nil)
	w.Add(ctx, Succeeded, map[string]any{"Name": "x:2"}, nil)
	key, err := w.Close(ctx, "arn:run")
	if err != nil || key != "out/run1/manifest.json" {
		t.Fatalf("Close = %q, %v", key, err)
	}
	got, _ := os.ReadFile(filepath.Join(string(d), "out/run1/SUCCEEDED_0.json"))
	if string(got) != `[{"Name":"x:0"},{"Name":"x:2"}]` {
		t.Errorf("SUCCEEDED_0.json = %s", got)
	}
	m, _ := os.ReadFile(filepath.Join(string(d), "out/run1/manifest.json"))
	want := `{"DestinationBucket":"b","MapRunArn":"arn:run","ResultFiles":{"FAILED":[{"Key":"out/run1/FAILED_0.json","Size":16}],"PENDING":[],"SUCCEEDED":[{"Key":"out/run1/SUCCEEDED_0.json","Size":31}]}}`
	if string(m) != want {
		t.Errorf("manifest = %s, want %s", m, want)
	}
}

// fuzzRead reads data in format f to the end, with the default item
// limit and with one of 16 bytes: it must never panic nor loop, and every
// item must be JSON that marshals.
func fuzzRead(t *testing.T, data []byte, f Format) {
	fuzzReadLimit(t, data, f)
	f.MaxItemBytes = 16
	fuzzReadLimit(t, data, f)
}

func fuzzReadLimit(t *testing.T, data []byte, f Format) {
	items, err := Decode(bytes.NewReader(data), f)
	if err != nil {
		return
	}
	for range 10000 {
		v, err := items.Next()
		if err != nil {
			return
		}
		text, err := jsonvalue.Marshal(v)
		if f.MaxItemBytes > 0 && f.InputType != CSV && len(text) > 2*f.MaxItemBytes {
			t.Fatalf("item %s is longer than the limit of %d bytes", text, f.MaxItemBytes)
		}
		if err != nil {
			t.Fatalf("item %v does not marshal: %v", v, err)
		}
	}
}

func FuzzCSV(f *testing.F) {
	for _, s := range []string{"a,b\n1,2\n", "a\n\"x\"\"y\"\n", "a,b\n1\n", "\n\n", "a,a\n"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) { fuzzRead(t, data, Format{InputType: CSV}) })
}

func FuzzJSONL(f *testing.F) {
	for _, s := range []string{"1\n2\n", "{\"a\":[1,2]}\n\n\"x\"", "{", "1 2\n"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) { fuzzRead(t, data, Format{InputType: JSONL}) })
}

func FuzzJSON(f *testing.F) {
	for _, s := range []string{"[1,2]", "[{\"a\":1}]", "[", "{}", "[1]x"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) { fuzzRead(t, data, Format{InputType: JSON}) })
}

func TestResultsAbort(t *testing.T) {
	ctx := context.Background()
	d := Dir(t.TempDir())
	w := NewResults(d, "b", "run", WriterConfig{})
	w.Add(ctx, Succeeded, map[string]any{"Name": "x"}, nil)
	w.Abort()
	entries, err := os.ReadDir(filepath.Join(string(d), "run"))
	if err != nil || len(entries) != 0 {
		t.Errorf("after Abort the folder holds %v (%v), want nothing", entries, err)
	}
}
