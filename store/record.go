package store

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/aslrun/aslrun/engine"
	"github.com/aslrun/aslrun/jsonvalue"
)

// The records both stores keep. Their envelopes are JSON written by
// encoding/json; every document inside them is a json.RawMessage written
// by jsonvalue.Marshal and read back by jsonvalue.Decode, so numbers keep
// their exact text. Times are stored in UTC.

// execRecord is what never changes about an execution (bucket executions).
type execRecord struct {
	MachineName      string          `json:"machineName,omitempty"`
	DefinitionHash   string          `json:"definitionHash,omitempty"`
	Input            json.RawMessage `json:"input,omitempty"`
	StartedAt        time.Time       `json:"startedAt,omitzero"`
	Parent           string          `json:"parent,omitempty"`
	ParentCheckpoint string          `json:"parentCheckpoint,omitempty"`
	Agents           []byte          `json:"agents,omitempty"`
	AgentsKind       string          `json:"agentsKind,omitempty"`
	// Trace is engine.Execution.Trace; records written before it have
	// none.
	Trace string `json:"trace,omitempty"`
	// MaxPayload is engine.Execution.MaxPayload; records written before
	// it have none (0: the limit of the executor running it).
	MaxPayload int `json:"maxPayload,omitempty"`
	// Durability is engine.Execution.Durability; records written before
	// it have none ("": the executor's).
	Durability engine.Durability `json:"durability,omitempty"`
	// Registry is engine.Execution.Registry; records written before it
	// have none ("": an unregistered definition).
	Registry string `json:"registry,omitempty"`
}

// headRecord is where an execution stands (bucket heads), rewritten by
// every commit. Events and LastHash locate the end of its history, and
// LastRecord is the key of its last history record in Bolt (0 when it has
// none; the memory store leaves it 0). Unbound holds the record hashes of
// the checkpoints no history event binds (integrity.go), by name; only
// Bolt fills it.
type headRecord struct {
	Status       engine.Status     `json:"status"`
	Output       json.RawMessage   `json:"output,omitempty"`
	Error        string            `json:"error,omitempty"`
	Cause        string            `json:"cause,omitempty"`
	StoppedAt    time.Time         `json:"stoppedAt,omitzero"`
	WakeAt       time.Time         `json:"wakeAt,omitzero"`
	WaitingFor   string            `json:"waitingFor,omitempty"`
	Invocations  map[string]int    `json:"invocations,omitempty"`
	Usage        engine.Usage      `json:"usage,omitzero"`
	Notices      []string          `json:"notices,omitempty"`
	LastEvent    int64             `json:"lastEvent,omitempty"`
	LastOwnEvent int64             `json:"lastOwnEvent,omitempty"`
	Seq          int64             `json:"seq,omitempty"`
	Events       int64             `json:"events,omitempty"`
	LastHash     string            `json:"lastHash,omitempty"`
	LastRecord   uint64            `json:"lastRecord,omitempty"`
	Unbound      map[string]string `json:"unboundCheckpoints,omitempty"`
	RedriveCount int               `json:"redriveCount,omitempty"`
	RedrivenAt   time.Time         `json:"redrivenAt,omitzero"`
	// HistoryDropped is set once a commit dropped the history
	// (engine.Commit.DropHistory).
	HistoryDropped bool `json:"historyDropped,omitempty"`
}

// scopeRecord is one engine.Scope.
type scopeRecord struct {
	Next   string          `json:"next,omitempty"`
	Doc    json.RawMessage `json:"doc,omitempty"`
	Vars   json.RawMessage `json:"vars,omitempty"`
	Visits map[string]int  `json:"visits,omitempty"`
	Step   *stepRecord     `json:"step,omitempty"`
	Done   bool            `json:"done,omitempty"`
	Failed bool            `json:"failed,omitempty"`
	Output json.RawMessage `json:"output,omitempty"`
	Error  string          `json:"error,omitempty"`
	Cause  string          `json:"cause,omitempty"`
}

// stepRecord is one engine.StepProgress.
type stepRecord struct {
	Visit   int       `json:"visit,omitempty"`
	Entered int64     `json:"entered,omitempty"`
	Attempt int       `json:"attempt,omitempty"`
	Retries []int64   `json:"retries,omitempty"`
	WakeAt  time.Time `json:"wakeAt,omitzero"`
	// Approval is a pending approval's Value; Debate the turns of a
	// Debate's finished rounds.
	Approval json.RawMessage `json:"approval,omitempty"`
	Debate   json.RawMessage `json:"debate,omitempty"`
	// Callback is a pending task token's Value.
	Callback json.RawMessage `json:"callback,omitempty"`
	// Journal is the steps an agent call finished in the attempt.
	Journal json.RawMessage `json:"journal,omitempty"`
	// Feedback is a Task's wait for feedback's Value.
	Feedback json.RawMessage `json:"feedback,omitempty"`
}

