package storetest

import (
	"errors"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/aslrun/aslrun/engine"
	"github.com/aslrun/aslrun/store"
)

// defV3 is a third definition for the version tests.
const defV3 = `{"StartAt":"C","States":{"C":{"Type":"Pass","End":true}}}`

// registerAs registers def as a version of name with meta.
func registerAs(t *testing.T, s store.Store, name, def string, meta store.VersionMeta) store.WorkflowVersion {
	t.Helper()
	w, err := s.RegisterWorkflow(t.Context(), name, []byte(def), hash(t, Doc(t, def)), meta)
	if err != nil {
		t.Fatalf("RegisterWorkflow(%s, %+v) = %v", name, meta, err)
	}
	return w
}

// testWorkflowVersionLabels registers versions with labels and locks: they
// come back from every read, a label is unique per workflow, a bad label
// or lock is refused, and the same definition with a new label is a new
// version.
func testWorkflowVersionLabels(t *testing.T, s store.Store) {
	ctx := t.Context()
	lock := map[string]string{"review": "human-review@2"}
	w1 := registerAs(t, s, "triage", defV1, store.VersionMeta{Label: "1.0.0", Lock: lock})
	if w1.Version != 1 || w1.Label != "1.0.0" || !maps.Equal(w1.Lock, lock) {
		t.Errorf("RegisterWorkflow with a label and lock = %+v, want version 1 labelled 1.0.0 with lock %v", w1, lock)
	}
	// The same definition, label and lock, or with them left out, is the
	// same version; with another label it is a new one.
	if again := registerAs(t, s, "triage", defV1, store.VersionMeta{Label: "1.0.0", Lock: lock}); again.Version != 1 {
		t.Errorf("registering version 1 again = version %d, want 1", again.Version)
	}
	if again := registerAs(t, s, "triage", defV1, store.VersionMeta{}); again.Version != 1 || again.Label != "1.0.0" {
		t.Errorf("registering version 1's definition without a label = version %d %q, want 1 1.0.0", again.Version, again.Label)
	}
	if w2 := registerAs(t, s, "triage", defV1, store.VersionMeta{Label: "1.0.1"}); w2.Version != 2 || w2.Label != "1.0.1" || w2.Lock != nil {
		t.Errorf("version 1's definition with label 1.0.1 = %+v, want version 2 labelled 1.0.1 without a lock", w2)
	}
	registerAs(t, s, "triage", defV2, store.VersionMeta{Label: "1.2.0"})
	registerAs(t, s, "triage", defV3, store.VersionMeta{})
	registerAs(t, s, "other", defV1, store.VersionMeta{Label: "1.0.0"}) // labels are per workflow

	_, err := s.RegisterWorkflow(ctx, "triage", []byte(defV1), hash(t, Doc(t, defV1)), store.VersionMeta{Label: "1.2.0"})
	if !errors.Is(err, engine.ErrExists) || !strings.Contains(err.Error(), "1.2.0") {
		t.Errorf("a second 1.2.0 = %v, want ErrExists naming the label", err)
	}
	for _, meta := range []store.VersionMeta{
		{Label: "v1.0.0"}, {Label: "1.0"}, {Label: "01.0.0"}, {Label: "latest"},
		{Lock: map[string]string{"r": "review"}}, {Lock: map[string]string{"r": "review@0"}}, {Lock: map[string]string{"r": "bad/name@1"}}, {Lock: map[string]string{"": "review@1"}},
	} {
		if w, err := s.RegisterWorkflow(ctx, "triage", []byte(defV2), hash(t, Doc(t, defV2)), meta); !errors.Is(err, store.ErrInvalidRef) {
			t.Errorf("RegisterWorkflow(%+v) = %s, %v, want ErrInvalidRef", meta, versionText(w), err)
		}
	}

	got, err := s.WorkflowVersions(ctx, "triage")
	var labels []string
	for _, w := range got {
		labels = append(labels, w.Label)
	}
	if want := []string{"1.0.0", "1.0.1", "1.2.0", ""}; err != nil || !slices.Equal(labels, want) {
		t.Errorf("WorkflowVersions(triage) labels = %q, %v, want %q", labels, err, want)
	}
	if len(got) > 0 && !maps.Equal(got[0].Lock, lock) {
		t.Errorf("WorkflowVersions(triage)[0].Lock = %v, want %v", got[0].Lock, lock)
	}
	if w, err := s.Workflow(ctx, "triage", 1); err != nil || w.Label != "1.0.0" || !maps.Equal(w.Lock, lock) {
		t.Errorf("Workflow(triage, 1) = %+v, %v, want label 1.0.0 and lock %v", w, err, lock)
	}
	if list, err := s.Workflows(ctx); err != nil || len(list) != 2 || list[1].Name != "triage" || list[1].Version != 4 || list[1].Label != "" {
		t.Errorf("Workflows() = %+v, %v, want other v1 and triage v4 without a label", list, err)
	}
}

