package store

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"maps"
	"reflect"
	"sync"
	"sync/atomic"

	"github.com/aslrun/aslrun/jsonvalue"
)

// Documents of the history. The events of a commit carry the same
// documents again and again: a state's input is the previous state's
// output, and the Entered and Exited events of a state hold its input and
// its output. A history record of format 2 keeps each document its events
// introduce once, under its canonical hash, and its events name their
// input and output by that hash; a document the execution's history
// already holds is not stored again. Each document is stored
//
//	[0:32]   its canonical hash (jsonvalue.CanonicalHash)
//	[32]     how: docFull or docDelta
//	docFull  its jsonvalue.Marshal form (length, uvarint, and bytes)
//	docDelta the hash of an earlier document of the execution's history,
//	         its base (32 bytes), then a delta from the base (length and
//	         bytes): a document that changes a field of the one before
//	         costs the field, not the document
//
// A delta is a list of operations (their number, uvarint), each an opcode
// (deltaSet or deltaRemove), a path of object member names (their number
// and each name as a string) and, for deltaSet, the member's new value
// (length and jsonvalue.Marshal form). Paths go only through objects:
// arrays and scalars are set whole.
//
// Reading a history rebuilds its documents in order (historyReader), and
// VerifyHistory checks each against its hash, so that an edited document,
// delta or base is found as surely as an edited event.
const (
	docFull  = 1
	docDelta = 2

	deltaSet    = 1
	deltaRemove = 2
)

// maxDeltaLen is the delta length below which a delta is taken without
// weighing it against the whole document; a longer delta is taken when it
// is under half of the document.
const maxDeltaLen = 256

// storedDoc is a document of a history record as stored.
type storedDoc struct {
	hash [sha256.Size]byte
	kind byte
	base [sha256.Size]byte
	data []byte
}

// readDocs reads a record's documents.
func readDocs(rd *reader) []storedDoc {
	n := rd.uvarint()
	if n > uint64(len(rd.b))/(sha256.Size+2) {
		rd.fail(fmt.Errorf("%d documents in %d bytes", n, len(rd.b)))
		return nil
	}
	docs := make([]storedDoc, n)
	for i := range docs {
		d := &docs[i]
		copy(d.hash[:], rd.fixed(sha256.Size))
		switch d.kind = rd.byte(); d.kind {
		case docFull:
		case docDelta:
			copy(d.base[:], rd.fixed(sha256.Size))
		default:
			if rd.err == nil {
				rd.fail(fmt.Errorf("document %d is of unknown kind %d", i+1, d.kind))
			}
		}
		d.data = rd.bytes()
	}
	return docs
}

// value decodes the document, a delta against a document of docs.
func (d *storedDoc) value(docs map[[sha256.Size]byte]any) (any, error) {
	if d.kind == docFull {
		return jsonvalue.Decode(d.data)
	}
	base, ok := docs[d.base]
	if !ok {
		return nil, fmt.Errorf("its base %x is not in the history before it", d.base)
	}
	return applyDelta(base, d.data)
}

// appendDelta appends the delta from document a to document b (its
// number of operations first); ok is false when either is not an object
// or the delta grows past limit bytes. scratch is a buffer to reuse.
func appendDelta(dst []byte, a, b any, limit int, scratch *deltaScratch) (out []byte, ok bool) {
	am, ok1 := a.(map[string]any)
	bm, ok2 := b.(map[string]any)
	if !ok1 || !ok2 {
		return dst, false
	}
	scratch.ops, scratch.path, scratch.n, scratch.limit = scratch.ops[:0], scratch.path[:0], 0, limit
	if !scratch.walk(am, bm) {
		return dst, false
	}
	dst = appendUvarint(dst, uint64(scratch.n))
	return append(dst, scratch.ops...), true
}

// deltaScratch is appendDelta's state, its buffers reused from one delta
// to the next.
type deltaScratch struct {
	ops   []byte
	path  []string
	n     int
	limit int
}

