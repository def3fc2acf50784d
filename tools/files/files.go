package files

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unicode/utf8"

	asl "github.com/aslrun/aslrun"
	"github.com/aslrun/aslrun/agents"
	"github.com/aslrun/aslrun/jsonvalue"
)

// DefaultMaxFileSize is the owner's bound on a file read or written when
// Config.MaxFileSize is 0: 10 MiB.
const DefaultMaxFileSize = 10 << 20

// MaxEntries is the most entries a list returns.
const MaxEntries = 1000

// The operations, in the order the description and the schema give them.
var allOperations = []string{"read", "write", "list", "stat"}

// Config is what the server's owner grants a file tool. Only Root is
// required.
type Config struct {
	// Root is the folder the tool works in: an absolute path to an
	// existing folder. Nothing outside it can be reached.
	Root string
	// Operations lists the operations granted, of "read", "write",
	// "list" and "stat". Empty means read, list and stat: "write" must be
	// granted explicitly.
	Operations []string
	// MaxFileSize bounds, in bytes, a file read or written; 0 means
	// DefaultMaxFileSize. A state's FileSystem.MaxFileSize can only lower
	// it.
	MaxFileSize int64
}

// Tool is the file tool configured by New. It is an agents.Agent, and
// safe for concurrent use: it keeps no state between calls, and opens
// its root afresh for each one.
type Tool struct {
	root string
	ops  []string // granted, in allOperations order
	max  int64
	// escapes is the error os.Root gives a path that leads outside the
	// root (a symbolic link climbing out). os does not export it; New
	// takes it from an open of "..", so that a call's error can be
	// recognised with errors.Is rather than by its text.
	escapes error
}

var _ agents.Agent = (*Tool)(nil)

// New returns a file tool working in cfg.Root. It refuses a Root that is
// empty, relative, missing or not a folder, an unknown operation and a
// negative MaxFileSize, naming the field.
func New(cfg Config) (*Tool, error) {
	if cfg.Root == "" {
		return nil, errors.New("file tool: Config.Root is required: the folder the tool works in")
	}
	if !filepath.IsAbs(cfg.Root) {
		return nil, fmt.Errorf("file tool: Config.Root %q is not an absolute path", cfg.Root)
	}
	root := filepath.Clean(cfg.Root)
	fi, err := os.Stat(root)
	if err != nil {
		return nil, fmt.Errorf("file tool: Config.Root: %w", err)
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("file tool: Config.Root %q is not a folder", cfg.Root)
	}
	r, err := os.OpenRoot(root)
	if err != nil {
		return nil, fmt.Errorf("file tool: Config.Root: %w", err)
	}
	_, err = r.Open("..")
	r.Close()
	var pe *fs.PathError
	if !errors.As(err, &pe) {
		return nil, fmt.Errorf("file tool: Config.Root %q: os.Root let \"..\" be opened (%v)", cfg.Root, err)
	}
	if cfg.MaxFileSize < 0 {
		return nil, fmt.Errorf("file tool: Config.MaxFileSize is %d, want 0 (the default, %d) or more", cfg.MaxFileSize, DefaultMaxFileSize)
	}
	t := &Tool{root: root, max: cfg.MaxFileSize, escapes: pe.Err}
	if t.max == 0 {
		t.max = DefaultMaxFileSize
	}
	ops := cfg.Operations
	if len(ops) == 0 {
		ops = []string{"read", "list", "stat"}
	}
	for i, op := range ops {
		if !slices.Contains(allOperations, op) {
			return nil, fmt.Errorf("file tool: Config.Operations[%d] is %q, not one of %s", i, op, strings.Join(allOperations, ", "))
		}
	}
	for _, op := range allOperations {
		if slices.Contains(ops, op) {
			t.ops = append(t.ops, op)
		}
	}
	return t, nil
}

// Description tells a model what the tool does: the operations granted,
// that paths are relative to the tool's folder, and the size bound.
func (t *Tool) Description() string {
	var b strings.Builder
	b.WriteString("Works with text files in one folder. Operations:")
	for i, op := range t.ops {
		if i > 0 {
			b.WriteString(";")
		}
		switch op {
		case "read":
			b.WriteString(` "read" returns a file's text`)
		case "write":
			b.WriteString(` "write" creates or replaces a file with "content", creating its folders`)
		case "list":
			b.WriteString(` "list" returns a folder's entries`)
		case "stat":
			b.WriteString(` "stat" returns the type, size and modification time of a file or folder`)
		}
	}
	fmt.Fprintf(&b, `. Paths are slash-separated and relative to the folder ("." is the folder itself); absolute paths and paths outside it are refused. Files are UTF-8 text of at most %d bytes.`, t.max)
	return b.String()
}

