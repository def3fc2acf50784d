package builtin

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	asl "github.com/aslrun/aslrun"
	"github.com/aslrun/aslrun/egress"
	"github.com/aslrun/aslrun/jsonvalue"
)

// allowURL returns a host policy that allows the host and port of u (a
// test server on loopback, which the default policy refuses).
func allowURL(t *testing.T, u string) *egress.Policy {
	t.Helper()
	parsed, err := url.Parse(u)
	if err != nil {
		t.Fatalf("allowURL(%q): %v", u, err)
	}
	p, err := egress.New(egress.Config{Allow: []string{parsed.Host}})
	if err != nil {
		t.Fatalf("allowURL(%q): %v", u, err)
	}
	return p
}

// decode decodes JSON text the test wrote, failing the test when it is not
// strict JSON.
func decode(t *testing.T, text string) any {
	t.Helper()
	v, err := jsonvalue.Decode([]byte(text))
	if err != nil {
		t.Fatalf("decode %s: %v", text, err)
	}
	return v
}

// marshal returns the compact JSON of v for messages.
func marshal(v any) string {
	data, err := jsonvalue.Marshal(v)
	if err != nil {
		return fmt.Sprintf("<%v>", err)
	}
	return string(data)
}

// errName returns the ASL error name err carries, or "" when it carries
// none.
func errName(err error) asl.ErrorName {
	var ae *asl.Error
	if errors.As(err, &ae) {
		return ae.Name
	}
	return ""
}

// errCause returns the cause of the ASL error err carries, or "".
func errCause(err error) string {
	var ae *asl.Error
	if errors.As(err, &ae) {
		return ae.Cause
	}
	return ""
}

// logRecorder is a slog.Handler that keeps the records it is given.
type logRecorder struct {
	mu      sync.Mutex
	records []map[string]string
}

func (h *logRecorder) Enabled(context.Context, slog.Level) bool { return true }

func (h *logRecorder) Handle(_ context.Context, r slog.Record) error {
	rec := map[string]string{"level": r.Level.String(), "msg": r.Message}
	r.Attrs(func(a slog.Attr) bool {
		rec[a.Key] = a.Value.String()
		return true
	})
	h.mu.Lock()
	defer h.mu.Unlock()
	h.records = append(h.records, rec)
	return nil
}

func (h *logRecorder) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *logRecorder) WithGroup(string) slog.Handler      { return h }

// lines returns the "line" attribute of every record.
func (h *logRecorder) lines() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []string
	for _, r := range h.records {
		out = append(out, r["line"])
	}
	return out
}

var update = flag.Bool("update", false, "rewrite the golden files under testdata/causes")

// causes holds the causes a table test's failures give, by case name, to
// compare with testdata/causes/NAME.json (see testdata/README.md).
type causes struct {
	file string
	want map[string]string
	mu   sync.Mutex
	got  map[string]string
}

// goldenCauses reads testdata/causes/name.json; with -update it rewrites
// the file, once the test passed, with the causes its cases gave.
func goldenCauses(t *testing.T, name string) *causes {
	t.Helper()
	c := &causes{file: filepath.Join("testdata", "causes", name+".json"), got: map[string]string{}}
	if *update {
		t.Cleanup(func() {
			if t.Failed() {
				return
			}
			var buf bytes.Buffer
			enc := json.NewEncoder(&buf)
			enc.SetEscapeHTML(false)
			enc.SetIndent("", "  ")
			if err := enc.Encode(c.got); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(c.file, buf.Bytes(), 0o644); err != nil {
				t.Fatal(err)
			}
		})
		return c
	}
	data, err := os.ReadFile(c.file)
	if err != nil {
		t.Fatalf("%v (go test ./builtin -update writes it)", err)
	}
	if err := json.Unmarshal(data, &c.want); err != nil {
		t.Fatalf("%s: %v", c.file, err)
	}
	return c
}

// check compares the cause of err, the ASL error case gave, with the
// golden one, after replacing each (text, placeholder) pair of replace:
// temporary directories and test servers' URLs change from run to run.
func (c *causes) check(t *testing.T, err error, replace ...string) {
	t.Helper()
	got := strings.NewReplacer(replace...).Replace(errCause(err))
	c.mu.Lock()
	c.got[t.Name()] = got
	c.mu.Unlock()
	if *update {
		return
	}
	if want, ok := c.want[t.Name()]; !ok || got != want {
		t.Errorf("cause = %q, want %q from %s (go test ./builtin -update rewrites it)", got, want, c.file)
	}
}
