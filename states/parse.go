package states

import (
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/aslrun/aslrun/governance"
	"github.com/aslrun/aslrun/jsonpath"
	"github.com/aslrun/aslrun/jsonvalue"
	"github.com/aslrun/aslrun/states/include"
)

// MaxTimeoutSeconds is the largest TimeoutSeconds, HeartbeatSeconds,
// IntervalSeconds or MaxAttempts accepted (AWS's limit, 99999999).
const MaxTimeoutSeconds = 99999999

// Parse decodes data strictly and validates it as a state machine
// definition. A definition with problems returns an ErrorList holding every
// problem found; text that is not strict JSON returns a *jsonvalue.JSONError.
func Parse(data []byte) (*Machine, error) {
	v, err := jsonvalue.Decode(data)
	if err != nil {
		return nil, err
	}
	return ParseValue(v)
}

// ParseValue validates an already decoded definition (see Parse).
func ParseValue(v any) (*Machine, error) {
	p := &parser{ql: JSONPath, topQL: JSONPath}
	m := p.machine(v, "", "", true)
	if m != nil {
		m.Definition = v
	}
	if m != nil {
		p.checkDefinition(m)
		p.checkEvents(m)
		p.checkRealTime(m)
	}
	if err := p.errs.Err(); err != nil {
		return nil, err
	}
	return m, nil
}

// ParseTimestamp parses an ASL timestamp: RFC 3339 with a 'T' separator and
// a zone ("Z" or ±hh:mm), fractional seconds allowed.
func ParseTimestamp(s string) (time.Time, bool) {
	if len(s) < 20 || s[10] != 'T' {
		return time.Time{}, false
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, false
	}
	return t, true
}

// unsupportedStateFields are fields the ASL documents name without
// semantics, or AWS fields this engine does not run; they are rejected with
// a message saying so rather than as unknown fields.
var unsupportedStateFields = map[string]string{
	"Resource":    "only a Task calls a resource",
	"Credentials": "only a Task has Credentials",
	"Feedback":    "only a Task asks for feedback on its output",
	"Cache":       "only a Task caches its result",
	"Audit":       "only a Task has an Audit block",
	"Streaming":   "only a Task streams its agent's output",
	"Idempotent":  "only a Task's result is cached",
	"Metadata":    "only a Task carries Metadata",
	"Model":       "only a Task chooses a model",
	"Generation":  "only a Task has Generation settings",
}