// testWorkflowVersionAliases sets, moves, lists and deletes aliases.
func testWorkflowVersionAliases(t *testing.T, s store.Store) {
	ctx := t.Context()
	register(t, s, "triage", defV1)
	register(t, s, "triage", defV2)
	register(t, s, "triage-x", defV3)
	if list, err := s.WorkflowAliases(ctx, "triage"); err != nil || len(list) != 0 {
		t.Errorf("WorkflowAliases before any = %+v, %v, want none", list, err)
	}
	a, err := s.SetWorkflowAlias(ctx, "triage", "prod", 1)
	if err != nil || a.Name != "triage" || a.Alias != "prod" || a.Version != 1 || a.UpdatedAt.IsZero() {
		t.Errorf("SetWorkflowAlias(prod, 1) = %+v, %v", a, err)
	}
	if _, err := s.SetWorkflowAlias(ctx, "triage", "prod", 2); err != nil {
		t.Errorf("moving prod to 2: %v", err)
	}
	if _, err := s.SetWorkflowAlias(ctx, "triage", "canary_1", 2); err != nil {
		t.Errorf("SetWorkflowAlias(canary_1, 2): %v", err)
	}
	if _, err := s.SetWorkflowAlias(ctx, "triage-x", "prod", 1); err != nil {
		t.Errorf("SetWorkflowAlias(triage-x, prod, 1): %v", err)
	}
	list, err := s.WorkflowAliases(ctx, "triage")
	var got []string
	for _, a := range list {
		got = append(got, a.Alias+"@"+string(rune('0'+a.Version)))
	}
	if want := []string{"canary_1@2", "prod@2"}; err != nil || !slices.Equal(got, want) {
		t.Errorf("WorkflowAliases(triage) = %q, %v, want %q", got, err, want)
	}
	if err := s.DeleteWorkflowAlias(ctx, "triage", "canary_1"); err != nil {
		t.Errorf("DeleteWorkflowAlias(canary_1): %v", err)
	}
	if list, err := s.WorkflowAliases(ctx, "triage"); err != nil || len(list) != 1 || list[0].Alias != "prod" {
		t.Errorf("WorkflowAliases after the delete = %+v, %v, want prod only", list, err)
	}

	for _, tt := range []struct {
		name, alias string
		version     int
		want        error
	}{
		{"triage", "prod", 3, engine.ErrNotFound},
		{"triage", "prod", 0, engine.ErrNotFound},
		{"nothing", "prod", 1, engine.ErrNotFound},
		{"triage", "12", 1, store.ErrInvalidRef},
		{"triage", "1.2.0", 1, store.ErrInvalidRef},
		{"triage", "a b", 1, store.ErrInvalidRef},
		{"triage", "", 1, store.ErrInvalidRef},
		{"triage", strings.Repeat("a", 129), 1, store.ErrInvalidRef},
	} {
		if a, err := s.SetWorkflowAlias(ctx, tt.name, tt.alias, tt.version); !errors.Is(err, tt.want) {
			t.Errorf("SetWorkflowAlias(%q, %q, %d) = %+v, %v, want %v", tt.name, tt.alias, tt.version, a, err, tt.want)
		}
	}
	if err := s.DeleteWorkflowAlias(ctx, "triage", "canary_1"); !errors.Is(err, engine.ErrNotFound) {
		t.Errorf("deleting canary_1 again = %v, want ErrNotFound", err)
	}
	if _, err := s.WorkflowAliases(ctx, "nothing"); !errors.Is(err, engine.ErrNotFound) {
		t.Errorf("WorkflowAliases(nothing) = %v, want ErrNotFound", err)
	}
}

