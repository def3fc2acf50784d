package states

import (
	"regexp"
	"slices"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/aslrun/aslrun/governance"
	"github.com/aslrun/aslrun/jsonpath"
	"github.com/aslrun/aslrun/jsonvalue"
)

// This file holds the agent-native states (Approval, Debate, Checkpoint)
// and the agent-native top-level blocks (Budget, Memory, DefaultTools,
// ToolCategories, Governance). Every type here is immutable after Parse and
// safe for concurrent use.

// Extensions holds the agent-native top-level blocks of a definition; a
// Machine's Extensions is nil when none is set.
//
// It is immutable after Parse and safe for concurrent use.
type Extensions struct {
	// Budget limits the whole execution; nil when absent.
	Budget *WorkflowBudget
	// Memory configures the memory store; nil when absent (the embedded
	// store, no default TTL, no namespace).
	Memory *WorkflowMemory
	// DefaultTools is the Tools block of every Task that has none. Parse
	// has already applied it: such Tasks' Tools point to it.
	DefaultTools *ToolsConfig
	// ToolCategories maps a category name to its tool names; nil when
	// absent.
	ToolCategories map[string][]string
	// Governance is the compiled Governance block (DESIGN.md §4): the
	// guard, the workflow's write policy and OnViolation; nil when absent.
	Governance *governance.Rules
	// Events is the top-level Events block: the channels and which
	// changes go to them; nil when absent.
	Events *WorkflowEvents
	// RealTime is the top-level RealTime block: how clients follow an
	// execution live; nil when absent.
	RealTime *RealTimeConfig
	// Progress is the top-level Progress block: how the execution's
	// percentage is counted; nil when absent.
	Progress *WorkflowProgress
}

// WorkflowBudget is the top-level Budget block: limits on the whole
// execution's agent usage. A zero limit means no limit of that kind.
//
// It is immutable after Parse and safe for concurrent use.
type WorkflowBudget struct {
	MaxTokens int64
	// MaxCost is the most the execution may spend, in Currency.
	MaxCost float64
	// Currency is a three-letter currency code, "USD" by default.
	Currency string
	// OnExceed is "Fail" (the default: raise States.BudgetExceeded),
	// "Continue" (record the overrun and go on) or "UseFallback" (go on
	// with FallbackModel for every agent call after the overrun).
	OnExceed string
	// FallbackModel is Fallback.UseModel: the model agents are asked to
	// use once the budget is exceeded, with OnExceed "UseFallback".
	FallbackModel string
	// Alerts are recorded when usage crosses a share of a limit.
	Alerts []BudgetAlert
}

// BudgetAlert is one entry of a workflow Budget's Alerts.
type BudgetAlert struct {
	// At is the share of MaxCost (or of MaxTokens, when there is no
	// MaxCost) that triggers the alert, in (0, 1].
	At float64
	// Message is recorded with the alert; empty when not set.
	Message string
}

// WorkflowMemory is the top-level Memory block.
//
// It is immutable after Parse and safe for concurrent use.
type WorkflowMemory struct {
	// Backend is "memory", the execution store (the only one supported).
	Backend string
	// DefaultTTL applies to writes without a TTL; zero means forever.
	DefaultTTL TTL
	// Namespace scopes every key of the workflow (a state's Namespace
	// replaces it); it may hold {{$.path}} placeholders, resolved against
	// the execution input. Zero when absent.
	Namespace Text
}

