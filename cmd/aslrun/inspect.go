package main

import (
	"context"
	"flag"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/aslrun/aslrun/api"
	"github.com/aslrun/aslrun/engine"
	"github.com/aslrun/aslrun/jsonvalue"
	"github.com/aslrun/aslrun/server"
	"github.com/aslrun/aslrun/store"
)

// timeText writes t for tables, "-" when zero.
func timeText(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format(time.RFC3339)
}

// timeJSON writes t for --json, null when zero.
func timeJSON(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t.UTC().Format(time.RFC3339Nano)
}

// openForID parses the flags and the single execution ID of an inspecting
// command and opens its database. A nil handle with a nil error means
// --help was shown.
func (c *cmdContext) openForID(ctx context.Context, fs *flag.FlagSet, cmd string, args []string, db *string, what access) (string, *handle, error) {
	pos, err := parseFlags(fs, cmd, args, c.stdout)
	if done, err := handleHelp(err); done || err != nil {
		return "", nil, err
	}
	if len(pos) != 1 {
		return "", nil, usageErrorf("%s: want exactly one execution ID, got %d (see \"aslrun %s --help\")", cmd, len(pos), cmd)
	}
	h, err := c.open(ctx, *db, what, holderInfo{})
	if err != nil {
		return "", nil, err
	}
	return pos[0], h, nil
}

func cmdList(ctx context.Context, c *cmdContext, args []string) error {
	fs := flag.NewFlagSet("list", flag.ContinueOnError)
	status := fs.String("status", "", "only executions with this `STATUS` (RUNNING, WAITING, SUCCEEDED, FAILED, TIMED_OUT, ABORTED)")
	limit := fs.Int("limit", 100, "at most `N` executions (0: all)")
	asJSON := fs.Bool("json", false, "print JSON")
	db := dbFlag(fs)
	pos, err := parseFlags(fs, "list", args, c.stdout)
	if done, err := handleHelp(err); done || err != nil {
		return err
	}
	if len(pos) != 0 {
		return usageErrorf("list: unexpected argument %q", pos[0])
	}
	s := engine.Status(strings.ToUpper(*status))
	switch s {
	case "", engine.StatusRunning, engine.StatusWaiting, engine.StatusSucceeded, engine.StatusFailed, engine.StatusTimedOut, engine.StatusAborted:
	default:
		return usageErrorf("list: --status %q is not a status", *status)
	}
	h, err := c.open(ctx, *db, accessRead, holderInfo{})
	if err != nil {
		return err
	}
	defer h.close()
	var list []store.Summary
	if h.api != nil {
		list, err = remoteList(ctx, c, h, string(s), *limit)
	} else {
		list, err = h.st.List(ctx, store.ListOptions{Status: s, Limit: *limit})
	}
	if err != nil {
		return err
	}
	return printList(c, list, *asJSON)
}

// printList prints list as the list command does.
func printList(c *cmdContext, list []store.Summary, asJSON bool) error {
	if asJSON {
		out := make([]any, len(list))
		for i, e := range list {
			out[i] = map[string]any{
				"id": e.ID, "machine": e.MachineName, "status": string(e.Status), "startedAt": timeJSON(e.StartedAt),
				"stoppedAt": timeJSON(e.StoppedAt), "error": nullable(e.Error), "parent": nullable(e.Parent),
				"waitingFor": nullable(e.WaitingFor), "wakeAt": timeJSON(e.WakeAt),
			}
		}
		return writeJSON(c.stdout, out)
	}
	w := newTable(c.stdout)
	w.row("ID", "STATUS", "MACHINE", "STARTED", "STOPPED", "DETAIL")
	for _, e := range list {
		detail := e.Error
		if e.Status == engine.StatusWaiting {
			detail = e.WaitingFor
			if !e.WakeAt.IsZero() {
				detail += " until " + timeText(e.WakeAt)
			}
		}
		if e.Parent != "" {
			detail = strings.TrimSpace(detail + " (" + parentText(e.ID, e.Parent) + ")")
		}
		w.row(e.ID, string(e.Status), e.MachineName, timeText(e.StartedAt), timeText(e.StoppedAt), detail)
	}
	return w.flush()
}

