package store

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/aslrun/aslrun/engine"
)

// Memory is a store that keeps everything in memory, for tests and for
// runs that need not survive the process. It has the same semantics as
// Bolt and is the reference of the acceptance suite: it keeps every record
// encoded as Bolt does (documents are encoded on the way in and decoded on
// the way out, so callers never share memory with it), hashes histories
// the same way and stores checkpoint documents with the snapshot codec
// (CodecNone). It keeps each checkpoint with the fields a backend other
// than Bolt keeps beside it (CheckpointWrite), and checks them against the
// history (VerifyCheckpoints) where Bolt checks its checkpoints: in
// VerifyHistory and in the loads. It finds due timers and lists
// executions by scanning them all.
//
// A Memory is safe for concurrent use.
type Memory struct {
	mu          sync.RWMutex
	closed      bool
	execs       map[string]*memExec
	definitions map[string][]byte
	blobs       map[string][]byte
	refs        map[string]int // checkpoints referencing each blob
	orphans     map[string]bool
	memory      map[string][]byte // agent memory records by "namespace \x00 key"
	outbox      map[string][]byte // outbox records by id
	cache       memCache          // the result cache (cache.go)
	feedback    map[string][]byte // feedback records by id, made by the first AddFeedback (feedback.go)
	workflows   map[string][]memWorkflow
	aliases     map[string]WorkflowAlias // by "name \x00 alias", made by the first SetWorkflowAlias (registry_store.go)
	codecs      Codecs
	migrations  Migrations
	docs        docCache
}

// memExec is one execution's records.
type memExec struct {
	exec        []byte
	head        []byte
	scopes      map[string][]byte
	history     [][]byte                   // history records, as Bolt stores them
	checkpoints map[string]CheckpointWrite // as Apply wrote them, without their snapshots
	namespaces  map[string]bool
}

var _ Store = (*Memory)(nil)

// NewMemory returns an empty memory store.
func NewMemory() *Memory {
	return &Memory{
		execs:       make(map[string]*memExec),
		definitions: make(map[string][]byte),
		blobs:       make(map[string][]byte),
		refs:        make(map[string]int),
		orphans:     make(map[string]bool),
		memory:      make(map[string][]byte),
		outbox:      make(map[string][]byte),
		workflows:   make(map[string][]memWorkflow),
	}
}

// Create records a new execution; ErrExists when the id is taken.
func (m *Memory) Create(ctx context.Context, e *engine.Execution) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	c, err := newExecution(e)
	if err != nil {
		return fmt.Errorf("create execution %s: %w", e.ID, err)
	}
	head := encodeHead(&c.head)
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return ErrClosed
	}
	if _, ok := m.execs[c.id]; ok {
		return fmt.Errorf("create execution %s: %w", c.id, engine.ErrExists)
	}
	if c.definitionHash != "" && len(c.definition) > 0 {
		if _, ok := m.definitions[c.definitionHash]; !ok {
			m.definitions[c.definitionHash] = c.definition
		}
	}
	x := &memExec{exec: c.exec, head: head, scopes: make(map[string][]byte), checkpoints: make(map[string]CheckpointWrite), namespaces: make(map[string]bool)}
	for _, w := range c.scopes {
		if w.value != nil {
			x.scopes[w.key] = w.value
		}
	}
	m.execs[c.id] = x
	return nil
}

// Commit applies one step of an execution atomically.
func (m *Memory) Commit(ctx context.Context, c *engine.Commit) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	p, err := prepareCommit(c, &m.codecs, CodecNone, &m.docs)
	if err != nil {
		return fmt.Errorf("commit execution %s: %w", c.Execution, err)
	}
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return ErrClosed
	}
	err = m.apply(p)
	m.mu.Unlock()
	if err != nil {
		return fmt.Errorf("commit execution %s: %w", p.id, err)
	}
	p.committed(&m.docs)
	return nil
}