// checkpointRecord is one engine.Checkpoint without its document, which is
// in the blob Blob (hex SHA-256 of the document's Marshal form, so that
// identical documents are stored once). DocHash is the document's
// canonical hash.
type checkpointRecord struct {
	State        string          `json:"state,omitempty"`
	Next         string          `json:"next,omitempty"`
	Blob         string          `json:"blob"`
	DocHash      string          `json:"docHash"`
	Variables    json.RawMessage `json:"variables,omitempty"`
	Context      json.RawMessage `json:"context,omitempty"`
	Memory       json.RawMessage `json:"memory,omitempty"`
	Budget       json.RawMessage `json:"budget,omitempty"`
	Visits       map[string]int  `json:"visits,omitempty"`
	Invocations  map[string]int  `json:"invocations,omitempty"`
	LastEvent    int64           `json:"lastEvent,omitempty"`
	LastOwnEvent int64           `json:"lastOwnEvent,omitempty"`
	CreatedAt    time.Time       `json:"createdAt,omitzero"`
	ExpiresAt    time.Time       `json:"expiresAt,omitzero"`
}

// recordError reports a stored record that does not decode: Bolt reports
// it as a damaged database (ErrDatabaseCorrupt).
type recordError struct{ err error }

func (e *recordError) Error() string { return e.err.Error() }

func (e *recordError) Unwrap() error { return e.err }