// parentText says how execution id came from parent: a Distributed Map's
// child, a Workflow state's child (by its id: a child its startExecution
// Task named reads as a fork here; status looks it up), or a fork.
func parentText(id, parent string) string {
	if mapRun, ok := engine.MapRunOf(id, parent); ok {
		return "child of " + parent + ", map run " + mapRun
	}
	if step, ok := server.ChildStep(parent, id); ok {
		return "child of " + parent + ", state " + step
	}
	return "fork of " + parent
}

// nullable writes s for --json, null when empty.
func nullable(s string) any {
	if s == "" {
		return nil
	}
	return s
}

func cmdStatus(ctx context.Context, c *cmdContext, args []string) error {
	fs := flag.NewFlagSet("status", flag.ContinueOnError)
	asJSON := fs.Bool("json", false, "print JSON: id, status, output, error, cause, state, startedAt, stoppedAt, usage, parent (and mapRun for a Distributed Map's child, parentState for a Workflow state's), children")
	db := dbFlag(fs)
	id, h, err := c.openForID(ctx, fs, "status", args, db, accessRead)
	if err != nil || h == nil {
		return err
	}
	defer h.close()
	var v statusView
	if h.api != nil {
		if v, err = remoteStatus(ctx, h, id); err != nil {
			return err
		}
	} else {
		e, err := h.st.Load(ctx, id)
		if err != nil {
			return engineError(err)
		}
		v = statusOf(e)
	}
	if err := v.linkChildren(ctx, h); err != nil {
		return err
	}
	return printStatus(c, v, *asJSON)
}

// linkChildren adds to v the child executions its Workflow states and
// startExecution Tasks started and, when v is such a child, the step of
// its parent that started it: through the API when a server holds the
// database, from the database otherwise.
func (v *statusView) linkChildren(ctx context.Context, h *handle) error {
	list := func(id string) ([]api.ChildExecution, error) {
		if h.api != nil {
			l, err := h.api.Children(ctx, id, "")
			if err != nil {
				return nil, remoteError(h, err)
			}
			return l.Children, nil
		}
		return server.ChildExecutions(ctx, h.st, id)
	}
	var err error
	if v.Children, err = list(v.ID); err != nil {
		return fmt.Errorf("the children of execution %s: %w", v.ID, err)
	}
	if _, mapChild := engine.MapRunOf(v.ID, v.Parent); v.Parent == "" || v.ParentCheckpoint != "" || mapChild {
		return nil
	}
	if step, ok := server.ChildStep(v.Parent, v.ID); ok {
		v.ParentState = step
		return nil
	}
	// A child its startExecution Task named, or a fork: the parent's
	// history tells. A parent that is gone leaves it a fork.
	siblings, err := list(v.Parent)
	if err != nil {
		return nil
	}
	for _, c := range siblings {
		if c.ID == v.ID {
			v.ParentState = c.State
		}
	}
	return nil
}

// statusView is what status prints of an execution.
type statusView struct {
	ID, MachineName, DefinitionHash string
	Status                          engine.Status
	State, WaitingFor               string
	WakeAt, StartedAt, StoppedAt    time.Time
	Approvals                       []engine.PendingApproval
	// Usage is unknown (nil) through the API.
	Usage                    *engine.Usage
	Parent, ParentCheckpoint string
	// ParentState is the step of Parent that started it, when a Workflow
	// state or a startExecution Task did; Children are those it started.
	ParentState  string
	Children     []api.ChildExecution
	Error, Cause string
	Output       any
	// HistoryDropped: the execution keeps no history (a Distributed Map
	// child that succeeded, or an EXPRESS one).
	HistoryDropped bool
}

