package store

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/Masterminds/semver/v3"

	"github.com/aslrun/aslrun/engine"
)

// Workflow references: what ResolveWorkflow and the API accept after a
// workflow's name to say which of its versions is meant.

// RefKind says what a workflow reference names.
type RefKind int

// The kinds of workflow reference.
const (
	// RefLatest is "" or "latest": the alias latest when it is set, else
	// the newest version.
	RefLatest RefKind = iota
	// RefVersion is a decimal version number.
	RefVersion
	// RefAlias is an alias name.
	RefAlias
	// RefLabel is a semver label, 1.2.0.
	RefLabel
	// RefConstraint is a semver constraint (^1.0.0, ~1.2.0, >=1.0.0, …,
	// in github.com/Masterminds/semver's syntax): the highest labelled
	// version that satisfies it.
	RefConstraint
)

// Ref is a parsed workflow reference. Its zero value is RefLatest.
type Ref struct {
	Kind RefKind
	// Text is the reference as given.
	Text string
	// Version is RefVersion's number.
	Version int
	// Alias is RefAlias's name.
	Alias string
	// Label is RefLabel's label.
	Label string

	constraint *semver.Constraints
}

// maxRef bounds workflow references, aliases and labels.
const maxRef = 128

// ErrInvalidRef reports a workflow reference, alias name or semver label
// that does not parse.
var ErrInvalidRef = errors.New("invalid workflow reference")

// ParseRef parses a workflow reference: "" or "latest"; a version number
// (decimal, from 1); an alias name (CheckAlias); a semver label (1.2.0,
// CheckLabel); or a semver constraint (^1.0.0, ~1.2.0, >=1.0.0, 1.x,
// >=1.0.0 <2.0.0, …). Its error wraps ErrInvalidRef and quotes ref.
func ParseRef(ref string) (Ref, error) {
	r := Ref{Text: ref}
	switch {
	case ref == "" || ref == "latest":
		return r, nil
	case len(ref) > maxRef:
		return r, fmt.Errorf("workflow reference %.40q… is longer than %d bytes: %w", ref, maxRef, ErrInvalidRef)
	case allDigits(ref):
		n, err := strconv.Atoi(ref)
		if err != nil || n < 1 {
			return r, fmt.Errorf("workflow reference %q: a version number is from 1 to %d: %w", ref, maxInt, ErrInvalidRef)
		}
		r.Kind, r.Version = RefVersion, n
		return r, nil
	case CheckAlias(ref) == nil:
		r.Kind, r.Alias = RefAlias, ref
		return r, nil
	case CheckLabel(ref) == nil:
		r.Kind, r.Label = RefLabel, ref
		return r, nil
	}
	c, err := semver.NewConstraint(ref)
	if err != nil {
		return r, fmt.Errorf("workflow reference %q is not a version number, an alias, a semver label or a semver constraint (%v): %w", ref, err, ErrInvalidRef)
	}
	r.Kind, r.constraint = RefConstraint, c
	return r, nil
}

const maxInt = int(^uint(0) >> 1)

func allDigits(s string) bool {
	for i := range len(s) {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}

// CheckAlias reports whether name can name an alias: 1 to 128 ASCII
// letters, digits, '-' and '_', not all digits. Its error wraps
// ErrInvalidRef.
func CheckAlias(name string) error {
	switch {
	case name == "":
		return fmt.Errorf("empty alias name: %w", ErrInvalidRef)
	case len(name) > maxRef:
		return fmt.Errorf("alias name %.40q… is longer than %d bytes: %w", name, maxRef, ErrInvalidRef)
	case allDigits(name):
		return fmt.Errorf("alias name %q is all digits, which names a version: %w", name, ErrInvalidRef)
	}
	for i := range len(name) {
		switch c := name[i]; {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', c == '-', c == '_':
		default:
			return fmt.Errorf("alias name %q: byte %d is %q, want a letter, a digit, '-' or '_': %w", name, i, c, ErrInvalidRef)
		}
	}
	return nil
}

// CheckLabel reports whether label is a semver label: MAJOR.MINOR.PATCH
// with an optional -prerelease and +build, as semver.org 2.0.0 has it (no
// leading v, no leading zeros), at most 128 bytes. Its error wraps
// ErrInvalidRef.
func CheckLabel(label string) error {
	if len(label) > maxRef {
		return fmt.Errorf("semver label %.40q… is longer than %d bytes: %w", label, maxRef, ErrInvalidRef)
	}
	if _, err := semver.StrictNewVersion(label); err != nil {
		return fmt.Errorf("semver label %q: %v: %w", label, err, ErrInvalidRef)
	}
	return nil
}

// Pick returns the version of the workflow name that r names, given its
// versions (any order, without definitions) and aliases (alias → version).
// An error wraps engine.ErrNotFound, naming the workflow, the reference
// and what exists.
func (r Ref) Pick(name string, versions []WorkflowVersion, aliases map[string]int) (int, error) {
	if len(versions) == 0 {
		return 0, workflowNotFound(name, 0)
	}
	switch r.Kind {
	case RefLatest:
		if v, ok := aliases["latest"]; ok {
			return v, nil
		}
		return slices.MaxFunc(versions, func(a, b WorkflowVersion) int { return a.Version - b.Version }).Version, nil
	case RefVersion:
		for _, w := range versions {
			if w.Version == r.Version {
				return w.Version, nil
			}
		}
		return 0, fmt.Errorf("workflow %s has no version %d; its versions: 1 to %d: %w", name, r.Version, len(versions), engine.ErrNotFound)
	case RefAlias:
		if v, ok := aliases[r.Alias]; ok {
			return v, nil
		}
		return 0, fmt.Errorf("workflow %s has no alias %s; its aliases: %s: %w", name, r.Alias, listOrNone(slices.Sorted(maps.Keys(aliases))), engine.ErrNotFound)
	case RefLabel:
		for _, w := range versions {
			if w.Label == r.Label {
				return w.Version, nil
			}
		}
		return 0, fmt.Errorf("workflow %s has no version labelled %s; its labels: %s: %w", name, r.Label, listOrNone(labelsOf(versions)), engine.ErrNotFound)
	case RefConstraint:
		var best *semver.Version
		v := 0
		for _, w := range versions {
			if w.Label == "" {
				continue
			}
			sv, err := semver.StrictNewVersion(w.Label)
			if err != nil || !r.constraint.Check(sv) {
				continue
			}
			if best == nil || sv.GreaterThan(best) {
				best, v = sv, w.Version
			}
		}
		if best == nil {
			return 0, fmt.Errorf("no version of %s satisfies %s; its labels: %s: %w", name, r.Text, listOrNone(labelsOf(versions)), engine.ErrNotFound)
		}
		return v, nil
	}
	return 0, fmt.Errorf("workflow %s: reference %q of unknown kind %d: %w", name, r.Text, r.Kind, ErrInvalidRef)
}

// labelsOf returns the labels of versions, in semver order.
func labelsOf(versions []WorkflowVersion) []string {
	var out []string
	for _, w := range versions {
		if w.Label != "" {
			out = append(out, w.Label)
		}
	}
	slices.SortFunc(out, func(a, b string) int {
		va, erra := semver.StrictNewVersion(a)
		vb, errb := semver.StrictNewVersion(b)
		if erra != nil || errb != nil {
			return strings.Compare(a, b)
		}
		return va.Compare(vb)
	})
	return out
}

func listOrNone(s []string) string {
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, ", ")
}

