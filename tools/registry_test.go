package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/aslrun/aslrun/agents"
)

func names(ts []Tool) string {
	var out []string
	for _, t := range ts {
		out = append(out, t.Name)
	}
	return strings.Join(out, ",")
}

func TestToolsRegistryRegister(t *testing.T) {
	var r Registry // the zero value is ready to use
	if err := r.Register(Tool{Name: "b", Call: noop}); err != nil {
		t.Fatal(err)
	}
	if err := r.Register(Tool{Name: "a", Category: "files", Input: json.RawMessage(`{"required":["p"]}`), Call: noop}); err != nil {
		t.Fatal(err)
	}
	err := r.Register(Tool{Name: "a", Call: noop})
	if !errors.Is(err, ErrDuplicate) {
		t.Errorf("second Register(a) = %v, want ErrDuplicate", err)
	}
	err = r.Register(Tool{Name: "c"})
	if ps := checkErrors(t, err); len(ps) != 1 || ps[0].Tool != "c" || ps[0].Field != "Call" {
		t.Errorf("Register(no Call) = %v, want tool c's Call refused", err)
	}
	if got := names(r.List()); got != "a,b" {
		t.Errorf("List() = %s, want a,b", got)
	}
	a, ok := r.Lookup("a")
	if !ok || a.Category != "files" {
		t.Fatalf("Lookup(a) = %+v, %v", a, ok)
	}
	if a.schemas == nil || a.schemas.in == nil {
		t.Error("a registered tool's schema is not compiled")
	}
	if _, ok := r.Lookup("c"); ok {
		t.Error("Lookup(c) found a refused tool")
	}
	var nilReg *Registry
	if _, ok := nilReg.Lookup("a"); ok || nilReg.List() != nil {
		t.Error("a nil registry has tools")
	}
}

func TestToolsRegistryReplace(t *testing.T) {
	r := NewRegistry()
	for _, n := range []string{"gh.issues", "gh.pulls", "ghost", "fs.read"} {
		if err := r.Register(Tool{Name: n, Call: noop}); err != nil {
			t.Fatal(err)
		}
	}
	if err := r.Replace("gh.", []Tool{{Name: "gh.issues", Description: "new", Call: noop}, {Name: "gh.search", Call: noop}}); err != nil {
		t.Fatal(err)
	}
	if got := names(r.List()); got != "fs.read,gh.issues,gh.search,ghost" {
		t.Errorf("List() after Replace = %s", got)
	}
	if issues, _ := r.Lookup("gh.issues"); issues.Description != "new" {
		t.Errorf("gh.issues after Replace = %+v, want the new one", issues)
	}

	// Refusals change nothing.
	before := names(r.List())
	tests := []struct {
		name   string
		prefix string
		ts     []Tool
		dup    bool
	}{
		{"empty prefix", "", nil, false},
		{"outside the prefix", "gh.", []Tool{{Name: "fs.write", Call: noop}}, false},
		{"twice", "gh.", []Tool{{Name: "gh.x", Call: noop}, {Name: "gh.x", Call: noop}}, true},
		{"refused by Check", "gh.", []Tool{{Name: "gh.ok", Call: noop}, {Name: "gh.bad", Call: noop, Input: json.RawMessage(`[]`)}}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := r.Replace(tt.prefix, tt.ts)
			if err == nil {
				t.Fatal("Replace() = nil, want an error")
			}
			if got := errors.Is(err, ErrDuplicate); got != tt.dup {
				t.Errorf("Replace() = %v: ErrDuplicate %v, want %v", err, got, tt.dup)
			}
			if got := names(r.List()); got != before {
				t.Errorf("List() after a refused Replace = %s, want %s", got, before)
			}
		})
	}

	// An empty list removes the prefix's tools.
	if err := r.Replace("gh.", nil); err != nil {
		t.Fatal(err)
	}
	if got := names(r.List()); got != "fs.read,ghost" {
		t.Errorf("List() after Replace(gh., nil) = %s", got)
	}
}

func TestToolsRegistryReplaceKeepsCallerSlice(t *testing.T) {
	r := NewRegistry()
	ts := []Tool{{Name: "m.a", Call: noop, Input: json.RawMessage(`{}`)}}
	if err := r.Replace("m.", ts); err != nil {
		t.Fatal(err)
	}
	if ts[0].schemas != nil {
		t.Error("Replace changed the caller's slice")
	}
}

// TestToolsRegistryConcurrent runs lookups, calls and replaces at once:
// with -race, a data race fails it; a lookup sees a whole generation of a
// server's tools, never half of one.
func TestToolsRegistryConcurrent(t *testing.T) {
	r := NewRegistry()
	gen := func(g int) []Tool {
		var ts []Tool
		for i := range 3 {
			tool, err := Typed(fmt.Sprintf("srv.t%d", i), "", func(context.Context, struct {
				N int `json:"n"`
			}) (int, error) {
				return g, nil
			})
			if err != nil {
				t.Fatal(err)
			}
			ts = append(ts, tool)
		}
		return ts
	}
	gens := [][]Tool{gen(0), gen(1), gen(2)}
	if err := r.Replace("srv.", gens[0]); err != nil {
		t.Fatal(err)
	}
	if err := r.Register(Tool{Name: "local", Call: noop}); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for w := range 4 {
		wg.Go(func() {
			for i := range 200 {
				if err := r.Replace("srv.", gens[(w+i)%len(gens)]); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	for range 8 {
		wg.Go(func() {
			for range 200 {
				list := r.List()
				if len(list) != 4 {
					errs <- fmt.Errorf("List() = %s, want 4 tools", names(list))
					return
				}
				seen := map[any]bool{}
				for _, tool := range list[1:] {
					out, err := tool.Run(context.Background(), &agents.Request{}, map[string]any{"n": json.Number("1")})
					if err != nil {
						errs <- err
						return
					}
					seen[out] = true
				}
				if len(seen) != 1 {
					errs <- fmt.Errorf("List() mixes generations: %v", seen)
					return
				}
				if tool, ok := r.Lookup("srv.t1"); !ok || tool.ValidateInput(map[string]any{"n": "x"}) == nil {
					errs <- errors.New("Lookup(srv.t1) gave no checked tool")
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if got := names(r.List()); !slices.Equal(strings.Split(got, ","), []string{"local", "srv.t0", "srv.t1", "srv.t2"}) {
		t.Errorf("List() = %s", got)
	}
}
