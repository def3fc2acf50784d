package states

import (
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/aslrun/aslrun/jsonpath"
	"github.com/aslrun/aslrun/jsonvalue"
	"github.com/aslrun/aslrun/tools"
)

// This file holds the agent-native blocks of a Task (and the Memory block a
// Pass may carry too): Memory, Context, Tools, Budget, Guardrails and
// Reasoning. Every type here is immutable after Parse and safe for
// concurrent use.

// DefaultInjectAt is where Memory.Read places the values it loads when
// InjectAt is not set.
const DefaultInjectAt = "$._memory"

// MemoryConfig is the Memory block of a Task or Pass: key-value,
// semantic (looked up by similarity to a query) or episodic (time-ordered
// events) memory, kept per namespace, across executions.
//
// It is immutable after Parse and safe for concurrent use.
type MemoryConfig struct {
	// Type is "key_value" (when absent), "semantic" or "episodic"; it says
	// which fields of Read and Write apply.
	Type string
	// Read loads values before the state runs; nil when absent.
	Read *MemoryRead
	// Write stores values after ResultPath; empty when absent.
	Write []MemoryWrite
	// Namespace scopes the keys (Namespace, which may hold {{$.path}}
	// placeholders); zero when absent.
	Namespace Text
	// NamespaceExpr computes the namespace (Namespace.$, a path or an
	// intrinsic); nil when absent. At most one of Namespace and
	// NamespaceExpr is set; with neither, the workflow's Memory.Namespace
	// applies.
	NamespaceExpr *jsonpath.Expr
}

// MemoryRead says what to load and where to put it. Keys and Default are
// key-value fields; Query, QueryExpr, TopK and MinScore semantic ones;
// Filter, Limit and Order episodic ones; Collection serves both semantic
// and episodic memory. The fields of another Type are zero.
type MemoryRead struct {
	// Keys are the keys to load (key-value); never empty for key-value
	// memory.
	Keys []string
	// InjectAt is where what was loaded is placed in the effective input,
	// before Parameters: the {key: value} object (key-value) or the array
	// of matches or events (semantic, episodic); "$._memory"
	// (DefaultInjectAt) when not set, so never nil.
	InjectAt *jsonpath.Path
	// Default is the value used for a key that is not stored, valid when
	// HasDefault (an object maps key names to their own defaults).
	Default    any
	HasDefault bool

	// Query is the fixed query text (semantic, "Query"), which may hold
	// {{$.path}} placeholders; zero when absent.
	Query Text
	// QueryExpr computes the query ("Query.$", a path or an intrinsic);
	// nil when absent. Semantic memory has exactly one of Query and
	// QueryExpr.
	QueryExpr *jsonpath.Expr
	// Collection is the collection read: required for semantic memory,
	// "events" when not set for episodic memory.
	Collection string
	// TopK is how many of the most similar entries are loaded (semantic):
	// 1 to 100, 5 when not set.
	TopK int64
	// MinScore is the lowest cosine similarity, in [-1, 1], of an entry
	// loaded (semantic), valid when HasMinScore.
	MinScore    float64
	HasMinScore bool
	// Filter selects the events whose fields equal the values given
	// (episodic), sorted by Field; empty when absent.
	Filter []MemoryFilter
	// Limit is the most events loaded (episodic): 1 to 1000, 10 when not
	// set.
	Limit int64
	// Order is "desc" (newest first, the default) or "asc" (oldest first)
	// for episodic memory.
	Order string
}