// walk adds the operations that turn am into bm.
func (d *deltaScratch) walk(am, bm map[string]any) bool {
	for k, bv := range bm {
		av, had := am[k]
		if had && sameValue(av, bv) {
			continue
		}
		d.path = append(d.path, k)
		if ac, ok := av.(map[string]any); ok && had {
			if bc, ok := bv.(map[string]any); ok {
				if !d.walk(ac, bc) {
					return false
				}
				d.path = d.path[:len(d.path)-1]
				continue
			}
		}
		d.ops = appendDeltaOp(d.ops, deltaSet, d.path)
		start := len(d.ops)
		var err error
		if d.ops, err = jsonvalue.AppendJSON(d.ops, bv); err != nil {
			return false
		}
		d.ops = prefixLength(d.ops, start)
		d.n++
		d.path = d.path[:len(d.path)-1]
		if len(d.ops) > d.limit {
			return false
		}
	}
	for k := range am {
		if _, ok := bm[k]; !ok {
			d.ops = appendDeltaOp(d.ops, deltaRemove, append(d.path, k))
			d.n++
		}
	}
	return len(d.ops) <= d.limit
}

// prefixLength puts the length of b[start:] (uvarint) before it, as
// appendBytes would have written it.
func prefixLength(b []byte, start int) []byte {
	var pre [binary.MaxVarintLen64]byte
	k := binary.PutUvarint(pre[:], uint64(len(b)-start))
	b = append(b, pre[:k]...)
	copy(b[start+k:], b[start:len(b)-k])
	copy(b[start:], pre[:k])
	return b
}

func appendDeltaOp(b []byte, op byte, path []string) []byte {
	b = append(b, op)
	b = appendUvarint(b, uint64(len(path)))
	for _, k := range path {
		b = appendStr(b, k)
	}
	return b
}

// sameValue reports whether two values of a document are the same without
// looking into them: the same scalar, or the same object or array in
// memory (documents are never changed once built, so the engine's copies
// along a path share everything else).
func sameValue(a, b any) bool {
	switch x := a.(type) {
	case map[string]any, []any, *jsonvalue.Packed:
		ia, ok1 := identityOf(x)
		ib, ok2 := identityOf(b)
		return ok1 && ok2 && ia == ib
	case string, bool, nil:
		return a == b
	}
	// Numbers and any other scalar: equal when of one type and equal.
	ta, tb := reflect.TypeOf(a), reflect.TypeOf(b)
	return ta == tb && ta.Comparable() && a == b
}

// applyDelta applies a delta to base, copying the objects along each
// path: base is not changed.
func applyDelta(base any, delta []byte) (any, error) {
	rd := reader{b: delta}
	n := rd.uvarint()
	doc := base
	for i := uint64(0); i < n && rd.err == nil; i++ {
		op := rd.byte()
		np := rd.uvarint()
		if np == 0 || np > uint64(len(rd.b)) {
			return nil, fmt.Errorf("delta operation %d: path of %d members", i+1, np)
		}
		path := make([]string, np)
		for j := range path {
			path[j] = rd.str()
		}
		var v any
		switch op {
		case deltaSet:
			raw := rd.bytes()
			if rd.err != nil {
				break
			}
			var err error
			if v, err = jsonvalue.Decode(raw); err != nil {
				return nil, fmt.Errorf("delta operation %d: %w", i+1, err)
			}
		case deltaRemove:
		default:
			return nil, fmt.Errorf("delta operation %d: unknown operation %d", i+1, op)
		}
		if rd.err != nil {
			break
		}
		var err error
		if doc, err = setPath(doc, path, v, op == deltaRemove); err != nil {
			return nil, fmt.Errorf("delta operation %d: %w", i+1, err)
		}
	}
	if rd.err != nil {
		return nil, fmt.Errorf("delta: %w", rd.err)
	}
	if len(rd.b) != 0 {
		return nil, fmt.Errorf("delta: %d bytes after its operations", len(rd.b))
	}
	return doc, nil
}