// apply writes a prepared commit with m.mu held. Everything that can fail
// is computed (p.apply, as every backend's) before anything is changed.
func (m *Memory) apply(p *prepared) error {
	x, ok := m.execs[p.id]
	if !ok {
		return engine.ErrNotFound
	}
	a, err := p.apply(x.head, x.history, func(k []byte) []byte { return m.memory[string(k)] })
	if err != nil {
		return err
	}
	if err := m.checkOutbox(p.outbox); err != nil {
		return err
	}
	var oldBlob string
	if cp := a.Checkpoint; cp != nil {
		if old, ok := x.checkpoints[cp.Name]; ok {
			_, r, err := decodeCheckpoint(p.id, cp.Name, old.Record, false)
			if err != nil {
				return err
			}
			oldBlob = r.Blob
		}
	}

	var droppedBlobs []string
	if a.DropHistory {
		for name, cp := range x.checkpoints {
			_, r, err := decodeCheckpoint(p.id, name, cp.Record, false)
			if err != nil {
				return err
			}
			droppedBlobs = append(droppedBlobs, r.Blob)
		}
	}

	x.head = a.Head
	if a.DropHistory {
		x.history = nil
		clear(x.checkpoints)
		for _, b := range droppedBlobs {
			m.unref(b)
		}
	}
	if len(a.DropScopes) > 0 {
		maps.DeleteFunc(x.scopes, func(k string, _ []byte) bool { return dropped(k, a.DropScopes) })
	}
	for _, w := range a.Scopes {
		if w.Value == nil {
			delete(x.scopes, w.Key)
		} else {
			x.scopes[w.Key] = w.Value
		}
	}
	for i, rec := range a.Superseded {
		x.history[i] = rec
	}
	if a.History != nil {
		x.history = append(x.history, a.History)
	}
	if cp := a.Checkpoint; cp != nil {
		m.ref(cp.Blob, cp.Snapshot)
		if oldBlob != "" {
			m.unref(oldBlob)
		}
		kept := *cp
		kept.Snapshot = nil
		x.checkpoints[cp.Name] = kept
	}
	for _, ns := range a.Namespaces {
		x.namespaces[ns] = true
	}
	for _, w := range a.Memory {
		k := string(idKey(w.Namespace, w.Key))
		if w.Record == nil {
			delete(m.memory, k)
		} else {
			m.memory[k] = w.Record
		}
	}
	m.writeOutbox(p.outbox)
	return nil
}

// ref records one more reference to a blob, storing it if it is new.
func (m *Memory) ref(key string, data []byte) {
	if _, ok := m.blobs[key]; !ok {
		m.blobs[key] = data
	}
	m.refs[key]++
	delete(m.orphans, key)
}

// unref drops a reference to a blob; a blob left unreferenced is an
// orphan, removed by GC.
func (m *Memory) unref(key string) {
	if m.refs[key]--; m.refs[key] <= 0 {
		delete(m.refs, key)
		m.orphans[key] = true
	}
}

// lookup returns an execution's records with m.mu held.
func (m *Memory) lookup(id string) (*memExec, error) {
	if m.closed {
		return nil, ErrClosed
	}
	x, ok := m.execs[id]
	if !ok {
		return nil, fmt.Errorf("execution %s: %w", id, engine.ErrNotFound)
	}
	return x, nil
}

// Load returns an execution as last committed; ErrNotFound when there is
// none.
func (m *Memory) Load(ctx context.Context, id string) (*engine.Execution, error) {
	// The records are taken under the lock and decoded after it: a commit
	// replaces a record, never changes one, and decoding a big execution
	// (a Map's document, its items' scopes) must not hold up the commits
	// and, behind them, every other read.
	m.mu.RLock()
	x, err := m.lookup(id)
	if err != nil {
		m.mu.RUnlock()
		return nil, err
	}
	execRec, headRec := x.exec, x.head
	scopeRecs := maps.Clone(x.scopes)
	definition := m.definitions
	namespaces := slices.Sorted(maps.Keys(x.namespaces))
	m.mu.RUnlock()
	rec, err := decodeExec(id, execRec)
	if err != nil {
		return nil, err
	}
	h, err := decodeHead(id, headRec)
	if err != nil {
		return nil, err
	}
	scopes := make(map[string]*engine.Scope, len(scopeRecs))
	for k, v := range scopeRecs {
		if scopes[k], err = decodeScope(v); err != nil {
			return nil, fmt.Errorf("execution %s: scope %q: %w", id, k, err)
		}
	}
	m.mu.RLock()
	def := bytes.Clone(definition[rec.DefinitionHash])
	m.mu.RUnlock()
	e, err := execution(id, rec, h, def, scopes)
	if err != nil {
		return nil, err
	}
	if len(namespaces) > 0 {
		e.Progress.Namespaces = namespaces
	}
	return e, nil
}

