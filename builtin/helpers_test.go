package builtin

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"testing"

	"github.com/aslrun/aslrun"
	"github.com/aslrun/aslrun/jsonpath"
)

// decode decodes JSON text the test wrote, failing the test when it is not
// strict JSON.
func decode(t *testing.T, text string) any {
	t.Helper()
	v, err := jsonpath.Decode([]byte(text))
	if err != nil {
		t.Fatalf("decode %s: %v", text, err)
	}
	return v
}

// marshal returns the compact JSON of v for messages.
func marshal(v any) string {
	data, err := jsonpath.Marshal(v)
	if err != nil {
		return "<" + err.Error() + ">"
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