// setPath returns doc with the member at path set to v (or removed),
// copying the objects along the path.
func setPath(doc any, path []string, v any, remove bool) (any, error) {
	m, ok := doc.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("member %q of a %s", path[0], jsonvalue.TypeName(doc))
	}
	c := maps.Clone(m)
	if c == nil {
		c = make(map[string]any, 1)
	}
	k := path[0]
	switch {
	case len(path) > 1:
		inner, ok := m[k]
		if !ok {
			return nil, fmt.Errorf("no member %q", k)
		}
		var err error
		if c[k], err = setPath(inner, path[1:], v, remove); err != nil {
			return nil, err
		}
	case remove:
		if _, ok := m[k]; !ok {
			return nil, fmt.Errorf("no member %q to remove", k)
		}
		delete(c, k)
	default:
		c[k] = v
	}
	return c, nil
}

// docWriter collects the documents a commit's events introduce, encoding
// each that its execution's history does not hold yet, whole or as a
// delta against the last document of its scope.
type docWriter struct {
	memo  *docMemo
	known *execDocs // what the execution's history holds; nil: nothing known
	buf   []byte
	n     int
	last  []scopeDoc // the last document of each scope, in the order of their first
	used  []cachedDoc
	added []int // indexes in used of the documents buf holds
	delta *deltaScratch
}

// scopeDoc is the last document of a scope.
type scopeDoc struct {
	scope string
	d     cachedDoc
}

// newDocWriter returns a docWriter for the documents of events events.
func newDocWriter(memo *docMemo, known *execDocs, events int) *docWriter {
	w := &docWriter{memo: memo, known: known, used: make([]cachedDoc, 0, 2*events), added: make([]int, 0, events), buf: make([]byte, 0, 512)}
	if known != nil {
		w.delta = &known.delta
	} else {
		w.delta = new(deltaScratch)
	}
	return w
}

// lastOf returns the last document of scope in this commit.
func (w *docWriter) lastOf(scope string) (cachedDoc, bool) {
	for i := range w.last {
		if w.last[i].scope == scope {
			return w.last[i].d, true
		}
	}
	return cachedDoc{}, false
}

// setLast makes d the last document of scope.
func (w *docWriter) setLast(scope string, d cachedDoc) {
	for i := range w.last {
		if w.last[i].scope == scope {
			w.last[i].d = d
			return
		}
	}
	w.last = append(w.last, scopeDoc{scope: scope, d: d})
}

// add makes v one of the history's documents, under its canonical hash,
// which it returns; scope is the scope of the event that carries it.
func (w *docWriter) add(v any, scope string) ([sha256.Size]byte, error) {
	sum, err := w.memo.hash(v)
	if err != nil {
		return sum, err
	}
	now := w.known.commitNo()
	d := cachedDoc{v: v, sum: sum, at: docPlace{root: now}}
	base, hasBase := w.lastOf(scope)
	if !hasBase && w.known != nil {
		base, hasBase = w.known.last[scope]
	}
	if i, ok := w.holds(sum); ok {
		d.at = w.used[i].at
		w.setLast(scope, d)
		w.used = append(w.used, d)
		return sum, nil
	}
	if at, ok := w.known.place(sum); ok && now-at.root <= maxDocReach {
		d.at = at
		w.setLast(scope, d)
		w.used = append(w.used, d)
		return sum, nil
	}
	// A base is used only while what it rests on is within reach, and
	// its chain of deltas short, so that reading a page of the history
	// reads a bounded number of records before it and applies a bounded
	// number of deltas (HistoryRange).
	useBase := hasBase && base.sum != sum && now-base.at.root < maxDocReach && base.at.depth < maxDeltaDepth
	if useBase {
		d.at = docPlace{root: base.at.root, depth: base.at.depth + 1}
	}
	w.setLast(scope, d)
	w.used = append(w.used, d)
	w.added = append(w.added, len(w.used)-1)
	w.n++
	if useBase {
		start := len(w.buf)
		buf := append(append(append(w.buf, sum[:]...), docDelta), base.sum[:]...)
		mark := len(buf)
		if buf, ok := appendDelta(buf, base.v, v, 4*maxDeltaLen, w.delta); ok {
			if n := len(buf) - mark; n <= maxDeltaLen || 2*n < jsonvalue.Size(v) {
				w.buf = prefixLength(buf, mark)
				return sum, nil
			}
		}
		w.buf = w.buf[:start]
		d.at = docPlace{root: now}
		w.setLast(scope, d)
		w.used[len(w.used)-1] = d
	}
	raw, err := w.memo.raw(v)
	if err != nil {
		return sum, err
	}
	w.buf = appendBytes(append(append(w.buf, sum[:]...), docFull), raw)
	return sum, nil
}