// Approval pauses the run until a person decides (see DESIGN §3).
//
// It is immutable after Parse and safe for concurrent use.
type Approval struct {
	Common
	// Prompt is what the approver is shown.
	Prompt Prompt
	// Options are the decisions the approver may take: unique, non-empty,
	// never "timeout"; ["approve", "reject"] by default.
	Options []string
	// Timeout bounds the wait; 0 means wait for ever. On timeout the
	// decision is "timeout" and the run goes to Default, or fails with
	// States.Timeout.
	Timeout time.Duration
	// Escalation notifies others while the decision is pending; nil when
	// absent.
	Escalation *Escalation
	// ResultPath places the decision object, valid when HasResultPath;
	// without one the decision's fields are merged into the top level of
	// the document.
	ResultPath    ResultPath
	HasResultPath bool
	// Choices route on the document after the decision is stored; when
	// none matches the run goes to Default, else Next.
	Choices []ChoiceRule
	// Default is taken on timeout and when no Choice matches; empty when
	// absent.
	Default string
	// Editable lets the approver edit parts of the document; nil when
	// absent.
	Editable *Editable
	// Catch handles the state's errors (States.Timeout among them).
	Catch []Catcher
}

// Prompt is an Approval's prompt: exactly one of its fields is set.
type Prompt struct {
	// Text is a prompt string, which may hold {{$.path}} placeholders.
	Text Text
	// Expr computes the prompt (Prompt.$, a path or an intrinsic).
	Expr *jsonpath.Expr
	// Template builds a structured prompt: an object with Title,
	// Description (or Description.$), Details and other ".$" keys,
	// evaluated as a payload template.
	Template *jsonpath.Template
}

// Escalation is an Approval's Escalation block.
type Escalation struct {
	// After is how long after entering the state to escalate; always set,
	// and shorter than the Approval's Timeout when both are set.
	After time.Duration
	// Notify lists who to notify (addresses or channels, passed to the
	// user's hook as they are).
	Notify []string
	// Message is the text of the notification; empty when not set.
	Message string
	// Repeat repeats the escalation; zero when it happens once.
	Repeat Repeat
}

// Repeat says how an escalation repeats: every Every, at most MaxTimes
// times (0: until the decision or the timeout). A zero Repeat never
// repeats.
type Repeat struct {
	Every    time.Duration
	MaxTimes int64
}

// Editable lists what an approver may edit and where the edits go.
type Editable struct {
	// Fields are the editable parts of the document; never empty.
	Fields []*jsonpath.Path
	// ResultPath is where the edited values are written; never nil.
	ResultPath *jsonpath.Path
}

// MaxDebateRounds is the largest Debate Rounds accepted. Every round stores
// each agent's turn in the execution's history, so a debate's storage grows
// with Rounds × Agents; 1000 rounds of three agents made a 10 GB database.
const MaxDebateRounds = 100

// Debate lets several agents argue a topic over rounds (see DESIGN §3).
//
// It is immutable after Parse and safe for concurrent use.
type Debate struct {
	Common
	// Agents are the debaters: at least two, unique.
	Agents []string
	// Topic is a fixed topic; empty when TopicExpr is set or there is none.
	Topic string
	// TopicExpr reads the topic (TopicPath, or Topic.$: a path or an
	// intrinsic); nil when absent.
	TopicExpr *jsonpath.Expr
	// Rounds is the number of rounds: 3 by default, 1 to MaxDebateRounds.
	Rounds int64
	// Communication says who speaks when and what they see.
	Communication Communication
	// Consensus says how a decision is reached; nil when absent (no
	// consensus is computed).
	Consensus *Consensus
	// Parameters is passed to every call; nil when absent.
	Parameters *jsonpath.Template
	// ResultPath, Retry and Catch as on Task.
	ResultPath ResultPath
	Retry      []Retrier
	Catch      []Catcher
}

// Communication is a Debate's Communication block; its zero value is not
// used: Parse sets the defaults.
type Communication struct {
	// Style is "turn_based" (the default: each debater sees the turns
	// before it) or "simultaneous" (each round sees only earlier rounds).
	Style string
	// Order is the speaking order (names from Agents); nil means Agents
	// order.
	Order []string
	// VisibleHistory is "all" (the default), "own" (also written
	// "own_only") or "none".
	VisibleHistory string
}

