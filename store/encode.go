package store

import (
	"slices"
	"strconv"
	"time"

	"github.com/aslrun/aslrun/jsonvalue"
)

// recordWriter appends a JSON object field by field, leaving out empty
// fields as encoding/json's omitempty and omitzero do, so that the records
// written on every commit (heads, scopes, events) are encoded without
// reflection; encoding/json reads them back. Keys are the records' json
// tags, plain ASCII.
type recordWriter struct {
	b    []byte
	more bool
}

// newRecordWriter starts an object in a buffer of the given capacity.
func newRecordWriter(capacity int) *recordWriter {
	return &recordWriter{b: append(make([]byte, 0, capacity), '{')}
}

func (w *recordWriter) key(k string) {
	if w.more {
		w.b = append(w.b, ',')
	}
	w.more = true
	w.b = append(w.b, '"')
	w.b = append(w.b, k...)
	w.b = append(w.b, '"', ':')
}

// str writes a string field, unless it is empty and omitEmpty.
func (w *recordWriter) str(k, v string, omitEmpty bool) {
	if v == "" && omitEmpty {
		return
	}
	w.key(k)
	w.b = appendString(w.b, v)
}

func (w *recordWriter) int(k string, v int64) {
	if v != 0 {
		w.key(k)
		w.b = strconv.AppendInt(w.b, v, 10)
	}
}

func (w *recordWriter) bool(k string, v bool) {
	if v {
		w.key(k)
		w.b = append(w.b, "true"...)
	}
}

// raw writes a document already encoded.
func (w *recordWriter) raw(k string, v []byte) {
	if len(v) > 0 {
		w.key(k)
		w.b = append(w.b, v...)
	}
}

// time writes a time as encoding/json does (RFC 3339 with nanoseconds).
func (w *recordWriter) time(k string, t time.Time) {
	if !t.IsZero() {
		w.key(k)
		w.b = append(w.b, '"')
		w.b = t.AppendFormat(w.b, time.RFC3339Nano)
		w.b = append(w.b, '"')
	}
}

// counts writes a map of counters, keys sorted.
func (w *recordWriter) counts(k string, m map[string]int) {
	writeSorted(w, k, m, func(b []byte, n int) []byte { return strconv.AppendInt(b, int64(n), 10) })
}

// writeSorted writes a map as an object, keys sorted, each value with
// appendValue; nothing when the map is empty.
func writeSorted[V any](w *recordWriter, k string, m map[string]V, appendValue func([]byte, V) []byte) {
	if len(m) == 0 {
		return
	}
	w.key(k)
	w.b = append(w.b, '{')
	var buf [16]string
	for i, name := range sortedKeys(buf[:0], m) {
		if i > 0 {
			w.b = append(w.b, ',')
		}
		w.b = appendString(w.b, name)
		w.b = append(w.b, ':')
		w.b = appendValue(w.b, m[name])
	}
	w.b = append(w.b, '}')
}

// ints writes a list of integers.
func (w *recordWriter) ints(k string, v []int64) {
	if len(v) == 0 {
		return
	}
	w.key(k)
	w.b = append(w.b, '[')
	for i, n := range v {
		if i > 0 {
			w.b = append(w.b, ',')
		}
		w.b = strconv.AppendInt(w.b, n, 10)
	}
	w.b = append(w.b, ']')
}

// object writes a nested object built by f.
func (w *recordWriter) object(k string, f func(w *recordWriter)) {
	w.key(k)
	inner := recordWriter{b: append(w.b, '{')}
	f(&inner)
	w.b = append(inner.b, '}')
}

// bytes ends the object and returns it.
func (w *recordWriter) bytes() []byte { return append(w.b, '}') }

// sortedKeys appends the keys of m to dst, sorted: with a dst on the
// caller's stack, a small map's keys are sorted without allocating.
func sortedKeys[V any](dst []string, m map[string]V) []string {
	for k := range m {
		dst = append(dst, k)
	}
	slices.Sort(dst)
	return dst
}

// appendString appends s as a JSON string, as jsonvalue.Marshal writes it
// (invalid UTF-8 becomes U+FFFD, as with encoding/json).
func appendString(dst []byte, s string) []byte {
	return jsonvalue.AppendString(dst, s)
}

// encodeScopeRecord writes a scopeRecord.
func encodeScopeRecord(r *scopeRecord) []byte {
	w := newRecordWriter(128 + len(r.Doc) + len(r.Vars) + len(r.Output))
	w.str("next", r.Next, true)
	w.raw("doc", r.Doc)
	w.raw("vars", r.Vars)
	w.counts("visits", r.Visits)
	if st := r.Step; st != nil {
		w.object("step", func(w *recordWriter) {
			w.int("visit", int64(st.Visit))
			w.int("entered", st.Entered)
			w.int("attempt", int64(st.Attempt))
			w.ints("retries", st.Retries)
			w.time("wakeAt", st.WakeAt)
			w.raw("approval", st.Approval)
			w.raw("debate", st.Debate)
			w.raw("callback", st.Callback)
			w.raw("journal", st.Journal)
			w.raw("feedback", st.Feedback)
		})
	}
	w.bool("done", r.Done)
	w.bool("failed", r.Failed)
	w.raw("output", r.Output)
	w.str("error", r.Error, true)
	w.str("cause", r.Cause, true)
	return w.bytes()
}
