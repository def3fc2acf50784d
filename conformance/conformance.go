// Package conformance runs conformance cases: JSON files that each hold a
// state machine, its input, scripted agent replies and the expected outcome
// (DESIGN.md §7). It is used by `aslrun conformance` and by this package's
// tests, which run every case under testdata/ and every AWS-recorded case
// under ../shared/conformance/aws/.
package conformance

import (
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"sync/atomic"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/aslrun/aslrun/agents"
	"github.com/aslrun/aslrun/engine"
	"github.com/aslrun/aslrun/jsonvalue"
	"github.com/aslrun/aslrun/states"
	"github.com/aslrun/aslrun/store"
)

// Case is one conformance case.
type Case struct {
	// File is where the case was read from.
	File string
	Name string
	// Definition is the state machine, decoded.
	Definition any
	// Input is the execution input ({} when absent).
	Input any
	// Mocks are the scripted agents; nil when the case has none.
	Mocks *agents.Mocks
	// Decisions answer the execution's approvals, in order (README:
	// "decisions").
	Decisions []Decision
	// Workers take the tasks of activities, in order (README: "workers").
	Workers []Worker
	// Memory is agent memory present before the execution starts, by
	// namespace and key.
	Memory map[string]map[string]any
	// Workflows are the registered workflows the case's Workflow states
	// and startExecution Tasks run, by "name" or "name@ref" (README:
	// "workflows").
	Workflows map[string]any
	// Expect is the expected outcome.
	Expect Expect
}

// Decision is a scripted approver: after AfterSeconds of waiting (0: at
// once), it decides the pending approval named Approval ("" for the only
// one), unless a timer of the execution (an escalation, a timeout) falls
// due first: then the execution is woken and the decision waits for the
// next pause.
type Decision struct {
	engine.Decision
	AfterSeconds float64
}

// Expect is a case's expected outcome. Error and Cause are nil when the
// expected failure has no such field.
type Expect struct {
	Status      string
	Output      any
	Error       *string
	Cause       *string
	CausePrefix string
	CauseSuffix string
	// CauseJSON is set when the cause is a JSON text compared as a value.
	CauseJSON    any
	HasCauseJSON bool
	// HasCause is set when the case constrains the cause at all.
	HasCause bool
	// ErrorContains is part of the validation message of an invalid definition.
	ErrorContains string
	// Path lists the top-level states entered, in order, when set.
	Path []string
	// ElapsedSeconds is how long the execution takes, when set. Under the
	// test suite's fake clock it must match exactly; in real time (the CLI)
	// the execution must take at least that long.
	ElapsedSeconds    float64
	HasElapsedSeconds bool
	// Memory is the agent memory expected after the execution, by
	// namespace and key (only the keys listed are compared; null means
	// absent).
	Memory map[string]map[string]any
	// Events counts history events by type, for the types listed.
	Events map[string]int
	// RequireErrorContains is set for our own cases; for AWS-recorded ones
	// (which carry aws_message) matching error_contains is only a bonus.
	RequireErrorContains bool
}

// caseWorkflows is the registry of a case's workflows: "name@ref" when
// the case has that key, else "name", registered as version 1.
type caseWorkflows map[string]any

func (w caseWorkflows) ResolveWorkflow(_ context.Context, name, ref string) ([]byte, string, error) {
	def, ok := w[name+"@"+ref]
	if !ok {
		def, ok = w[name]
	}
	if !ok {
		return nil, "", fmt.Errorf("no workflow %s is registered: %w", name, engine.ErrNotFound)
	}
	text, err := jsonvalue.Marshal(def)
	if err != nil {
		return nil, "", fmt.Errorf("workflow %s: %w", name, err)
	}
	return text, name + "@1", nil
}

// caseRedactKey is the redaction key the runner, as the owner, runs the
// cases with, so that a case may redact (Audit.Redact).
var caseRedactKey = []byte("aslrun conformance redaction key, not a secret")

