package itemio

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// TestItemLimit reads objects around the item limit: an item of exactly
// the limit is read, one byte more fails with ErrItemTooLarge naming the
// line (or item) and the limit.
func TestItemLimit(t *testing.T) {
	const limit = 64
	row := func(n int) string { return strings.Repeat("x", n) }
	for _, c := range []struct {
		name  string
		f     Format
		data  string
		items int    // items read before the end or the failure
		where string // in the error; "" when none is wanted
	}{
		{"csv row at the limit", Format{InputType: CSV}, "a\n" + row(limit-1) + "\n", 1, ""},
		{"csv row over the limit", Format{InputType: CSV}, "a\n" + row(limit) + "\n", 0, "line 2 of the CSV object"},
		{"csv header over the limit", Format{InputType: CSV}, row(limit+1) + "\n1\n", 0, "line 1 of the CSV object"},
		{"csv one long line", Format{InputType: CSV}, "a\n1\n2\n" + row(100000), 2, "line 4 of the CSV object"},
		{"csv quoted row over lines", Format{InputType: CSV}, "a\n1\n\"" + strings.Repeat("y\n", 100) + "\"\n3\n", 1, "line 3 of the CSV object"},
		{"csv quoted row within", Format{InputType: CSV}, "a\n\"" + strings.Repeat("y\n", 20) + "\"\n3\n", 2, ""},
		{"csv given headers", Format{InputType: CSV, CSVHeaderLocation: Given, CSVHeaders: []string{"a"}}, "1\n" + row(limit) + "\n", 1, "line 2 of the CSV object"},
		{"jsonl line at the limit", Format{InputType: JSONL}, `"` + row(limit-3) + "\"\n1\n", 2, ""},
		{"jsonl line over the limit", Format{InputType: JSONL}, "1\n\n\"" + row(limit) + "\"\n", 1, "line 3 of the JSONL object"},
		{"json item at the limit", Format{InputType: JSON}, `[1,"` + row(limit-2) + `"]`, 2, ""},
		{"json item over the limit", Format{InputType: JSON}, `[1, "` + row(limit) + `"]`, 1, "item 1 of the JSON array"},
		{"json huge item", Format{InputType: JSON}, `[1, "` + row(100000) + `"]`, 1, "item 1 of the JSON array"},
		{"json huge value", Format{InputType: JSON}, `"` + row(100000) + `"`, 0, "the JSON object's first value"},
	} {
		t.Run(c.name, func(t *testing.T) {
			c.f.MaxItemBytes = limit
			items, err := Decode(strings.NewReader(c.data), c.f)
			if err != nil {
				t.Fatal(err)
			}
			n := 0
			for {
				_, err = items.Next()
				if err != nil {
					break
				}
				n++
			}
			if n != c.items {
				t.Errorf("read %d items, want %d", n, c.items)
			}
			if c.where == "" {
				if err != io.EOF {
					t.Errorf("Next() = %v, want io.EOF", err)
				}
				return
			}
			if !errors.Is(err, ErrItemTooLarge) || !strings.Contains(err.Error(), c.where) || !strings.Contains(err.Error(), fmt.Sprint(limit)) {
				t.Errorf("Next() = %v, want ErrItemTooLarge at %s naming the limit %d", err, c.where, limit)
			}
		})
	}
}

// TestItemLimitDefault checks that the zero Format holds a row of 1 MiB
// and no more.
func TestItemLimitDefault(t *testing.T) {
	ok := "a\n" + strings.Repeat("x", DefaultMaxItemBytes-1) + "\n"
	items, _ := Decode(strings.NewReader(ok), Format{InputType: CSV})
	if _, err := items.Next(); err != nil {
		t.Errorf("a row of %d bytes: %v", DefaultMaxItemBytes, err)
	}
	items, _ = Decode(strings.NewReader(ok[:len(ok)-1]+"x\n"), Format{InputType: CSV})
	if _, err := items.Next(); !errors.Is(err, ErrItemTooLarge) {
		t.Errorf("a row of %d bytes: %v, want ErrItemTooLarge", DefaultMaxItemBytes+1, err)
	}
}

// TestOneLineBounded reads a sparse 3 GB file of one line (zeros, no
// newline) from a bucket as CSV, JSONL and JSON: each fails at the limit
// having allocated a few MiB, not gigabytes.
func TestOneLineBounded(t *testing.T) {
	ctx := context.Background()
	d := Dir(t.TempDir())
	if err := os.WriteFile(filepath.Join(string(d), "huge.csv"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(filepath.Join(string(d), "huge.csv"), 3<<30); err != nil {
		t.Skipf("sparse file: %v", err)
	}
	for _, typ := range []string{CSV, JSONL, JSON} {
		rc, err := d.Open(ctx, "huge.csv")
		if err != nil {
			t.Fatal(err)
		}
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		items, err := Decode(rc, Format{InputType: typ})
		if err == nil {
			_, err = items.Next()
		}
		runtime.ReadMemStats(&after)
		rc.Close()
		if typ != JSON && !errors.Is(err, ErrItemTooLarge) {
			t.Errorf("%s: Next() = %v, want ErrItemTooLarge", typ, err)
		}
		if err == nil {
			t.Errorf("%s: Next() read an item of zeros", typ)
		}
		grew := after.TotalAlloc - before.TotalAlloc
		t.Logf("%s: %v after allocating %d KiB", typ, err, grew>>10)
		if grew > 16<<20 {
			t.Errorf("%s: reading allocated %d MiB, want at most 16 MiB", typ, grew>>20)
		}
	}
}

// TestListLimit lists more objects than the limit: the listing fails
// naming the prefix and the limit; MaxItems under the limit stops the
// listing before it.
func TestListLimit(t *testing.T) {
	ctx := context.Background()
	d := Dir(t.TempDir())
	for i := range 5 {
		w, err := d.Create(ctx, fmt.Sprintf("in/%d.csv", i))
		if err != nil {
			t.Fatal(err)
		}
		w.Close()
	}
	_, err := List(ctx, d, "in/", 0, 4)
	if !errors.Is(err, ErrTooManyObjects) || !strings.Contains(err.Error(), `prefix "in/"`) || !strings.Contains(err.Error(), "4") {
		t.Errorf("List(limit 4) = %v, want ErrTooManyObjects naming the prefix and 4", err)
	}
	items, err := List(ctx, d, "in/", 3, 4)
	if err != nil {
		t.Fatalf("List(MaxItems 3, limit 4) = %v", err)
	}
	got, _ := readAll(t, items)
	if strings.Count(got, "\n") != 3 || !strings.Contains(got, `"in/2.csv"`) || strings.Contains(got, `"in/3.csv"`) {
		t.Errorf("List(MaxItems 3) =\n%s\nwant in/0.csv to in/2.csv", got)
	}
	if items, err := List(ctx, d, "in/", 0, 5); err != nil {
		t.Errorf("List(limit 5) = %v", err)
	} else if got, _ := readAll(t, items); strings.Count(got, "\n") != 5 {
		t.Errorf("List(limit 5) =\n%s", got)
	}
}