// MemoryWrite stores one value. Key and Merge are key-value fields (Key
// also names a semantic entry); Text and TextExpr are semantic ones;
// Collection serves semantic and episodic memory.
type MemoryWrite struct {
	// Key is the key written: never empty for key-value memory; for
	// semantic memory an optional id (writing an id that is stored
	// replaces that entry); empty for episodic memory, whose events are
	// appended.
	Key string
	// KeyExpr computes a semantic write's id (Key.$) from the document
	// after ResultPath, as ValueExpr; nil when absent.
	KeyExpr *jsonpath.Expr
	// Value is a fixed value to store, valid when HasValue.
	Value    any
	HasValue bool
	// ValueExpr computes the value (Value.$) from the state's output before
	// OutputPath; nil when absent. With neither Value nor ValueExpr the
	// state's result is stored.
	ValueExpr *jsonpath.Expr
	// TTL is how long the value is kept; zero means the workflow's
	// Memory.DefaultTTL, or forever when that is not set either.
	TTL TTL
	// Merge combines the value with the stored one (objects merge, arrays
	// append) instead of replacing it (key-value only).
	Merge bool
	// Collection is the collection written: required for semantic memory,
	// "events" when not set for episodic memory, empty for key-value.
	Collection string
	// Text is the fixed text embedded for a semantic entry ("Text"), which
	// may hold {{$.path}} placeholders; zero when absent.
	Text Text
	// TextExpr computes the text embedded ("Text.$"); nil when absent. At
	// most one of Text and TextExpr is set; with neither, the value itself
	// is embedded (a string as it is, any other value as its JSON).
	TextExpr *jsonpath.Expr
}

// ContextConfig is the Context block of a Task: how the agent's context is
// assembled from the state's input.
//
// It is immutable after Parse and safe for concurrent use.
type ContextConfig struct {
	// Strategy is "sliding_window" (the default), "priority_based",
	// "semantic" (keep the TopK Candidates most similar to the query) or
	// "summarize" (always summarize with the Summarize agent).
	Strategy string
	// MaxTokens is the token ceiling of the context; 0 means no limit.
	MaxTokens int64
	// Priority lists paths from most to least important (priority_based).
	Priority []*jsonpath.Path
	// Include and Exclude list paths always kept and always left out.
	Include []*jsonpath.Path
	Exclude []*jsonpath.Path
	// Summarize compresses the context with an agent; nil when absent,
	// never nil with Strategy "summarize".
	Summarize *SummarizeConfig
	// Query is the fixed query text (semantic), which may hold {{$.path}}
	// placeholders; zero when absent.
	Query Text
	// QueryExpr computes the query ("Query.$", a path or an intrinsic);
	// nil when absent. Strategy "semantic" has exactly one of Query and
	// QueryExpr.
	QueryExpr *jsonpath.Expr
	// Candidates are the paths of the input that may be picked
	// (semantic); never empty with Strategy "semantic".
	Candidates []*jsonpath.Path
	// TopK is how many candidates are kept (semantic): 1 to 100; 0 with
	// other strategies.
	TopK int64
}

// SummarizeConfig is a Context's Summarize block.
type SummarizeConfig struct {
	// When is "TokensExceed" (the default), "Always" (the default, and
	// the only value, with Strategy "summarize") or "Never" (truncate
	// instead of summarizing).
	When string
	// Using names the summarizing agent; empty only when When is "Never".
	Using string
	// Target is the part of the input to compress; nil means all of it.
	Target *jsonpath.Path
	// Ratio is the size to reach, as a fraction in (0, 1]; 0 when not set
	// (the summarizer decides).
	Ratio float64
}

// ToolsConfig is the Tools block of a Task (or the workflow's DefaultTools):
// which tools the agent may call, and how often.
//
// It is immutable after Parse and safe for concurrent use.
type ToolsConfig struct {
	// Allowed lists tool or category names (or "*" for all); valid when
	// HasAllowed. Absent means every tool not denied; present and empty
	// means no tools at all.
	Allowed    []string
	HasAllowed bool
	// Denied lists tool or category names (or "*") that are never allowed;
	// Denied wins over every allow.
	Denied []string
	// AllowedCategories lists categories of the workflow's ToolCategories
	// whose tools are allowed (in addition to Allowed).
	AllowedCategories []string
	// RateLimits maps a tool name, or "*" for every tool, to its limits.
	RateLimits map[string]RateLimit
	// Timeout bounds one tool call; 0 means no limit.
	Timeout time.Duration
	// Parameters maps a tool name to the arguments it gets by default: the
	// model's (or agent's) arguments are merged over them.
	Parameters map[string]map[string]any
	// Validation maps a tool name to the checks of its calls.
	Validation map[string]ToolValidation
	// Before and After are the hooks run around every tool call; nil
	// when absent.
	Before, After *ToolHook
	// Domains narrows the hosts a tool may reach; nil when absent.
	Domains *DomainsConfig
	// FileSystem narrows the files a tool may open; nil when absent.
	FileSystem *FileSystemConfig
	// Sandboxed runs the processes of tools in a sandbox, confined as
	// Sandbox says: Sandbox is set exactly when Sandboxed is ("Sandboxed":
	// true alone gives the defaults: Environment "process", no network,
	// no mounts, no limits of its own).
	Sandboxed bool
	Sandbox   *SandboxConfig

	// categories is the workflow's ToolCategories, set by Parse.
	categories map[string][]string
	// ptr and state locate the block and categoryIndex the array index of
	// each AllowedCategories entry, for the definition-wide checks.
	ptr, state    string
	categoryIndex []int
}

