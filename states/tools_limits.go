package states

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/aslrun/aslrun/egress"
	"github.com/aslrun/aslrun/jsonvalue"
)

// This file holds the parts of a Tools block that narrow what each tool
// call may reach: Domains (hosts), FileSystem (files), Sandboxed and
// Sandbox (process confinement). The engine turns them into
// agents.ToolLimits, with the same meanings; they only narrow what the
// server's owner granted, never widen it. Every type here is immutable
// after Parse and safe for concurrent use.

// DomainsConfig is a Tools block's Domains: host patterns in the forms of
// egress.ParsePattern ("api.example.com", "*.example.com", an address or
// a CIDR block, each with an optional ":PORT"), kept as written.
type DomainsConfig struct {
	// Allowed, when HasAllowed, lists the only hosts a tool may reach;
	// present and empty means no host at all. Absent means every host
	// the server's owner allows.
	Allowed    []string
	HasAllowed bool
	// Denied lists hosts a tool may never reach; it wins over Allowed.
	Denied []string
}

// FileSystemConfig is a Tools block's FileSystem. Globs are
// slash-separated and relative to a file tool's root; each segment
// matches as path.Match does, and a whole segment "**" matches any
// number of segments.
type FileSystemConfig struct {
	// AllowedPaths, when not empty, lists the globs a path must match;
	// absent means every path under the tool's root.
	AllowedPaths []string
	// DeniedPaths lists globs no path may match; they win over
	// AllowedPaths.
	DeniedPaths []string
	// AllowedExtensions, when not empty, lists the extensions a file's
	// name must end with, lower case with their dot (".md"); "md" and
	// ".MD" in the definition are both stored as ".md".
	AllowedExtensions []string
	// MaxFileSize bounds the size in bytes of a file read or written; 0
	// means no bound of the state's.
	MaxFileSize int64
}

// SandboxConfig is a Tools block's Sandbox: the confinement of the
// processes its tools run (Environment "process": new namespaces over a
// read-only root, with bubblewrap).
type SandboxConfig struct {
	// Environment is always "process"; "docker", "wasm" and "vm" are
	// refused at validation.
	Environment string
	// Network gives the process the host's network; false (the default)
	// leaves it none.
	Network bool
	// Memory bounds the process's address space in bytes; 0 means no
	// bound of the state's.
	Memory int64
	// CPU bounds the process's CPU time (not a share of cores); 0 means
	// no bound of the state's. The sandbox rounds it up to whole seconds.
	CPU time.Duration
	// Timeout ends the process when it passes; 0 means no bound of the
	// sandbox's own (Tools.Timeout still applies).
	Timeout time.Duration
	// Mounts are the buckets made visible inside the sandbox, sorted by
	// Target.
	Mounts []SandboxMount
}

// SandboxMount is one entry of Sandbox.Mounts: a bucket (which the
// server's owner maps to a folder) made visible at Target.
type SandboxMount struct {
	// Target is the absolute, clean path inside the sandbox; never "/"
	// nor under /proc or /dev.
	Target string
	// Bucket is the bucket's name (the mount's Source).
	Bucket string
	// ReadOnly mounts the folder read-only.
	ReadOnly bool
	// Pointer is the JSON Pointer of the mount in the definition, for
	// messages (like "/States/Run/Tools/Sandbox/Mounts/~1data").
	Pointer string
}

// SandboxUse is one Tools block with Sandboxed set, as Machine.Sandboxes
// lists them.
type SandboxUse struct {
	// State is the Task whose own Tools block it is, or "" for the
	// workflow's DefaultTools.
	State string
	// Pointer is the JSON Pointer of the Tools block.
	Pointer string
	// Config is the block; Config.Sandbox is never nil.
	Config *ToolsConfig
}

