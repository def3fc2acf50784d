package engine

import (
	"bytes"
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"sync"

	"github.com/aslrun/aslrun/jsonpath"
	"github.com/aslrun/aslrun/jsonvalue"
	"github.com/aslrun/aslrun/states"
)

// Markers of a redacted value. In a document, a secret is the object
// {"$redacted": "h:<keyed hash>", "$sealed": "<the value, encrypted>"};
// where a document leaves the engine for people or other systems (an
// emitted event, a log line) it is {"$redacted": "h:…"} alone; inside a
// longer text it is "[redacted h:…]", and is not kept.
const (
	RedactedKey = "$redacted"
	SealedKey   = "$sealed"
)

// MinRedactKey is the least number of bytes of a redaction key.
const MinRedactKey = 32

// Secrets shorter than these are hidden where a Redact path selects them
// only: a whole value (a string, or a number written with at least as many
// characters) equal to one of minWholeSecret characters or more is hidden
// wherever it appears, and a string of minTextSecret or more inside longer
// texts too.
const (
	minWholeSecret = 4
	minTextSecret  = 6
)

// Redactor keeps the values an execution's Audit.Redact paths select out
// of everything it writes: it marks them with a keyed hash (HMAC-SHA-256,
// so that equal values can be correlated without being readable) and
// seals them (AES-256-GCM) so that a resumed execution gets them back.
// Its keys are derived from the owner's key (Config.RedactKey); sealing is
// deterministic (the nonce is a keyed hash of the value), so the same
// value is stored the same way and documents keep their hashes.
//
// A Redactor is safe for concurrent use.
type Redactor struct {
	hashKey  []byte
	nonceKey []byte
	aead     cipher.AEAD
}

// NewRedactor returns a Redactor whose keys derive from key, at least
// MinRedactKey bytes.
func NewRedactor(key []byte) (*Redactor, error) {
	if len(key) < MinRedactKey {
		return nil, fmt.Errorf("a redaction key has at least %d bytes, not %d", MinRedactKey, len(key))
	}
	derive := func(info string) []byte {
		k, err := hkdf.Key(sha256.New, key, nil, "aslrun redact "+info, 32)
		if err != nil {
			panic(err) // 32 bytes of SHA-256 HKDF cannot fail
		}
		return k
	}
	block, err := aes.NewCipher(derive("seal"))
	if err != nil {
		return nil, err
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, err
	}
	return &Redactor{hashKey: derive("hash"), nonceKey: derive("nonce"), aead: aead}, nil
}

// ReadRedactKey reads a redaction key from a file only its owner may read
// (mode 0600 or narrower): its bytes, at least MinRedactKey of them (make
// one with `head -c 32 /dev/urandom > FILE`).
func ReadRedactKey(path string) ([]byte, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("redaction key: %w", err)
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("redaction key %s: not a regular file", path)
	}
	if fi.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("redaction key %s: others may read it (mode %#o): chmod 600 it", path, fi.Mode().Perm())
	}
	key, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("redaction key: %w", err)
	}
	if len(key) < MinRedactKey {
		return nil, fmt.Errorf("redaction key %s: %d bytes, want at least %d (head -c 32 /dev/urandom > %s)", path, len(key), MinRedactKey, path)
	}
	return key, nil
}

// newEphemeralRedactor returns a Redactor with a random key, for an
// executor that writes nothing a later process would unseal.
func newEphemeralRedactor() *Redactor {
	key := make([]byte, MinRedactKey)
	rand.Read(key)
	rd, err := NewRedactor(key)
	if err != nil {
		panic(err)
	}
	return rd
}

// Hash returns the marker hash of a value's canonical JSON text.
func (rd *Redactor) Hash(canonical []byte) string {
	m := hmac.New(sha256.New, rd.hashKey)
	m.Write(canonical)
	return "h:" + hex.EncodeToString(m.Sum(nil)[:10])
}

// seal encrypts a value's canonical JSON text.
func (rd *Redactor) seal(canonical []byte) string {
	m := hmac.New(sha256.New, rd.nonceKey)
	m.Write(canonical)
	nonce := m.Sum(nil)[:rd.aead.NonceSize()]
	out := rd.aead.Seal(slices.Clip(nonce), nonce, canonical, []byte(RedactedKey))
	return base64.RawURLEncoding.EncodeToString(out)
}