// Load reads and checks one case file.
func Load(file string) (*Case, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	v, err := jsonvalue.Decode(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	c, err := fromValue(v)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	c.File = file
	return c, nil
}

func fromValue(v any) (*Case, error) {
	m, ok := v.(map[string]any)
	if !ok {
		return nil, errors.New("a case must be a JSON object")
	}
	c := &Case{Input: map[string]any{}}
	c.Name, _ = m["name"].(string)
	def, ok := m["definition"]
	if !ok {
		return nil, errors.New("missing definition")
	}
	c.Definition = def
	if in, ok := m["input"]; ok {
		c.Input = in
	}
	if a, ok := m["agents"]; ok {
		mocks, err := agents.MocksFromValue(a)
		if err != nil {
			return nil, fmt.Errorf("agents: %w", err)
		}
		c.Mocks = mocks
	}
	if err := c.decode(m); err != nil {
		return nil, err
	}
	if w, ok := m["workflows"]; ok {
		obj, isObj := w.(map[string]any)
		if !isObj {
			return nil, errors.New("workflows must be an object of workflow name to definition")
		}
		c.Workflows = obj
	}
	ex, ok := m["expect"].(map[string]any)
	if !ok {
		return nil, errors.New("missing expect object")
	}
	e := &c.Expect
	e.Status, _ = ex["status"].(string)
	switch e.Status {
	case "SUCCEEDED", "FAILED", "INVALID_DEFINITION", "TIMED_OUT", StatusInputRefused:
	default:
		return nil, fmt.Errorf("expect.status %q is not SUCCEEDED, FAILED, TIMED_OUT, INVALID_DEFINITION or INPUT_REFUSED", e.Status)
	}
	e.Output = ex["output"]
	var err error
	if e.Error, err = optString(ex, "error"); err != nil {
		return nil, err
	}
	if e.Cause, err = optString(ex, "cause"); err != nil {
		return nil, err
	}
	_, e.HasCause = ex["cause"]
	e.CausePrefix, _ = ex["cause_prefix"].(string)
	e.CauseSuffix, _ = ex["cause_suffix"].(string)
	if e.CausePrefix != "" || e.CauseSuffix != "" {
		e.HasCause = true
	}
	if cj, ok := ex["cause_json"]; ok {
		e.CauseJSON, e.HasCauseJSON, e.HasCause = cj, true, true
	}
	e.ErrorContains, _ = ex["error_contains"].(string)
	_, fromAWS := ex["aws_message"]
	e.RequireErrorContains = e.ErrorContains != "" && !fromAWS
	if v, ok := ex["elapsed_seconds"]; ok {
		n, isNum := v.(json.Number)
		f, valid := jsonvalue.Float64(n)
		if !isNum || !valid || f < 0 {
			return nil, errors.New("expect.elapsed_seconds must be a non-negative number")
		}
		e.ElapsedSeconds, e.HasElapsedSeconds = f, true
	}
	if mem, ok := ex["memory"]; ok {
		if e.Memory, err = memoryOf("expect.memory", mem); err != nil {
			return nil, err
		}
	}
	if evs, ok := ex["events"]; ok {
		obj, isObj := evs.(map[string]any)
		if !isObj {
			return nil, errors.New("expect.events must be an object of event type to count")
		}
		e.Events = make(map[string]int, len(obj))
		for typ, v := range obj {
			n, isNum := v.(json.Number)
			k, isInt := jsonvalue.Int64(n)
			if !isNum || !isInt || k < 0 {
				return nil, fmt.Errorf("expect.events.%s must be a count", typ)
			}
			e.Events[typ] = int(k)
		}
	}
	if p, ok := ex["path"].([]any); ok {
		for _, s := range p {
			name, _ := s.(string)
			e.Path = append(e.Path, name)
		}
	}
	return c, nil
}

// decode reads the case's decisions and memory.
func (c *Case) decode(m map[string]any) error {
	if v, ok := m["memory"]; ok {
		mem, err := memoryOf("memory", v)
		if err != nil {
			return err
		}
		c.Memory = mem
	}
	if v, ok := m["workers"]; ok {
		var err error
		if c.Workers, err = ParseWorkers(v); err != nil {
			return err
		}
	}
	v, ok := m["decisions"]
	if !ok {
		return nil
	}
	var err error
	c.Decisions, err = ParseDecisions(v)
	return err
}

// Worker is a scripted worker of an activity: PollAfter seconds after a
// task of Activity waits (and the previous worker took its task), it polls
// and takes the oldest one (as Name); then, sending a heartbeat every
// HeartbeatEvery seconds (0: none), it answers AnswerAfter seconds later
// with Output, or with the failure Error and Cause when Fails, or never
// when Abandon (a worker that died). When HasInput, the task's input must
// be Input.
type Worker struct {
	Activity, Name                         string
	PollAfter, AnswerAfter, HeartbeatEvery float64
	Output                                 any
	Fails                                  bool
	Error, Cause                           string
	Abandon                                bool
	Input                                  any
	HasInput                               bool
}

// ParseWorkers reads a list of scripted workers (README: "workers").
func ParseWorkers(v any) ([]Worker, error) {
	list, isList := v.([]any)
	if !isList {
		return nil, errors.New("workers must be an array")
	}
	var out []Worker
	for i, item := range list {
		obj, isObj := item.(map[string]any)
		if !isObj {
			return nil, fmt.Errorf("workers[%d] must be an object", i)
		}
		var w Worker
		answers := 0
		for k, v := range obj {
			s, isStr := v.(string)
			switch k {
			case "activity", "worker":
				if !isStr {
					return nil, fmt.Errorf("workers[%d].%s must be a string", i, k)
				}
			}
			switch k {
			case "activity":
				w.Activity = s
			case "worker":
				w.Name = s
			case "poll_after_seconds", "answer_after_seconds", "heartbeat_every_seconds":
				n, isNum := v.(json.Number)
				f, valid := jsonvalue.Float64(n)
				if !isNum || !valid || f < 0 {
					return nil, fmt.Errorf("workers[%d].%s must be a non-negative number", i, k)
				}
				switch k {
				case "poll_after_seconds":
					w.PollAfter = f
				case "answer_after_seconds":
					w.AnswerAfter = f
				default:
					w.HeartbeatEvery = f
				}
			case "success":
				w.Output = v
				answers++
			case "failure":
				f, isObj := v.(map[string]any)
				if !isObj {
					return nil, fmt.Errorf("workers[%d].failure must be an object with error and cause", i)
				}
				for fk, fv := range f {
					fs, isStr := fv.(string)
					if !isStr || fk != "error" && fk != "cause" {
						return nil, fmt.Errorf("workers[%d].failure: want string fields error and cause, not %q", i, fk)
					}
					if fk == "error" {
						w.Error = fs
					} else {
						w.Cause = fs
					}
				}
				w.Fails = true
				answers++
			case "input":
				w.Input, w.HasInput = v, true
			case "abandon":
				b, isBool := v.(bool)
				if !isBool || !b {
					return nil, fmt.Errorf("workers[%d].abandon must be true", i)
				}
				w.Abandon = true
				answers++
			default:
				return nil, fmt.Errorf("workers[%d]: unknown field %q", i, k)
			}
		}
		if !engine.ValidActivityName(w.Activity) {
			return nil, fmt.Errorf("workers[%d]: activity %q is not an activity name", i, w.Activity)
		}
		if answers != 1 {
			return nil, fmt.Errorf("workers[%d]: give exactly one of success, failure and abandon", i)
		}
		out = append(out, w)
	}
	return out, nil
}

// ParseDecisions reads a list of scripted decisions (README: "decisions").
func ParseDecisions(v any) ([]Decision, error) {
	list, isList := v.([]any)
	if !isList {
		return nil, errors.New("decisions must be an array")
	}
	var out []Decision
	for i, item := range list {
		d, isObj := item.(map[string]any)
		if !isObj {
			return nil, fmt.Errorf("decisions[%d] must be an object", i)
		}
		var dec Decision
		for k, v := range d {
			s, isStr := v.(string)
			switch k {
			case "approval", "approver", "comment", "approval_id":
				if !isStr {
					return nil, fmt.Errorf("decisions[%d].%s must be a string", i, k)
				}
			}
			switch k {
			case "approval":
				dec.Approval = s
			case "approver":
				dec.Approver = s
			case "comment":
				dec.Comment = s
			case "approval_id":
				dec.ApprovalID = s
			case "edit":
				dec.Edit = v
			case "after_seconds":
				n, isNum := v.(json.Number)
				f, valid := jsonvalue.Float64(n)
				if !isNum || !valid || f < 0 {
					return nil, fmt.Errorf("decisions[%d].after_seconds must be a non-negative number", i)
				}
				dec.AfterSeconds = f
			default:
				return nil, fmt.Errorf("decisions[%d]: unknown field %q", i, k)
			}
		}
		if dec.Approval == "" {
			return nil, fmt.Errorf("decisions[%d]: missing approval (the option chosen)", i)
		}
		out = append(out, dec)
	}
	return out, nil
}

// memoryOf reads {namespace: {key: value}}.
func memoryOf(field string, v any) (map[string]map[string]any, error) {
	obj, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("%s must be an object of namespaces", field)
	}
	out := make(map[string]map[string]any, len(obj))
	for ns, keys := range obj {
		k, ok := keys.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("%s.%s must be an object of keys", field, ns)
		}
		out[ns] = k
	}
	return out, nil
}

