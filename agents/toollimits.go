package agents

import (
	"context"
	"time"
)

// ToolLimits is what a state's Tools block narrows, beyond which tools
// may be called, for each of its tool calls: the hosts (Domains), the
// files (FileSystem) and the process confinement (Sandboxed, Sandbox).
// The engine puts it in the context of every tool call it runs
// (Tools.Run); the built-in tools that reach hosts, files and processes
// (the http and file tools, MCP servers' tools, exec tools) read it with
// ToolLimitsFrom and enforce it, and a Go tool may honour it too. Each
// limit only narrows what the server's owner granted (the agents file's
// Hosts, a file tool's Root, the buckets): it never widens it.
type ToolLimits struct {
	// State is the state whose Tools block set the limits, for messages.
	State string
	// Domains narrows the hosts a tool may connect to; nil means the
	// owner's hosts only.
	Domains *DomainLimits
	// Files narrows the files a tool may open; nil means every file
	// under the tool's root.
	Files *FileLimits
	// Sandbox, when set, asks that a tool running a process runs it in a
	// sandbox so confined; a tool that cannot must refuse the call.
	Sandbox *SandboxLimits
}

// DomainLimits is a Tools block's Domains: host patterns (the forms of
// egress.ParsePattern: "api.example.com", "*.example.com", an address
// or CIDR block, each with an optional ":PORT").
type DomainLimits struct {
	// Allowed, when HasAllowed, lists the only hosts a tool may reach
	// (empty: none); otherwise every host the owner allows.
	Allowed    []string
	HasAllowed bool
	// Denied lists hosts a tool may never reach; it wins over Allowed.
	Denied []string
}

// FileLimits is a Tools block's FileSystem. Paths are slash-separated
// and relative to the tool's root (a file tool's Root, an MCP server's
// root); a glob matches as path.Match does within one segment, and "**"
// as a whole segment matches any number of segments.
type FileLimits struct {
	// AllowedPaths, when not empty, lists the globs a path must match.
	AllowedPaths []string
	// DeniedPaths lists globs no path may match; they win over
	// AllowedPaths.
	DeniedPaths []string
	// AllowedExtensions, when not empty, lists the extensions (".md",
	// lower case) a file's name must end with.
	AllowedExtensions []string
	// MaxFileSize bounds the size in bytes of a file read or written; 0
	// means no bound of the state's.
	MaxFileSize int64
}

// SandboxLimits is a Tools block's Sandbox for process tools
// (Environment "process"): a tool's process runs in new namespaces over
// a read-only view of the machine's root.
type SandboxLimits struct {
	// Network gives the process the host's network; false (the default)
	// leaves it only a loopback interface of its own.
	Network bool
	// Memory bounds the process's address space in bytes (RLIMIT_AS); 0
	// means no bound of the state's.
	Memory int64
	// CPU bounds the process's CPU time (RLIMIT_CPU, whole seconds,
	// rounded up); 0 means no bound of the state's.
	CPU time.Duration
	// Timeout ends the process when it passes; 0 means no bound of the
	// sandbox's own (the Tools block's Timeout still applies).
	Timeout time.Duration
	// Mounts are folders the owner mapped to buckets, made visible at a
	// path inside the sandbox.
	Mounts []Mount
}

// Mount is one folder visible inside a sandbox.
type Mount struct {
	// Target is the absolute path inside the sandbox.
	Target string
	// Dir is the folder on the machine (the bucket's folder).
	Dir string
	// Bucket is the bucket Dir came from, for messages.
	Bucket string
	// ReadOnly mounts the folder read-only.
	ReadOnly bool
}

type toolLimitsKey struct{}

// WithToolLimits returns ctx carrying l (the engine calls it for every
// tool call it runs).
func WithToolLimits(ctx context.Context, l *ToolLimits) context.Context {
	return context.WithValue(ctx, toolLimitsKey{}, l)
}

// ToolLimitsFrom returns the limits of the tool call ctx belongs to, or
// nil when there are none.
func ToolLimitsFrom(ctx context.Context) *ToolLimits {
	l, _ := ctx.Value(toolLimitsKey{}).(*ToolLimits)
	return l
}
