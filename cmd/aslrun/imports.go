package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/aslrun/aslrun/states/include"
)

// fileImports reads the templates a definition file imports (the
// include.Source of validate, run and graph): files relative to the
// importing file and inside the definition's directory, and registry
// imports through reg (nil: a command without a --db).
type fileImports struct {
	dir string
	reg *dbRegistry
}

var _ include.Source = (*fileImports)(nil)

// Open reads the template file p, imported by from ("" for the
// definition). Absolute paths and paths leaving the definition's
// directory are refused; the name returned is the path relative to it.
func (f *fileImports) Open(from, p string) ([]byte, string, error) {
	if filepath.IsAbs(p) {
		return nil, "", fmt.Errorf("absolute import path %q: import templates relative to the importing file", p)
	}
	rel := filepath.Join(filepath.Dir(filepath.FromSlash(from)), filepath.FromSlash(p))
	if !filepath.IsLocal(rel) {
		return nil, "", fmt.Errorf("import path %q leaves the definition's directory %s: templates are read from it and below", p, f.dir)
	}
	root, err := os.OpenRoot(f.dir)
	if err != nil {
		return nil, "", err
	}
	defer root.Close()
	data, err := root.ReadFile(rel)
	if err != nil {
		return nil, "", err
	}
	return data, filepath.ToSlash(rel), nil
}

// Registry resolves a registry import from the --db's workflow registry.
func (f *fileImports) Registry(ctx context.Context, name, constraint string) ([]byte, string, error) {
	if f.reg == nil {
		return nil, "", errors.New("registry imports are resolved from a --db's workflow registry, which this command does not open (validate and run do)")
	}
	return f.reg.resolve(ctx, name, constraint)
}

// dbRegistry opens the --db the first time a registry import is resolved,
// and keeps it open for the rest of the command (which may use it: see
// handle). It is not safe for concurrent use.
type dbRegistry struct {
	c    *cmdContext
	db   string
	what access
	me   holderInfo
	h    *handle
}

// handle returns the open database, opening it if no import did.
func (r *dbRegistry) handle(ctx context.Context) (*handle, error) {
	if r.h == nil {
		h, err := r.c.open(ctx, r.db, r.what, r.me)
		if err != nil {
			return nil, err
		}
		r.h = h
	}
	return r.h, nil
}

// close closes the database if it was opened.
func (r *dbRegistry) close() {
	if r.h != nil {
		r.h.close()
		r.h = nil
	}
}

func (r *dbRegistry) resolve(ctx context.Context, name, constraint string) ([]byte, string, error) {
	if r.db == memoryDB {
		return nil, "", fmt.Errorf("--db %s has no workflow registry to resolve registry imports: name a database", memoryDB)
	}
	h, err := r.handle(ctx)
	if err != nil {
		return nil, "", fmt.Errorf("opening %s for its workflow registry: %w", r.db, err)
	}
	if h.api != nil {
		return nil, "", fmt.Errorf("database %s is held by a server: registry imports are not resolved through its API yet (stop it, or start the definition on the server)", r.db)
	}
	v, err := h.st.ResolveWorkflow(ctx, name, constraint)
	if err != nil {
		return nil, "", err
	}
	return v.Definition, fmt.Sprintf("%s@%d", v.Name, v.Version), nil
}