// Consensus is a Debate's Consensus block.
type Consensus struct {
	// Required fails the state with Agent.NoConsensus when there is no
	// consensus and no Arbiter.
	Required bool
	// Threshold is the share of debaters whose final positions must agree,
	// in (0, 1]; 1 by default.
	Threshold float64
	// Arbiter names the agent that decides when consensus is not reached;
	// it need not be one of the debaters. Empty when absent.
	Arbiter string
}

// DefaultCheckpointTTL is how long a Checkpoint's snapshot is kept when its
// TTL is not set.
const DefaultCheckpointTTL = 7 * 24 * time.Hour

// MaxCheckpointName is the longest checkpoint Name accepted, in characters.
const MaxCheckpointName = 80

// Checkpoint saves a named snapshot of the execution and passes its input
// through.
//
// It is immutable after Parse and safe for concurrent use.
type Checkpoint struct {
	Common
	// CheckpointName is the Name field: unique across the definition,
	// nested machines included.
	CheckpointName string
	// Storage is "default" (the execution store).
	Storage string
	// TTL is how long the snapshot is kept: 7 days (DefaultCheckpointTTL)
	// unless set; never zero.
	TTL TTL

	// ptr locates the Name field, for the definition-wide uniqueness check.
	ptr string
}

func (p *parser) extensions(o *object) *Extensions {
	var e Extensions
	set := false
	if bo, _ := o.child("Budget", "Budget"); bo != nil {
		e.Budget, set = p.workflowBudget(bo), true
	}
	if mo, _ := o.child("Memory", "Memory"); mo != nil {
		e.Memory, set = p.workflowMemory(mo), true
	}
	if t := p.tools(o, "DefaultTools"); t != nil {
		e.DefaultTools, set = t, true
	}
	if ev := p.workflowEvents(o); ev != nil {
		e.Events, set = ev, true
	}
	if rt := p.realTime(o); rt != nil {
		e.RealTime, set = rt, true
	}
	if pr := p.workflowProgress(o); pr != nil {
		e.Progress, set = pr, true
	}
	if co, _ := o.child("ToolCategories", "ToolCategories"); co != nil {
		e.ToolCategories, set = make(map[string][]string, len(co.m)), true
		for _, name := range sortedKeys(co.m) {
			if name == "" || name == "*" {
				co.has(name)
				p.errorf(co.at(name), co.state, "%q is not a valid category name", name)
				continue
			}
			tools, _ := co.names(name, true)
			e.ToolCategories[name] = tools
		}
		co.done("ToolCategories")
	}
	if v, ok := o.get("Governance"); ok {
		if _, isObj := v.(map[string]any); isObj {
			rules, err := governance.Compile(v)
			p.governanceProblems(o.at("Governance"), o.state, err)
			e.Governance, set = rules, rules != nil
		} else {
			o.errorf("Governance", "Governance must be an object, not %s", jsonvalue.TypeName(v))
		}
	}
	if !set {
		return nil
	}
	return &e
}

var currencyCode = regexp.MustCompile(`^[A-Z]{3}$`)

