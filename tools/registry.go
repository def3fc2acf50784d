package tools

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
)

// ErrDuplicate is the error (wrapped, naming the tool) of registering a
// name twice.
var ErrDuplicate = errors.New("tool already registered")

// Registry holds checked tools by name. The zero value is an empty
// registry ready to use. It is safe for concurrent use: a Lookup sees the
// registry before or after a Replace, never half of it.
type Registry struct {
	mu    sync.RWMutex
	tools map[string]Tool
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry { return &Registry{} }

// Register checks t (Check) and adds it. It fails on a tool Check refuses
// and on a name already registered (ErrDuplicate).
func (r *Registry) Register(t Tool) error {
	if err := t.Check(); err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.tools[t.Name]; ok {
		return fmt.Errorf("register tool %q: %w", t.Name, ErrDuplicate)
	}
	if r.tools == nil {
		r.tools = make(map[string]Tool)
	}
	r.tools[t.Name] = t
	return nil
}

// Replace swaps every registered tool whose name starts with prefix for
// ts at once, as when an MCP server's list of tools changes ("github."
// for the server github). Every tool of ts must pass Check, have a name
// starting with prefix, and appear once; otherwise nothing changes. An
// empty ts removes the prefix's tools. The prefix may not be empty.
func (r *Registry) Replace(prefix string, ts []Tool) error {
	if prefix == "" {
		return errors.New("replace tools: empty prefix")
	}
	checked := make(map[string]Tool, len(ts))
	var errs []error
	for _, t := range ts {
		if err := t.Check(); err != nil {
			errs = append(errs, err)
			continue
		}
		if !strings.HasPrefix(t.Name, prefix) {
			errs = append(errs, fmt.Errorf("replace tools %q: tool %q does not start with the prefix", prefix, t.Name))
			continue
		}
		if _, dup := checked[t.Name]; dup {
			errs = append(errs, fmt.Errorf("replace tools %q: tool %q: %w", prefix, t.Name, ErrDuplicate))
			continue
		}
		checked[t.Name] = t
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for name := range r.tools {
		if strings.HasPrefix(name, prefix) {
			delete(r.tools, name)
		}
	}
	if r.tools == nil {
		r.tools = make(map[string]Tool, len(checked))
	}
	for name, t := range checked {
		r.tools[name] = t
	}
	return nil
}

// Lookup returns the tool registered under name.
func (r *Registry) Lookup(name string) (Tool, bool) {
	if r == nil {
		return Tool{}, false
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	t, ok := r.tools[name]
	return t, ok
}

// List returns the registered tools sorted by name.
func (r *Registry) List() []Tool {
	if r == nil {
		return nil
	}
	r.mu.RLock()
	out := make([]Tool, 0, len(r.tools))
	for _, t := range r.tools {
		out = append(out, t)
	}
	r.mu.RUnlock()
	slices.SortFunc(out, func(a, b Tool) int { return strings.Compare(a.Name, b.Name) })
	return out
}