func optString(m map[string]any, key string) (*string, error) {
	v, ok := m[key]
	if !ok || v == nil {
		return nil, nil
	}
	s, ok := v.(string)
	if !ok {
		return nil, fmt.Errorf("expect.%s must be a string or null", key)
	}
	return &s, nil
}

// Run runs a case in real time and returns nil when the engine did what
// the case expects, or an error saying what differed.
func Run(ctx context.Context, c *Case) error { return RunWith(ctx, c, Options{}) }

// Options tune RunWith.
type Options struct {
	// Durability is the engine's durability mode; "" means
	// engine.DurabilityStrict.
	Durability engine.Durability
	// NewStore makes the store the case runs on, and done, called once
	// the case is over (to close it); nil means a fresh store.Memory. The
	// store must hold no agent memory the case does not seed (a fresh
	// one, or one whose memory was emptied): the case's expectations of
	// memory assume it starts empty.
	NewStore func(ctx context.Context) (st store.Store, done func(), err error)
	// exactTime says the clock is the test suite's fake clock, so elapsed
	// time can be checked exactly.
	exactTime bool
}

// RunWith runs a case in real time, as Run does, tuned by opts.
func RunWith(ctx context.Context, c *Case, opts Options) error {
	if opts.Durability == "" {
		opts.Durability = engine.DurabilityStrict
	}
	return run(ctx, c, opts)
}