func (p *parser) workflowBudget(bo *object) *WorkflowBudget {
	defer bo.done("Budget")
	b := &WorkflowBudget{Currency: "USD", OnExceed: "Fail"}
	b.MaxTokens, _ = bo.count("MaxTokens", 1)
	b.MaxCost, _ = bo.money("MaxCost")
	if c, ok := bo.str("Currency"); ok {
		if currencyCode.MatchString(c) {
			b.Currency = c
		} else {
			bo.errorf("Currency", "Currency must be a three-letter code like \"USD\", not %q", c)
		}
	}
	if s, ok := bo.enum("OnExceed", []string{"Fail", "Continue", "UseFallback"}, []string{"PauseAndNotify", "Throttle"}); ok {
		b.OnExceed = s
	}
	if fo, present := bo.child("Fallback", "the workflow Budget's Fallback"); present && fo != nil {
		if b.OnExceed != "UseFallback" {
			fo.errorf("", `Fallback is used only with "OnExceed": "UseFallback"`)
		}
		fo.unsupported("the workflow Budget's Fallback", "Agent", "When", "Notify", "Cascade")
		if m, ok := fo.str("UseModel"); ok {
			if p.modelName(fo, fo.at("UseModel"), "UseModel", m) {
				b.FallbackModel = m
			}
		} else if !fo.has("UseModel") {
			fo.errorf("", "missing required field UseModel: the model to use once the budget is exceeded")
		}
		fo.done("the workflow Budget's Fallback")
	}
	if b.OnExceed == "UseFallback" && !bo.has("Fallback") {
		bo.errorf("OnExceed", `"OnExceed": "UseFallback" needs a Fallback with UseModel, the model to use once the budget is exceeded`)
	}
	bo.unsupported("the workflow Budget", "Notify", "MaxCostPerHour", "MaxCostPerDay", "Pool", "MaxFromPool", "ReleaseOnComplete", "ThrottleDelay")
	arr, ok := p.array(bo, "Alerts")
	if !ok {
		return b
	}
	if len(arr) > 0 && b.MaxCost == 0 && b.MaxTokens == 0 {
		bo.errorf("Alerts", "Alerts need MaxCost or MaxTokens to measure against")
	}
	for i, v := range arr {
		ao := p.newObject(v, bo.at("Alerts")+"/"+strconv.Itoa(i), bo.state, "a budget alert")
		if ao == nil {
			continue
		}
		a := BudgetAlert{}
		if _, ok := ao.m["At"]; !ok {
			ao.errorf("", "missing required field At")
		}
		a.At, _ = ao.percentage("At")
		a.Message, _ = ao.str("Message")
		ao.unsupported("a budget alert", "Notify", "Channel", "Priority")
		ao.done("a budget alert")
		b.Alerts = append(b.Alerts, a)
	}
	return b
}

func (p *parser) workflowMemory(mo *object) *WorkflowMemory {
	defer mo.done("Memory")
	m := &WorkflowMemory{Backend: "memory"}
	if _, ok := mo.enum("Backend", []string{"memory"}, []string{"file", "redis", "dynamodb", "custom"}); !ok && mo.has("Backend") {
		mo.skipRest()
		return m
	}
	mo.unsupported("Memory", "Connection")
	m.DefaultTTL, _ = mo.ttl("DefaultTTL")
	if t, ok := p.text(mo, "Namespace"); ok {
		if t.Source == "" {
			mo.errorf("Namespace", "Namespace must not be empty")
		}
		m.Namespace = t
	}
	return m
}

func (p *parser) approval(o *object, c Common) *Approval {
	s := &Approval{Common: c, Options: []string{"approve", "reject"}}
	s.Prompt = p.prompt(o)
	if opts, present := o.names("Options", true); present {
		if o.isEmptyArray("Options") {
			o.errorf("Options", "Options must list at least one option")
		}
		arr, _ := o.m["Options"].([]any)
		for i, opt := range arr {
			if opt == "timeout" {
				p.errorf(o.at("Options")+"/"+strconv.Itoa(i), o.state, "Options must not include \"timeout\", the decision recorded when the Approval times out")
			}
		}
		s.Options = opts
	}
	s.Timeout, _ = o.duration("Timeout")
	s.Escalation = p.escalation(o, s.Timeout)
	if _, ok := o.m["ResultPath"]; ok {
		s.ResultPath, s.HasResultPath = p.resultPath(o, "ResultPath"), true
	}
	arr, hasChoices := p.array(o, "Choices")
	if hasChoices {
		if len(arr) == 0 {
			o.errorf("Choices", "Choices must contain at least one rule")
		}
		s.Choices = p.choiceRules(o, arr, "Choices")
	}
	s.Default, _ = o.name("Default", false)
	if _, present := o.m["Choices"]; present {
		_, hasDefault := o.m["Default"]
		_, hasNext := o.m["Next"]
		if o.has("End") {
			o.errorf("End", "an Approval state with Choices cannot have End")
		}
		if hasNext {
			s.Next, _ = o.name("Next", false)
		} else if !hasDefault {
			o.errorf("", "an Approval state with Choices needs Default or Next")
		}
	} else {
		p.nextEnd(o, &s.Common)
	}
	if eo, _ := o.child("Editable", "Editable"); eo != nil {
		e := &Editable{}
		if _, ok := eo.m["Fields"]; !ok {
			eo.errorf("", "missing required field Fields")
		} else if e.Fields = p.paths(eo, "Fields"); eo.isEmptyArray("Fields") {
			eo.errorf("Fields", "Fields must list at least one path")
		}
		if _, ok := eo.m["ResultPath"]; !ok {
			eo.errorf("", "missing required field ResultPath")
		}
		e.ResultPath = p.refPath(eo, "ResultPath")
		eo.done("Editable")
		s.Editable = e
	}
	s.Catch = p.catch(o, false)
	o.unsupported("an Approval state", "Policy", "Notifications", "BatchMode", "ItemsPath", "OnTimeout", "RequiredApprovers")
	return s
}

