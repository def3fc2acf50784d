package server

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// Role is what a caller may do. The roles viewer, approver, operator and
// admin each may do everything the ones before it may, so they compare
// with <, >= and so on. RoleWorker stands apart, below them all: it may
// poll activities and answer task tokens, and nothing else (operator and
// admin may do those too). Check what a role allows with allows.
type Role int

// The roles, from least to most allowed.
const (
	// RoleWorker polls for the tasks of activities and answers task
	// tokens (a worker beside the engine): it reads nothing.
	RoleWorker Role = -1
	// RoleViewer reads executions, histories, checkpoints and workflows.
	RoleViewer Role = iota
	// RoleApprover also decides approvals.
	RoleApprover
	// RoleOperator also starts, stops, resumes, rolls back and forks
	// executions, polls activities and answers task tokens.
	RoleOperator
	// RoleAdmin also registers workflows.
	RoleAdmin
)

var roleNames = [...]string{RoleViewer: "viewer", RoleApprover: "approver", RoleOperator: "operator", RoleAdmin: "admin"}

// ParseRole returns the role named s: "worker", "viewer", "approver",
// "operator" or "admin".
func ParseRole(s string) (Role, error) {
	if s == "worker" {
		return RoleWorker, nil
	}
	for r := RoleViewer; r <= RoleAdmin; r++ {
		if roleNames[r] == s {
			return r, nil
		}
	}
	return 0, fmt.Errorf("unknown role %q (want worker, viewer, approver, operator or admin)", s)
}

// String returns the role's name as ParseRole reads it.
func (r Role) String() string {
	if r == RoleWorker {
		return "worker"
	}
	if r < RoleViewer || r > RoleAdmin {
		return fmt.Sprintf("Role(%d)", int(r))
	}
	return roleNames[r]
}

func (r Role) valid() bool { return r == RoleWorker || r >= RoleViewer && r <= RoleAdmin }

// allows reports whether a caller with role r may call what needs role
// need: a worker's routes take a worker, an operator or an admin; the
// others take need or a role above it (never a worker).
func (r Role) allows(need Role) bool {
	if need == RoleWorker {
		return r == RoleWorker || r >= RoleOperator
	}
	return r >= need
}

// Principal is an authenticated caller.
type Principal struct {
	// Name is the token's name; "local admin (uid N)" for the unix
	// socket's peer.
	Name string
	Role Role
	// Local is true for the unix socket's peer (the local admin).
	Local bool
}

// Errors of the tokens file; match them with errors.Is.
var (
	// ErrFileMode: the tokens file may be read or written by group or
	// others.
	ErrFileMode = errors.New("tokens file readable or writable by group or others")
	// ErrDuplicateName: CreateToken was given a name the file already has.
	ErrDuplicateName = errors.New("a token with this name already exists")
)

// TokensFileError is a problem with a tokens file.
type TokensFileError struct {
	Path string
	// Line is the 1-based line at fault; 0 when the problem is the whole
	// file (its mode, its size).
	Line int
	Err  error
}

func (e *TokensFileError) Error() string {
	if e.Line == 0 {
		return fmt.Sprintf("tokens file %s: %v", e.Path, e.Err)
	}
	return fmt.Sprintf("tokens file %s:%d: %v", e.Path, e.Line, e.Err)
}

func (e *TokensFileError) Unwrap() error { return e.Err }

// The tokens file holds one JSON object per line, in this field order:
//
//	{"name":"ci","role":"operator","hash":"sha256:<64 hex digits>","created":"2026-01-02T15:04:05Z"}
//
// name is 1 to 64 letters, digits, '.', '_', '-' or '@', starting with a
// letter or digit, unique in the file; role is one of ParseRole's names;
// hash is the SHA-256 of the whole token, in lower-case hex, unique in the
// file; created is an RFC 3339 time. Every field is required and no other
// is allowed, nor a repeated one. Blank lines and lines starting with '#'
// are ignored. The file holds no secret: a token cannot be recovered from
// its hash. It must not be readable or writable by group or others.
const (
	tokenHashPrefix = "sha256:"
	tokenPrefix     = "aslrun_"
	maxTokensFile   = 1 << 20
	maxTokenName    = 64
	tokenRandBytes  = 32
)

// tokenEntry is one line of a tokens file.
type tokenEntry struct {
	Name    string `json:"name"`
	Role    string `json:"role"`
	Hash    string `json:"hash"`
	Created string `json:"created"`
}

