package storetest

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aslrun/aslrun/engine"
	"github.com/aslrun/aslrun/store"
)

// Workflow definitions for the registry tests: compact JSON and hashes.
const (
	defV1 = `{"StartAt":"A","States":{"A":{"Type":"Pass","End":true}}}`
	defV2 = `{"StartAt":"B","States":{"B":{"Type":"Succeed"}}}`
)

func register(t *testing.T, s store.Store, name, def string) store.WorkflowVersion {
	t.Helper()
	w, err := s.RegisterWorkflow(t.Context(), name, []byte(def), hash(t, Doc(t, def)), store.VersionMeta{})
	if err != nil {
		t.Fatalf("RegisterWorkflow(%s) = %v", name, err)
	}
	return w
}

// versionText is a version as "name v hash".
func versionText(w store.WorkflowVersion) string {
	return fmt.Sprintf("%s v%d %.8s", w.Name, w.Version, w.Hash)
}

func versionTexts(ws []store.WorkflowVersion) []string {
	var out []string
	for _, w := range ws {
		out = append(out, versionText(w))
		if w.Definition != nil {
			out = append(out, "(with definition)")
		}
	}
	return out
}

func testWorkflows(t *testing.T, s store.Store) {
	ctx := t.Context()
	h1, h2 := hash(t, Doc(t, defV1)), hash(t, Doc(t, defV2))
	before := time.Now()
	w1 := register(t, s, "order-flow", defV1)
	if w1.Name != "order-flow" || w1.Version != 1 || w1.Hash != h1 || string(w1.Definition) != defV1 {
		t.Errorf("first registration = %+v, want version 1 of %s with its definition", w1, h1)
	}
	if w1.CreatedAt.Before(before) || w1.CreatedAt.After(time.Now()) || w1.CreatedAt.Location() != time.UTC {
		t.Errorf("CreatedAt = %v, want a UTC time between %v and now", w1.CreatedAt, before)
	}
	// The same definition again is the same version.
	if again := register(t, s, "order-flow", defV1); versionText(again) != versionText(w1) || !again.CreatedAt.Equal(w1.CreatedAt) {
		t.Errorf("registering the latest hash again = %+v, want %+v", again, w1)
	}
	w2 := register(t, s, "order-flow", defV2)
	if w2.Version != 2 || w2.Hash != h2 {
		t.Errorf("second definition = %s, want version 2 of %.8s", versionText(w2), h2)
	}
	// An older definition registered again is a new version.
	if w3 := register(t, s, "order-flow", defV1); w3.Version != 3 || w3.Hash != h1 {
		t.Errorf("the first definition again = %s, want version 3 of %.8s", versionText(w3), h1)
	}
	register(t, s, "a.b_c-9", defV2)
	register(t, s, "order", defV2) // a prefix of another name

	for _, tt := range []struct {
		name string
		v    int
		want string
		def  string
	}{
		{"order-flow", 0, "order-flow v3 " + h1[:8], defV1},
		{"order-flow", 1, "order-flow v1 " + h1[:8], defV1},
		{"order-flow", 2, "order-flow v2 " + h2[:8], defV2},
		{"order", 0, "order v1 " + h2[:8], defV2},
		{"a.b_c-9", 1, "a.b_c-9 v1 " + h2[:8], defV2},
	} {
		got, err := s.Workflow(ctx, tt.name, tt.v)
		if err != nil || versionText(got) != tt.want || string(got.Definition) != tt.def {
			t.Errorf("Workflow(%s, %d) = %s %s, %v, want %s %s", tt.name, tt.v, versionText(got), got.Definition, err, tt.want, tt.def)
		}
	}
	for _, tt := range []struct {
		name string
		v    int
	}{{"order-flow", 4}, {"order-flow", -1}, {"unknown", 0}, {"unknown", 1}, {"order-", 0}, {"", 0}, {"bad\x00name", 0}} {
		if got, err := s.Workflow(ctx, tt.name, tt.v); !errors.Is(err, engine.ErrNotFound) {
			t.Errorf("Workflow(%q, %d) = %s, %v, want ErrNotFound", tt.name, tt.v, versionText(got), err)
		}
	}

	got, err := s.Workflows(ctx)
	want := []string{"a.b_c-9 v1 " + h2[:8], "order v1 " + h2[:8], "order-flow v3 " + h1[:8]}
	if err != nil || !slices.Equal(versionTexts(got), want) {
		t.Errorf("Workflows() = %q, %v, want %q", versionTexts(got), err, want)
	}
	got, err = s.WorkflowVersions(ctx, "order-flow")
	want = []string{"order-flow v1 " + h1[:8], "order-flow v2 " + h2[:8], "order-flow v3 " + h1[:8]}
	if err != nil || !slices.Equal(versionTexts(got), want) {
		t.Errorf("WorkflowVersions(order-flow) = %q, %v, want %q", versionTexts(got), err, want)
	}
	if len(got) == 3 && !got[0].CreatedAt.Equal(w1.CreatedAt) {
		t.Errorf("WorkflowVersions(order-flow)[0].CreatedAt = %v, want %v", got[0].CreatedAt, w1.CreatedAt)
	}
	for _, name := range []string{"unknown", "order-", ""} {
		if got, err := s.WorkflowVersions(ctx, name); !errors.Is(err, engine.ErrNotFound) {
			t.Errorf("WorkflowVersions(%q) = %q, %v, want ErrNotFound", name, versionTexts(got), err)
		}
	}
	// The definitions are those of executions too.
	if def, err := s.Definition(ctx, h2); err != nil || string(def) != defV2 {
		t.Errorf("Definition(%.8s) = %s, %v, want %s", h2, def, err, defV2)
	}
}