// Permits reports whether the agent may call tool: Denied (tools, or the
// tools of a denied category) wins; then, with neither Allowed nor
// AllowedCategories, every tool is allowed; otherwise tool must be listed
// in Allowed (by name, "*", or through a category) or belong to one of
// AllowedCategories. A nil ToolsConfig permits everything.
func (t *ToolsConfig) Permits(tool string) bool {
	if t == nil {
		return true
	}
	if t.lists(t.Denied, tool) {
		return false
	}
	if !t.HasAllowed && len(t.AllowedCategories) == 0 {
		return true
	}
	if t.lists(t.Allowed, tool) {
		return true
	}
	for _, c := range t.AllowedCategories {
		if slices.Contains(t.categories[c], tool) {
			return true
		}
	}
	return false
}

// Effective returns the allowed tool set: all (every tool but the denied
// ones, which Permits refuses) or the names allowed, categories expanded
// and denied tools removed, sorted. A nil ToolsConfig allows all.
func (t *ToolsConfig) Effective() (all bool, names []string) {
	if t == nil || !t.HasAllowed && len(t.AllowedCategories) == 0 || slices.Contains(t.Allowed, "*") {
		return true, nil
	}
	var cands []string
	for _, n := range t.Allowed {
		if tools, isCategory := t.categories[n]; isCategory {
			cands = append(cands, tools...)
		} else {
			cands = append(cands, n)
		}
	}
	for _, c := range t.AllowedCategories {
		cands = append(cands, t.categories[c]...)
	}
	slices.Sort(cands)
	for _, n := range slices.Compact(cands) {
		if t.Permits(n) {
			names = append(names, n)
		}
	}
	return false, names
}

// lists reports whether names holds tool, "*", or a category holding tool.
func (t *ToolsConfig) lists(names []string, tool string) bool {
	for _, n := range names {
		if n == tool || n == "*" || slices.Contains(t.categories[n], tool) {
			return true
		}
	}
	return false
}

// RateLimit bounds the calls of one tool (or of every tool, under "*"). A
// zero limit means no limit of that kind.
type RateLimit struct {
	MaxPerMinute  int64
	MaxPerHour    int64
	MaxPerDay     int64
	MaxConcurrent int64
	BurstLimit    int64
	// OnExceed is "fail" (the default: raise States.RateLimitExceeded) or
	// "wait" (wait until the window allows the call).
	OnExceed string
}

// BudgetConfig is the Budget block of a Task: limits on one state's agent
// usage. A zero limit means no limit of that kind.
//
// It is immutable after Parse and safe for concurrent use.
type BudgetConfig struct {
	MaxTokens       int64
	MaxInputTokens  int64
	MaxOutputTokens int64
	// MaxCost is the most the state may spend, in the workflow's currency.
	MaxCost float64
	// Priority is "critical", "high", "normal" (the default), "low" or
	// "background".
	Priority string
}

// GuardrailsConfig is the Guardrails block of a Task: checks on the
// agent's input and output. At least one of Input and Output is set.
//
// It is immutable after Parse and safe for concurrent use.
type GuardrailsConfig struct {
	// Input checks the effective input before Parameters; nil when absent.
	Input *GuardrailSet
	// Output checks the agent's result; nil when absent.
	Output *GuardrailSet
}