func (p *parser) machine(v any, ptr, parent string, top bool) *Machine {
	o := p.newObject(v, ptr, parent, "a state machine")
	if o == nil {
		return nil
	}
	p.depth++
	defer func() { p.depth-- }()
	m := &Machine{QueryLanguage: p.ql}
	m.Comment, _ = o.str("Comment")
	if top {
		m.Version = "1.0"
		if s, ok := o.str("Version"); ok {
			m.Version = s
		}
		if n, ok := o.integer("TimeoutSeconds", 1, MaxTimeoutSeconds); ok {
			m.TimeoutSeconds = n
		}
		m.Extensions = p.extensions(o)
		if o.has("Checkpointing") {
			o.errorf("Checkpointing", "top-level Checkpointing is not supported")
		}
		if o.has("Imports") {
			o.errorf("Imports", "top-level Imports needs a template resolver: aslrun validate and run resolve imports relative to the definition's file, a server resolves registry://name@constraint imports (ParseWith)")
		}
		for _, k := range []string{"Module", "Exports"} {
			if o.has(k) {
				o.errorf(k, "%s", include.ModuleMessage())
			}
		}
	}
	if ql, ok := o.oneOf("QueryLanguage", JSONPath, JSONata); ok {
		switch {
		case top:
			p.topQL, m.QueryLanguage = ql, ql
		case ql == JSONPath && p.topQL == JSONata:
			o.errorf("QueryLanguage", "%s", downgrade)
		default:
			m.QueryLanguage = ql
		}
	}
	outer := p.ql
	p.ql = m.QueryLanguage
	defer func() { p.ql = outer }()
	m.StartAt, _ = o.requiredStr("StartAt")
	statesPtr := o.at("States")
	rawStates, ok := o.get("States")
	if !ok {
		o.errorf("", "missing required field States")
	}
	var names []string
	if ok {
		so := p.newObject(rawStates, statesPtr, parent, "States")
		if so != nil {
			if len(so.m) == 0 {
				p.errorf(statesPtr, parent, "States must contain at least one state")
			}
			names = sortedKeys(so.m)
			m.States = make(map[string]State, len(names))
			for _, name := range names {
				so.used[name] = true
				if len(name) > 80 {
					p.errorf(so.at(name), name, "state name must be at most 80 characters")
				}
				if first, dup := p.stateAt[name]; dup {
					p.errorf(so.at(name), name, "duplicate state name %q (also at %s): state names must be unique across the whole state machine, nested Map and Parallel machines included", name, first)
				} else {
					if p.stateAt == nil {
						p.stateAt = make(map[string]string)
					}
					p.stateAt[name] = so.at(name)
				}
				if st := p.state(so.m[name], so.at(name), name); st != nil {
					m.States[name] = st
				}
			}
		}
	}
	if !top {
		// ProcessorConfig is read by the Map state that owns this machine.
		o.has("ProcessorConfig")
	}
	o.done("a state machine")
	if m.StartAt != "" && m.States != nil {
		raw, _ := rawStates.(map[string]any)
		if _, ok := raw[m.StartAt]; !ok {
			o.errorf("StartAt", "StartAt names state %q, which does not exist", m.StartAt)
		}
		p.checkGraph(m, raw, statesPtr)
	}
	if raw, _ := rawStates.(map[string]any); len(raw) > 0 && !hasTerminal(raw) {
		p.errorf(statesPtr, parent, "the state machine has no terminal state: at least one state must have \"End\": true or be a Succeed or Fail state")
	}
	m.redact = m.collectRedactPaths()
	return m
}

// hasTerminal reports whether one of the states may end its machine: a
// Succeed or Fail state, or any state with "End": true. AWS refuses a
// machine with none (MISSING_END_STATE): it could only loop for ever. It
// reads the raw states, and also counts a state whose own problem is
// already reported and may well be a missing End: one with an End that is
// not true, with neither Next nor End, or without a known Type.
func hasTerminal(raw map[string]any) bool {
	for _, v := range raw {
		if mayEnd(v) {
			return true
		}
	}
	return false
}

func mayEnd(v any) bool {
	st, ok := v.(map[string]any)
	if !ok {
		return true
	}
	if _, ok := st["End"]; ok {
		return true
	}
	typ, _ := st["Type"].(string)
	switch typ {
	case "Succeed", "Fail":
		return true
	case "Choice":
		return false
	case "Approval":
		if _, ok := st["Choices"]; ok {
			return false
		}
	}
	if _, known := stateFields[typ]; !known {
		return true
	}
	_, hasNext := st["Next"]
	return !hasNext
}

// transitions returns the states a state may go to, with the pointer of
// the field naming each.
func transitions(st State, ptr string) (targets []string, ptrs []string) {
	c := st.Base()
	if c.Next != "" {
		targets, ptrs = append(targets, c.Next), append(ptrs, ptr+"/Next")
	}
	add := func(next, p string) {
		if next != "" {
			targets, ptrs = append(targets, next), append(ptrs, p)
		}
	}
	switch s := st.(type) {
	case *Choice:
		for i, r := range s.Choices {
			add(r.Next, fmt.Sprintf("%s/Choices/%d/Next", ptr, i))
		}
		add(s.Default, ptr+"/Default")
	case *Approval:
		for i, r := range s.Choices {
			add(r.Next, fmt.Sprintf("%s/Choices/%d/Next", ptr, i))
		}
		add(s.Default, ptr+"/Default")
	}
	for i, c := range catchers(st) {
		add(c.Next, fmt.Sprintf("%s/Catch/%d/Next", ptr, i))
	}
	return targets, ptrs
}