// errSealed reports a sealed value that does not open with this key.
var errSealed = errors.New("a sealed value does not open with the redaction key (was it written with another key?)")

// open decrypts what seal wrote.
func (rd *Redactor) open(s string) ([]byte, error) {
	raw, err := base64.RawURLEncoding.DecodeString(s)
	n := rd.aead.NonceSize()
	if err != nil || len(raw) < n {
		return nil, errSealed
	}
	plain, err := rd.aead.Open(nil, raw[:n], raw[n:], []byte(RedactedKey))
	if err != nil {
		return nil, errSealed
	}
	return plain, nil
}

// secrets are what one execution keeps out of what it writes: the values
// its machine's Redact paths selected in any of its documents, once seen,
// wherever they appear afterwards. Nil (no Redact path) keeps nothing.
//
// It is safe for concurrent use.
type secrets struct {
	rd    *Redactor
	paths []*jsonpath.Path

	mu      sync.RWMutex
	strs    map[string]string // whole strings hidden wherever they are → hash
	numbers map[string]string // canonical numbers hidden wherever they are → hash
	texts   []string          // strings hidden inside texts, longest first
	// markers are the markers made so far, by canonical value and
	// whether sealed: the same value is sealed once.
	markers  map[markerKey]any
	markerMu sync.Mutex
}

type markerKey struct {
	canonical string
	sealed    bool
}

// maxMarkers bounds secrets.markers.
const maxMarkers = 4096

// newSecrets returns the secrets of an execution of m, nil when m redacts
// nothing.
func newSecrets(m *states.Machine, rd *Redactor) *secrets {
	paths := m.RedactPaths()
	if len(paths) == 0 {
		return nil
	}
	return &secrets{rd: rd, paths: paths, strs: map[string]string{}, numbers: map[string]string{}, markers: map[markerKey]any{}}
}

// redactNeedsKey is the error of an execution of m, which redacts, on an
// executor without a redaction key.
func redactNeedsKey(m *states.Machine) error {
	where := ""
	m.Each(func(within, name string, s states.State) bool {
		if t, ok := s.(*states.Task); ok && t.Audit != nil && len(t.Audit.Redact) > 0 {
			where = within + name
			return false
		}
		return true
	})
	return fmt.Errorf("state %s: Audit.Redact seals values with the owner's redaction key, and this executor has none (engine.Config.RedactKey; aslrun: ASLRUN_REDACT_KEY_FILE or serve --redact-key FILE)", where)
}

// learn records the values s's paths select in doc as secrets.
func (s *secrets) learn(doc any) {
	if s == nil || doc == nil {
		return
	}
	for _, p := range s.paths {
		locs, err := p.Locate(doc)
		if err != nil {
			continue
		}
		for _, l := range locs {
			if v, ok := at(doc, l); ok && !isMarker(v) {
				s.add(v)
			}
		}
	}
}

