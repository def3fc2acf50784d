package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/aslrun/aslrun/api"
	"github.com/aslrun/aslrun/jsonvalue"
	"github.com/aslrun/aslrun/states"
	"github.com/aslrun/aslrun/states/include"
	"github.com/aslrun/aslrun/store"
	"github.com/aslrun/aslrun/workflowdiff"
)

// cmdWorkflow manages the workflow registry of the --db, or of the server
// holding it (through its API): register, versions, alias and diff.
func cmdWorkflow(ctx context.Context, c *cmdContext, args []string) error {
	fs := flag.NewFlagSet("workflow", flag.ContinueOnError)
	name := fs.String("name", "", "register: the workflow's `NAME`")
	label := fs.String("label", "", "register: the version's semver `LABEL` (1.2.0), unique per workflow")
	del := fs.Bool("delete", false, "alias: remove the alias")
	asJSON := fs.Bool("json", false, "versions, diff: print JSON")
	db := dbFlag(fs)
	pos, err := parseFlags(fs, "workflow", args, c.stdout)
	if done, err := handleHelp(err); done || err != nil {
		return err
	}
	if len(pos) == 0 {
		return usageErrorf("workflow: give register, versions, alias or diff")
	}
	verb, rest := pos[0], pos[1:]
	if *db == memoryDB {
		return usageErrorf("workflow %s: --db %s has no workflow registry: name a database", verb, memoryDB)
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	only := func(allowed ...string) error {
		for _, f := range slices.Sorted(maps.Keys(set)) {
			if f != "db" && !slices.Contains(allowed, f) {
				return usageErrorf("workflow %s takes no --%s", verb, f)
			}
		}
		return nil
	}
	w := &workflowCmd{c: c, db: *db, asJSON: *asJSON}
	switch verb {
	case "register":
		if err := only("name", "label"); err != nil {
			return err
		}
		switch {
		case len(rest) != 1:
			return usageErrorf("workflow register: give one FILE (workflow register FILE --name NAME [--label 1.2.0])")
		case *name == "":
			return usageErrorf("workflow register: --name is required")
		}
		if err := store.CheckWorkflowName(*name); err != nil {
			return usageErrorf("workflow register: --name: %v", err)
		}
		if *label != "" {
			if err := store.CheckLabel(*label); err != nil {
				return usageErrorf("workflow register: --label: %v", err)
			}
		}
		return w.register(ctx, rest[0], *name, *label)
	case "versions":
		if err := only("json"); err != nil {
			return err
		}
		if len(rest) != 1 {
			return usageErrorf("workflow versions: give one NAME")
		}
		return w.versions(ctx, rest[0])
	case "alias":
		if err := only("delete"); err != nil {
			return err
		}
		switch {
		case *del && len(rest) != 2:
			return usageErrorf("workflow alias --delete: give NAME and ALIAS, no VERSION")
		case !*del && len(rest) != 3:
			return usageErrorf("workflow alias: give NAME, ALIAS and VERSION (or --delete with NAME and ALIAS)")
		}
		if err := store.CheckAlias(rest[1]); err != nil {
			return usageErrorf("workflow alias: %v", err)
		}
		if *del {
			return w.deleteAlias(ctx, rest[0], rest[1])
		}
		if _, err := store.ParseRef(rest[2]); err != nil {
			return usageErrorf("workflow alias: VERSION: %v", err)
		}
		return w.setAlias(ctx, rest[0], rest[1], rest[2])
	case "diff":
		if err := only("json"); err != nil {
			return err
		}
		if len(rest) != 3 {
			return usageErrorf("workflow diff: give NAME, FROM and TO (versions: numbers, aliases, semver labels or constraints)")
		}
		for _, ref := range rest[1:] {
			if _, err := store.ParseRef(ref); err != nil {
				return usageErrorf("workflow diff: %v", err)
			}
		}
		return w.diff(ctx, rest[0], rest[1], rest[2])
	}
	return usageErrorf("workflow: %q is not register, versions, alias or diff", verb)
}

// workflowCmd is one workflow subcommand's database and output.
type workflowCmd struct {
	c      *cmdContext
	db     string
	asJSON bool
}

// open opens the --db, or finds the API of the server holding it.
func (w *workflowCmd) open(ctx context.Context, what access) (*handle, error) {
	return w.c.open(ctx, w.db, what, holderInfo{})
}

// register validates FILE (its imports resolved relative to it and from
// the --db's registry) and registers it as the next version of name: the
// definition as run would store it (expanded when it imports templates),
// with the lock of its registry imports.
//
// A template (a file with top-level Parameters) is checked as one, its
// imports from the registry only (a template in the registry has no
// directory to read files from), and registered as written.
func (w *workflowCmd) register(ctx context.Context, file, name, label string) error {
	reg := &dbRegistry{c: w.c, db: w.db, what: accessRun}
	defer reg.close()
	m, err := w.registrable(ctx, file, reg)
	if err != nil {
		return err
	}
	text, err := jsonvalue.Marshal(m.Definition)
	if err != nil {
		return err
	}
	h, err := reg.handle(ctx)
	if err != nil {
		return err
	}
	var v api.Workflow
	existed := false
	if h.api != nil {
		latest, err := h.api.Workflow(ctx, name, "")
		existed = err == nil
		if v, err = h.api.RegisterWorkflow(ctx, api.RegisterWorkflow{Name: name, Definition: text, Label: label, Lock: m.Lock}); err != nil {
			return remoteError(h, err)
		}
		existed = existed && latest.Version == v.Version
	} else {
		hash, err := jsonvalue.CanonicalHash(m.Definition)
		if err != nil {
			return err
		}
		latest, err := h.st.Workflow(ctx, name, 0)
		existed = err == nil
		sv, err := h.st.RegisterWorkflow(ctx, name, text, hash, store.VersionMeta{Label: label, Lock: m.Lock})
		if err != nil {
			return err
		}
		existed = existed && latest.Version == sv.Version
		v = apiWorkflow(sv, nil)
	}
	if existed {
		printf(w.c.stdout, "%s version %d has this definition already%s\n", v.Name, v.Version, labelText(v.Label))
		return nil
	}
	printf(w.c.stdout, "registered %s version %d%s\n", v.Name, v.Version, labelText(v.Label))
	return nil
}

// registrable reads FILE for register: a workflow's definition parsed (its
// templates expanded), or a template checked and kept as written.
func (w *workflowCmd) registrable(ctx context.Context, file string, reg *dbRegistry) (*states.Machine, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, usageErrorf("%v", err)
	}
	v, err := jsonvalue.Decode(data)
	if obj, isObj := v.(map[string]any); err == nil && isObj {
		if _, isTemplate := obj["Parameters"]; isTemplate {
			if err := states.ParseTemplate(ctx, data, states.ParseOptions{Imports: include.RegistryFunc(reg.resolve)}); err != nil {
				return nil, usageErrorf("%s: the template: %v", file, err)
			}
			return &states.Machine{Definition: v}, nil
		}
	}
	m, _, err := w.c.loadMachine(ctx, file, reg)
	return m, err
}