func statusOf(e *engine.Execution) statusView {
	v := statusView{ID: e.ID, MachineName: e.MachineName, DefinitionHash: e.DefinitionHash, Status: e.Status, WaitingFor: e.WaitingFor,
		WakeAt: e.WakeAt, StartedAt: e.StartedAt, StoppedAt: e.StoppedAt, Approvals: engine.PendingOf(e), Usage: &e.Progress.Usage,
		Parent: e.Parent, ParentCheckpoint: e.ParentCheckpoint, Error: e.Error, Cause: e.Cause, HistoryDropped: e.HistoryDropped}
	if top := e.Progress.Scopes[""]; top != nil && !e.Status.Ended() {
		v.State = top.Next
	}
	if e.Status == engine.StatusSucceeded {
		v.Output = e.Output
	}
	return v
}

// printStatus prints an execution as the status command does.
func printStatus(c *cmdContext, e statusView, asJSON bool) error {
	state := e.State
	if asJSON {
		var usage any
		if u := e.Usage; u != nil {
			usage = map[string]any{"inputTokens": u.InputTokens, "outputTokens": u.OutputTokens, "tokens": u.Tokens, "cost": u.Cost}
		}
		out := map[string]any{
			"id": e.ID, "status": string(e.Status), "output": e.Output, "error": nullable(e.Error), "cause": nullable(e.Cause),
			"state": nullable(state), "startedAt": timeJSON(e.StartedAt), "stoppedAt": timeJSON(e.StoppedAt),
			"approvals": approvalsJSON(e.Approvals), "usage": usage, "parent": nullable(e.Parent),
		}
		if mapRun, ok := engine.MapRunOf(e.ID, e.Parent); ok {
			out["mapRun"] = mapRun
		}
		if e.HistoryDropped {
			out["historyDropped"] = true
		}
		if e.ParentState != "" {
			out["parentState"] = e.ParentState
		}
		children := make([]any, len(e.Children))
		for i, ch := range e.Children {
			m := map[string]any{"id": ch.ID, "state": ch.State, "workflow": ch.Workflow, "status": nullable(ch.Status),
				"error": nullable(ch.Error), "startedAt": nil, "stoppedAt": nil, "detached": ch.Detached, "superseded": ch.Superseded}
			if ch.StartedAt != nil {
				m["startedAt"] = timeJSON(*ch.StartedAt)
			}
			if ch.StoppedAt != nil {
				m["stoppedAt"] = timeJSON(*ch.StoppedAt)
			}
			children[i] = m
		}
		out["children"] = children
		return writeJSON(c.stdout, out)
	}
	w := newTable(c.stdout)
	w.row("execution", e.ID)
	w.row("status", string(e.Status))
	if e.HistoryDropped {
		w.row("history", "dropped (a Distributed Map child keeps its head, not its events)")
	}
	w.row("machine", fmt.Sprintf("%s (definition %.12s)", e.MachineName, e.DefinitionHash))
	if state != "" {
		w.row("state", state)
	}
	if e.Status == engine.StatusWaiting {
		if e.WakeAt.IsZero() {
			w.row("waiting for", e.WaitingFor)
		} else {
			w.row("waiting for", e.WaitingFor+", next timer "+timeText(e.WakeAt))
		}
	}
	for _, pa := range e.Approvals {
		prompt, _ := jsonvalue.Marshal(pa.Prompt)
		w.row("approval", fmt.Sprintf("%s at %s: %s", pa.ID, pa.State, prompt))
		w.row("  options", strings.Join(pa.Options, ", "))
		if !pa.NextEscalation.IsZero() {
			w.row("  escalates", timeText(pa.NextEscalation))
		}
		if !pa.Deadline.IsZero() {
			w.row("  deadline", timeText(pa.Deadline))
		}
		w.row("  digest", pa.Digest)
	}
	if u := e.Usage; u != nil && *u != (engine.Usage{}) {
		w.row("usage", usageText(*u))
	}
	w.row("started", timeText(e.StartedAt))
	w.row("stopped", timeText(e.StoppedAt))
	mapRun, child := engine.MapRunOf(e.ID, e.Parent)
	switch {
	case e.Parent != "" && e.ParentCheckpoint != "":
		w.row("forked from", e.Parent+" at checkpoint "+e.ParentCheckpoint)
	case child:
		w.row("child of", e.Parent+" (map run "+mapRun+")")
	case e.ParentState != "":
		w.row("child of", termSafe(e.Parent+", state "+e.ParentState))
	case e.Parent != "":
		w.row("forked from", e.Parent)
	}
	if e.Error != "" {
		w.row("error", e.Error)
	}
	if e.Cause != "" {
		w.row("cause", e.Cause)
	}
	for i, ch := range e.Children {
		key := ""
		if i == 0 {
			key = "children"
		}
		status := ch.Status
		if status == "" {
			status = "starting"
		}
		if ch.Detached {
			status += " (not waited for)"
		}
		if ch.Superseded {
			status += " (started before a rollback)"
		}
		w.row(key, termSafe(fmt.Sprintf("%s  state %s  workflow %s  %s", ch.ID, ch.State, ch.Workflow, status)))
	}
	if e.Status == engine.StatusSucceeded {
		b, err := jsonvalue.Marshal(e.Output)
		if err != nil {
			return err
		}
		w.row("output", string(b))
	}
	return w.flush()
}