// ErrNeedsStore is returned (wrapped) by a case run under DurabilityNone
// that the engine refused at start because it could park (an Approval, a
// long Wait), that seeds or checks agent memory, or whose Events have a
// webhook channel: it needs a store.
var ErrNeedsStore = errors.New("the case needs a store")

// hasWebhook reports whether m's Events have a webhook channel.
func hasWebhook(m *states.Machine) bool {
	if m.Extensions == nil || m.Extensions.Events == nil {
		return false
	}
	for _, c := range m.Extensions.Events.Channels {
		if c.Type == states.ChannelWebhook {
			return true
		}
	}
	return false
}

// run runs a case as opts say. Under DurabilityNone there is no store: the
// history and the memory are not checked (there are none), only how the
// execution ended.
func run(ctx context.Context, c *Case, opts Options) error {
	mode := opts.Durability
	m, err := states.ParseValue(c.Definition)
	if c.Expect.Status == "INVALID_DEFINITION" {
		if err == nil {
			return errors.New("definition was accepted, want INVALID_DEFINITION")
		}
		if c.Expect.RequireErrorContains && !strings.Contains(err.Error(), c.Expect.ErrorContains) {
			return fmt.Errorf("validation errors %q do not contain %q", oneLine(err.Error()), c.Expect.ErrorContains)
		}
		return nil
	}
	if err != nil {
		return fmt.Errorf("definition rejected: %s", oneLine(err.Error()))
	}
	reg := agents.NewRegistry()
	if c.Mocks != nil {
		if err := c.Mocks.Register(reg); err != nil {
			return err
		}
	}
	// Every case runs durably, on a store (but under DurabilityNone): an
	// execution that stops to wait is resumed when it is due, as a worker
	// would.
	var st store.Store
	// Escalations are checked in the history (expect.events), not logged.
	quiet := func(context.Context, engine.EscalationNotice) error { return nil }
	cfg := engine.Config{Agents: reg, OnEscalation: quiet, Durability: mode, RedactKey: caseRedactKey, Workflows: caseWorkflows(c.Workflows)}
	switch {
	case mode == engine.DurabilityNone && (c.Memory != nil || c.Expect.Memory != nil):
		return fmt.Errorf("%w: it seeds or checks agent memory", ErrNeedsStore)
	case mode == engine.DurabilityNone && hasWebhook(m):
		return fmt.Errorf("%w: its Events have a webhook channel, whose deliveries go to the store's outbox", ErrNeedsStore)
	case mode == engine.DurabilityNone:
	case opts.NewStore != nil:
		s, done, err := opts.NewStore(ctx)
		if err != nil {
			return fmt.Errorf("store: %w", err)
		}
		defer done()
		st = s
	default:
		st = store.NewMemory()
	}
	if st != nil {
		cfg.Store = st
	}
	x := engine.New(cfg)
	ctx, cancel := context.WithTimeout(ctx, caseTimeout)
	defer cancel()
	if st != nil {
		if err := seedMemory(ctx, st, c.Memory); err != nil {
			return err
		}
	}
	start := time.Now()
	res, err := x.Run(ctx, m, c.Input, engine.StartOptions{MachineName: c.Name})
	if c.Expect.Status == StatusInputRefused {
		return checkRefused(c, err)
	}
	if mode == engine.DurabilityNone && errors.Is(err, engine.ErrDurability) {
		return fmt.Errorf("%w: %w", ErrNeedsStore, err)
	}
	if err == nil {
		res, err = DriveWorkers(ctx, x, res, c.Decisions, c.Workers)
	}
	elapsed := time.Since(start)
	if err != nil {
		return fmt.Errorf("engine error: %v", err)
	}
	var history []engine.Event
	if st != nil {
		if err := checkMemory(ctx, st, c.Expect.Memory); err != nil {
			return err
		}
		if history, err = st.History(ctx, res.ID); err != nil {
			return fmt.Errorf("history: %v", err)
		}
		if err := st.VerifyHistory(ctx, res.ID); err != nil {
			return fmt.Errorf("history does not verify: %v", err)
		}
	}
	if err := check(c, res, history, st != nil); err != nil {
		return err
	}
	if e := c.Expect; e.HasElapsedSeconds {
		want := time.Duration(e.ElapsedSeconds * float64(time.Second))
		if opts.exactTime && elapsed != want || !opts.exactTime && elapsed < want {
			return fmt.Errorf("took %v, want %v", elapsed, want)
		}
	}
	return nil
}