func labelText(label string) string {
	if label == "" {
		return ""
	}
	return " (" + label + ")"
}

// apiWorkflow is a stored version as the API shows it, with the aliases
// that point to it.
func apiWorkflow(v store.WorkflowVersion, aliases []store.WorkflowAlias) api.Workflow {
	out := api.Workflow{Name: v.Name, Version: v.Version, Hash: v.Hash, CreatedAt: v.CreatedAt, Label: v.Label, Lock: v.Lock}
	for _, a := range aliases {
		if a.Version == v.Version {
			out.Aliases = append(out.Aliases, a.Alias)
		}
	}
	return out
}

// versions lists the versions of name with their labels and aliases.
func (w *workflowCmd) versions(ctx context.Context, name string) error {
	h, err := w.open(ctx, accessRead)
	if err != nil {
		return err
	}
	defer h.close()
	var list []api.Workflow
	if h.api != nil {
		if list, err = h.api.WorkflowVersions(ctx, name); err != nil {
			return remoteError(h, err)
		}
	} else {
		vs, err := h.st.WorkflowVersions(ctx, name)
		if err != nil {
			return err
		}
		aliases, err := h.st.WorkflowAliases(ctx, name)
		if err != nil {
			return err
		}
		for _, v := range vs {
			list = append(list, apiWorkflow(v, aliases))
		}
	}
	if w.asJSON {
		return writeAPIJSON(w.c.stdout, api.WorkflowList{Workflows: list})
	}
	t := newTable(w.c.stdout)
	t.row("VERSION", "LABEL", "ALIASES", "REGISTERED", "HASH")
	for _, v := range list {
		t.row(strconv.Itoa(v.Version), orDash(v.Label), orDash(termSafe(strings.Join(v.Aliases, ","))), timeText(v.CreatedAt), v.Hash[:min(12, len(v.Hash))])
	}
	return t.flush()
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// setAlias points alias of name at the version ref names.
func (w *workflowCmd) setAlias(ctx context.Context, name, alias, ref string) error {
	h, err := w.open(ctx, accessRun)
	if err != nil {
		return err
	}
	defer h.close()
	var a api.WorkflowAlias
	if h.api != nil {
		v, err := h.api.Workflow(ctx, name, ref)
		if err != nil {
			return remoteError(h, err)
		}
		if a, err = h.api.SetWorkflowAlias(ctx, name, alias, v.Version); err != nil {
			return remoteError(h, err)
		}
	} else {
		v, err := h.st.ResolveWorkflow(ctx, name, ref)
		if err != nil {
			return err
		}
		sa, err := h.st.SetWorkflowAlias(ctx, name, alias, v.Version)
		if err != nil {
			return err
		}
		a = api.WorkflowAlias{Name: sa.Name, Alias: sa.Alias, Version: sa.Version, UpdatedAt: sa.UpdatedAt}
	}
	printf(w.c.stdout, "%s %s → version %d\n", a.Name, a.Alias, a.Version)
	return nil
}

// deleteAlias removes alias of name.
func (w *workflowCmd) deleteAlias(ctx context.Context, name, alias string) error {
	h, err := w.open(ctx, accessRun)
	if err != nil {
		return err
	}
	defer h.close()
	if h.api != nil {
		if err = h.api.DeleteWorkflowAlias(ctx, name, alias); err != nil {
			err = remoteError(h, err)
		}
	} else {
		err = h.st.DeleteWorkflowAlias(ctx, name, alias)
	}
	if err != nil {
		return err
	}
	printf(w.c.stdout, "removed alias %s of %s\n", alias, name)
	return nil
}

// diff prints what changed from version from of name to version to.
func (w *workflowCmd) diff(ctx context.Context, name, from, to string) error {
	h, err := w.open(ctx, accessRead)
	if err != nil {
		return err
	}
	defer h.close()
	var d api.WorkflowDiff
	if h.api != nil {
		if d, err = h.api.WorkflowDiff(ctx, name, from, to); err != nil {
			return remoteError(h, err)
		}
	} else {
		a, err := h.st.ResolveWorkflow(ctx, name, from)
		if err != nil {
			return err
		}
		b, err := h.st.ResolveWorkflow(ctx, name, to)
		if err != nil {
			return err
		}
		if d, err = workflowdiff.Diff(a.Definition, b.Definition); err != nil {
			return fmt.Errorf("workflow %s versions %d and %d: %w", name, a.Version, b.Version, err)
		}
		d.Name, d.From, d.To, d.FromLabel, d.ToLabel = name, a.Version, b.Version, a.Label, b.Label
	}
	if w.asJSON {
		return writeAPIJSON(w.c.stdout, d)
	}
	out := w.c.stdout
	printf(out, "%s: version %d%s → version %d%s\n", d.Name, d.From, labelText(d.FromLabel), d.To, labelText(d.ToLabel))
	for _, s := range d.Added {
		printf(out, "+ state %s\n", s)
	}
	for _, s := range d.Removed {
		printf(out, "- state %s\n", s)
	}
	change := func(f api.FieldChange) {
		printf(out, "    %s: %s → %s\n", f.Pointer, valueText(f.Before), valueText(f.After))
	}
	for _, c := range d.Changed {
		printf(out, "~ state %s\n", c.State)
		for _, f := range c.Changes {
			change(f)
		}
	}
	if len(d.Fields) > 0 {
		printf(out, "~ top level\n")
		for _, f := range d.Fields {
			change(f)
		}
	}
	for _, e := range d.AddedEdges {
		printf(out, "+ edge %s → %s (%s)\n", e.From, e.To, e.Kind)
	}
	for _, e := range d.RemovedEdges {
		printf(out, "- edge %s → %s (%s)\n", e.From, e.To, e.Kind)
	}
	if len(d.Added)+len(d.Removed)+len(d.Changed)+len(d.Fields) == 0 {
		printf(out, "no changes\n")
	}
	return nil
}

// valueText is a diff's value, "(none)" when absent.
func valueText(v []byte) string {
	if v == nil {
		return "(none)"
	}
	return string(v)
}

// writeAPIJSON prints an API document as indented JSON, as the API
// answers it.
func writeAPIJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