// add records v and the strings and numbers in it as secrets.
func (s *secrets) add(v any) {
	switch t := v.(type) {
	case map[string]any:
		if isMarker(t) {
			return
		}
		for _, e := range t {
			s.add(e)
		}
	case []any:
		for _, e := range t {
			s.add(e)
		}
	case string:
		if len(t) < minWholeSecret {
			return
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		if _, ok := s.strs[t]; ok {
			return
		}
		s.strs[t] = s.rd.Hash(jsonvalue.AppendString(nil, t))
		if len(t) >= minTextSecret {
			i, _ := slices.BinarySearchFunc(s.texts, t, func(a, b string) int { return len(b) - len(a) })
			s.texts = slices.Insert(s.texts, i, t)
		}
	case nil, bool:
	default:
		c, err := jsonvalue.Canonical(t)
		if err != nil || len(c) < minWholeSecret {
			return
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		if _, ok := s.numbers[string(c)]; !ok {
			s.numbers[string(c)] = s.rd.Hash(c)
		}
	}
}

// isMarker reports whether v is a redacted value's marker.
func isMarker(v any) bool {
	m, ok := v.(map[string]any)
	if !ok || len(m) > 2 {
		return false
	}
	_, ok = m[RedactedKey].(string)
	return ok
}

// at returns the value at l in doc.
func at(doc any, l jsonpath.Location) (any, bool) {
	for _, st := range l {
		switch c := doc.(type) {
		case map[string]any:
			v, ok := c[st.Key]
			if st.IsIndex || !ok {
				return nil, false
			}
			doc = v
		case []any:
			if !st.IsIndex || st.Index < 0 || st.Index >= len(c) {
				return nil, false
			}
			doc = c[st.Index]
		default:
			return nil, false
		}
	}
	return doc, true
}

// replaceAt returns doc with the value at l replaced by f of it, copying
// the objects and arrays on the way (doc itself is not changed).
func replaceAt(doc any, l jsonpath.Location, f func(any) any) any {
	if len(l) == 0 {
		return f(doc)
	}
	switch c := doc.(type) {
	case map[string]any:
		v, ok := c[l[0].Key]
		if l[0].IsIndex || !ok {
			return doc
		}
		out := make(map[string]any, len(c))
		for k, e := range c {
			out[k] = e
		}
		out[l[0].Key] = replaceAt(v, l[1:], f)
		return out
	case []any:
		i := l[0].Index
		if !l[0].IsIndex || i < 0 || i >= len(c) {
			return doc
		}
		out := slices.Clone(c)
		out[i] = replaceAt(c[i], l[1:], f)
		return out
	}
	return doc
}

// marker returns the stored marker of v: its hash and, when sealed, v
// encrypted. Markers are made once per value and shared (documents are
// never changed in place).
func (s *secrets) marker(v any, sealed bool) any {
	c, err := jsonvalue.Canonical(v)
	if err != nil {
		return map[string]any{RedactedKey: "h:unencodable"}
	}
	k := markerKey{string(c), sealed}
	s.markerMu.Lock()
	defer s.markerMu.Unlock()
	if m, ok := s.markers[k]; ok {
		return m
	}
	m := map[string]any{RedactedKey: s.rd.Hash(c)}
	if sealed {
		m[SealedKey] = s.rd.seal(c)
	}
	if len(s.markers) >= maxMarkers {
		clear(s.markers)
	}
	s.markers[k] = m
	return m
}

// stored returns doc as it may be written: the values at the Redact paths
// and every known secret replaced by their markers, sealed. doc is not
// changed; what did not change is shared.
func (s *secrets) stored(doc any) any { return s.redact(doc, true) }

// view returns doc as people and other systems may see it: as stored, but
// with markers that do not carry the sealed value.
func (s *secrets) view(doc any) any { return s.redact(doc, false) }

func (s *secrets) redact(doc any, sealed bool) any {
	if s == nil || doc == nil {
		return doc
	}
	s.learn(doc)
	for _, p := range s.paths {
		locs, err := p.Locate(doc)
		if err != nil {
			continue
		}
		for _, l := range locs {
			doc = replaceAt(doc, l, func(v any) any {
				if isMarker(v) {
					return v
				}
				return s.marker(v, sealed)
			})
		}
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	out, _ := s.walk(doc, sealed)
	return out
}

// walk replaces the known secrets in v; with s.mu read-locked.
func (s *secrets) walk(v any, sealed bool) (any, bool) {
	switch t := v.(type) {
	case string:
		if _, ok := s.strs[t]; ok {
			return s.marker(t, sealed), true
		}
		if m := s.maskLocked(t); m != t {
			return m, true
		}
	case map[string]any:
		if isMarker(t) {
			if !sealed && len(t) == 2 {
				return map[string]any{RedactedKey: t[RedactedKey]}, true
			}
			return t, false
		}
		var out map[string]any
		for k, e := range t {
			ne, changed := s.walk(e, sealed)
			nk := s.maskLocked(k)
			if !changed && nk == k {
				continue
			}
			if out == nil {
				out = maps.Clone(t)
			}
			if nk != k {
				delete(out, k)
			}
			out[nk] = ne
		}
		if out != nil {
			return out, true
		}
	case []any:
		var out []any
		for i, e := range t {
			ne, changed := s.walk(e, sealed)
			if !changed {
				continue
			}
			if out == nil {
				out = slices.Clone(t)
			}
			out[i] = ne
		}
		if out != nil {
			return out, true
		}
	case *jsonvalue.Packed:
		// A packed array is read element by element: it stays packed
		// unless a secret is in it.
		a, err := t.Slice()
		if err != nil {
			return v, false
		}
		if out, changed := s.walk(a, sealed); changed {
			return out, true
		}
	case nil, bool:
	default:
		if len(s.numbers) == 0 {
			break
		}
		if c, err := jsonvalue.Canonical(t); err == nil {
			if _, ok := s.numbers[string(c)]; ok {
				return s.marker(t, sealed), true
			}
		}
	}
	return v, false
}

// text returns str with every secret in it masked.
func (s *secrets) text(str string) string {
	if s == nil || str == "" {
		return str
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	if h, ok := s.strs[str]; ok {
		return "[redacted " + h + "]"
	}
	return s.maskLocked(str)
}

// maskLocked replaces the secrets inside str by "[redacted h:…]"; with
// s.mu read-locked.
func (s *secrets) maskLocked(str string) string {
	for _, t := range s.texts {
		if len(t) > len(str) {
			continue
		}
		if strings.Contains(str, t) {
			str = strings.ReplaceAll(str, t, "[redacted "+s.strs[t]+"]")
		}
	}
	return str
}

// unseal returns v with every sealed marker replaced by its value, which
// becomes a secret again, and whether there was any.
func (s *secrets) unseal(v any) (any, bool, error) {
	switch t := v.(type) {
	case map[string]any:
		if isMarker(t) {
			sealed, ok := t[SealedKey].(string)
			if !ok {
				return t, false, nil
			}
			plain, err := s.rd.open(sealed)
			if err != nil {
				return nil, false, err
			}
			val, err := jsonvalue.Decode(plain)
			if err != nil {
				return nil, false, fmt.Errorf("a sealed value: %w", err)
			}
			s.add(val)
			return val, true, nil
		}
		var out map[string]any
		for k, e := range t {
			ne, changed, err := s.unseal(e)
			if err != nil {
				return nil, false, err
			}
			if changed && out == nil {
				out = maps.Clone(t)
			}
			if changed {
				out[k] = ne
			}
		}
		if out != nil {
			return out, true, nil
		}
	case []any:
		var out []any
		for i, e := range t {
			ne, changed, err := s.unseal(e)
			if err != nil {
				return nil, false, err
			}
			if changed && out == nil {
				out = slices.Clone(t)
			}
			if changed {
				out[i] = ne
			}
		}
		if out != nil {
			return out, true, nil
		}
	case *jsonvalue.Packed:
		// Markers are objects: a packed array holding one has the key in
		// its text.
		if !bytes.Contains(t.Text(), []byte(`"`+SealedKey+`"`)) {
			break
		}
		a, err := t.Slice()
		if err != nil {
			return nil, false, err
		}
		return s.unseal(a)
	}
	return v, false, nil
}

// canRedact refuses an execution of m that redacts on an executor that
// cannot seal.
func (x *Executor) canRedact(m *states.Machine) error {
	if len(m.RedactPaths()) == 0 {
		return nil
	}
	if x.redactErr != nil {
		return fmt.Errorf("%w: %w", redactNeedsKey(m), x.redactErr)
	}
	if x.redactor == nil {
		return redactNeedsKey(m)
	}
	return nil
}

// secretsOf returns the secrets of a new run of m: nil when m redacts
// nothing, or when the executor cannot seal (canRedact refused its start;
// a run loaded from the store is refused by load).
func (x *Executor) secretsOf(m *states.Machine) *secrets {
	if x.redactor == nil {
		return nil
	}
	return newSecrets(m, x.redactor)
}

// create has the store create e, with its input as it may be written.
func (x *Executor) create(ctx context.Context, m *states.Machine, e *Execution) error {
	s := e.secrets
	if s == nil {
		s = x.secretsOf(m)
	}
	if s == nil {
		return x.store.Create(ctx, e)
	}
	stored := *e
	stored.Input = s.stored(e.Input)
	return x.store.Create(ctx, &stored)
}

// unsealLoaded replaces the sealed values of e, an execution of m as
// loaded, by their values.
func (x *Executor) unsealLoaded(m *states.Machine, e *Execution) error {
	if len(m.RedactPaths()) == 0 {
		return nil
	}
	if err := x.canRedact(m); err != nil {
		return fmt.Errorf("execution %s: %w", e.ID, err)
	}
	s := x.secretsOf(m)
	if err := s.unsealExecution(e); err != nil {
		return fmt.Errorf("execution %s: %w", e.ID, err)
	}
	e.secrets = s
	return nil
}