// Checkpoint returns the named checkpoint of an execution, its document
// decoded; ErrNotFound when there is none, ErrCorrupt when its snapshot
// does not decode, an *IntegrityError when it disagrees with the history
// (VerifyCheckpoints). Expired checkpoints are returned until GC removes
// them.
func (m *Memory) Checkpoint(ctx context.Context, id, name string) (*engine.Checkpoint, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	x, err := m.lookup(id)
	if err != nil {
		return nil, err
	}
	cp, ok := x.checkpoints[name]
	if !ok {
		return nil, fmt.Errorf("execution %s checkpoint %q: %w", id, name, engine.ErrNotFound)
	}
	if err := VerifyCheckpoints(id, x.history, []CheckpointWrite{cp}); err != nil {
		return nil, err
	}
	_, r, err := decodeCheckpoint(id, name, cp.Record, false)
	if err != nil {
		return nil, err
	}
	blob, found := m.blobs[r.Blob]
	return loadCheckpoint(id, name, cp.Record, blob, found, &m.codecs, &m.migrations)
}

// ListCheckpoints returns an execution's checkpoints without their
// documents, oldest first; an *IntegrityError names the first, by name,
// that disagrees with the history (VerifyCheckpoints).
func (m *Memory) ListCheckpoints(ctx context.Context, id string) ([]*engine.Checkpoint, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	x, err := m.lookup(id)
	if err != nil {
		return nil, err
	}
	rows := x.checkpointRows()
	if err := VerifyCheckpoints(id, x.history, rows); err != nil {
		return nil, err
	}
	out := make([]*engine.Checkpoint, 0, len(rows))
	for _, row := range rows {
		cp, _, err := decodeCheckpoint(id, row.Name, row.Record, false)
		if err != nil {
			return nil, err
		}
		out = append(out, cp)
	}
	sortCheckpoints(out)
	return out, nil
}

// checkpointRows returns the execution's checkpoints by name.
func (x *memExec) checkpointRows() []CheckpointWrite {
	out := make([]CheckpointWrite, 0, len(x.checkpoints))
	for _, name := range slices.Sorted(maps.Keys(x.checkpoints)) {
		out = append(out, x.checkpoints[name])
	}
	return out
}