func cmdHistory(ctx context.Context, c *cmdContext, args []string) error {
	fs := flag.NewFlagSet("history", flag.ContinueOnError)
	asJSON := fs.Bool("json", false, "print JSON")
	verify := fs.Bool("verify", false, "check the hash chain of the history and report whether it is untampered")
	db := dbFlag(fs)
	id, h, err := c.openForID(ctx, fs, "history", args, db, accessRead)
	if err != nil || h == nil {
		return err
	}
	defer h.close()
	var events []engine.Event
	var tampered error
	if h.api != nil {
		events, tampered, err = remoteHistory(ctx, h, id, *verify)
	} else {
		events, err = h.st.History(ctx, id)
		if err == nil && *verify {
			tampered = h.st.VerifyHistory(ctx, id)
		}
	}
	if err != nil {
		return engineError(err)
	}
	if *verify {
		if tampered != nil {
			printf(c.stdout, "execution %s: history NOT verified: %v\n", id, tampered)
			return &exitError{code: exitFailed}
		}
		printf(c.stdout, "execution %s: history verified (%d events, hash chain intact)\n", id, len(events))
		return nil
	}
	if *asJSON {
		out := make([]any, len(events))
		for i, e := range events {
			ev := map[string]any{
				"type": e.Type, "timestamp": timeJSON(e.Timestamp), "state": nullable(e.State), "scope": nullable(e.Scope),
				"error": nullable(e.Error), "cause": nullable(e.Cause), "docHash": nullable(e.DocHash),
				"prevHash": nullable(e.PrevHash), "hash": nullable(e.Hash), "superseded": e.Superseded,
			}
			if e.ID != 0 {
				ev["id"] = e.ID
			} else {
				ev["own"] = e.Own
			}
			if e.Detail != nil {
				ev["detail"] = e.Detail
			}
			out[i] = ev
		}
		return writeJSON(c.stdout, out)
	}
	w := newTable(c.stdout)
	w.row("ID", "TIME", "TYPE", "STATE", "DETAIL")
	for _, e := range events {
		num := fmt.Sprint(e.ID)
		if e.ID == 0 {
			num = fmt.Sprintf("own-%d", e.Own)
		}
		detail := strings.TrimSpace(e.Error + " " + e.Cause)
		if e.Detail != nil {
			if b, err := jsonvalue.Marshal(e.Detail); err == nil {
				detail = strings.TrimSpace(detail + " " + string(b))
			}
		}
		if e.Superseded {
			detail = strings.TrimSpace("(superseded) " + detail)
		}
		w.row(num, e.Timestamp.UTC().Format("15:04:05.000"), e.Type, e.Scope+e.State, detail)
	}
	return w.flush()
}