// GuardrailSet is the Input or Output part of Guardrails. It has at least
// one rule or a Validator.
type GuardrailSet struct {
	// Rules are checked in order.
	Rules []GuardrailRule
	// Validator names an agent that validates the content; empty when none.
	Validator string
	// MaxRetries is how often the agent is asked to regenerate its output
	// when a "retry" rule fails (Output only); 0 when not set.
	MaxRetries int64
	// OnFail is "reject" (the default), "fail_state" or "fail" (all raise
	// the violation error) or "continue" (record it and go on).
	OnFail string
}

// GuardrailRule is one rule of a GuardrailSet. Type says which of the
// other fields apply.
type GuardrailRule struct {
	// Type is "length", "pattern", "regex", "pii", "semantic" or "custom".
	Type string
	// Action is "block" (the default), "redact", "mask" (pattern, regex and
	// pii only), "warn", "flag" or "retry" (Output only).
	Action string
	// Max and Min bound the length of the content (length rules); Min is 0
	// when not set.
	Max int64
	Min int64
	// Block lists forbidden substrings (pattern rules).
	Block []string
	// Pattern is the compiled regular expression (regex rules).
	Pattern *regexp.Regexp
	// Detect lists the kinds of personal data to find (pii rules): "email",
	// "phone", "card", "iban"; all four when Detect was true or absent.
	Detect []string
	// Validator names the validating agent: required for custom rules;
	// for semantic rules, empty means the set's Validator.
	Validator string
	// Check is what the content must satisfy, in words (semantic rules),
	// e.g. "does not give medical advice"; the validator judges it.
	Check string
}

// ReasoningConfig is the Reasoning block of a Task: the agent returns
// {"result": …, "reasoning": {"steps": […], …}}.
//
// It is immutable after Parse and safe for concurrent use.
type ReasoningConfig struct {
	// Required makes a missing reasoning trace an error.
	Required bool
	// Format is "chain_of_thought", "tree_of_thoughts", "reflection" or
	// "free_form" (the default).
	Format string
	// MinSteps and MaxSteps bound the number of steps; 0 means no bound.
	MinSteps int64
	MaxSteps int64
	// Store is where the trace is written in the document; nil when it is
	// only recorded in the history.
	Store *jsonpath.Path
}

func (p *parser) contextConfig(o *object, key string) *ContextConfig {
	co, _ := o.child(key, key)
	if co == nil {
		return nil
	}
	defer co.done("Context")
	c := &ContextConfig{Strategy: "sliding_window"}
	if s, ok := co.enum("Strategy", []string{"sliding_window", "priority_based", "semantic", "summarize"}, nil); ok {
		c.Strategy = s
	}
	if n, ok := co.count("MaxTokens", 1); ok {
		c.MaxTokens = n
	}
	_, hasPriority := co.m["Priority"]
	c.Priority = p.paths(co, "Priority")
	switch s, _ := co.m["Strategy"].(string); {
	case s == "priority_based" && !hasPriority:
		co.errorf("", `Priority is required with Strategy "priority_based"`)
	case hasPriority && c.Strategy != "priority_based":
		co.errorf("Priority", `Priority is only used with Strategy "priority_based"`)
	}
	p.contextQuery(co, c)
	c.Include = p.paths(co, "Include")
	c.Exclude = p.paths(co, "Exclude")
	c.Summarize = p.summarize(co, c.Strategy == "summarize")
	return c
}

// summarize reads a Context's Summarize block; with Strategy "summarize"
// (always) the block is required, and When can only be "Always".
func (p *parser) summarize(co *object, always bool) *SummarizeConfig {
	so, present := co.child("Summarize", "Summarize")
	if so == nil {
		if always && !present {
			co.errorf("", `Strategy "summarize" needs Summarize.Using, the summarizing agent`)
		}
		return nil
	}
	defer so.done("Summarize")
	s := &SummarizeConfig{When: "TokensExceed"}
	if always {
		s.When = "Always"
	}
	if w, ok := so.enum("When", []string{"TokensExceed", "Always", "Never"}, nil); ok {
		if always && w != "Always" {
			so.errorf("When", `When must be "Always" with Strategy "summarize" (or be left out), not %q`, w)
		} else {
			s.When = w
		}
	}
	s.Using, _ = so.name("Using", s.When != "Never")
	s.Target = p.refPath(so, "Target")
	s.Ratio, _ = so.fraction("Ratio")
	return s
}