// Sandboxes lists every Tools block of m with Sandboxed set: the
// workflow's DefaultTools first (once, whichever Tasks use it), then each
// Task's own block, nested machines included, in the order of Each. An
// engine that cannot sandbox refuses to start a workflow for which it is
// not empty, and every mount's bucket must exist. It returns nil when no
// block is sandboxed.
func (m *Machine) Sandboxes() []SandboxUse {
	if m == nil {
		return nil
	}
	var out []SandboxUse
	var defaults *ToolsConfig
	if m.Extensions != nil {
		defaults = m.Extensions.DefaultTools
	}
	if defaults != nil && defaults.Sandboxed {
		out = append(out, SandboxUse{Pointer: defaults.ptr, Config: defaults})
	}
	m.Each(func(_, name string, st State) bool {
		if t, ok := st.(*Task); ok && t.Tools != nil && t.Tools != defaults && t.Tools.Sandboxed {
			out = append(out, SandboxUse{State: name, Pointer: t.Tools.ptr, Config: t.Tools})
		}
		return true
	})
	return out
}

// toolsUnsupported are the Tools fields named only in a tutorial, with no
// defined shape, and what to use instead.
var toolsUnsupported = []struct{ key, instead string }{
	{"Network", "use Domains for the hosts tools may reach, or Sandbox.Network for a sandboxed process's network"},
	{"Audit", "a Task's tool calls are recorded in the execution's history; an Audit block of the Task is planned"},
}

// toolLimits reads Domains, FileSystem, Sandboxed and Sandbox into t and
// refuses Network and Audit; key is "Tools" or "DefaultTools".
func (p *parser) toolLimits(to *object, t *ToolsConfig, key string) {
	for _, u := range toolsUnsupported {
		if to.has(u.key) {
			to.errorf(u.key, "%s is not supported in %s: it appears only in a tutorial, with no defined shape; %s", u.key, key, u.instead)
		}
	}
	t.Domains = p.domains(to)
	t.FileSystem = p.fileSystem(to)
	sandboxed, hasSandboxed := to.boolean("Sandboxed")
	so, hasSandbox := to.child("Sandbox", "Sandbox")
	switch {
	case hasSandbox && hasSandboxed && !sandboxed:
		to.errorf("Sandboxed", `Sandboxed is false but Sandbox is set: a Sandbox block means the tools run sandboxed (leave Sandboxed out or set it to true)`)
	case hasSandbox:
		t.Sandboxed = true
		if so != nil {
			t.Sandbox = p.sandbox(so)
		}
	case sandboxed:
		t.Sandboxed = true
		t.Sandbox = &SandboxConfig{Environment: "process"}
	}
}

func (p *parser) domains(to *object) *DomainsConfig {
	do, _ := to.child("Domains", "Domains")
	if do == nil {
		return nil
	}
	defer do.done("Domains")
	d := &DomainsConfig{}
	_, hasAllowed := do.m["Allowed"]
	_, hasDenied := do.m["Denied"]
	if !hasAllowed && !hasDenied {
		do.errorf("", "Domains needs Allowed or Denied (arrays of host patterns)")
	}
	d.Allowed, d.HasAllowed = p.hostPatterns(do, "Allowed")
	d.Denied, _ = p.hostPatterns(do, "Denied")
	return d
}

// hostPatterns reads an array of egress host patterns; present is false
// when key is absent. An empty array is a valid list (of no host).
func (p *parser) hostPatterns(o *object, key string) (list []string, present bool) {
	v, present := o.get(key)
	if !present {
		return nil, false
	}
	arr, isArr := v.([]any)
	if !isArr {
		o.errorf(key, "%s must be an array of host patterns, not %s", key, jsonvalue.TypeName(v))
		return nil, true
	}
	list = []string{}
	for i, e := range arr {
		ptr := fmt.Sprintf("%s/%d", o.at(key), i)
		s, isStr := e.(string)
		if !isStr {
			p.errorf(ptr, o.state, "%s[%d] must be a string, not %s", key, i, jsonvalue.TypeName(e))
			continue
		}
		if _, err := egress.ParsePattern(s); err != nil {
			p.errorf(ptr, o.state, "%s[%d] is not a host pattern: %v", key, i, err)
			continue
		}
		list = append(list, s)
	}
	return list, true
}

// fileSystemFields are the fields of a FileSystem block.
var fileSystemFields = []string{"AllowedPaths", "DeniedPaths", "AllowedExtensions", "MaxFileSize"}