func catchers(st State) []Catcher {
	switch s := st.(type) {
	case *Task:
		return s.Catch
	case *Map:
		return s.Catch
	case *Parallel:
		return s.Catch
	case *Debate:
		return s.Catch
	case *Approval:
		return s.Catch
	case *Workflow:
		return s.Catch
	}
	return nil
}

// checkGraph reports transitions to missing states and, when every state
// parsed, states that cannot be reached from StartAt.
func (p *parser) checkGraph(m *Machine, raw map[string]any, statesPtr string) {
	names := sortedKeys(raw)
	for _, n := range names {
		st, ok := m.States[n]
		if !ok {
			continue
		}
		targets, ptrs := transitions(st, statesPtr+"/"+jsonvalue.EscapePointer(n))
		for i, t := range targets {
			if _, ok := raw[t]; !ok {
				p.errorf(ptrs[i], n, "transition to state %q, which does not exist", t)
			}
		}
	}
	if len(m.States) != len(raw) {
		return
	}
	seen := map[string]bool{m.StartAt: true}
	queue := []string{m.StartAt}
	for len(queue) > 0 {
		n := queue[0]
		queue = queue[1:]
		st, ok := m.States[n]
		if !ok {
			continue
		}
		targets, _ := transitions(st, "")
		for _, t := range targets {
			if !seen[t] {
				seen[t] = true
				queue = append(queue, t)
			}
		}
	}
	for _, n := range names {
		if !seen[n] {
			p.errorf(statesPtr+"/"+jsonvalue.EscapePointer(n), n, "state %q is not reachable from StartAt", n)
		}
	}
}

// StateTypes returns the state types the parser accepts, sorted.
func StateTypes() []string {
	return slices.Sorted(maps.Keys(stateFields))
}

// stateFields lists the fields each state type accepts besides Type and
// Comment and QueryLanguage.
var stateFields = map[string][]string{
	"Pass":       {"InputPath", "OutputPath", "Next", "End", "Assign", "Result", "ResultPath", "Parameters", "Memory", "WritePolicy"},
	"Task":       {"InputPath", "OutputPath", "Next", "End", "Assign", "Agent", "Resource", "Credentials", "Parameters", "ResultSelector", "ResultPath", "TimeoutSeconds", "TimeoutSecondsPath", "HeartbeatSeconds", "HeartbeatSecondsPath", "Retry", "Catch", "Memory", "Context", "Tools", "Budget", "Guardrails", "Reasoning", "Model", "Generation", "Streaming", "WritePolicy", "Cache", "Idempotent", "IdempotencyKey", "IdempotencyKey.$", "CacheResult", "CacheTTL", "Feedback", "Metadata", "Audit"},
	"Choice":     {"InputPath", "OutputPath", "Assign", "Choices", "Default"},
	"Wait":       {"InputPath", "OutputPath", "Next", "End", "Assign", "Seconds", "Timestamp", "SecondsPath", "TimestampPath"},
	"Succeed":    {"InputPath", "OutputPath"},
	"Fail":       {"Error", "Cause", "ErrorPath", "CausePath", "Error.$", "Cause.$"},
	"Map":        {"InputPath", "OutputPath", "Next", "End", "Assign", "ItemsPath", "ItemsPath.$", "ItemSelector", "Parameters", "ItemProcessor", "Iterator", "MaxConcurrency", "MaxConcurrencyPath", "ToleratedFailureCount", "ToleratedFailureCountPath", "ToleratedFailurePercentage", "ToleratedFailurePercentagePath", "Label", "ItemReader", "ItemBatcher", "ResultWriter", "ResultSelector", "ResultPath", "Retry", "Catch", "WritePolicy"},
	"Parallel":   {"InputPath", "OutputPath", "Next", "End", "Assign", "Branches", "Parameters", "ResultSelector", "ResultPath", "Retry", "Catch", "WritePolicy"},
	"Approval":   {"InputPath", "OutputPath", "Next", "End", "Assign", "Prompt", "Prompt.$", "Options", "Timeout", "Escalation", "ResultPath", "Choices", "Default", "Editable", "Catch", "Policy", "Notifications", "BatchMode", "ItemsPath", "OnTimeout", "RequiredApprovers", "WritePolicy"},
	"Debate":     {"InputPath", "OutputPath", "Next", "End", "Assign", "Agents", "Topic", "TopicPath", "Topic.$", "Rounds", "Communication", "Consensus", "Parameters", "ResultPath", "Retry", "Catch", "WritePolicy"},
	"Checkpoint": {"InputPath", "OutputPath", "Next", "End", "Assign", "Name", "Storage", "TTL"},
	"Workflow":   {"InputPath", "OutputPath", "Next", "End", "Assign", "WorkflowId", "Input", "Timeout", "ResultPath", "Retry", "Catch", "WritePolicy"},
}