// holds reports whether the commit already stores the document of hash
// sum, and its index in w.used. A commit introduces few documents, so
// that a scan is quicker than a map.
func (w *docWriter) holds(sum [sha256.Size]byte) (int, bool) {
	for _, i := range w.added {
		if w.used[i].sum == sum {
			return i, true
		}
	}
	return 0, false
}

// maxDocReach bounds, in commits of the execution, how far back in its
// history the records that a document rests on may be: a document is
// referred to again, or used as the base of a delta, only while the
// oldest record its value needs (its root: the record that stores it
// whole, or its base's root) is at most maxDocReach commits before the
// one being written; past it, it is stored again. HistoryRange then
// reads, besides the records of its page, at most about maxDocReach
// records before them for a history this process wrote.
const maxDocReach = 64

// maxDeltaDepth bounds the deltas on deltas a document of the history
// may rest on: past it, it is stored whole.
const maxDeltaDepth = 16

// docPlace is where a document of the history rests: root is the commit
// number of the oldest record its value needs (the record that stores it
// whole, or its base's root), and depth the number of deltas applied to
// get it (0: stored whole).
type docPlace struct {
	root  int64
	depth int
}

// docCache remembers, per execution, what the commits of this process
// wrote to its history: the hashes of the documents it holds, the
// documents of its last commit by identity (so that the next commit,
// whose first input is usually the last output, does not hash them
// again), the last document of each scope (the base of the next delta)
// and the encodings of the large parts of its documents (so that a new
// document is hashed without encoding again what it shares with the ones
// before). It is filled only by commits that succeeded, so that it never
// names a document the history lacks; a commit prepared before another
// succeeded may store a document twice, which costs room, not
// correctness. A docCache is safe for concurrent use.
type docCache struct {
	mu    sync.Mutex
	execs map[string]*execDocs
	// encBytes is the size of the encodings the executions' caches hold,
	// as of their last commits; when it passes maxCachedEncodings, every
	// cache is dropped (gen counts the drops).
	encBytes int
	gen      int
}

// Bounds of the cache: it forgets everything when it holds too many
// executions, an execution's hashes when it holds too many of them (and
// its scopes' last documents when it has too many scopes), and
// every execution's encodings when together they pass their bound.
const (
	maxCachedScopes    = 1024
	maxCachedExecs     = 4096
	maxCachedHashes    = 1 << 14
	maxExecEncodings   = 256 << 10
	maxCachedEncodings = 64 << 20
)

// execDocs is what a docCache knows of one execution; mu is held while a
// commit of the execution is prepared, and while the cache is updated
// after it.
type execDocs struct {
	mu sync.Mutex
	// stored maps the documents the history holds to their roots (the
	// commit number of the oldest record their value needs), and commits
	// counts the commits of the execution this cache saw.
	stored  map[[sha256.Size]byte]docPlace
	commits int64
	byID    map[docIdentity]memoEntry
	last    map[string]cachedDoc
	enc     *jsonvalue.EncodeCache
	gen     int // the docCache's gen when enc was made
	spare   map[docIdentity]memoEntry
	delta   deltaScratch // the buffers of the deltas of its commits
	// counted is enc's size as counted in the docCache's encBytes; forget
	// reads it without mu.
	counted atomic.Int64
}