func (p *parser) prompt(o *object) Prompt {
	var pr Prompt
	v, hasText := o.m["Prompt"]
	_, hasExpr := o.m["Prompt.$"]
	switch {
	case !hasText && !hasExpr:
		o.errorf("", "missing required field Prompt (or Prompt.$)")
	case hasText && hasExpr:
		o.exclusive("Prompt", "Prompt.$")
	}
	pr.Expr = p.expr(o, "Prompt.$")
	if !hasText {
		return pr
	}
	switch v.(type) {
	case string:
		pr.Text, _ = p.text(o, "Prompt")
		if v == "" {
			o.errorf("Prompt", "Prompt must not be empty")
		}
	case map[string]any:
		po := p.newObject(v, o.at("Prompt"), o.state, "Prompt")
		po.str("Title")
		po.exclusive("Description", "Description.$")
		po.str("Description")
		_, title := po.m["Title"]
		_, desc := po.m["Description"]
		_, descExpr := po.m["Description.$"]
		if !title && !desc && !descExpr {
			po.errorf("", "a structured Prompt needs a Title or a Description")
		}
		if d, ok := po.get("Details"); ok {
			if _, isObj := d.(map[string]any); !isObj {
				po.errorf("Details", "Details must be an object, not %s", jsonvalue.TypeName(d))
			}
		}
		for k := range po.m {
			if len(k) > 2 && k[len(k)-2:] == ".$" {
				po.used[k] = true // checked by the template
			}
		}
		po.done("a structured Prompt")
		pr.Template = p.template(o, "Prompt")
	default:
		o.used["Prompt"] = true
		o.errorf("Prompt", "Prompt must be a string or an object, not %s", jsonvalue.TypeName(v))
	}
	return pr
}

func (p *parser) escalation(o *object, timeout time.Duration) *Escalation {
	eo, _ := o.child("Escalation", "Escalation")
	if eo == nil {
		return nil
	}
	defer eo.done("Escalation")
	e := &Escalation{}
	if _, ok := eo.m["After"]; !ok {
		eo.errorf("", "missing required field After")
	}
	e.After, _ = eo.duration("After")
	if e.After > 0 && timeout > 0 && e.After >= timeout {
		eo.errorf("After", "After must be shorter than the Approval's Timeout (%s >= %s)", e.After, timeout)
	}
	e.Notify, _ = eo.names("Notify", false)
	e.Message, _ = eo.str("Message")
	eo.unsupported("Escalation", "EscalateTo", "Levels")
	v, ok := eo.m["Repeat"]
	if !ok {
		return e
	}
	if _, isStr := v.(string); isStr {
		e.Repeat.Every, _ = eo.duration("Repeat")
		return e
	}
	ro, _ := eo.child("Repeat", "Repeat (a duration or an object)")
	if ro == nil {
		return e
	}
	if _, ok := ro.m["Every"]; !ok {
		ro.errorf("", "missing required field Every")
	}
	e.Repeat.Every, _ = ro.duration("Every")
	e.Repeat.MaxTimes, _ = ro.count("MaxTimes", 1)
	ro.done("Repeat")
	return e
}