// ResolveRef parses ref and picks the version of the workflow name it
// names among its versions and aliases (Ref.Pick), which list returns;
// list is called only when ref parses and name is valid.
func ResolveRef(name, ref string, list func() ([]WorkflowVersion, map[string]int, error)) (int, error) {
	r, err := ParseRef(ref)
	if err != nil {
		return 0, fmt.Errorf("workflow %s: %w", name, err)
	}
	if CheckWorkflowName(name) != nil {
		return 0, workflowNotFound(name, 0)
	}
	versions, aliases, err := list()
	if err != nil {
		return 0, err
	}
	return r.Pick(name, versions, aliases)
}

// VersionMeta is what RegisterWorkflow keeps in a version's record beside
// its definition. The zero value is no label and no lock.
type VersionMeta struct {
	// Label is the version's semver label (CheckLabel), unique among the
	// workflow's versions; "" for none.
	Label string
	// Lock maps each import of the definition to the version it resolved
	// to when the version was registered, "name@N" (CheckLock); nil for
	// none.
	Lock map[string]string
}

// SameAsLatest checks a registration of name against its versions (oldest
// first, without definitions): it returns the latest version (zero when
// there is none) and true when the registration is that version again —
// the same hash, and the same label and lock unless they are left out.
// A label another version has is an error wrapping engine.ErrExists.
func SameAsLatest(name string, versions []WorkflowVersion, hash string, meta VersionMeta) (WorkflowVersion, bool, error) {
	var latest WorkflowVersion
	if n := len(versions); n > 0 {
		latest = versions[n-1]
		if latest.Hash == hash && (meta.Label == "" || meta.Label == latest.Label) && (meta.Lock == nil || maps.Equal(meta.Lock, latest.Lock)) {
			return latest, true, nil
		}
	}
	if meta.Label != "" {
		for _, w := range versions {
			if w.Label == meta.Label {
				return latest, false, fmt.Errorf("workflow %s already has a version labelled %s (version %d): %w", name, meta.Label, w.Version, engine.ErrExists)
			}
		}
	}
	return latest, false, nil
}

// WorkflowAlias is an alias of a workflow: a name that points to one of
// its versions and can be moved.
type WorkflowAlias struct {
	Name    string
	Alias   string
	Version int
	// UpdatedAt is when the alias was last set, in UTC.
	UpdatedAt time.Time
}

// CheckLock checks a version's lock: import alias → "name@N", each name a
// workflow name and N a version number.
func CheckLock(lock map[string]string) error {
	for _, k := range slices.Sorted(maps.Keys(lock)) {
		v := lock[k]
		if k == "" || len(k) > maxRef {
			return fmt.Errorf("lock: key %.40q must be 1 to %d bytes: %w", k, maxRef, ErrInvalidRef)
		}
		name, n, ok := strings.Cut(v, "@")
		if !ok || CheckWorkflowName(name) != nil || !allDigits(n) {
			return fmt.Errorf("lock: %s is %.60q, want name@VERSION: %w", k, v, ErrInvalidRef)
		}
		if x, err := strconv.Atoi(n); err != nil || x < 1 {
			return fmt.Errorf("lock: %s is %.60q, want name@VERSION with VERSION from 1: %w", k, v, ErrInvalidRef)
		}
	}
	return nil
}