// cachedDoc is a document and its canonical hash; holding the document
// keeps its memory from being reused by another.
type cachedDoc struct {
	v   any
	sum [sha256.Size]byte
	at  docPlace
}

// place returns where a document the history holds rests.
func (e *execDocs) place(sum [sha256.Size]byte) (docPlace, bool) {
	if e == nil {
		return docPlace{}, false
	}
	at, ok := e.stored[sum]
	return at, ok
}

// commitNo is the number of the commit being written, as roots count
// them (0 without a cache).
func (e *execDocs) commitNo() int64 {
	if e == nil {
		return 0
	}
	return e.commits + 1
}

// get returns the entry of execution id, locked; the caller unlocks it.
func (c *docCache) get(id string) *execDocs {
	c.mu.Lock()
	e := c.execs[id]
	if e == nil {
		if c.execs == nil || len(c.execs) >= maxCachedExecs {
			c.execs = make(map[string]*execDocs)
			c.encBytes = 0
			c.gen++
		}
		e = &execDocs{stored: make(map[[sha256.Size]byte]docPlace), gen: c.gen}
		c.execs[id] = e
	}
	gen := c.gen
	c.mu.Unlock()
	e.mu.Lock()
	if e.gen != gen {
		// The caches were dropped since this one was counted.
		e.enc, e.gen = nil, gen
		e.counted.Store(0)
	}
	return e
}

// forget drops what the cache knows of execution id (an execution that
// ended).
func (c *docCache) forget(id string) {
	c.mu.Lock()
	if e := c.execs[id]; e != nil {
		delete(c.execs, id)
		c.encBytes -= int(e.counted.Load())
	}
	c.mu.Unlock()
}

// memo returns a docMemo for a commit of the execution (locked by the
// caller), using its encodings.
func (e *execDocs) memo() *docMemo {
	m := &docMemo{prev: e.byID, m: e.spare}
	e.spare = nil
	if m.m == nil {
		m.m = make(map[docIdentity]memoEntry)
	}
	if e.enc == nil {
		e.enc = jsonvalue.NewEncodeCache(maxExecEncodings)
	}
	m.enc = e.enc
	return m
}

// committed records, in e (locked by the caller), what a commit that
// succeeded wrote: the documents w stored or referred to, and the
// documents memo hashed; it returns how much e's encodings grew.
func (e *execDocs) committed(w *docWriter, memo *docMemo) int {
	if w != nil {
		if len(e.stored)+len(w.used) > maxCachedHashes {
			clear(e.stored)
		}
		e.commits++
		for _, d := range w.used {
			e.stored[d.sum] = d.at
		}
		if e.last == nil || len(e.last)+len(w.last) > maxCachedScopes {
			// A Map's items are scopes of their own: past the bound the
			// bases are forgotten (the next document of a scope is then
			// stored whole), so that the cache does not grow with the
			// items run.
			e.last = make(map[string]cachedDoc, len(w.last))
		}
		for _, l := range w.last {
			e.last[l.scope] = l.d
		}
	}
	if old := e.byID; old != nil && len(old) <= 64 {
		clear(old)
		e.spare = old
	}
	e.byID = memo.m
	if e.enc == nil {
		return 0
	}
	n := int64(e.enc.Bytes())
	return int(n - e.counted.Swap(n))
}

// grew adds to the docCache's count of encodings, dropping every cache
// when it passes its bound.
func (c *docCache) grew(n int) {
	if n == 0 {
		return
	}
	c.mu.Lock()
	c.encBytes += n
	if c.encBytes > maxCachedEncodings {
		c.encBytes = 0
		c.gen++
	}
	c.mu.Unlock()
}