// marshalRecord writes a record envelope. HTML escaping is off: it would
// only make documents longer.
func marshalRecord(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// encodeVars writes variables; a nil map stays absent so that it comes
// back nil.
func encodeVars(m map[string]any) (json.RawMessage, error) {
	if m == nil {
		return nil, nil
	}
	return jsonvalue.Marshal(m)
}

// decodeDoc reads a document written by jsonvalue.Marshal; absent is nil.
func decodeDoc(raw json.RawMessage) (any, error) {
	if len(raw) == 0 {
		return nil, nil
	}
	return jsonvalue.Decode(raw)
}

// decodeState reads a document an execution runs on (its input, output,
// a scope's document): as decodeDoc, with its large arrays packed
// (jsonvalue.DecodePacked), so that an inline Map's items are held once,
// as text, in an execution loaded to resume.
func decodeState(raw json.RawMessage) (any, error) {
	if len(raw) == 0 {
		return nil, nil
	}
	return jsonvalue.DecodePacked(raw, jsonvalue.PackFrom)
}

// decodeVars reads variables written by encodeVars.
func decodeVars(raw json.RawMessage) (map[string]any, error) {
	v, err := decodeDoc(raw)
	if err != nil || v == nil {
		return nil, err
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("variables are a %s, not an object", jsonvalue.TypeName(v))
	}
	return m, nil
}

// utc returns t in UTC, the zero time staying zero.
func utc(t time.Time) time.Time {
	if t.IsZero() {
		return time.Time{}
	}
	return t.UTC()
}

// timeKey is t as 8 sortable bytes (Unix nanoseconds, big-endian) for
// index keys; the zero time and times before 1970 sort first.
func timeKey(t time.Time) uint64 {
	switch {
	case t.IsZero() || t.Before(time.Unix(0, 0)):
		return 0
	case t.After(time.Unix(0, math.MaxInt64)):
		return math.MaxInt64
	}
	return uint64(t.UnixNano())
}

// encodeScope writes a scope; memo shares the encoding of documents seen
// before.
func encodeScope(s *engine.Scope, memo *docMemo) ([]byte, error) {
	r := scopeRecord{Next: s.Next, Visits: s.Visits, Done: s.Done, Failed: s.Failed, Error: s.Error, Cause: s.Cause}
	var err error
	if r.Doc, err = memo.raw(s.Doc); err != nil {
		return nil, fmt.Errorf("document: %w", err)
	}
	if r.Vars, err = encodeVars(s.Vars); err != nil {
		return nil, fmt.Errorf("variables: %w", err)
	}
	if s.Output != nil {
		if r.Output, err = memo.raw(s.Output); err != nil {
			return nil, fmt.Errorf("output: %w", err)
		}
	}
	if st := s.Step; st != nil {
		r.Step = &stepRecord{Visit: st.Visit, Entered: st.Entered, Attempt: st.Attempt, Retries: st.Retries, WakeAt: utc(st.WakeAt)}
		if st.Approval != nil {
			if r.Step.Approval, err = memo.raw(st.Approval.Value()); err != nil {
				return nil, fmt.Errorf("pending approval: %w", err)
			}
		}
		if st.Debate != nil {
			if r.Step.Debate, err = memo.raw(st.Debate); err != nil {
				return nil, fmt.Errorf("debate progress: %w", err)
			}
		}
		if st.Callback != nil {
			if r.Step.Callback, err = memo.raw(st.Callback.Value()); err != nil {
				return nil, fmt.Errorf("pending callback: %w", err)
			}
		}
		if st.Journal != nil {
			if r.Step.Journal, err = memo.raw(st.Journal); err != nil {
				return nil, fmt.Errorf("journal: %w", err)
			}
		}
		if st.Feedback != nil {
			if r.Step.Feedback, err = memo.raw(st.Feedback.Value()); err != nil {
				return nil, fmt.Errorf("feedback wait: %w", err)
			}
		}
	}
	return encodeScopeRecord(&r), nil
}

// decodeScope reads a scope written by encodeScope; its error is a
// recordError.
func decodeScope(data []byte) (*engine.Scope, error) {
	s, err := decodeScopeRecord(data)
	if err != nil {
		return nil, &recordError{err}
	}
	return s, nil
}

func decodeScopeRecord(data []byte) (*engine.Scope, error) {
	var r scopeRecord
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, err
	}
	s := &engine.Scope{Next: r.Next, Visits: r.Visits, Done: r.Done, Failed: r.Failed, Error: r.Error, Cause: r.Cause}
	var err error
	if s.Doc, err = decodeState(r.Doc); err != nil {
		return nil, fmt.Errorf("document: %w", err)
	}
	if s.Vars, err = decodeVars(r.Vars); err != nil {
		return nil, err
	}
	if s.Output, err = decodeState(r.Output); err != nil {
		return nil, fmt.Errorf("output: %w", err)
	}
	if st := r.Step; st != nil {
		s.Step = &engine.StepProgress{Visit: st.Visit, Entered: st.Entered, Attempt: st.Attempt, Retries: st.Retries, WakeAt: st.WakeAt}
		if len(st.Approval) > 0 {
			v, err := decodeDoc(st.Approval)
			if err != nil {
				return nil, fmt.Errorf("pending approval: %w", err)
			}
			if s.Step.Approval, err = engine.PendingApprovalFromValue(v); err != nil {
				return nil, err
			}
		}
		if s.Step.Debate, err = decodeDoc(st.Debate); err != nil {
			return nil, fmt.Errorf("debate progress: %w", err)
		}
		if s.Step.Journal, err = decodeDoc(st.Journal); err != nil {
			return nil, fmt.Errorf("journal: %w", err)
		}
		if len(st.Callback) > 0 {
			v, err := decodeDoc(st.Callback)
			if err != nil {
				return nil, fmt.Errorf("pending callback: %w", err)
			}
			if s.Step.Callback, err = engine.PendingCallbackFromValue(v); err != nil {
				return nil, err
			}
		}
		if len(st.Feedback) > 0 {
			v, err := decodeDoc(st.Feedback)
			if err != nil {
				return nil, fmt.Errorf("feedback wait: %w", err)
			}
			if s.Step.Feedback, err = engine.PendingFeedbackFromValue(v); err != nil {
				return nil, err
			}
		}
	}
	return s, nil
}