// storedToken is a loaded entry.
type storedToken struct {
	name string
	role Role
	hash [sha256.Size]byte
}

// Tokens are the bearer tokens a server accepts, loaded from a tokens
// file. A Tokens is never modified after LoadTokens and is safe for
// concurrent use.
type Tokens struct {
	list []storedToken
}

// LoadTokens reads the tokens file at path. It refuses a file readable or
// writable by group or others (ErrFileMode) and a malformed one, naming the
// line at fault (*TokensFileError).
func LoadTokens(path string) (*Tokens, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("tokens file: %w", err)
	}
	defer f.Close()
	data, err := readTokensFile(f, path)
	if err != nil {
		return nil, err
	}
	list, err := parseTokens(path, data)
	if err != nil {
		return nil, err
	}
	return &Tokens{list: list}, nil
}

// readTokensFile checks the mode of the open tokens file f (the file read,
// not whatever path names by then) and reads it.
func readTokensFile(f *os.File, path string) ([]byte, error) {
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("tokens file: %w", err)
	}
	if !fi.Mode().IsRegular() {
		return nil, &TokensFileError{Path: path, Err: errors.New("not a regular file")}
	}
	if perm := fi.Mode().Perm(); perm&0o077 != 0 {
		return nil, &TokensFileError{Path: path, Err: fmt.Errorf("%w: mode %04o; run chmod 600 %s", ErrFileMode, perm, path)}
	}
	data, err := io.ReadAll(io.LimitReader(f, maxTokensFile+1))
	if err != nil {
		return nil, fmt.Errorf("tokens file: %w", err)
	}
	if len(data) > maxTokensFile {
		return nil, &TokensFileError{Path: path, Err: fmt.Errorf("larger than %d bytes", maxTokensFile)}
	}
	return data, nil
}

// parseTokens parses a tokens file's content, refusing the first line at
// fault.
func parseTokens(path string, data []byte) ([]storedToken, error) {
	var list []storedToken
	names := map[string]int{}
	hashes := map[[sha256.Size]byte]int{}
	for i, line := range bytes.Split(data, []byte("\n")) {
		n := i + 1
		fail := func(format string, args ...any) error {
			return &TokensFileError{Path: path, Line: n, Err: fmt.Errorf(format, args...)}
		}
		line = bytes.TrimSuffix(line, []byte("\r"))
		if t := bytes.TrimSpace(line); len(t) == 0 || t[0] == '#' {
			continue
		}
		e, err := parseTokenEntry(line)
		if err != nil {
			return nil, fail("%v", err)
		}
		if err := checkTokenName(e.Name); err != nil {
			return nil, fail("%v", err)
		}
		if prev, ok := names[e.Name]; ok {
			return nil, fail("name %q: %w (line %d)", e.Name, ErrDuplicateName, prev)
		}
		role, err := ParseRole(e.Role)
		if err != nil {
			return nil, fail("%v", err)
		}
		hash, err := parseTokenHash(e.Hash)
		if err != nil {
			return nil, fail("%v", err)
		}
		if prev, ok := hashes[hash]; ok {
			return nil, fail("token %q has the same hash as line %d", e.Name, prev)
		}
		if _, err := time.Parse(time.RFC3339, e.Created); err != nil {
			return nil, fail("created %q is not an RFC 3339 time", e.Created)
		}
		names[e.Name], hashes[hash] = n, n
		list = append(list, storedToken{name: e.Name, role: role, hash: hash})
	}
	return list, nil
}

// parseTokenEntry decodes one line: a JSON object with exactly the fields of
// tokenEntry, each a string, none repeated, and nothing after it.
func parseTokenEntry(line []byte) (tokenEntry, error) {
	var e tokenEntry
	fields := map[string]*string{"name": &e.Name, "role": &e.Role, "hash": &e.Hash, "created": &e.Created}
	seen := map[string]bool{}
	dec := json.NewDecoder(bytes.NewReader(line))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return e, errors.New(`want a JSON object {"name":…,"role":…,"hash":…,"created":…}`)
	}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return e, fmt.Errorf("invalid JSON: %v", err)
		}
		key, _ := tok.(string)
		dst, ok := fields[key]
		if !ok {
			return e, fmt.Errorf("unknown field %q (want name, role, hash and created)", key)
		}
		if seen[key] {
			return e, fmt.Errorf("field %q given twice", key)
		}
		seen[key] = true
		tok, err = dec.Token()
		if err != nil {
			return e, fmt.Errorf("invalid JSON: %v", err)
		}
		v, ok := tok.(string)
		if !ok {
			return e, fmt.Errorf("field %q: want a string", key)
		}
		*dst = v
	}
	if _, err := dec.Token(); err != nil { // the closing '}'
		return e, fmt.Errorf("invalid JSON: %v", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return e, errors.New("unexpected text after the JSON object")
	}
	for _, k := range []string{"name", "role", "hash", "created"} {
		if !seen[k] {
			return e, fmt.Errorf("missing field %q", k)
		}
	}
	return e, nil
}