func cmdCheckpoints(ctx context.Context, c *cmdContext, args []string) error {
	fs := flag.NewFlagSet("checkpoints", flag.ContinueOnError)
	asJSON := fs.Bool("json", false, "print JSON")
	db := dbFlag(fs)
	id, h, err := c.openForID(ctx, fs, "checkpoints", args, db, accessRead)
	if err != nil || h == nil {
		return err
	}
	defer h.close()
	var list []*engine.Checkpoint
	if h.api != nil {
		if list, err = remoteCheckpoints(ctx, h, id); err != nil {
			return err
		}
	} else {
		if _, err := h.st.Load(ctx, id); err != nil {
			return engineError(err)
		}
		if list, err = h.st.ListCheckpoints(ctx, id); err != nil {
			return err
		}
	}
	return printCheckpoints(c, list, *asJSON)
}

// printCheckpoints prints an execution's checkpoints as the checkpoints
// command does.
func printCheckpoints(c *cmdContext, list []*engine.Checkpoint, asJSON bool) error {
	now := time.Now()
	expired := func(cp *engine.Checkpoint) bool { return !cp.ExpiresAt.IsZero() && !cp.ExpiresAt.After(now) }
	if asJSON {
		out := make([]any, len(list))
		for i, cp := range list {
			out[i] = map[string]any{
				"name": cp.Name, "state": cp.State, "next": nullable(cp.Next), "createdAt": timeJSON(cp.CreatedAt),
				"expiresAt": timeJSON(cp.ExpiresAt), "expired": expired(cp),
			}
		}
		return writeJSON(c.stdout, out)
	}
	w := newTable(c.stdout)
	w.row("NAME", "STATE", "NEXT", "CREATED", "EXPIRES")
	for _, cp := range list {
		exp := timeText(cp.ExpiresAt)
		if cp.ExpiresAt.IsZero() {
			exp = "never"
		} else if expired(cp) {
			exp += " (expired)"
		}
		next := cp.Next
		if next == "" {
			next = "(end)"
		}
		w.row(cp.Name, cp.State, next, timeText(cp.CreatedAt), exp)
	}
	return w.flush()
}

func cmdGC(ctx context.Context, c *cmdContext, args []string) error {
	fs := flag.NewFlagSet("gc", flag.ContinueOnError)
	db := dbFlag(fs)
	pos, err := parseFlags(fs, "gc", args, c.stdout)
	if done, err := handleHelp(err); done || err != nil {
		return err
	}
	if len(pos) != 0 {
		return usageErrorf("gc: unexpected argument %q", pos[0])
	}
	h, err := c.open(ctx, *db, accessLocal, holderInfo{})
	if err != nil {
		return err
	}
	defer h.close()
	st := h.st
	rep, err := st.GC(ctx, time.Now())
	if err != nil {
		return err
	}
	fmt.Fprintf(c.stdout, "removed %d expired checkpoints, %d unreferenced snapshots and %d expired memory entries\n", rep.Checkpoints, rep.Blobs, rep.Memory)
	return nil
}