// newExecution builds the records of an execution being created, and
// returns its definition (to store under exec.DefinitionHash) and scopes.
func newExecution(e *engine.Execution) (*created, error) {
	if err := checkName("execution id", e.ID); err != nil {
		return nil, err
	}
	c := &created{id: e.ID, definition: bytes.Clone(e.Definition)}
	memo := newDocMemo()
	x := execRecord{
		MachineName: e.MachineName, DefinitionHash: e.DefinitionHash, StartedAt: utc(e.StartedAt),
		Parent: e.Parent, ParentCheckpoint: e.ParentCheckpoint, Agents: e.Agents, AgentsKind: e.AgentsKind, Trace: e.Trace,
		MaxPayload: e.MaxPayload, Durability: e.Durability, Registry: e.Registry,
	}
	if x.DefinitionHash == "" && len(e.Definition) > 0 {
		def, err := jsonvalue.Decode(e.Definition)
		if err != nil {
			return nil, fmt.Errorf("definition: %w", err)
		}
		if x.DefinitionHash, err = jsonvalue.CanonicalHash(def); err != nil {
			return nil, fmt.Errorf("definition: %w", err)
		}
	}
	c.definitionHash = x.DefinitionHash
	var err error
	if x.Input, err = memo.raw(e.Input); err != nil {
		return nil, fmt.Errorf("input: %w", err)
	}
	if c.exec, err = marshalRecord(&x); err != nil {
		return nil, err
	}
	c.head = headRecord{
		Status: e.Status, Error: e.Error, Cause: e.Cause, StoppedAt: utc(e.StoppedAt),
		WakeAt: utc(e.WakeAt), WaitingFor: e.WaitingFor, Invocations: maps.Clone(e.Progress.Invocations),
		Usage: e.Progress.Usage, Notices: slices.Clone(e.Progress.Notices),
		LastEvent: e.Progress.LastEvent, LastOwnEvent: e.Progress.LastOwnEvent, Seq: e.Seq,
		HistoryDropped: e.HistoryDropped,
	}
	if c.head.Status == "" {
		c.head.Status = engine.StatusRunning
	}
	if e.Output != nil {
		if c.head.Output, err = memo.raw(e.Output); err != nil {
			return nil, fmt.Errorf("output: %w", err)
		}
	}
	if c.scopes, err = encodeScopes(e.Progress.Scopes, memo); err != nil {
		return nil, err
	}
	c.summary = Summary{ID: e.ID, MachineName: x.MachineName, Status: c.head.Status, StartedAt: x.StartedAt, Parent: x.Parent}
	return c, nil
}

// created is an execution encoded for Create.
type created struct {
	id             string
	exec           []byte
	head           headRecord
	definition     []byte
	definitionHash string
	scopes         []scopeWrite
	summary        Summary // for the indexes
}

// scopeWrite sets one scope; a nil value deletes it.
type scopeWrite struct {
	key   string
	value []byte
}

// encodeScopes encodes scopes in key order.
func encodeScopes(scopes map[string]*engine.Scope, memo *docMemo) ([]scopeWrite, error) {
	out := make([]scopeWrite, 0, len(scopes))
	for key, s := range scopes {
		w := scopeWrite{key: key}
		if s != nil {
			var err error
			if w.value, err = encodeScope(s, memo); err != nil {
				return nil, fmt.Errorf("scope %q: %w", key, err)
			}
		}
		out = append(out, w)
	}
	sortScopeWrites(out)
	return out, nil
}

// execution assembles a loaded execution from its records.
func execution(id string, x *execRecord, h *headRecord, definition []byte, scopes map[string]*engine.Scope) (*engine.Execution, error) {
	e := &engine.Execution{
		ID: id, MachineName: x.MachineName, Definition: definition, DefinitionHash: x.DefinitionHash,
		StartedAt: x.StartedAt, Parent: x.Parent, ParentCheckpoint: x.ParentCheckpoint,
		Agents: x.Agents, AgentsKind: x.AgentsKind, Trace: x.Trace, MaxPayload: x.MaxPayload, Durability: x.Durability, Registry: x.Registry,
		Status: h.Status, Error: h.Error, Cause: h.Cause, StoppedAt: h.StoppedAt,
		WakeAt: h.WakeAt, WaitingFor: h.WaitingFor, Seq: h.Seq, RedriveCount: h.RedriveCount, RedrivenAt: h.RedrivenAt,
		HistoryDropped: h.HistoryDropped,
		Progress: engine.Progress{
			Scopes: scopes, Invocations: h.Invocations, Usage: h.Usage, Notices: h.Notices,
			LastEvent: h.LastEvent, LastOwnEvent: h.LastOwnEvent,
		},
	}
	var err error
	if e.Input, err = decodeState(x.Input); err != nil {
		return nil, fmt.Errorf("execution %s: input: %w", id, err)
	}
	if e.Output, err = decodeState(h.Output); err != nil {
		return nil, fmt.Errorf("execution %s: output: %w", id, err)
	}
	return e, nil
}