func (p *parser) state(v any, ptr, name string) State {
	o := p.newObject(v, ptr, name, "a state")
	if o == nil {
		return nil
	}
	typ, ok := o.requiredStr("Type")
	if !ok {
		// Without a Type the other fields cannot be judged.
		return nil
	}
	allowed, known := stateFields[typ]
	if typ == "Include" {
		o.errorf("Type", "an Include state is expanded from a template in the top-level Imports, and needs a template resolver (ParseWith; aslrun validate and run give one)")
		return nil
	}
	if !known {
		o.errorf("Type", "unknown state type %q", typ)
		return nil
	}
	c := Common{Name: name, Type: typ, QueryLanguage: p.ql}
	c.Comment, _ = o.str("Comment")
	if ql, ok := o.oneOf("QueryLanguage", JSONPath, JSONata); ok {
		if ql == JSONPath && p.topQL == JSONata {
			// AWS reports this at the state, not at its QueryLanguage.
			o.errorf("", "%s", downgrade)
		} else {
			c.QueryLanguage = ql
		}
	}
	if c.JSONata() {
		if allowed, known = jsonataStateFields[typ]; !known {
			o.errorf("QueryLanguage", "%s states do not support JSONata yet: their fields are JSONPath paths", typ)
			return nil
		}
	}
	allow := make(map[string]bool, len(allowed))
	for _, f := range allowed {
		allow[f] = true
	}
	// Fields not allowed for this type: report them before the type's own
	// parsing marks what it reads.
	for _, k := range sortedKeys(o.m) {
		if k == "Type" || k == "Comment" || k == "QueryLanguage" || k == "Events" || k == "Progress" || allow[k] {
			continue
		}
		o.used[k] = true
		if why, ok := unsupportedStateFields[k]; ok {
			o.errorf(k, "%s is not supported on %s state: %s", k, article(typ), why)
			continue
		}
		if msg := otherLanguage(c.QueryLanguage, k); msg != "" {
			o.errorf(k, "%s", msg)
			continue
		}
		o.errorf(k, "field %s is not valid on %s state", k, article(typ))
	}
	if allow["InputPath"] {
		c.InputPath = p.ioPath(o, "InputPath")
		c.OutputPath = p.ioPath(o, "OutputPath")
	}
	if allow["Next"] && typ != "Approval" {
		// An Approval reads Next and End itself: with Choices it needs
		// neither.
		p.nextEnd(o, &c)
	}
	switch {
	case allow["Assign"] && c.JSONata():
		c.AssignJSONata = p.jsonataAssign(o, "Assign")
	case allow["Assign"]:
		c.Assign = p.assign(o, "Assign")
	}
	if allow["Output"] {
		c.Output = p.jsonataTemplate(o, "Output")
	}
	if c.Events = p.stateEvents(o); c.Events != nil {
		c.eventsPtr = o.at("Events")
	}
	c.Progress = p.stateProgress(o, typ)
	if v, ok := o.get("WritePolicy"); ok {
		policy, err := governance.CompilePolicy(v)
		p.governanceProblems(o.at("WritePolicy"), name, err)
		c.WritePolicy = policy
	}
	if c.JSONata() {
		st := p.jsonataState(o, c)
		o.done(article(typ) + " state")
		return st
	}
	var st State
	switch typ {
	case "Pass":
		st = p.pass(o, c)
	case "Task":
		st = p.task(o, c)
	case "Choice":
		st = p.choice(o, c)
	case "Wait":
		st = p.wait(o, c)
	case "Succeed":
		st = &Succeed{Common: c}
	case "Fail":
		st = p.fail(o, c)
	case "Map":
		st = p.mapState(o, c)
	case "Parallel":
		st = p.parallel(o, c)
	case "Approval":
		st = p.approval(o, c)
	case "Debate":
		st = p.debate(o, c)
	case "Checkpoint":
		st = p.checkpoint(o, c)
	case "Workflow":
		st = p.workflowState(o, c)
	}
	o.done(article(typ) + " state")
	return st
}