// cmdMemory lists agent memory: every namespace, or one, or one key.
func cmdMemory(ctx context.Context, c *cmdContext, args []string) error {
	fs := flag.NewFlagSet("memory", flag.ContinueOnError)
	asJSON := fs.Bool("json", false, "print JSON")
	db := dbFlag(fs)
	pos, err := parseFlags(fs, "memory", args, c.stdout)
	if done, err := handleHelp(err); done || err != nil {
		return err
	}
	if len(pos) > 2 {
		return usageErrorf("memory: unexpected argument %q", pos[2])
	}
	ns, key := "", ""
	if len(pos) > 0 {
		ns = pos[0]
	}
	if len(pos) > 1 {
		key = pos[1]
	}
	h, err := c.open(ctx, *db, accessRead, holderInfo{})
	if err != nil {
		return err
	}
	defer h.close()
	// A namespace's semantic and episodic collections are namespaces of
	// their own in the store: list them all, then keep the namespace's.
	var list []*engine.MemoryEntry
	if h.api != nil {
		list, err = remoteMemory(ctx, h, "")
	} else {
		list, err = h.st.ListMemory(ctx, "", time.Now())
	}
	if err != nil {
		return err
	}
	if ns != "" {
		list = slices.DeleteFunc(list, func(e *engine.MemoryEntry) bool {
			own, _, _, _ := engine.SplitMemoryNamespace(e.Namespace)
			return own != ns
		})
	}
	if key != "" {
		list = slices.DeleteFunc(list, func(e *engine.MemoryEntry) bool { return e.Key != key })
		if len(list) == 0 {
			return fmt.Errorf("memory: no key %q in namespace %q", key, ns)
		}
	}
	if *asJSON {
		out := make([]any, len(list))
		for i, e := range list {
			own, kind, coll, typed := engine.SplitMemoryNamespace(e.Namespace)
			m := map[string]any{"namespace": own, "type": "key_value", "key": e.Key, "value": e.Value,
				"updatedAt": timeJSON(e.UpdatedAt), "expiresAt": timeJSON(e.ExpiresAt), "execution": nullable(e.Execution)}
			if typed {
				m["type"], m["collection"] = kind, coll
			}
			out[i] = m
		}
		return writeJSON(c.stdout, out)
	}
	w := newTable(c.stdout)
	w.row("NAMESPACE", "KEY", "UPDATED", "EXPIRES", "VALUE")
	for _, e := range list {
		exp := "never"
		if !e.ExpiresAt.IsZero() {
			exp = timeText(e.ExpiresAt)
		}
		name, value := e.Namespace, e.Value
		if own, kind, coll, ok := engine.SplitMemoryNamespace(e.Namespace); ok {
			// A collection's entry: its text (semantic) or event
			// (episodic), not the vector.
			name = fmt.Sprintf("%s (%s %s)", own, kind, coll)
			if m, isObj := value.(map[string]any); isObj {
				if t, has := m["text"]; has && kind == "semantic" {
					value = t
				} else if ev, has := m["event"]; has {
					value = ev
				}
			}
		}
		v, err := jsonvalue.Marshal(value)
		if err != nil {
			return err
		}
		if len(v) > 80 {
			v = append(v[:77:77], "..."...)
		}
		w.row(termSafe(name), termSafe(e.Key), timeText(e.UpdatedAt), exp, termSafe(string(v)))
	}
	return w.flush()
}

// usageText writes what an execution's agents reported consuming, with
// only what they reported: "4000 tokens" when they gave a total alone,
// "1025 tokens (1000 in, 25 out), cost 0.002" when they gave it all.
func usageText(u engine.Usage) string {
	var parts []string
	if u.Tokens != 0 || u.InputTokens != 0 || u.OutputTokens != 0 {
		t := fmt.Sprintf("%d tokens", u.Tokens)
		if u.InputTokens != 0 || u.OutputTokens != 0 {
			t += fmt.Sprintf(" (%d in, %d out)", u.InputTokens, u.OutputTokens)
		}
		parts = append(parts, t)
	}
	if u.Cost != 0 {
		parts = append(parts, "cost "+strconv.FormatFloat(u.Cost, 'f', -1, 64))
	}
	return strings.Join(parts, ", ")
}

// approvalsJSON lists pending approvals as status --json prints them.
func approvalsJSON(list []engine.PendingApproval) []any {
	out := make([]any, len(list))
	for i, pa := range list {
		out[i] = pendingJSON(pa)
	}
	return out
}