// checkTokenName checks a token's name.
func checkTokenName(name string) error {
	if name == "" || len(name) > maxTokenName {
		return fmt.Errorf("name %q: want 1 to %d characters", name, maxTokenName)
	}
	for i, c := range name {
		alnum := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
		if !alnum && (i == 0 || !strings.ContainsRune("._-@", c)) {
			return fmt.Errorf("name %q: want letters, digits, '.', '_', '-' or '@', starting with a letter or digit", name)
		}
	}
	return nil
}

// parseTokenHash reads "sha256:" and 64 lower-case hex digits.
func parseTokenHash(s string) ([sha256.Size]byte, error) {
	var h [sha256.Size]byte
	x, ok := strings.CutPrefix(s, tokenHashPrefix)
	if !ok || len(x) != hex.EncodedLen(sha256.Size) || strings.ToLower(x) != x {
		return h, fmt.Errorf("hash %q: want \"sha256:\" and 64 lower-case hex digits", s)
	}
	if _, err := hex.Decode(h[:], []byte(x)); err != nil {
		return h, fmt.Errorf("hash %q: want \"sha256:\" and 64 lower-case hex digits", s)
	}
	return h, nil
}

// Authenticate returns the principal whose token is bearer. It compares
// the bearer's hash with every stored hash in constant time, so how long
// it takes says nothing of which token, if any, matched.
func (t *Tokens) Authenticate(bearer string) (Principal, bool) {
	sum := sha256.Sum256([]byte(bearer))
	found := -1
	for i := range t.list {
		if subtle.ConstantTimeCompare(sum[:], t.list[i].hash[:]) == 1 {
			found = i
		}
	}
	if found < 0 || bearer == "" {
		return Principal{}, false
	}
	return Principal{Name: t.list[found].name, Role: t.list[found].role}, true
}

// CreateToken makes a new token named name with role, stores its hash in
// the tokens file at path (created with mode 0600 when missing) and returns
// the token, which is not stored anywhere and cannot be shown again. It
// refuses a name the file already has (ErrDuplicateName), and a file that
// LoadTokens would refuse. Concurrent calls on the same file are
// serialized with a lock on it.
func CreateToken(path, name string, role Role) (string, error) {
	if err := checkTokenName(name); err != nil {
		return "", err
	}
	if !role.valid() {
		return "", fmt.Errorf("invalid role %v", role)
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return "", fmt.Errorf("tokens file: %w", err)
	}
	defer f.Close()
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX); err != nil {
		return "", fmt.Errorf("tokens file %s: lock: %w", path, err)
	}
	data, err := readTokensFile(f, path)
	if err != nil {
		return "", err
	}
	list, err := parseTokens(path, data)
	if err != nil {
		return "", err
	}
	for _, t := range list {
		if t.name == name {
			return "", &TokensFileError{Path: path, Err: fmt.Errorf("name %q: %w", name, ErrDuplicateName)}
		}
	}
	b := make([]byte, tokenRandBytes)
	rand.Read(b) // never fails: crypto/rand crashes the program instead
	tok := tokenPrefix + base64.RawURLEncoding.EncodeToString(b)
	sum := sha256.Sum256([]byte(tok))
	line, err := json.Marshal(tokenEntry{
		Name:    name,
		Role:    role.String(),
		Hash:    tokenHashPrefix + hex.EncodeToString(sum[:]),
		Created: time.Now().UTC().Format(time.RFC3339),
	})
	if err != nil {
		return "", err
	}
	line = append(line, '\n')
	if len(data) > 0 && data[len(data)-1] != '\n' {
		line = append([]byte("\n"), line...)
	}
	if _, err := f.WriteAt(line, int64(len(data))); err != nil {
		f.Truncate(int64(len(data))) // leave the file as it was
		return "", fmt.Errorf("tokens file %s: %w", path, err)
	}
	if err := f.Sync(); err != nil {
		return "", fmt.Errorf("tokens file %s: %w", path, err)
	}
	return tok, nil
}