// testWorkflowVersionResolve resolves every kind of reference.
func testWorkflowVersionResolve(t *testing.T, s store.Store) {
	ctx := t.Context()
	registerAs(t, s, "triage", defV1, store.VersionMeta{Label: "1.0.0"})
	registerAs(t, s, "triage", defV2, store.VersionMeta{Label: "1.2.0"})
	registerAs(t, s, "triage", defV3, store.VersionMeta{Label: "2.0.0-rc.1"})
	registerAs(t, s, "triage", defV1, store.VersionMeta{Label: "1.3.0"})
	registerAs(t, s, "triage", defV2, store.VersionMeta{})
	if _, err := s.SetWorkflowAlias(ctx, "triage", "prod", 2); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		ref  string
		want int
	}{
		{"", 5}, {"latest", 5}, {"1", 1}, {"4", 4}, {"prod", 2},
		{"1.2.0", 2}, {"2.0.0-rc.1", 3},
		{"^1.0.0", 4}, {"~1.2.0", 2}, {">=1.0.0", 4}, {"1.x", 4}, {"<1.2.0", 1}, {">=1.0.0 <1.3.0", 2},
		{">=2.0.0-rc.0", 3},
	} {
		w, err := s.ResolveWorkflow(ctx, "triage", tt.ref)
		if err != nil || w.Version != tt.want || w.Name != "triage" || len(w.Definition) == 0 {
			t.Errorf("ResolveWorkflow(triage, %q) = %s, %v, want version %d with its definition", tt.ref, versionText(w), err, tt.want)
		}
	}
	// latest, set explicitly, wins over the newest version.
	if _, err := s.SetWorkflowAlias(ctx, "triage", "latest", 3); err != nil {
		t.Fatal(err)
	}
	for _, ref := range []string{"", "latest"} {
		if w, err := s.ResolveWorkflow(ctx, "triage", ref); err != nil || w.Version != 3 {
			t.Errorf("ResolveWorkflow(triage, %q) with latest → 3 = %s, %v, want version 3", ref, versionText(w), err)
		}
	}
	if err := s.DeleteWorkflowAlias(ctx, "triage", "latest"); err != nil {
		t.Fatal(err)
	}
	if w, err := s.ResolveWorkflow(ctx, "triage", "latest"); err != nil || w.Version != 5 {
		t.Errorf("ResolveWorkflow(triage, latest) after deleting the alias = %s, %v, want version 5", versionText(w), err)
	}

	for _, tt := range []struct {
		name, ref string
		want      error
		says      []string
	}{
		{"triage", "^3.0.0", engine.ErrNotFound, []string{"triage", "^3.0.0", "1.0.0, 1.2.0, 1.3.0, 2.0.0-rc.1"}},
		{"triage", "9.9.9", engine.ErrNotFound, []string{"triage", "9.9.9", "1.3.0"}},
		{"triage", "staging", engine.ErrNotFound, []string{"triage", "staging", "prod"}},
		{"triage", "6", engine.ErrNotFound, []string{"triage", "6", "1 to 5"}},
		{"nothing", "", engine.ErrNotFound, []string{"nothing"}},
		{"nothing", "^1.0.0", engine.ErrNotFound, []string{"nothing"}},
		{"bad/name", "1", engine.ErrNotFound, []string{"bad/name"}},
		{"triage", "0", store.ErrInvalidRef, []string{"triage", `"0"`}},
		{"triage", "a b", store.ErrInvalidRef, []string{"triage", `"a b"`}},
		{"triage", "^^1", store.ErrInvalidRef, []string{"triage", `"^^1"`}},
	} {
		w, err := s.ResolveWorkflow(ctx, tt.name, tt.ref)
		if !errors.Is(err, tt.want) {
			t.Errorf("ResolveWorkflow(%q, %q) = %s, %v, want %v", tt.name, tt.ref, versionText(w), err, tt.want)
			continue
		}
		for _, part := range tt.says {
			if !strings.Contains(err.Error(), part) {
				t.Errorf("ResolveWorkflow(%q, %q) = %v, want it to say %q", tt.name, tt.ref, err, part)
			}
		}
	}
}