// ToolHook is one of Tools.Hooks: an agent called around every tool call
// (with Parameters as part of its input) that may let it go on, rewrite
// it or veto it.
type ToolHook struct {
	Agent      string
	Parameters map[string]any
}

// ToolValidation is the Validation of one tool's calls.
type ToolValidation struct {
	// Input checks the call's arguments (after Parameters) before the
	// call; nil when absent.
	Input *jsonschema.Schema
	// MaxOutput bounds the result's size in bytes (its JSON); 0 means no
	// bound. Sanitize removes control and invisible formatting characters
	// from every string of the result.
	MaxOutput int64
	Sanitize  bool
}

func (p *parser) tools(o *object, key string) *ToolsConfig {
	to, _ := o.child(key, key)
	if to == nil {
		return nil
	}
	defer to.done(key)
	t := &ToolsConfig{ptr: to.ptr, state: to.state}
	t.Allowed, t.HasAllowed = to.names("Allowed", false)
	t.Denied, _ = to.names("Denied", false)
	t.AllowedCategories, t.categoryIndex, _ = to.indexedNames("AllowedCategories", true)
	t.Timeout, _ = to.duration("Timeout")
	p.toolLimits(to, t, key)
	t.Parameters = p.toolParameters(to)
	t.Validation = p.toolValidation(to)
	if ho, _ := to.child("Hooks", "Hooks"); ho != nil {
		t.Before, t.After = p.toolHook(ho, "Before"), p.toolHook(ho, "After")
		if t.Before == nil && t.After == nil && len(ho.m) == 0 {
			ho.errorf("", "Hooks needs Before or After")
		}
		ho.done("Hooks")
	}
	lo, _ := to.child("RateLimits", "RateLimits")
	if lo == nil {
		return t
	}
	t.RateLimits = make(map[string]RateLimit, len(lo.m))
	for _, tool := range sortedKeys(lo.m) {
		lo.used[tool] = true
		if tool == "" {
			p.errorf(lo.at(tool), lo.state, "a RateLimits key must name a tool or be \"*\"")
			continue
		}
		ro := p.newObject(lo.m[tool], lo.at(tool), lo.state, "a rate limit")
		if ro == nil {
			continue
		}
		r := RateLimit{OnExceed: "fail"}
		limits := []struct {
			key string
			dst *int64
		}{
			{"MaxPerMinute", &r.MaxPerMinute},
			{"MaxPerHour", &r.MaxPerHour},
			{"MaxPerDay", &r.MaxPerDay},
			{"MaxConcurrent", &r.MaxConcurrent},
			{"BurstLimit", &r.BurstLimit},
		}
		limited := false
		for _, l := range limits {
			if _, ok := ro.m[l.key]; ok {
				limited = true
			}
			*l.dst, _ = ro.count(l.key, 1)
		}
		if !limited {
			ro.errorf("", "a rate limit needs at least one of MaxPerMinute, MaxPerHour, MaxPerDay, MaxConcurrent or BurstLimit")
		}
		if s, ok := ro.enum("OnExceed", []string{"fail", "wait"}, []string{"queue"}); ok {
			r.OnExceed = s
		}
		ro.done("a rate limit")
		t.RateLimits[tool] = r
	}
	return t
}

func (p *parser) budget(o *object, key string) *BudgetConfig {
	bo, _ := o.child(key, key)
	if bo == nil {
		return nil
	}
	b := &BudgetConfig{Priority: "normal"}
	b.MaxTokens, _ = bo.count("MaxTokens", 1)
	b.MaxInputTokens, _ = bo.count("MaxInputTokens", 1)
	b.MaxOutputTokens, _ = bo.count("MaxOutputTokens", 1)
	b.MaxCost, _ = bo.money("MaxCost")
	if s, ok := bo.enum("Priority", []string{"critical", "high", "normal", "low", "background"}, nil); ok {
		b.Priority = s
	}
	bo.unsupported("a state Budget", "Category", "Tags", "Attribution", "MaxCost.$")
	bo.done("a state Budget")
	return b
}