func (p *parser) nextEnd(o *object, c *Common) {
	next, hasNext := o.str("Next")
	end, hasEnd := o.boolean("End")
	switch {
	case hasNext && hasEnd && end:
		o.errorf("End", "a state cannot have both Next and End")
	case hasNext:
		c.Next = next
		if next == "" {
			o.errorf("Next", "Next must not be empty")
		}
	case hasEnd && end:
		c.End = true
	case hasEnd:
		o.errorf("End", "End must be true when present; use Next to continue")
	default:
		_, nextSet := o.m["Next"]
		_, endSet := o.m["End"]
		if !nextSet && !endSet {
			o.errorf("", "missing Next or End")
		}
	}
}

// ioPath reads InputPath or OutputPath: absent = "$", null = {}.
func (p *parser) ioPath(o *object, key string) IOPath {
	v, ok := o.get(key)
	if !ok {
		return IOPath{}
	}
	if v == nil {
		return IOPath{Null: true}
	}
	path := p.path(o, key, v)
	if path != nil && path.String() == "$" {
		return IOPath{}
	}
	return IOPath{Path: path}
}

// path compiles the string value v of key as a path.
func (p *parser) path(o *object, key string, v any) *jsonpath.Path {
	s, ok := v.(string)
	if !ok {
		o.errorf(key, "%s must be a JSONPath string, not %s", key, jsonvalue.TypeName(v))
		return nil
	}
	path, err := jsonpath.Compile(s)
	if err != nil {
		o.errorf(key, "%s is not a valid JSONPath: %s", key, errText(err))
		return nil
	}
	return path
}

// optPath reads an optional path field.
func (p *parser) optPath(o *object, key string) *jsonpath.Path {
	v, ok := o.get(key)
	if !ok {
		return nil
	}
	return p.path(o, key, v)
}

// expr compiles the string value of key as a path or intrinsic call.
func (p *parser) expr(o *object, key string) *jsonpath.Expr {
	v, ok := o.get(key)
	if !ok {
		return nil
	}
	s, isStr := v.(string)
	if !isStr {
		o.errorf(key, "%s must be a JSONPath or intrinsic function string, not %s", key, jsonvalue.TypeName(v))
		return nil
	}
	e, err := jsonpath.CompileExpr(s)
	if err != nil {
		o.errorf(key, "The value for the field '%s' must be a valid JSONPath or a valid intrinsic function call: %s", key, errText(err))
		return nil
	}
	return e
}

func (p *parser) resultPath(o *object, key string) ResultPath {
	v, ok := o.get(key)
	if !ok {
		return ResultPath{}
	}
	if v == nil {
		return ResultPath{Discard: true}
	}
	s, isStr := v.(string)
	if !isStr {
		o.errorf(key, "%s must be a JSONPath string or null, not %s", key, jsonvalue.TypeName(v))
		return ResultPath{}
	}
	path, err := jsonpath.CompileReference(s)
	if err != nil {
		o.errorf(key, "%s is not a valid reference path: %s", key, errText(err))
		return ResultPath{}
	}
	if path.String() == "$" {
		return ResultPath{}
	}
	return ResultPath{Path: path}
}

