package store

import (
	"maps"
	"slices"
	"strconv"
	"time"

	"github.com/aslrun/aslrun/engine"
	"github.com/aslrun/aslrun/jsonpath"
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

func (w *recordWriter) uint(k string, v uint64) {
	if v != 0 {
		w.key(k)
		w.b = strconv.AppendUint(w.b, v, 10)
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

// strMap writes a map of strings, keys sorted, omitted when empty.
func (w *recordWriter) strMap(k string, m map[string]string) {
	writeSorted(w, k, m, appendString)
}

// writeSorted writes a map as an object, keys sorted, each value with
// appendValue; nothing when the map is empty.
func writeSorted[V any](w *recordWriter, k string, m map[string]V, appendValue func([]byte, V) []byte) {
	if len(m) == 0 {
		return
	}
	w.key(k)
	w.b = append(w.b, '{')
	for i, name := range slices.Sorted(maps.Keys(m)) {
		if i > 0 {
			w.b = append(w.b, ',')
		}
		w.b = appendString(w.b, name)
		w.b = append(w.b, ':')
		w.b = appendValue(w.b, m[name])
	}
	w.b = append(w.b, '}')
}

// float writes a finite number, omitted when zero.
func (w *recordWriter) float(k string, v float64) {
	if v == 0 {
		return
	}
	w.key(k)
	w.b = strconv.AppendFloat(w.b, v, 'g', -1, 64)
}

// strs writes a list of strings, omitted when empty.
func (w *recordWriter) strs(k string, v []string) {
	if len(v) == 0 {
		return
	}
	w.key(k)
	w.b = append(w.b, '[')
	for i, s := range v {
		if i > 0 {
			w.b = append(w.b, ',')
		}
		w.b = appendString(w.b, s)
	}
	w.b = append(w.b, ']')
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

// appendString appends s as a JSON string, as jsonpath.Marshal writes it
// (which cannot fail for a string: invalid UTF-8 becomes U+FFFD, as with
// encoding/json).
func appendString(dst []byte, s string) []byte {
	out, _ := jsonpath.AppendJSON(dst, s)
	return out
}

// encodeHead writes a headRecord.
func encodeHead(h *headRecord) []byte {
	return appendHead(make([]byte, 0, 256+len(h.Output)), h)
}

// appendHead appends a headRecord's JSON to dst.
func appendHead(dst []byte, h *headRecord) []byte {
	w := &recordWriter{b: append(dst, '{')}
	w.str("status", string(h.Status), false)
	w.raw("output", h.Output)
	w.str("error", h.Error, true)
	w.str("cause", h.Cause, true)
	w.time("stoppedAt", h.StoppedAt)
	w.time("wakeAt", h.WakeAt)
	w.str("waitingFor", h.WaitingFor, true)
	w.counts("invocations", h.Invocations)
	if u := h.Usage; u != (engine.Usage{}) {
		w.object("usage", func(w *recordWriter) {
			w.int("inputTokens", u.InputTokens)
			w.int("outputTokens", u.OutputTokens)
			w.int("tokens", u.Tokens)
			w.float("cost", u.Cost)
		})
	}
	w.strs("notices", h.Notices)
	w.int("lastEvent", h.LastEvent)
	w.int("lastOwnEvent", h.LastOwnEvent)
	w.int("seq", h.Seq)
	w.int("events", h.Events)
	w.str("lastHash", h.LastHash, true)
	w.uint("lastRecord", h.LastRecord)
	w.strMap("unboundCheckpoints", h.Unbound)
	w.int("redriveCount", int64(h.RedriveCount))
	w.time("redrivenAt", h.RedrivenAt)
	return w.bytes()
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
		})
	}
	w.bool("done", r.Done)
	w.bool("failed", r.Failed)
	w.raw("output", r.Output)
	w.str("error", r.Error, true)
	w.str("cause", r.Cause, true)
	return w.bytes()
}

// appendEventValue appends the stored value of an event: a header of
// eventHeaderLen bytes whose hashes are left zero, then its eventRecord.
func appendEventValue(dst []byte, r *eventRecord) []byte {
	var header [eventHeaderLen]byte
	header[0] = eventFormat
	w := recordWriter{b: append(append(dst, header[:]...), '{')}
	w.int("id", r.ID)
	w.int("own", r.Own)
	w.str("type", r.Type, false)
	w.str("timestamp", r.Timestamp, false)
	w.str("state", r.State, true)
	w.str("scope", r.Scope, true)
	w.raw("input", r.Input)
	w.raw("output", r.Output)
	w.str("error", r.Error, true)
	w.str("cause", r.Cause, true)
	w.raw("detail", r.Detail)
	w.str("docHash", r.DocHash, false)
	w.str("checkpoint", r.Checkpoint, true)
	return w.bytes()
}

// eventValueSize is about the length of the stored value of an event,
// for sizing buffers.
func eventValueSize(r *eventRecord) int {
	return eventHeaderLen + 200 + len(r.Type) + len(r.Timestamp) + len(r.State) + len(r.Scope) +
		len(r.Input) + len(r.Output) + len(r.Error) + len(r.Cause) + len(r.Detail) + len(r.DocHash) + len(r.Checkpoint)
}