func (p *parser) guardrails(o *object, key string) *GuardrailsConfig {
	gro, _ := o.child(key, key)
	if gro == nil {
		return nil
	}
	g := &GuardrailsConfig{}
	_, hasIn := gro.m["Input"]
	_, hasOut := gro.m["Output"]
	if !hasIn && !hasOut {
		gro.errorf("", "Guardrails needs Input or Output")
	}
	g.Input = p.guardrailSet(gro, "Input")
	g.Output = p.guardrailSet(gro, "Output")
	gro.done("Guardrails")
	return g
}

func (p *parser) guardrailSet(gro *object, key string) *GuardrailSet {
	so, _ := gro.child(key, "Guardrails."+key)
	if so == nil {
		return nil
	}
	defer so.done("Guardrails." + key)
	output := key == "Output"
	s := &GuardrailSet{OnFail: "reject"}
	s.Validator, _ = so.name("Validator", false)
	if f, ok := so.enum("OnFail", []string{"reject", "fail_state", "fail", "continue"}, nil); ok {
		s.OnFail = f
	}
	if output {
		s.MaxRetries, _ = so.count("MaxRetries", 0)
	} else if so.has("MaxRetries") {
		so.errorf("MaxRetries", "MaxRetries is only valid in Guardrails.Output")
	}
	arr, hasRules := p.array(so, "Rules")
	if hasRules && len(arr) == 0 {
		so.errorf("Rules", "Rules must contain at least one rule")
	}
	if !hasRules && s.Validator == "" {
		if _, present := so.m["Rules"]; !present {
			so.errorf("", "Guardrails.%s needs Rules or a Validator", key)
		}
	}
	for i, v := range arr {
		if r, ok := p.guardrailRule(v, fmt.Sprintf("%s/%d", so.at("Rules"), i), so.state, key, s.Validator); ok {
			s.Rules = append(s.Rules, r)
		}
	}
	return s
}

// piiKinds are the kinds of personal data a pii rule can detect.
var piiKinds = []string{"email", "phone", "card", "iban"}

// guardrailRule reads one rule of Guardrails.<set> (Input or Output),
// whose Validator is setValidator.
func (p *parser) guardrailRule(v any, ptr, state, set, setValidator string) (GuardrailRule, bool) {
	ro := p.newObject(v, ptr, state, "a guardrail rule")
	if ro == nil {
		return GuardrailRule{}, false
	}
	defer ro.done("a guardrail rule")
	r := GuardrailRule{Action: "block"}
	if _, ok := ro.m["Type"]; !ok {
		ro.errorf("", "missing required field Type")
		ro.skipRest()
		return r, false
	}
	output := set == "Output"
	typ, ok := ro.enum("Type", []string{"length", "pattern", "regex", "pii", "semantic", "custom"}, nil)
	if !ok {
		ro.skipRest()
		return r, false
	}
	r.Type = typ
	good := true
	if a, ok := ro.enum("Action", []string{"block", "redact", "mask", "warn", "flag", "retry"}, nil); ok {
		switch {
		case a == "retry" && !output:
			ro.errorf("Action", `Action "retry" is only valid in Guardrails.Output rules`)
			good = false
		case (a == "redact" || a == "mask") && (typ == "length" || typ == "semantic" || typ == "custom"):
			ro.errorf("Action", "Action %q needs a rule that finds matches (pattern, regex or pii), not %s", a, typ)
			good = false
		}
		r.Action = a
	}
	switch typ {
	case "length":
		if _, ok := ro.m["Max"]; !ok {
			ro.errorf("", "missing required field Max")
			good = false
		}
		r.Max, _ = ro.count("Max", 1)
		r.Min, _ = ro.count("Min", 0)
		if r.Max > 0 && r.Min > r.Max {
			ro.errorf("Min", "Min must not be greater than Max (%d > %d)", r.Min, r.Max)
			good = false
		}
	case "pattern":
		block, present := ro.names("Block", false)
		if !present {
			ro.errorf("", "missing required field Block")
			good = false
		} else if ro.isEmptyArray("Block") {
			ro.errorf("Block", "Block must list at least one substring")
			good = false
		}
		r.Block = block
	case "regex":
		src, ok := ro.requiredStr("Pattern")
		if ok {
			re, err := regexp.Compile(src)
			if err != nil {
				ro.errorf("Pattern", "Pattern is not a valid regular expression: %s", errText(err))
				good = false
			}
			r.Pattern = re
		} else {
			good = false
		}
	case "pii":
		r.Detect, ok = p.piiDetect(ro)
		good = good && ok
	case "semantic":
		r.Check, ok = ro.requiredStr("Check")
		good = good && ok
		if _, present := ro.m["Validator"]; present {
			r.Validator, ok = ro.name("Validator", false)
			good = good && ok
		} else if setValidator == "" {
			ro.errorf("", "a semantic rule needs a Validator agent (the rule's or Guardrails.%s's)", set)
			good = false
		}
	case "custom":
		r.Validator, ok = ro.name("Validator", true)
		good = good && ok
	}
	return r, good
}