func (p *parser) template(o *object, key string) *jsonpath.Template {
	v, ok := o.get(key)
	if !ok {
		return nil
	}
	t, err := jsonpath.CompileTemplate(v)
	if err != nil {
		p.templateErrors(o, key, err)
		return nil
	}
	return t
}

// templateErrors reports every problem of a template that did not compile,
// each at its own pointer, with the reason behind AWS's wording.
func (p *parser) templateErrors(o *object, key string, err error) {
	errs := []error{err}
	if joined, ok := err.(interface{ Unwrap() []error }); ok {
		errs = joined.Unwrap()
	}
	for _, e := range errs {
		var te *jsonpath.TemplateError
		if !errors.As(e, &te) {
			o.errorf(key, "%s: %s", key, errText(e))
			continue
		}
		msg := te.Msg
		if cause := te.Unwrap(); cause != nil {
			msg += ": " + cause.Error()
		}
		p.errorf(o.at(key)+te.Pointer, o.state, "%s", msg)
	}
}

var variableName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// assign reads an Assign block: an object whose keys are variable names,
// with ".$" for values taken from a path or intrinsic.
func (p *parser) assign(o *object, key string) *jsonpath.Template {
	m, ok := assignBlock(o, key)
	if !ok {
		return nil
	}
	for _, k := range sortedKeys(m) {
		name := strings.TrimSuffix(k, ".$")
		p.variableName(o, key, k, name)
	}
	return p.template(o, key)
}

// assignBlock returns the Assign block at key when it is an object; false
// when it is absent or refused (not an object).
func assignBlock(o *object, key string) (map[string]any, bool) {
	v, ok := o.m[key]
	if !ok {
		return nil, false
	}
	m, isObj := v.(map[string]any)
	if !isObj {
		o.used[key] = true
		o.errorf(key, "%s must be an object, not %s", key, jsonvalue.TypeName(v))
		return nil, false
	}
	return m, true
}

// variableName refuses name, assigned by the member k of the block at key,
// when it cannot name a variable.
func (p *parser) variableName(o *object, key, k, name string) {
	if !variableName.MatchString(name) || len(name) > 80 {
		p.errorf(o.at(key)+"/"+jsonvalue.EscapePointer(k), o.state, "%q is not a valid variable name (a letter or _ followed by letters, digits or _, at most 80 characters)", name)
	}
}

// errText returns an error's message for embedding in a validation message.
func errText(err error) string { return err.Error() }

func (p *parser) pass(o *object, c Common) *Pass {
	s := &Pass{Common: c}
	s.Result, s.HasResult = o.get("Result")
	if s.HasResult {
		s.ResultSize = jsonvalue.Size(s.Result)
	}
	s.Parameters = p.template(o, "Parameters")
	s.ResultPath = p.resultPath(o, "ResultPath")
	s.Memory = p.memory(o, "Memory")
	return s
}

func (p *parser) task(o *object, c Common) *Task {
	s := &Task{Common: c}
	p.taskTarget(o, s, "Parameters")
	if v, ok := p.credentials(o, false); ok {
		t, err := jsonpath.CompileTemplate(v)
		if err != nil {
			p.templateErrors(o, "Credentials", err)
		}
		s.Credentials = t
	}
	s.Parameters = p.template(o, "Parameters")
	s.ResultSelector = p.template(o, "ResultSelector")
	s.ResultPath = p.resultPath(o, "ResultPath")
	o.exclusive("TimeoutSeconds", "TimeoutSecondsPath")
	o.exclusive("HeartbeatSeconds", "HeartbeatSecondsPath")
	s.TimeoutSeconds, _ = o.integer("TimeoutSeconds", 1, MaxTimeoutSeconds)
	s.TimeoutSecondsPath = p.optPath(o, "TimeoutSecondsPath")
	s.HeartbeatSeconds, _ = o.integer("HeartbeatSeconds", 1, MaxTimeoutSeconds)
	s.HeartbeatSecondsPath = p.optPath(o, "HeartbeatSecondsPath")
	if s.HeartbeatSeconds > 0 && s.TimeoutSeconds > 0 && s.HeartbeatSeconds >= s.TimeoutSeconds {
		o.errorf("HeartbeatSeconds", "HeartbeatSeconds must be smaller than TimeoutSeconds")
	}
	s.Retry = p.retry(o)
	s.Catch = p.catch(o, false)
	s.Memory = p.memory(o, "Memory")
	s.Context = p.contextConfig(o, "Context")
	s.Tools = p.tools(o, "Tools")
	s.Budget = p.budget(o, "Budget")
	s.Guardrails = p.guardrails(o, "Guardrails")
	s.Reasoning = p.reasoning(o, "Reasoning")
	s.Model = p.model(o, "Model")
	s.Generation = p.generation(o, "Generation", false)
	s.Streaming = p.streaming(o)
	s.Cache = p.taskCache(o, false)
	s.Feedback = p.taskFeedback(o)
	s.Audit = p.audit(o)
	if v, ok := o.m["Metadata"]; ok {
		if _, isObj := v.(map[string]any); !isObj {
			o.errorf("Metadata", "Metadata must be an object (its fields may end in .$), not %s", jsonvalue.TypeName(v))
		} else {
			s.Metadata = p.template(o, "Metadata")
		}
	}
	return s
}