// testWorkflowDefinitionShared registers a definition an execution stored
// first, with spacing: it is kept once, and the version's is compact.
func testWorkflowDefinitionShared(t *testing.T, s store.Store) {
	create(t, s, newExecution(t, "e1"))
	h := hash(t, Doc(t, definition))
	w, err := s.RegisterWorkflow(t.Context(), "spaced", []byte(defV1), h, store.VersionMeta{})
	if err != nil || string(w.Definition) != defV1 {
		t.Errorf("RegisterWorkflow = %s, %v, want the definition %s", w.Definition, err, defV1)
	}
	if got, err := s.Workflow(t.Context(), "spaced", 1); err != nil || string(got.Definition) != defV1 {
		t.Errorf("Workflow(spaced, 1) = %s, %v, want %s", got.Definition, err, defV1)
	}
	if e := load(t, s, "e1"); string(e.Definition) != definition {
		t.Errorf("Load(e1).Definition = %s, want it as stored: %s", e.Definition, definition)
	}
}

func testWorkflowBadArguments(t *testing.T, s store.Store) {
	h := hash(t, Doc(t, defV1))
	for _, tt := range []struct {
		name, def, hash string
		invalidName     bool
	}{
		{"", defV1, h, true},
		{strings.Repeat("n", 129), defV1, h, true},
		{"has space", defV1, h, true},
		{"slash/name", defV1, h, true},
		{"nul\x00", defV1, h, true},
		{"é", defV1, h, true},
		{"ok", "", h, false},
		{"ok", defV1, "", false},
	} {
		w, err := s.RegisterWorkflow(t.Context(), tt.name, []byte(tt.def), tt.hash, store.VersionMeta{})
		if err == nil || errors.Is(err, store.ErrInvalidName) != tt.invalidName {
			t.Errorf("RegisterWorkflow(%q, %q, %q) = %s, %v, want an error (invalid name: %v)", tt.name, tt.def, tt.hash, versionText(w), err, tt.invalidName)
		}
	}
	if got, err := s.Workflows(t.Context()); err != nil || len(got) != 0 {
		t.Errorf("Workflows() after refused registrations = %q, %v, want none", versionTexts(got), err)
	}
	if w := register(t, s, strings.Repeat("n", 128), defV1); w.Version != 1 {
		t.Errorf("a 128-byte name = %s, want version 1", versionText(w))
	}
}

// testWorkflowsConcurrent registers definitions of one name concurrently:
// each gets a version of its own, numbered without gaps.
func testWorkflowsConcurrent(t *testing.T, s store.Store) {
	const n = 8
	versions := make([]int, n)
	defs, hashes := make([]string, n), make([]string, n)
	for i := range n {
		defs[i] = fmt.Sprintf(`{"StartAt":"S%d","States":{"S%d":{"Type":"Succeed"}}}`, i, i)
		hashes[i] = hash(t, Doc(t, defs[i]))
	}
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			w, err := s.RegisterWorkflow(t.Context(), "busy", []byte(defs[i]), hashes[i], store.VersionMeta{})
			if err != nil {
				t.Errorf("RegisterWorkflow(busy #%d) = %v", i, err)
			}
			versions[i] = w.Version
		})
	}
	wg.Wait()
	slices.Sort(versions)
	for i, v := range versions {
		if v != i+1 {
			t.Fatalf("concurrent versions = %v, want 1 to %d", versions, n)
		}
	}
	if w, err := s.Workflow(t.Context(), "busy", 0); err != nil || w.Version != n {
		t.Errorf("Workflow(busy, 0) = %s, %v, want version %d", versionText(w), err, n)
	}
}