func (p *parser) debate(o *object, c Common) *Debate {
	s := &Debate{Common: c, Rounds: 3}
	agents, present := o.names("Agents", true)
	if !present {
		o.errorf("", "missing required field Agents")
	} else if arr, isArr := o.m["Agents"].([]any); isArr && len(arr) < 2 {
		o.errorf("Agents", "Agents must list at least two agents")
	}
	s.Agents = agents
	o.exclusive("Topic", "TopicPath", "Topic.$")
	if _, ok := o.m["Topic"]; ok {
		s.Topic, _ = o.requiredStr("Topic")
	}
	if path := p.optPath(o, "TopicPath"); path != nil {
		s.TopicExpr, _ = jsonpath.CompileExpr(path.String())
	}
	if e := p.expr(o, "Topic.$"); e != nil {
		s.TopicExpr = e
	}
	if n, ok := o.integer("Rounds", 1, MaxDebateRounds); ok {
		s.Rounds = n
	}
	s.Communication = Communication{Style: "turn_based", VisibleHistory: "all"}
	if co, _ := o.child("Communication", "Communication"); co != nil {
		if st, ok := co.enum("Style", []string{"turn_based", "simultaneous"}, []string{"free_form", "reactive"}); ok {
			s.Communication.Style = st
		}
		order, index, _ := co.indexedNames("Order", true)
		for i, name := range order {
			if len(agents) > 0 && !slices.Contains(agents, name) {
				p.errorf(co.at("Order")+"/"+strconv.Itoa(index[i]), co.state, "Order names %q, which is not one of Agents", name)
			}
		}
		s.Communication.Order = order
		if co.m["VisibleHistory"] == "own_only" {
			co.used["VisibleHistory"] = true
			s.Communication.VisibleHistory = "own"
		} else if vh, ok := co.enum("VisibleHistory", []string{"all", "own", "none"}, []string{"previous_only"}); ok {
			s.Communication.VisibleHistory = vh
		}
		co.done("Communication")
	}
	if co, _ := o.child("Consensus", "Consensus"); co != nil {
		cs := &Consensus{Threshold: 1}
		cs.Required, _ = co.boolean("Required")
		if t, ok := co.fraction("Threshold"); ok {
			cs.Threshold = t
		}
		cs.Arbiter, _ = co.name("Arbiter", false)
		co.unsupported("a Debate Consensus", "TieBreaker", "MaxRoundsForConsensus", "Method", "RequiredMajority", "VotingAgents")
		co.done("Consensus")
		s.Consensus = cs
	}
	s.Parameters = p.template(o, "Parameters")
	s.ResultPath = p.resultPath(o, "ResultPath")
	s.Retry = p.retry(o)
	s.Catch = p.catch(o, false)
	return s
}

func (p *parser) checkpoint(o *object, c Common) *Checkpoint {
	s := &Checkpoint{Common: c, Storage: "default", TTL: TTL{Duration: DefaultCheckpointTTL}, ptr: o.at("Name")}
	s.CheckpointName, _ = o.requiredStr("Name")
	if n := utf8.RuneCountInString(s.CheckpointName); n > MaxCheckpointName {
		o.errorf("Name", "Name must be at most %d characters, not %d", MaxCheckpointName, n)
	}
	if p.depth > 1 {
		o.errorf("", "a Checkpoint state must be in the top-level machine: rolling back into a Map item or a Parallel branch is not supported")
	}
	if st, ok := o.str("Storage"); ok && st != "default" {
		o.errorf("Storage", "Storage %q is not supported; only \"default\" (the execution store) is", st)
	}
	if t, ok := o.ttl("TTL"); ok {
		s.TTL = t
	}
	return s
}
