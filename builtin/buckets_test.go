package builtin

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aslrun/aslrun/agents"
	"github.com/aslrun/aslrun/jsonvalue"
)

func TestAgentsFileBuckets(t *testing.T) {
	base := t.TempDir()
	os.MkdirAll(filepath.Join(base, "data"), 0o755)
	os.WriteFile(filepath.Join(base, "data", "rows.csv"), []byte("a\n1\n"), 0o644)
	f, err := ParseAgentsFile([]byte(`{"Buckets":{"in":{"Dir":"./data","Comment":"rows"},"abs":{"Dir":"/srv/x"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	reg := agents.NewRegistry()
	if err := f.Register(reg, base, nil); err != nil {
		t.Fatal(err)
	}
	b, ok := reg.Bucket("in")
	if !ok {
		t.Fatal("bucket in not registered")
	}
	rc, err := b.Open(context.Background(), "rows.csv")
	if err != nil {
		t.Fatal(err)
	}
	text, _ := io.ReadAll(rc)
	rc.Close()
	if string(text) != "a\n1\n" {
		t.Errorf("rows.csv through the bucket = %q", text)
	}
	// Resolved makes the folders absolute, so that a resumed execution
	// finds them from any working directory.
	res, err := f.Resolved(base)
	if err != nil {
		t.Fatal(err)
	}
	v, _ := jsonvalue.Decode(res)
	dir := v.(map[string]any)["Buckets"].(map[string]any)["in"].(map[string]any)["Dir"]
	if dir != filepath.Join(base, "data") {
		t.Errorf("resolved Dir = %v, want %s", dir, filepath.Join(base, "data"))
	}
	if err := f.Register(reg, base, nil); !errors.Is(err, agents.ErrDuplicate) {
		t.Errorf("second Register = %v, want ErrDuplicate", err)
	}
}

func TestAgentsFileBucketsRefused(t *testing.T) {
	cases := []struct{ text, ptr string }{
		{`{"Buckets":[]}`, "/Buckets"},
		{`{"Buckets":{"s3://x":{"Dir":"d"}}}`, "/Buckets/s3:~1~1x"},
		{`{"Buckets":{"x":"d"}}`, "/Buckets/x"},
		{`{"Buckets":{"x":{}}}`, "/Buckets/x/Dir"},
		{`{"Buckets":{"x":{"Dir":""}}}`, "/Buckets/x/Dir"},
		{`{"Buckets":{"x":{"Dir":"d","Mode":1}}}`, "/Buckets/x/Mode"},
	}
	for _, c := range cases {
		_, err := ParseAgentsFile([]byte(c.text))
		var fe *FileError
		if !errors.As(err, &fe) || fe.Pointer != c.ptr {
			t.Errorf("ParseAgentsFile(%s) = %v, want a FileError at %s", c.text, err, c.ptr)
		}
	}
}

func FuzzAgentsFileBuckets(f *testing.F) {
	f.Add(`{"in":{"Dir":"./d"}}`)
	f.Add(`{"":{"Dir":1}}`)
	f.Fuzz(func(t *testing.T, buckets string) {
		file, err := ParseAgentsFile([]byte(`{"Buckets":` + buckets + `}`))
		if err != nil {
			return
		}
		if _, err := file.Resolved(t.TempDir()); err != nil && !strings.Contains(err.Error(), "agents file") {
			t.Fatalf("Resolved: %v", err)
		}
	})
}