func (p *parser) fileSystem(to *object) *FileSystemConfig {
	fo, _ := to.child("FileSystem", "FileSystem")
	if fo == nil {
		return nil
	}
	defer fo.done("FileSystem")
	if !slices.ContainsFunc(fileSystemFields, func(k string) bool { _, ok := fo.m[k]; return ok }) {
		fo.errorf("", "FileSystem needs at least one of AllowedPaths, DeniedPaths, AllowedExtensions or MaxFileSize")
	}
	f := &FileSystemConfig{}
	f.AllowedPaths = p.globs(fo, "AllowedPaths")
	if fo.isEmptyArray("AllowedPaths") {
		fo.errorf("AllowedPaths", "AllowedPaths must list at least one glob (leave it out to allow every path under the tool's root)")
	}
	f.DeniedPaths = p.globs(fo, "DeniedPaths")
	f.AllowedExtensions = p.fileExtensions(fo)
	f.MaxFileSize = fo.size("MaxFileSize")
	return f
}

// globs reads an array of FileSystem globs, reporting each bad one at its
// index.
func (p *parser) globs(fo *object, key string) []string {
	list, index, _ := fo.indexedNames(key, true)
	var out []string
	for i, g := range list {
		if msg := globProblem(g); msg != "" {
			p.errorf(fmt.Sprintf("%s/%d", fo.at(key), index[i]), fo.state, "%s[%d] %q %s", key, index[i], g, msg)
			continue
		}
		out = append(out, g)
	}
	return out
}

// globProblem says what is wrong with a FileSystem glob, or "" when it is
// valid: relative, slash-separated, without empty, "." or ".." segments,
// valid for path.Match, with "**" only as a whole segment.
func globProblem(g string) string {
	if strings.HasPrefix(g, "/") {
		return "must be relative to the tool's root (no leading \"/\")"
	}
	for _, seg := range strings.Split(g, "/") {
		switch {
		case seg == "":
			return "has an empty segment (\"//\" or a trailing \"/\")"
		case seg == "." || seg == "..":
			return fmt.Sprintf("must not have a %q segment", seg)
		case seg != "**" && strings.Contains(seg, "**"):
			return fmt.Sprintf("has \"**\" inside the segment %q: \"**\" must be a whole segment", seg)
		}
	}
	if _, err := path.Match(g, ""); errors.Is(err, path.ErrBadPattern) {
		return "is not a valid glob (an unclosed \"[\" or a trailing \"\\\")"
	}
	return ""
}