// StatusInputRefused is the expected status of a case whose input the
// workflow's governance refuses before an execution exists: expect.error
// and expect.cause are then the violation's name and cause.
const StatusInputRefused = "INPUT_REFUSED"

// checkRefused checks that Run refused a case's input as it expects.
func checkRefused(c *Case, err error) error {
	var ge *engine.GovernanceError
	if !errors.As(err, &ge) || !errors.Is(err, engine.ErrInvalidInput) {
		return fmt.Errorf("input not refused by governance (error %v), want %s", err, StatusInputRefused)
	}
	e := &c.Expect
	if want := deref(e.Error); string(ge.Violation.Name) != want {
		return fmt.Errorf("error %q, want %q", ge.Violation.Name, want)
	}
	if e.Cause != nil && ge.Violation.Cause != *e.Cause {
		return fmt.Errorf("cause %q, want %q", ge.Violation.Cause, *e.Cause)
	}
	return nil
}

// caseTimeout bounds one case, so that a case that loops forever fails
// instead of hanging the run.
const caseTimeout = 10 * time.Minute

// check compares how a case ended with what it expects, and its history
// when it has one.
func check(c *Case, res *engine.Result, history []engine.Event, hasHistory bool) error {
	e := &c.Expect
	if string(res.Status) != e.Status {
		return fmt.Errorf("status %s (error %q, cause %q), want %s", res.Status, res.Error, res.Cause, e.Status)
	}
	switch e.Status {
	case "SUCCEEDED":
		if !jsonvalue.Equal(res.Output, e.Output) {
			return fmt.Errorf("output %s, want %s", show(res.Output), show(e.Output))
		}
	case "FAILED", "TIMED_OUT":
		if want := deref(e.Error); res.Error != want {
			return fmt.Errorf("error %q, want %q", res.Error, want)
		}
		if err := checkCause(e, res.Cause); err != nil {
			return err
		}
	}
	if !hasHistory {
		return nil
	}
	for typ, want := range e.Events {
		n := 0
		for _, ev := range history {
			if ev.Type == typ {
				n++
			}
		}
		if n != want {
			return fmt.Errorf("%d %s events, want %d", n, typ, want)
		}
	}
	if e.Path != nil {
		var got []string
		for _, ev := range history {
			if ev.Scope == "" && strings.HasSuffix(ev.Type, "StateEntered") {
				got = append(got, ev.State)
			}
		}
		if strings.Join(got, ",") != strings.Join(e.Path, ",") {
			return fmt.Errorf("path %v, want %v", got, e.Path)
		}
	}
	return nil
}