// InputSchema returns the JSON Schema of the tool's input: "operation"
// (one of the granted operations), "path" and, when write is granted,
// "content". Each call returns a new value the caller may keep.
func (t *Tool) InputSchema() map[string]any {
	enum := make([]any, len(t.ops))
	for i, op := range t.ops {
		enum[i] = op
	}
	props := map[string]any{
		"operation": map[string]any{"type": "string", "enum": enum, "description": "what to do"},
		"path": map[string]any{"type": "string", "minLength": 1,
			"description": `slash-separated path relative to the tool's folder; "." is the folder itself`},
	}
	if slices.Contains(t.ops, "write") {
		props["content"] = map[string]any{"type": "string", "description": `the text to write (for "write" only)`}
	}
	return map[string]any{
		"type":                 "object",
		"properties":           props,
		"required":             []any{"operation", "path"},
		"additionalProperties": false,
	}
}

// input is a call's decoded input.
type input struct {
	op, path, content string
}

// call is one Invoke: the tool, the state's limits and the state's name
// for messages.
type call struct {
	t      *Tool
	limits *agents.FileLimits
	state  string
}

// Invoke runs one operation; req.Input is the JSON object described in
// the package documentation, and the state's FileSystem limits come from
// ctx (agents.ToolLimitsFrom). See the package documentation for the
// results and the errors.
func (t *Tool) Invoke(ctx context.Context, req *agents.Request) (any, error) {
	if req == nil {
		return t.run(ctx, "", nil, false)
	}
	return t.run(ctx, req.State, req.Input, true)
}

// Call runs one operation as Invoke does, with the input given apart
// from the request (which may be nil): it has the shape of tools.Tool's
// Call, so that the tool registers as
//
//	tools.Tool{Name: "file", Description: t.Description(), Input: schemaJSON, Call: t.Call}
func (t *Tool) Call(ctx context.Context, req *agents.Request, input map[string]any) (any, error) {
	state := ""
	if req != nil {
		state = req.State
	}
	return t.run(ctx, state, input, true)
}

// run runs one operation on input for the state named state (for
// messages when ctx carries no limits); hasInput is false when there was
// no request at all.
func (t *Tool) run(ctx context.Context, state string, v any, hasInput bool) (any, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	c := &call{t: t}
	if l := agents.ToolLimitsFrom(ctx); l != nil {
		c.limits, c.state = l.Files, l.State
	}
	if c.state == "" {
		c.state = state
	}
	if !hasInput {
		return nil, c.failed(nil, "no request")
	}
	in, err := c.decode(v)
	if err != nil {
		return nil, err
	}
	if !slices.Contains(t.ops, in.op) {
		return nil, c.denied(nil, "operation %q is not granted by the tool's Operations (granted: %s)", in.op, strings.Join(t.ops, ", "))
	}
	dir := in.op == "list" || in.op == "stat" // stat checks a file again once it knows
	if err := c.limits.Check(in.path, dir); err != nil {
		return nil, c.denied(err, "%v", err)
	}
	rel := path.Clean(in.path)
	r, err := os.OpenRoot(t.root)
	if err != nil {
		return nil, c.failed(err, "cannot open the tool's folder: %v", err)
	}
	defer r.Close()
	switch in.op {
	case "read":
		return c.read(ctx, r, rel)
	case "write":
		return c.write(ctx, r, rel, in.content)
	case "list":
		return c.list(ctx, r, rel)
	default:
		return c.stat(r, rel)
	}
}

// decode checks and takes apart a call's input.
func (c *call) decode(v any) (input, error) {
	m, ok := v.(map[string]any)
	if !ok {
		return input{}, c.failed(nil, `the input must be a JSON object with "operation" and "path", not %s`, jsonvalue.TypeName(v))
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if k != "operation" && k != "path" && k != "content" {
			return input{}, c.failed(nil, `input field %q is not one of "operation", "path" and "content"`, k)
		}
	}
	str := func(name string) (string, bool, error) {
		v, ok := m[name]
		if !ok {
			return "", false, nil
		}
		s, ok := v.(string)
		if !ok {
			return "", true, c.failed(nil, "input field %q must be a string, not %s", name, jsonvalue.TypeName(v))
		}
		return s, true, nil
	}
	var in input
	op, ok, err := str("operation")
	if err != nil {
		return input{}, err
	}
	if !ok {
		return input{}, c.failed(nil, `input field "operation" is required: one of %s`, strings.Join(c.t.ops, ", "))
	}
	if !slices.Contains(allOperations, op) {
		return input{}, c.failed(nil, `input field "operation" is %q, not one of %s`, op, strings.Join(c.t.ops, ", "))
	}
	in.op = op
	p, ok, err := str("path")
	if err != nil {
		return input{}, err
	}
	if !ok {
		return input{}, c.failed(nil, `input field "path" is required: a path relative to the tool's folder ("." for the folder itself)`)
	}
	in.path = p
	content, ok, err := str("content")
	if err != nil {
		return input{}, err
	}
	switch {
	case op == "write" && !ok:
		return input{}, c.failed(nil, `input field "content" is required by "write"`)
	case op != "write" && ok:
		return input{}, c.failed(nil, `input field "content" is only for "write", not %q`, op)
	case !utf8.ValidString(content):
		return input{}, c.failed(nil, `input field "content" is not UTF-8 text`)
	}
	in.content = content
	return in, nil
}