// fileExtensions reads AllowedExtensions: "md" or ".md", stored as ".md".
func (p *parser) fileExtensions(fo *object) []string {
	const key = "AllowedExtensions"
	list, index, present := fo.indexedNames(key, false)
	if !present {
		return nil
	}
	if fo.isEmptyArray(key) {
		fo.errorf(key, "%s must list at least one extension (leave it out to allow every extension)", key)
	}
	var out []string
	for i, e := range list {
		ptr := fmt.Sprintf("%s/%d", fo.at(key), index[i])
		ext := "." + strings.ToLower(strings.TrimPrefix(e, "."))
		switch {
		case ext == ".":
			p.errorf(ptr, fo.state, "%s[%d] %q names no extension", key, index[i], e)
		case strings.ContainsAny(ext, `/\`):
			p.errorf(ptr, fo.state, "%s[%d] %q must be an extension like \"md\" or \".md\", not a path", key, index[i], e)
		case slices.Contains(out, ext):
			p.errorf(ptr, fo.state, "%s lists %q more than once", key, ext)
		default:
			out = append(out, ext)
		}
	}
	return out
}

// minSandboxMemory is the smallest Sandbox.Memory accepted: a process
// bounded below it cannot even start.
const minSandboxMemory = 1 << 20

// sandbox reads a Sandbox block.
func (p *parser) sandbox(so *object) *SandboxConfig {
	defer so.done("Sandbox")
	s := &SandboxConfig{Environment: "process"}
	if env, ok := so.str("Environment"); ok {
		switch env {
		case "process":
		case "docker", "wasm", "vm":
			so.errorf("Environment", `Environment %q is not supported: aslrun sandboxes processes with bubblewrap ("process"); containers, WebAssembly runtimes and virtual machines are not supported`, env)
		default:
			so.errorf("Environment", `Environment must be "process", not %q`, env)
		}
	}
	if so.has("Image") {
		so.errorf("Image", `Image is not supported: it is only for Environment "docker", and aslrun runs sandboxed tools as processes over the machine's own read-only root`)
	}
	if ro, ok := so.boolean("ReadOnlyFS"); ok && !ro {
		so.errorf("ReadOnlyFS", "ReadOnlyFS cannot be false: the root filesystem of a sandbox is always read-only; mount a bucket to write")
	}
	s.Network, _ = so.boolean("Network")
	s.Memory = so.size("Memory")
	if s.Memory > 0 && s.Memory < minSandboxMemory {
		so.errorf("Memory", `Memory must be at least 1M (1048576 bytes), not %d bytes`, s.Memory)
	}
	s.CPU = cpuTime(so)
	s.Timeout, _ = so.duration("Timeout")
	s.Mounts = p.mounts(so)
	return s
}

// cpuTime reads Sandbox.CPU: CPU seconds as a positive number (1, 0.5),
// or a duration string as Tools.Timeout accepts ("30s", "2m").
func cpuTime(so *object) time.Duration {
	v, ok := so.m["CPU"]
	if !ok {
		return 0
	}
	so.used["CPU"] = true
	n, isNum := v.(json.Number)
	if s, isStr := v.(string); isStr {
		d, err := parseDuration(s)
		if err != nil {
			so.durationError("CPU", s, err, ", or a number of CPU seconds")
		}
		return d
	}
	if !isNum {
		so.errorf("CPU", `CPU must be a positive number of CPU seconds, or a duration like "30s", not %s`, jsonvalue.TypeName(v))
		return 0
	}
	f, valid := jsonvalue.Float64(n)
	if !valid || f <= 0 || f*float64(time.Second) >= math.MaxInt64 {
		so.errorf("CPU", `CPU must be a positive number of CPU seconds, or a duration like "30s", not %s`, n)
		return 0
	}
	return time.Duration(math.Ceil(f * float64(time.Second)))
}

// mounts reads Sandbox.Mounts: {"/data": {"Source": "corpus", "ReadOnly": true}}.
func (p *parser) mounts(so *object) []SandboxMount {
	mo, _ := so.child("Mounts", "Mounts (an object of target paths to mounts)")
	if mo == nil {
		return nil
	}
	var out []SandboxMount
	for _, target := range sortedKeys(mo.m) {
		mo.used[target] = true
		if msg := mountTargetProblem(target); msg != "" {
			p.errorf(mo.at(target), mo.state, "the mount target %q %s", target, msg)
			continue
		}
		o := p.newObject(mo.m[target], mo.at(target), mo.state, "a mount")
		if o == nil {
			continue
		}
		m := SandboxMount{Target: target, Pointer: o.ptr}
		src, ok := o.requiredStr("Source")
		switch {
		case !ok:
		case strings.HasPrefix(src, FileBucketScheme):
			o.errorf("Source", "Source %q names a local folder: a definition names a bucket, which the server's owner maps to a folder (the agents file's Buckets)", src)
			ok = false
		case strings.Contains(src, "://") || strings.TrimSpace(src) != src:
			o.errorf("Source", "Source must be the name of a bucket, not %q", src)
			ok = false
		}
		m.Bucket = src
		m.ReadOnly, _ = o.boolean("ReadOnly")
		o.done("a mount")
		if ok {
			out = append(out, m)
		}
	}
	return out
}

// mountTargetProblem says what is wrong with a mount's target path, or ""
// when it is absolute, clean, not "/" and not under /proc or /dev.
func mountTargetProblem(t string) string {
	switch {
	case !strings.HasPrefix(t, "/"):
		return "must be an absolute path inside the sandbox"
	case path.Clean(t) != t:
		return fmt.Sprintf("must be a clean path (%q)", path.Clean(t))
	case t == "/":
		return "must not be the root: the root of a sandbox is the machine's, read-only"
	}
	for _, sys := range []string{"/proc", "/dev"} {
		if t == sys || strings.HasPrefix(t, sys+"/") {
			return fmt.Sprintf("must not be %s or under it: the sandbox has its own", sys)
		}
	}
	return ""
}
