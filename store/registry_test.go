package store_test

import (
	"errors"
	"testing"

	"github.com/aslrun/aslrun/engine"
	"github.com/aslrun/aslrun/store"
)

func TestWorkflowVersionParseRef(t *testing.T) {
	for _, tt := range []struct {
		ref     string
		kind    store.RefKind
		version int
		alias   string
		label   string
	}{
		{"", store.RefLatest, 0, "", ""},
		{"latest", store.RefLatest, 0, "", ""},
		{"1", store.RefVersion, 1, "", ""},
		{"042", store.RefVersion, 42, "", ""},
		{"prod", store.RefAlias, 0, "prod", ""},
		{"canary-2_b", store.RefAlias, 0, "canary-2_b", ""},
		{"v1", store.RefAlias, 0, "v1", ""},
		{"1.2.0", store.RefLabel, 0, "", "1.2.0"},
		{"1.2.0-rc.1+build.5", store.RefLabel, 0, "", "1.2.0-rc.1+build.5"},
		{"^1.0.0", store.RefConstraint, 0, "", ""},
		{"~1.2.0", store.RefConstraint, 0, "", ""},
		{">=1.0.0", store.RefConstraint, 0, "", ""},
		{">=1.0.0 <2.0.0", store.RefConstraint, 0, "", ""},
		{"1.x", store.RefConstraint, 0, "", ""},
		{"1.2", store.RefConstraint, 0, "", ""},
		{"v1.2.0", store.RefConstraint, 0, "", ""},
	} {
		t.Run(tt.ref, func(t *testing.T) {
			r, err := store.ParseRef(tt.ref)
			if err != nil {
				t.Fatalf("ParseRef(%q) = %v", tt.ref, err)
			}
			if r.Kind != tt.kind || r.Version != tt.version || r.Alias != tt.alias || r.Label != tt.label || r.Text != tt.ref {
				t.Errorf("ParseRef(%q) = %+v, want kind %d version %d alias %q label %q", tt.ref, r, tt.kind, tt.version, tt.alias, tt.label)
			}
		})
	}
}

func TestWorkflowVersionParseRefRefusals(t *testing.T) {
	for _, ref := range []string{
		"0", "00", "99999999999999999999999", "a b", "prod!", "^^1", ">=x.y", "1.2.0.0.0", "@1",
		"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
	} {
		t.Run(ref, func(t *testing.T) {
			if r, err := store.ParseRef(ref); !errors.Is(err, store.ErrInvalidRef) {
				t.Errorf("ParseRef(%q) = %+v, %v, want ErrInvalidRef", ref, r, err)
			}
		})
	}
}

func TestWorkflowVersionPick(t *testing.T) {
	versions := []store.WorkflowVersion{{Version: 1, Label: "1.0.0"}, {Version: 2}, {Version: 3, Label: "1.1.0"}, {Version: 4, Label: "2.0.0"}}
	aliases := map[string]int{"prod": 1}
	for _, tt := range []struct {
		ref  string
		want int
	}{{"", 4}, {"prod", 1}, {"2", 2}, {"^1.0.0", 3}, {"1.0.0", 1}, {"*", 4}} {
		r, err := store.ParseRef(tt.ref)
		if err != nil {
			t.Fatal(err)
		}
		if got, err := r.Pick("triage", versions, aliases); err != nil || got != tt.want {
			t.Errorf("Pick(%q) = %d, %v, want %d", tt.ref, got, err, tt.want)
		}
	}
	r, _ := store.ParseRef("^2.1.0")
	if got, err := r.Pick("triage", versions, aliases); !errors.Is(err, engine.ErrNotFound) || err.Error() != "no version of triage satisfies ^2.1.0; its labels: 1.0.0, 1.1.0, 2.0.0: "+engine.ErrNotFound.Error() {
		t.Errorf("Pick(^2.1.0) = %d, %v, want ErrNotFound naming the labels", got, err)
	}
}

// FuzzParseRef checks that ParseRef never panics, that what it accepts
// has a kind that matches its text, and that a label or alias it parses
// passes CheckLabel or CheckAlias.
func FuzzParseRef(f *testing.F) {
	for _, s := range []string{"", "latest", "1", "prod", "1.2.0", "^1.0.0", "~1.2.0", ">=1.0.0 <2", "1.x", "v1", "0", "a b", "||", "1.2.0-rc.1+b"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, ref string) {
		r, err := store.ParseRef(ref)
		if err != nil {
			if !errors.Is(err, store.ErrInvalidRef) {
				t.Fatalf("ParseRef(%q) = %v, not ErrInvalidRef", ref, err)
			}
			return
		}
		if r.Text != ref {
			t.Fatalf("ParseRef(%q).Text = %q", ref, r.Text)
		}
		switch r.Kind {
		case store.RefVersion:
			if r.Version < 1 {
				t.Fatalf("ParseRef(%q).Version = %d", ref, r.Version)
			}
		case store.RefAlias:
			if store.CheckAlias(r.Alias) != nil || r.Alias != ref {
				t.Fatalf("ParseRef(%q) = alias %q that does not check", ref, r.Alias)
			}
		case store.RefLabel:
			if store.CheckLabel(r.Label) != nil {
				t.Fatalf("ParseRef(%q) = label %q that does not check", ref, r.Label)
			}
		}
		versions := []store.WorkflowVersion{{Version: 1, Label: "1.0.0"}, {Version: 2}}
		if _, err := r.Pick("w", versions, map[string]int{"prod": 2}); err != nil && !errors.Is(err, engine.ErrNotFound) {
			t.Fatalf("Pick(%q) = %v, not ErrNotFound", ref, err)
		}
	})
}