func (p *parser) piiDetect(ro *object) ([]string, bool) {
	v, ok := ro.m["Detect"]
	if !ok || v == true {
		ro.used["Detect"] = true
		return piiKinds, true
	}
	if _, isArr := v.([]any); !isArr {
		ro.used["Detect"] = true
		ro.errorf("Detect", "Detect must be true or an array of %s, not %s", orList(piiKinds), jsonName(v))
		return nil, false
	}
	kinds, _ := ro.names("Detect", true)
	good := len(kinds) > 0
	if ro.isEmptyArray("Detect") {
		ro.errorf("Detect", "Detect must list at least one kind")
	}
	for i, k := range kinds {
		if !slices.Contains(piiKinds, k) {
			p.errorf(fmt.Sprintf("%s/%d", ro.at("Detect"), i), ro.state, "Detect[%d] must be %s, not %q", i, orList(piiKinds), k)
			good = false
		}
	}
	return kinds, good
}

// jsonName names v's JSON type, spelling booleans out (false is a value a
// field may reject while accepting true).
func jsonName(v any) string {
	if b, ok := v.(bool); ok {
		return fmt.Sprint(b)
	}
	return jsonvalue.TypeName(v)
}

func (p *parser) reasoning(o *object, key string) *ReasoningConfig {
	ro, _ := o.child(key, key)
	if ro == nil {
		return nil
	}
	r := &ReasoningConfig{Format: "free_form"}
	r.Required, _ = ro.boolean("Required")
	if f, ok := ro.enum("Format", []string{"chain_of_thought", "tree_of_thoughts", "reflection", "free_form"}, nil); ok {
		r.Format = f
	}
	r.MinSteps, _ = ro.count("MinSteps", 1)
	r.MaxSteps, _ = ro.count("MaxSteps", 1)
	if r.MinSteps > 0 && r.MaxSteps > 0 && r.MinSteps > r.MaxSteps {
		ro.errorf("MinSteps", "MinSteps must not be greater than MaxSteps (%d > %d)", r.MinSteps, r.MaxSteps)
	}
	r.Store = p.refPath(ro, "Store")
	ro.done("Reasoning")
	return r
}

// toolParameters reads Tools.Parameters: tool name → an object of default
// arguments.
func (p *parser) toolParameters(to *object) map[string]map[string]any {
	po, _ := to.child("Parameters", "Parameters")
	if po == nil {
		return nil
	}
	out := make(map[string]map[string]any, len(po.m))
	for _, tool := range sortedKeys(po.m) {
		po.used[tool] = true
		args, ok := po.m[tool].(map[string]any)
		switch {
		case tool == "" || tool == "*":
			p.errorf(po.at(tool), po.state, "a Parameters key must name a tool")
		case !ok:
			p.errorf(po.at(tool), po.state, "the Parameters of %s must be an object of default arguments, not %s", tool, jsonvalue.TypeName(po.m[tool]))
		default:
			out[tool] = args
		}
	}
	return out
}