// taskFeedback reads a Task's Feedback block.
func (p *parser) taskFeedback(o *object) *FeedbackConfig {
	return p.feedback(o)
}

func (p *parser) wait(o *object, c Common) *Wait {
	s := &Wait{Common: c}
	n := 0
	for _, k := range []string{"Seconds", "Timestamp", "SecondsPath", "TimestampPath"} {
		if _, ok := o.m[k]; ok {
			n++
		}
	}
	if n != 1 {
		o.errorf("", "a Wait state needs exactly one of Seconds, Timestamp, SecondsPath or TimestampPath")
	}
	s.Seconds, s.HasSeconds = o.integer("Seconds", 0, MaxTimeoutSeconds)
	if ts, ok := o.str("Timestamp"); ok {
		t, valid := ParseTimestamp(ts)
		if !valid {
			o.errorf("Timestamp", "String does not match RFC3339 timestamp: %q", ts)
		}
		s.Timestamp = t
	}
	s.SecondsPath = p.optPath(o, "SecondsPath")
	s.TimestampPath = p.optPath(o, "TimestampPath")
	return s
}

func (p *parser) fail(o *object, c Common) *Fail {
	s := &Fail{Common: c}
	o.exclusive("Error", "ErrorPath", "Error.$")
	o.exclusive("Cause", "CausePath", "Cause.$")
	s.Error, _ = o.str("Error")
	s.Cause, _ = o.str("Cause")
	s.ErrorPath = p.expr(o, "ErrorPath")
	if s.ErrorPath == nil {
		s.ErrorPath = p.expr(o, "Error.$")
	}
	s.CausePath = p.expr(o, "CausePath")
	if s.CausePath == nil {
		s.CausePath = p.expr(o, "Cause.$")
	}
	return s
}

func (p *parser) parallel(o *object, c Common) *Parallel {
	s := &Parallel{Common: c}
	s.Branches = p.branches(o)
	s.Parameters = p.template(o, "Parameters")
	s.ResultSelector = p.template(o, "ResultSelector")
	s.ResultPath = p.resultPath(o, "ResultPath")
	s.Retry = p.retry(o)
	s.Catch = p.catch(o, false)
	return s
}