// read returns a regular file's text.
func (c *call) read(ctx context.Context, r *os.Root, rel string) (any, error) {
	if rel == "." {
		return nil, c.failed(nil, `path "." is the tool's folder, not a file: use "list"`)
	}
	// Opening does not read: the size is checked on the file opened
	// before anything is read from it (and openFlags keep a named pipe
	// from blocking the open).
	f, err := r.OpenFile(rel, os.O_RDONLY|openFlags, 0)
	if err != nil {
		return nil, c.fsError(err, rel)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, c.fsError(err, rel)
	}
	if err := c.regular(fi, rel); err != nil {
		return nil, err
	}
	if err := c.checkSize(fi.Size(), rel); err != nil {
		return nil, err
	}
	limit := c.limit()
	data, err := readAll(ctx, io.LimitReader(f, limit+1), min(fi.Size(), limit)+1)
	if err != nil {
		if ctx.Err() != nil {
			return nil, err
		}
		return nil, c.fsError(err, rel)
	}
	if err := c.checkSize(int64(len(data)), rel); err != nil {
		return nil, err
	}
	if !utf8.Valid(data) {
		return nil, c.failed(nil, "file %q is not UTF-8 text: the tool reads text files only", rel)
	}
	return map[string]any{"path": rel, "content": string(data), "size": number(int64(len(data)))}, nil
}

// readAll reads r to its end into a buffer of initial capacity size,
// checking ctx between reads.
func readAll(ctx context.Context, r io.Reader, size int64) ([]byte, error) {
	b := make([]byte, 0, size)
	for {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)]
		}
		n, err := r.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if err == io.EOF {
			return b, nil
		}
		if err != nil {
			return nil, err
		}
	}
}

// write replaces the file at rel with content, through a temporary file
// renamed over it.
func (c *call) write(ctx context.Context, r *os.Root, rel, content string) (any, error) {
	if rel == "." {
		return nil, c.failed(nil, `path "." is the tool's folder, not a file`)
	}
	if err := c.checkSize(int64(len(content)), rel); err != nil {
		return nil, err
	}
	if dir := path.Dir(rel); dir != "." {
		if err := r.MkdirAll(dir, 0o755); err != nil {
			return nil, c.fsError(err, dir)
		}
	}
	perm := os.FileMode(0o644)
	switch fi, err := r.Lstat(rel); {
	case err == nil && fi.IsDir():
		return nil, c.failed(nil, "path %q is a folder, not a file", rel)
	case err == nil && fi.Mode().IsRegular():
		perm = fi.Mode().Perm()
	case err != nil && !errors.Is(err, fs.ErrNotExist):
		return nil, c.fsError(err, rel)
	}
	var rnd [8]byte
	rand.Read(rnd[:])
	tmp := path.Join(path.Dir(rel), ".aslrun-"+hex.EncodeToString(rnd[:])+".tmp")
	f, err := r.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return nil, c.fsError(err, rel)
	}
	_, err = io.WriteString(f, content)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = ctx.Err()
	}
	if err == nil {
		err = r.Rename(tmp, rel)
	}
	if err != nil {
		r.Remove(tmp)
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, c.fsError(err, rel)
	}
	return map[string]any{"path": rel, "size": number(int64(len(content)))}, nil
}