// toolValidation reads Tools.Validation: tool name → {Input: {Schema},
// Output: {MaxSize, Sanitize}}.
func (p *parser) toolValidation(to *object) map[string]ToolValidation {
	vo, _ := to.child("Validation", "Validation")
	if vo == nil {
		return nil
	}
	out := make(map[string]ToolValidation, len(vo.m))
	for _, tool := range sortedKeys(vo.m) {
		vo.used[tool] = true
		if tool == "" || tool == "*" {
			p.errorf(vo.at(tool), vo.state, "a Validation key must name a tool")
			continue
		}
		o := p.newObject(vo.m[tool], vo.at(tool), vo.state, "the Validation of a tool")
		if o == nil {
			continue
		}
		var v ToolValidation
		if io, _ := o.child("Input", "Validation Input"); io != nil {
			if s, ok := io.get("Schema"); ok {
				schema, err := toolSchema(s)
				if err != nil {
					io.errorf("Schema", "Schema does not compile as JSON Schema 2020-12: %v", err)
				}
				v.Input = schema
			} else {
				io.errorf("", "missing required field Schema")
			}
			io.done("Validation Input")
		}
		if oo, _ := o.child("Output", "Validation Output"); oo != nil {
			v.MaxOutput = oo.size("MaxSize")
			v.Sanitize, _ = oo.boolean("Sanitize")
			oo.done("Validation Output")
		}
		o.done("the Validation of a tool")
		out[tool] = v
	}
	return out
}

// toolSchema compiles a tool's input schema as the tool registry compiles
// tools' schemas (tools.CompileSchema).
func toolSchema(v any) (*jsonschema.Schema, error) {
	raw, err := jsonvalue.Marshal(v)
	if err != nil {
		return nil, err
	}
	return tools.CompileSchema(raw)
}

// size reads a byte size: a whole number of bytes, or a string like
// "256K", "1MB", "2M" or "512" (K and KB are 1024 bytes, M and MB 1024²,
// G and GB 1024³).
func (o *object) size(key string) int64 {
	v, ok := o.get(key)
	if !ok {
		return 0
	}
	bad := func() int64 {
		o.errorf(key, `%s must be a size in bytes: a positive whole number, or a string like "256K" or "1MB"`, key)
		return 0
	}
	switch x := v.(type) {
	case json.Number:
		n, ok := jsonvalue.Int64(x)
		if !ok || n < 1 {
			return bad()
		}
		return n
	case string:
		n, ok := ParseSize(x)
		if !ok {
			return bad()
		}
		return n
	}
	return bad()
}

// ParseSize reads a byte size written as a string: "256K", "1MB", "2M",
// "512" or "512B" (K and KB are 1024 bytes, M and MB 1024², G and GB
// 1024³); false when s is none, or not positive.
func ParseSize(s string) (int64, bool) {
	s = strings.ToUpper(strings.TrimSpace(s))
	mult := int64(1)
	for _, u := range []struct {
		suffix string
		m      int64
	}{{"KB", 1 << 10}, {"MB", 1 << 20}, {"GB", 1 << 30}, {"K", 1 << 10}, {"M", 1 << 20}, {"G", 1 << 30}, {"B", 1}} {
		if strings.HasSuffix(s, u.suffix) {
			s, mult = strings.TrimSuffix(s, u.suffix), u.m
			break
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 1 || n > math.MaxInt64/mult {
		return 0, false
	}
	return n * mult, true
}

// toolHook reads Hooks.Before or Hooks.After: {Agent, Parameters}.
func (p *parser) toolHook(ho *object, key string) *ToolHook {
	o, _ := ho.child(key, "a tool hook")
	if o == nil {
		return nil
	}
	defer o.done("a tool hook")
	h := &ToolHook{}
	h.Agent, _ = o.name("Agent", true)
	if v, ok := o.get("Parameters"); ok {
		params, isObj := v.(map[string]any)
		if !isObj {
			o.errorf("Parameters", "Parameters must be an object, not %s", jsonvalue.TypeName(v))
		}
		h.Parameters = params
	}
	return h
}