// Due returns the WAITING executions whose WakeAt is at or before now,
// earliest first.
func (m *Memory) Due(ctx context.Context, now time.Time) ([]string, error) {
	type due struct {
		id string
		at time.Time
	}
	var ds []due
	err := m.scan(func(id string, x *memExec, h *headRecord) error {
		if at := waitingAt(h); !at.IsZero() && !at.After(now) {
			ds = append(ds, due{id, at})
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	slices.SortFunc(ds, func(a, b due) int {
		if c := a.at.Compare(b.at); c != 0 {
			return c
		}
		return strings.Compare(a.id, b.id)
	})
	out := make([]string, len(ds))
	for i, d := range ds {
		out[i] = d.id
	}
	return out, nil
}

// Unfinished returns the RUNNING executions, by id.
func (m *Memory) Unfinished(ctx context.Context) ([]string, error) {
	var out []string
	err := m.scan(func(id string, x *memExec, h *headRecord) error {
		if h.Status == engine.StatusRunning {
			out = append(out, id)
		}
		return nil
	})
	slices.Sort(out)
	return out, err
}

// scan calls f for every execution with its head, under the read lock.
func (m *Memory) scan(f func(id string, x *memExec, h *headRecord) error) error {
	m.mu.RLock()
	defer m.mu.RUnlock()
	if m.closed {
		return ErrClosed
	}
	for id, x := range m.execs {
		h, err := decodeHead(id, x.head)
		if err != nil {
			return err
		}
		if err := f(id, x, h); err != nil {
			return err
		}
	}
	return nil
}

// History returns an execution's history in order.
func (m *Memory) History(ctx context.Context, id string) ([]engine.Event, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	x, err := m.lookup(id)
	if err != nil {
		return nil, err
	}
	records, err := memRecords(x.history)
	if err != nil {
		return nil, fmt.Errorf("execution %s: %w", id, err)
	}
	return readHistory(id, records)
}

// memRecords parses an execution's history records.
func memRecords(values [][]byte) ([]storedRecord, error) {
	out := make([]storedRecord, len(values))
	for i, v := range values {
		r, err := parseHistoryRecord(v)
		if err != nil {
			return nil, err
		}
		out[i] = storedRecord{value: v, historyRecord: r}
	}
	return out, nil
}

// VerifyHistory checks an execution's history and its checkpoints: every
// event's hash and link (ErrTampered names the first event that does not
// verify), then the checkpoints against the chain (an *IntegrityError
// names the first, by name, that disagrees, and the field;
// VerifyCheckpoints).
func (m *Memory) VerifyHistory(ctx context.Context, id string) error {
	m.mu.RLock()
	defer m.mu.RUnlock()
	x, err := m.lookup(id)
	if err != nil {
		return err
	}
	h, err := decodeHead(id, x.head)
	if err != nil {
		return err
	}
	records, err := memRecords(x.history)
	if err != nil {
		return fmt.Errorf("execution %s: %w", id, err)
	}
	parsed := make([]historyRecord, len(records))
	for i := range records {
		parsed[i] = records[i].historyRecord
	}
	if err := verifyHistory(id, parsed, h); err != nil {
		return err
	}
	return VerifyCheckpoints(id, x.history, x.checkpointRows())
}

// Definition returns the definition text stored under hash.
func (m *Memory) Definition(ctx context.Context, hash string) ([]byte, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	if m.closed {
		return nil, ErrClosed
	}
	def, ok := m.definitions[hash]
	if !ok {
		return nil, fmt.Errorf("definition %s: %w", hash, engine.ErrNotFound)
	}
	return bytes.Clone(def), nil
}

// GC removes expired checkpoints (but not the newest of a RUNNING or
// WAITING execution) and unreferenced snapshot blobs.
func (m *Memory) GC(ctx context.Context, now time.Time) (GCReport, error) {
	if err := ctx.Err(); err != nil {
		return GCReport{}, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return GCReport{}, ErrClosed
	}
	var rep GCReport
	for id, x := range m.execs {
		h, err := decodeHead(id, x.head)
		if err != nil {
			return rep, err
		}
		recs := make(map[string]*checkpointRecord, len(x.checkpoints))
		newest := ""
		for name, v := range x.checkpoints {
			_, r, err := decodeCheckpoint(id, name, v.Record, false)
			if err != nil {
				return rep, err
			}
			recs[name] = r
			if newest == "" || newer(r, name, recs[newest], newest) {
				newest = name
			}
		}
		for name, r := range recs {
			if r.ExpiresAt.IsZero() || r.ExpiresAt.After(now) || (name == newest && live(h.Status)) {
				continue
			}
			delete(x.checkpoints, name)
			m.unref(r.Blob)
			rep.Checkpoints++
		}
	}
	for key := range m.orphans {
		delete(m.blobs, key)
		delete(m.orphans, key)
		rep.Blobs++
	}
	return rep, m.gcMemory(now, &rep)
}

// Close empties the store; later calls fail with ErrClosed.
func (m *Memory) Close() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.closed = true
	m.execs, m.definitions, m.blobs, m.refs, m.orphans, m.memory, m.workflows, m.outbox = nil, nil, nil, nil, nil, nil, nil, nil
	return nil
}