// docMemo remembers the encoding and canonical hash of documents within
// one commit, by identity: the events of a step share one document. It
// also knows the documents of the execution's previous commit (prev), so
// that a document unchanged since is neither hashed nor encoded again,
// and writes new documents with the execution's encodings (enc; nil:
// none).
type docMemo struct {
	m    map[docIdentity]memoEntry
	prev map[docIdentity]memoEntry
	enc  *jsonvalue.EncodeCache
}

// memoEntry is a document (held, so that its memory is not reused), its
// jsonvalue.Marshal form when it was encoded, and its canonical hash when
// hashed.
type memoEntry struct {
	v      any
	raw    []byte
	sum    [sha256.Size]byte
	hashed bool
}

// docIdentity identifies a map or a non-empty slice by its memory.
type docIdentity struct {
	p uintptr
	n int
}

func newDocMemo() *docMemo { return &docMemo{m: make(map[docIdentity]memoEntry)} }

// identityOf returns v's identity when it is worth remembering: maps and
// non-empty slices (which are never modified once built, so that the same
// memory is the same document).
func identityOf(v any) (docIdentity, bool) {
	switch x := v.(type) {
	case map[string]any:
		if x != nil {
			return docIdentity{p: reflect.ValueOf(x).Pointer(), n: -1}, true
		}
	case []any:
		if len(x) > 0 {
			return docIdentity{p: reflect.ValueOf(x).Pointer(), n: len(x)}, true
		}
	case *jsonvalue.Packed:
		if x != nil {
			return docIdentity{p: reflect.ValueOf(x).Pointer(), n: -2}, true
		}
	}
	return docIdentity{}, false
}

// marshal returns jsonvalue.Marshal(v), with the memo's encodings.
func (m *docMemo) marshal(v any) ([]byte, error) {
	if m.enc != nil {
		return m.enc.Marshal(v)
	}
	return jsonvalue.Marshal(v)
}

// canonicalSum returns the SHA-256 of jsonvalue.Canonical(v), with the
// memo's encodings.
func (m *docMemo) canonicalSum(v any) ([sha256.Size]byte, error) {
	if m.enc != nil {
		return m.enc.CanonicalSum(v)
	}
	b, err := jsonvalue.Canonical(v)
	if err != nil {
		return [sha256.Size]byte{}, err
	}
	return sha256.Sum256(b), nil
}

// raw returns jsonvalue.Marshal(v).
func (m *docMemo) raw(v any) ([]byte, error) {
	id, ok := identityOf(v)
	if !ok {
		return m.marshal(v)
	}
	ent := m.m[id]
	if ent.raw == nil {
		if d, ok := m.prev[id]; ok && d.raw != nil {
			// Stored records are never changed, so the bytes can be shared.
			ent.raw = d.raw
		} else {
			b, err := m.marshal(v)
			if err != nil {
				return nil, err
			}
			ent.raw = b
		}
		ent.v = v
		m.m[id] = ent
	}
	return ent.raw, nil
}

// hash returns the SHA-256 of jsonvalue.Canonical(v), whose hex is
// jsonvalue.CanonicalHash(v).
func (m *docMemo) hash(v any) ([sha256.Size]byte, error) {
	id, ok := identityOf(v)
	if !ok {
		return m.canonicalSum(v)
	}
	ent := m.m[id]
	if !ent.hashed {
		if d, ok := m.prev[id]; ok && d.hashed {
			ent.sum = d.sum
		} else {
			sum, err := m.canonicalSum(v)
			if err != nil {
				return sum, err
			}
			ent.sum = sum
		}
		ent.v, ent.hashed = v, true
		m.m[id] = ent
	}
	return ent.sum, nil
}

// hashHex returns jsonvalue.CanonicalHash(v).
func (m *docMemo) hashHex(v any) (string, error) {
	sum, err := m.hash(v)
	if err != nil {
		return "", err
	}
	return hex.EncodeToString(sum[:]), nil
}