func checkCause(e *Expect, got string) error {
	switch {
	case !e.HasCause:
		return nil
	case e.HasCauseJSON:
		v, err := jsonvalue.Decode([]byte(got))
		if err != nil || !jsonvalue.Equal(v, e.CauseJSON) {
			return fmt.Errorf("cause %q, want the JSON value %s", got, show(e.CauseJSON))
		}
	case e.CausePrefix != "" || e.CauseSuffix != "":
		if !strings.HasPrefix(got, e.CausePrefix) || !strings.HasSuffix(got, e.CauseSuffix) || len(got) < len(e.CausePrefix)+len(e.CauseSuffix) {
			return fmt.Errorf("cause %q, want %q…%q", got, e.CausePrefix, e.CauseSuffix)
		}
	default:
		if want := deref(e.Cause); got != want {
			return fmt.Errorf("cause %q, want %q", got, want)
		}
	}
	return nil
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

func show(v any) string {
	b, err := jsonvalue.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	if len(b) > 300 {
		return string(b[:300]) + "…"
	}
	return string(b)
}

func oneLine(s string) string { return strings.ReplaceAll(s, "\n", "; ") }

// Collect returns the case files under paths (files or folders, walked
// recursively), in sorted order.
func Collect(paths []string) ([]string, error) {
	var files []string
	for _, p := range paths {
		info, err := os.Stat(p)
		if err != nil {
			return nil, err
		}
		if !info.IsDir() {
			files = append(files, p)
			continue
		}
		err = filepath.WalkDir(p, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if !d.IsDir() && strings.HasSuffix(path, ".json") {
				files = append(files, path)
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	sort.Strings(files)
	return files, nil
}

// Skips are known gaps: case files (matched by path suffix, like
// "aws/scenarios/foo.json") with the reason each is skipped. A skipped case
// counts as failed.
type Skips map[string]string

// ParseSkips reads a skip file: one "path reason…" per line; blank lines
// and lines starting with # are ignored.
func ParseSkips(data []byte) (Skips, error) {
	s := Skips{}
	for i, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		path, reason, _ := strings.Cut(line, " ")
		reason = strings.TrimSpace(reason)
		if reason == "" {
			return nil, fmt.Errorf("skip file line %d: %q has no reason", i+1, path)
		}
		s[path] = reason
	}
	return s, nil
}

// Reason returns why file is skipped, if it is.
func (s Skips) Reason(file string) (string, bool) {
	slashed := filepath.ToSlash(file)
	for suffix, reason := range s {
		if strings.HasSuffix(slashed, "/"+suffix) || slashed == suffix {
			return reason, true
		}
	}
	return "", false
}

// Report runs every case file under paths (several at a time, in real
// time), writes one line per failing case to w in file order, then
// "N passed, M failed", and returns the counts.
func Report(ctx context.Context, paths []string, skips Skips, w io.Writer) (passed, failed int, err error) {
	files, err := Collect(paths)
	if err != nil {
		return 0, 0, err
	}
	lines := make([]string, len(files))
	var g errgroup.Group
	g.SetLimit(4 * runtime.GOMAXPROCS(0))
	for i, f := range files {
		if reason, ok := skips.Reason(f); ok {
			lines[i] = fmt.Sprintf("SKIP %s: %s", f, reason)
			continue
		}
		g.Go(func() error {
			c, err := Load(f)
			if err == nil {
				err = Run(ctx, c)
			}
			if err != nil {
				lines[i] = fmt.Sprintf("FAIL %s: %s", f, oneLine(err.Error()))
			}
			return nil
		})
	}
	_ = g.Wait()
	for _, l := range lines {
		if l == "" {
			passed++
			continue
		}
		failed++
		fmt.Fprintln(w, l)
	}
	fmt.Fprintf(w, "%d passed, %d failed\n", passed, failed)
	return passed, failed, nil
}

//go:embed skip.txt
var defaultSkips []byte

// DefaultSkips returns the project's list of known gaps (skip.txt).
func DefaultSkips() Skips {
	s, err := ParseSkips(defaultSkips)
	if err != nil {
		// skip.txt is checked by the package's tests; an invalid one skips nothing.
		return Skips{}
	}
	return s
}

// Drive takes a WAITING execution to its end as a worker and the scripted
// approvers would: it answers its approvals with decisions, in order, and
// resumes it when a timer of its falls due (sleeping meanwhile). It fails
// when the execution waits for a decision and none is left, or when a
// decision is left unused.
func Drive(ctx context.Context, x *engine.Executor, res *engine.Result, decisions []Decision) (*engine.Result, error) {
	return DriveWorkers(ctx, x, res, decisions, nil)
}

// holding is a scripted worker that took a task.
type holding struct {
	w        Worker
	token    string
	answerAt time.Time
	beatAt   time.Time // zero: no heartbeats
}

// DriveWorkers is Drive with scripted workers of activities, too: while the
// execution waits for a task of an activity, the next worker polls for it
// (PollAfter seconds after it began to wait), takes it, sends its
// heartbeats and answers it. It fails, too, when a worker is left unused.
func DriveWorkers(ctx context.Context, x *engine.Executor, res *engine.Result, decisions []Decision, workers []Worker) (*engine.Result, error) {
	var (
		at     time.Time // when the next decision is made, once its wait began
		pollAt time.Time // when the next worker polls, once a task waits
		held   []*holding
		empty  bool // the last poll found no task: wait for a change
		err    error
	)
	for res.Status == engine.StatusWaiting {
		// The next thing to happen: a decision, a poll, a heartbeat or an
		// answer of a worker, or a timer of the execution.
		next, act := res.WakeAt, "wake"
		consider := func(t time.Time, what string) {
			if !t.IsZero() && (next.IsZero() || t.Before(next)) {
				next, act = t, what
			}
		}
		if len(res.Approvals) > 0 && len(decisions) > 0 {
			if at.IsZero() {
				at = time.Now().Add(seconds(decisions[0].AfterSeconds))
			}
			consider(at, "decide")
		}
		if len(workers) > 0 && !empty && engine.WaitsForActivity(res.WaitingFor) {
			if pollAt.IsZero() {
				pollAt = time.Now().Add(seconds(workers[0].PollAfter))
			}
			consider(pollAt, "poll")
		}
		var who *holding
		for _, h := range held {
			if !h.beatAt.IsZero() && h.beatAt.Before(h.answerAt) && (next.IsZero() || h.beatAt.Before(next)) {
				next, act, who = h.beatAt, "beat", h
			}
			if !h.w.Abandon && (next.IsZero() || h.answerAt.Before(next)) {
				next, act, who = h.answerAt, "answer", h
			}
		}
		if next.IsZero() {
			if len(decisions) == 0 && len(res.Approvals) > 0 {
				return nil, fmt.Errorf("the execution waits at %s for a decision, and none is left", res.State)
			}
			return nil, fmt.Errorf("the execution waits at %s (for %s) with no timer, decision or scripted worker left", res.State, res.WaitingFor)
		}
		time.Sleep(time.Until(next))
		switch act {
		case "decide":
			d := decisions[0]
			decisions, at = decisions[1:], time.Time{}
			res, err = x.Decide(ctx, res.ID, d.Decision, engine.ResumeOptions{})
		case "poll":
			w := workers[0]
			task, perr := x.PollActivity(ctx, w.Activity, engine.PollOptions{Worker: w.Name})
			switch {
			case perr != nil:
				return nil, perr
			case task == nil:
				empty = true
				continue
			case w.HasInput && !jsonvalue.Equal(task.Input, w.Input):
				return nil, fmt.Errorf("worker of %s got the input %s, want %s", w.Activity, show(task.Input), show(w.Input))
			}
			workers, pollAt = workers[1:], time.Time{}
			h := &holding{w: w, token: task.Token, answerAt: time.Now().Add(seconds(w.AnswerAfter))}
			if w.HeartbeatEvery > 0 && !w.Abandon {
				h.beatAt = time.Now().Add(seconds(w.HeartbeatEvery))
			}
			held = append(held, h)
			// Read where it waits now: the hand-out moves its wake-up
			// to the task's heartbeat deadline.
			res, err = x.Resume(ctx, res.ID, engine.ResumeOptions{})
		case "beat":
			if err := x.SendTaskHeartbeat(ctx, who.token); errors.Is(err, engine.ErrTaskTokenInvalid) {
				// The task ended meanwhile (a timeout): the worker
				// gives up.
				held = dropHolding(held, who)
				continue
			} else if err != nil {
				return nil, err
			}
			who.beatAt = who.beatAt.Add(seconds(who.w.HeartbeatEvery))
			continue
		case "answer":
			held = dropHolding(held, who)
			var r *engine.Result
			if who.w.Fails {
				r, err = x.SendTaskFailure(ctx, who.token, who.w.Error, who.w.Cause, engine.ResumeOptions{})
			} else {
				r, err = x.SendTaskSuccess(ctx, who.token, who.w.Output, engine.ResumeOptions{})
			}
			if errors.Is(err, engine.ErrTaskTokenInvalid) {
				// Too late: the task timed out. Its answer is refused.
				err = nil
				continue
			}
			res = r
		default:
			res, err = x.Resume(ctx, res.ID, engine.ResumeOptions{})
		}
		if err != nil {
			return nil, err
		}
		empty = false
	}
	switch {
	case len(decisions) > 0:
		return nil, fmt.Errorf("%d scripted decisions were not used", len(decisions))
	case len(workers) > 0:
		return nil, fmt.Errorf("%d scripted workers were not used", len(workers))
	}
	return res, nil
}

func seconds(f float64) time.Duration { return time.Duration(f * float64(time.Second)) }

func dropHolding(list []*holding, h *holding) []*holding {
	out := list[:0]
	for _, o := range list {
		if o != h {
			out = append(out, o)
		}
	}
	return out
}

// seedCount numbers the executions that seed memory.
var seedCount atomic.Int64

// seedMemory writes a case's memory before it runs, through a commit of an
// execution of its own.
func seedMemory(ctx context.Context, st store.Store, mem map[string]map[string]any) error {
	if len(mem) == 0 {
		return nil
	}
	// A store may be shared by cases one after another (its memory
	// emptied between them): each seeding execution has an id of its own.
	seed := fmt.Sprintf("memory-seed-%d", seedCount.Add(1))
	now := time.Now()
	if err := st.Create(ctx, &engine.Execution{ID: seed, Status: engine.StatusSucceeded, StartedAt: now}); err != nil {
		return err
	}
	c := &engine.Commit{Execution: seed, Seq: 1}
	for ns, keys := range mem {
		for k, v := range keys {
			c.Memory = append(c.Memory, engine.MemoryWrite{Namespace: ns, Key: k, Value: v, At: now, Execution: seed})
		}
	}
	if err := st.Commit(ctx, c); err != nil {
		return fmt.Errorf("memory: %w", err)
	}
	return nil
}

// checkMemory compares the memory after a case with what it expects.
func checkMemory(ctx context.Context, st store.Store, want map[string]map[string]any) error {
	for ns, keys := range want {
		names := make([]string, 0, len(keys))
		for k := range keys {
			names = append(names, k)
		}
		got, err := st.ReadMemory(ctx, ns, names, time.Now())
		if err != nil {
			return err
		}
		for k, w := range keys {
			var g any
			if e, ok := got[k]; ok {
				g = e.Value
			}
			if !jsonvalue.Equal(g, w) {
				return fmt.Errorf("memory %s/%s is %s, want %s", ns, k, show(g), show(w))
			}
		}
	}
	return nil
}