// processor reads a Map's ItemProcessor (or the legacy Iterator) and its
// ProcessorConfig.
func (p *parser) processor(o *object, s *Map) {
	o.exclusive("ItemProcessor", "Iterator")
	key := "ItemProcessor"
	if _, ok := o.m[key]; !ok {
		key = "Iterator"
	}
	o.has("Iterator") // reported by exclusive when ItemProcessor is set too
	if v, ok := o.get(key); !ok {
		o.errorf("", "missing required field ItemProcessor (or the legacy Iterator)")
	} else {
		s.Processor = p.machine(v, o.at(key), o.state, false)
		if pm, isObj := v.(map[string]any); isObj {
			if pc, has := pm["ProcessorConfig"]; has {
				po := p.newObject(pc, o.at(key)+"/ProcessorConfig", o.state, "ProcessorConfig")
				if po != nil {
					if mode, ok := po.oneOf("Mode", "INLINE", "DISTRIBUTED"); ok {
						s.Mode = mode
					}
					if s.Mode == "DISTRIBUTED" && s.Processor != nil {
						s.Processor.Definition = processorDefinition(v, s.Processor.QueryLanguage)
					}
					if et, ok := po.oneOf("ExecutionType", "STANDARD", "EXPRESS"); ok {
						s.ExecutionType = et
					}
					po.done("ProcessorConfig")
				}
			}
		}
	}
}

// branches reads a Parallel's Branches.
func (p *parser) branches(o *object) []*Machine {
	var branches []*Machine
	v, ok := o.get("Branches")
	arr, isArr := v.([]any)
	switch {
	case !ok:
		o.errorf("", "missing required field Branches")
	case !isArr || len(arr) == 0:
		o.errorf("Branches", "Branches must be a non-empty array of state machines")
	default:
		for i, b := range arr {
			ptr := fmt.Sprintf("%s/%d", o.at("Branches"), i)
			if m := p.machine(b, ptr, o.state, false); m != nil {
				branches = append(branches, m)
			}
			if bm, isObj := b.(map[string]any); isObj {
				if _, has := bm["ProcessorConfig"]; has {
					p.errorf(ptr+"/ProcessorConfig", o.state, "ProcessorConfig is only valid in a Map's ItemProcessor")
				}
			}
		}
	}
	return branches
}

func (p *parser) mapState(o *object, c Common) *Map {
	s := &Map{Common: c, Mode: "INLINE"}
	o.exclusive("ItemsPath", "ItemsPath.$")
	if _, ok := o.m["ItemsPath.$"]; ok {
		s.ItemsPath = p.expr(o, "ItemsPath.$")
		o.has("ItemsPath") // reported by exclusive
	} else if v, ok := o.get("ItemsPath"); ok {
		// ItemsPath is a path, or (ASL) an intrinsic producing the array.
		if str, isStr := v.(string); isStr && strings.HasPrefix(str, "States.") {
			s.ItemsPath = p.expr(o, "ItemsPath")
		} else if path := p.path(o, "ItemsPath", v); path != nil {
			s.ItemsPath, _ = jsonpath.CompileExpr(path.String())
		}
	}
	o.exclusive("ItemSelector", "Parameters")
	s.ItemSelector = p.template(o, "ItemSelector")
	if s.ItemSelector == nil {
		s.ItemSelector = p.template(o, "Parameters")
	}
	o.has("Parameters") // reported by exclusive when ItemSelector is set too
	p.processor(o, s)
	o.exclusive("MaxConcurrency", "MaxConcurrencyPath")
	s.MaxConcurrency, _ = o.integer("MaxConcurrency", 0, 1<<31-1)
	s.MaxConcurrencyPath = p.optPath(o, "MaxConcurrencyPath")
	o.exclusive("ToleratedFailureCount", "ToleratedFailureCountPath")
	o.exclusive("ToleratedFailurePercentage", "ToleratedFailurePercentagePath")
	s.ToleratedFailureCount, s.HasToleratedFailureCount = o.integer("ToleratedFailureCount", 0, 1<<31-1)
	s.ToleratedFailureCountPath = p.optPath(o, "ToleratedFailureCountPath")
	s.ToleratedFailurePercentage, s.HasToleratedFailurePercentage = o.number("ToleratedFailurePercentage", 0, 100)
	s.ToleratedFailurePercentagePath = p.optPath(o, "ToleratedFailurePercentagePath")
	s.Label, _ = o.str("Label")
	p.distributed(o, s)
	s.ResultSelector = p.template(o, "ResultSelector")
	s.ResultPath = p.resultPath(o, "ResultPath")
	s.Retry = p.retry(o)
	s.Catch = p.catch(o, false)
	return s
}