// summary assembles a List entry from an execution's records.
func summary(id string, x *execRecord, h *headRecord) Summary {
	return Summary{
		ID: id, MachineName: x.MachineName, DefinitionHash: x.DefinitionHash, Status: h.Status, StartedAt: x.StartedAt, StoppedAt: h.StoppedAt,
		Error: h.Error, Parent: x.Parent, WaitingFor: h.WaitingFor, WakeAt: h.WakeAt,
	}
}

// decodeCheckpoint builds a checkpoint from its record, without its
// document; with full, Variables, Context, Memory and Budget are decoded
// too. Its error is a recordError.
func decodeCheckpoint(id, name string, data []byte, full bool) (*engine.Checkpoint, *checkpointRecord, error) {
	cp, r, err := decodeCheckpointRecord(id, name, data, full)
	if err != nil {
		return nil, nil, &recordError{err}
	}
	return cp, r, nil
}

func decodeCheckpointRecord(id, name string, data []byte, full bool) (*engine.Checkpoint, *checkpointRecord, error) {
	var r checkpointRecord
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, nil, fmt.Errorf("execution %s checkpoint %q: %w", id, name, err)
	}
	cp := &engine.Checkpoint{
		Execution: id, Name: name, State: r.State, Next: r.Next,
		Visits: r.Visits, Invocations: r.Invocations, LastEvent: r.LastEvent, LastOwnEvent: r.LastOwnEvent,
		CreatedAt: r.CreatedAt, ExpiresAt: r.ExpiresAt,
	}
	if !full {
		return cp, &r, nil
	}
	var err error
	if cp.Variables, err = decodeVars(r.Variables); err != nil {
		return nil, nil, fmt.Errorf("execution %s checkpoint %q: %w", id, name, err)
	}
	for _, f := range []struct {
		dst *any
		raw json.RawMessage
		n   string
	}{{&cp.Context, r.Context, "context"}, {&cp.Memory, r.Memory, "memory"}, {&cp.Budget, r.Budget, "budget"}} {
		if *f.dst, err = decodeDoc(f.raw); err != nil {
			return nil, nil, fmt.Errorf("execution %s checkpoint %q: %s: %w", id, name, f.n, err)
		}
	}
	return cp, &r, nil
}

// newer reports whether checkpoint a (named an) is newer than b (named
// bn): created later, or at the same time with a greater name.
func newer(a *checkpointRecord, an string, b *checkpointRecord, bn string) bool {
	if !a.CreatedAt.Equal(b.CreatedAt) {
		return a.CreatedAt.After(b.CreatedAt)
	}
	return an > bn
}

// decodeHeadJSON reads a headRecord of format 6 or older, JSON; its error
// is a recordError.
func decodeHeadJSON(id string, data []byte) (*headRecord, error) {
	var h headRecord
	if err := json.Unmarshal(data, &h); err != nil {
		return nil, &recordError{fmt.Errorf("execution %s: head record: %w", id, err)}
	}
	return &h, nil
}

// decodeExec reads an execRecord; its error is a recordError.
func decodeExec(id string, data []byte) (*execRecord, error) {
	var x execRecord
	if err := json.Unmarshal(data, &x); err != nil {
		return nil, &recordError{fmt.Errorf("execution %s: record: %w", id, err)}
	}
	return &x, nil
}

// loadCheckpoint builds a checkpoint from its record and its snapshot blob
// (found reports whether the blob exists), decoding and migrating the
// document. A blob that is missing or does not decode is an error wrapping
// ErrCorrupt.
func loadCheckpoint(id, name string, record, blob []byte, found bool, codecs *Codecs, m *Migrations) (*engine.Checkpoint, error) {
	cp, r, err := decodeCheckpoint(id, name, record, true)
	if err != nil {
		return nil, err
	}
	if !found {
		return nil, fmt.Errorf("execution %s checkpoint %q: snapshot blob %s is missing: %w", id, name, r.Blob, ErrCorrupt)
	}
	if cp.Document, err = codecs.Decode(blob, m); err != nil {
		return nil, fmt.Errorf("execution %s checkpoint %q: snapshot blob %s: %w", id, name, r.Blob, err)
	}
	return cp, nil
}

// sortCheckpoints orders checkpoints oldest first (by CreatedAt, then
// name).
func sortCheckpoints(cps []*engine.Checkpoint) {
	slices.SortFunc(cps, func(a, b *engine.Checkpoint) int {
		if c := a.CreatedAt.Compare(b.CreatedAt); c != 0 {
			return c
		}
		return strings.Compare(a.Name, b.Name)
	})
}