// list returns a folder's entries that the limits allow.
func (c *call) list(ctx context.Context, r *os.Root, rel string) (any, error) {
	f, err := r.OpenFile(rel, os.O_RDONLY|openFlags, 0)
	if err != nil {
		return nil, c.fsError(err, rel)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, c.fsError(err, rel)
	}
	if !fi.IsDir() {
		return nil, c.failed(nil, "path %q is not a folder: use \"stat\" or \"read\"", rel)
	}
	des, err := f.ReadDir(-1)
	if err != nil {
		return nil, c.fsError(err, rel)
	}
	sort.Slice(des, func(i, j int) bool { return des[i].Name() < des[j].Name() })
	entries := make([]any, 0, min(len(des), MaxEntries))
	truncated := false
	for i, de := range des {
		if i%64 == 0 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
		child := path.Join(rel, de.Name())
		var info fs.FileInfo
		if de.Type()&fs.ModeSymlink != 0 {
			info, err = r.Stat(child) // through the root: a link out fails
		} else {
			info, err = de.Info()
		}
		if err != nil {
			continue
		}
		isDir := info.IsDir()
		if !isDir && !info.Mode().IsRegular() {
			continue
		}
		if c.limits.Check(child, isDir) != nil {
			continue
		}
		if len(entries) == MaxEntries {
			truncated = true
			break
		}
		e := map[string]any{"name": de.Name(), "type": "dir"}
		if !isDir {
			e["type"], e["size"] = "file", number(info.Size())
		}
		entries = append(entries, e)
	}
	out := map[string]any{"path": rel, "entries": entries}
	if truncated {
		out["truncated"] = true
	}
	return out, nil
}

// stat describes a file or folder.
func (c *call) stat(r *os.Root, rel string) (any, error) {
	fi, err := r.Stat(rel)
	if err != nil {
		return nil, c.fsError(err, rel)
	}
	typ := "other"
	switch {
	case fi.IsDir():
		typ = "dir"
	case fi.Mode().IsRegular():
		typ = "file"
	}
	if typ != "dir" {
		// Invoke checked rel as a folder; a file has the file rules.
		if err := c.limits.Check(rel, false); err != nil {
			return nil, c.denied(err, "%v", err)
		}
	}
	return map[string]any{
		"path":     rel,
		"type":     typ,
		"size":     number(fi.Size()),
		"modified": fi.ModTime().UTC().Format(time.RFC3339Nano),
	}, nil
}

// limit is the effective size bound: the owner's, or the state's when
// it is lower.
func (c *call) limit() int64 {
	if c.limits != nil && c.limits.MaxFileSize > 0 && c.limits.MaxFileSize < c.t.max {
		return c.limits.MaxFileSize
	}
	return c.t.max
}

// checkSize refuses a file of n bytes at rel that is over the owner's
// or the state's bound.
func (c *call) checkSize(n int64, rel string) error {
	if err := c.limits.CheckSize(n); err != nil {
		var fe *agents.FileLimitError
		if errors.As(err, &fe) {
			fe.Path = rel
		}
		return c.denied(err, "%v", err)
	}
	if n > c.t.max {
		return c.denied(nil, "file %q: size %d bytes exceeds the tool's MaxFileSize of %d bytes", rel, n, c.t.max)
	}
	return nil
}

// regular refuses what is not a regular file.
func (c *call) regular(fi fs.FileInfo, rel string) error {
	switch {
	case fi.IsDir():
		return c.failed(nil, "path %q is a folder, not a file: use \"list\"", rel)
	case !fi.Mode().IsRegular():
		return c.failed(nil, "path %q is not a regular file", rel)
	}
	return nil
}

// fsError names a failure of the file system at rel: a path leading out
// of the root is States.Permissions, anything else Agent.ToolError.
func (c *call) fsError(err error, rel string) error {
	switch {
	case c.t.escapes != nil && errors.Is(err, c.t.escapes):
		return c.denied(err, "path %q leads outside the tool's folder (through a symbolic link)", rel)
	case errors.Is(err, fs.ErrNotExist):
		return c.failed(err, "path %q does not exist", rel)
	case errors.Is(err, syscall.ENOTDIR):
		return c.failed(err, "path %q: a part of it is a file, not a folder", rel)
	case errors.Is(err, fs.ErrPermission):
		return c.failed(err, "path %q: the server may not access it", rel)
	}
	var pe *fs.PathError
	if errors.As(err, &pe) {
		err = pe.Err
	}
	return c.failed(err, "path %q: %v", rel, err)
}

// denied is a refusal: States.Permissions naming the state.
func (c *call) denied(err error, format string, args ...any) error {
	return c.named(asl.ErrPermissions, err, format, args...)
}

// failed is any other failure: Agent.ToolError naming the state.
func (c *call) failed(err error, format string, args ...any) error {
	return c.named(asl.ErrAgentToolError, err, format, args...)
}

func (c *call) named(name asl.ErrorName, err error, format string, args ...any) error {
	prefix := "file tool: "
	if c.state != "" {
		prefix = fmt.Sprintf("file tool in state %q: ", c.state)
	}
	e := asl.Errorf(name, prefix+format, args...)
	e.Err = err
	return e
}

// number is n as a JSON number.
func number(n int64) json.Number {
	return json.Number(strconv.FormatInt(n, 10))
}
