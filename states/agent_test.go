package states

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/aslrun/aslrun/governance"
)

func TestParseDuration(t *testing.T) {
	tests := []struct {
		in      string
		want    time.Duration
		wantErr bool
	}{
		{"300", 300 * time.Second, false},
		{"1", time.Second, false},
		{"007", 7 * time.Second, false},
		{"500ms", 500 * time.Millisecond, false},
		{"90s", 90 * time.Second, false},
		{"30m", 30 * time.Minute, false},
		{"24h", 24 * time.Hour, false},
		{"7d", 7 * 24 * time.Hour, false},
		{"2w", 14 * 24 * time.Hour, false},
		{"15250w", 15250 * 7 * 24 * time.Hour, false},
		{"", 0, true},
		{"0", 0, true},
		{"0ms", 0, true},
		{"-5m", 0, true},
		{"+5m", 0, true},
		{"1.5h", 0, true},
		{"1h30m", 0, true},
		{"30 m", 0, true},
		{" 30m", 0, true},
		{"30M", 0, true},
		{"m", 0, true},
		{"ms", 0, true},
		{"1y", 0, true},
		{"never", 0, true},
		{"15251w", 0, true},
		{"9223372036854775807ms", 0, true},
		{"99999999999999999999", 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParseDuration(tt.in)
			if (err != nil) != tt.wantErr || got != tt.want {
				t.Errorf("ParseDuration(%q) = %v, %v; want %v, error %v", tt.in, got, err, tt.want, tt.wantErr)
			}
		})
	}
}

func TestParseTTL(t *testing.T) {
	tests := []struct {
		in      string
		want    TTL
		str     string
		wantErr bool
	}{
		{"never", TTL{Never: true}, "never", false},
		{"7d", TTL{Duration: 7 * 24 * time.Hour}, "168h0m0s", false},
		{"3600", TTL{Duration: time.Hour}, "1h0m0s", false},
		{"Never", TTL{}, "", true},
		{"forever", TTL{}, "", true},
		{"0s", TTL{}, "", true},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParseTTL(tt.in)
			if (err != nil) != tt.wantErr || got != tt.want {
				t.Fatalf("ParseTTL(%q) = %+v, %v; want %+v, error %v", tt.in, got, err, tt.want, tt.wantErr)
			}
			if got.String() != tt.str {
				t.Errorf("ParseTTL(%q).String() = %q, want %q", tt.in, got.String(), tt.str)
			}
			if got.IsZero() != tt.wantErr {
				t.Errorf("ParseTTL(%q).IsZero() = %v, want %v", tt.in, got.IsZero(), tt.wantErr)
			}
		})
	}
}

// env is a jsonpath.Env with no context object and no variables.
type env struct{}

func (env) Context() any                { return map[string]any{} }
func (env) Variable(string) (any, bool) { return nil, false }

func TestTextRender(t *testing.T) {
	input := map[string]any{
		"user":    map[string]any{"name": "Ada", "id": json.Number("42")},
		"service": "api",
		"tags":    []any{"a", "b"},
	}
	tests := []struct {
		src     string
		want    string
		wantErr bool
	}{
		{"plain text", "plain text", false},
		{"user_{{$.user.id}}", "user_42", false},
		{"{{ $.service }}-{{$.user.name}}!", "api-Ada!", false},
		{"tags {{$.tags}} of {{$.user}}", `tags ["a","b"] of {"id":42,"name":"Ada"}`, false},
		{"{{$.missing}}", "", true},
	}
	for _, tt := range tests {
		t.Run(tt.src, func(t *testing.T) {
			o := testObject(map[string]any{"Prompt": tt.src})
			text, ok := o.p.text(o, "Prompt")
			if !ok || len(o.p.errs) > 0 {
				t.Fatalf("text(%q) failed: %v", tt.src, o.p.errs)
			}
			got, err := text.Render(input, env{})
			if (err != nil) != tt.wantErr || got != tt.want {
				t.Errorf("Render(%q) = %q, %v; want %q, error %v", tt.src, got, err, tt.want, tt.wantErr)
			}
		})
	}
}

func testObject(m map[string]any) *object {
	p := &parser{}
	return p.newObject(m, "", "S", "a test object")
}

// parseFile parses testdata/valid/name.
func parseFile(t *testing.T, name string) *Machine {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "valid", name))
	if err != nil {
		t.Fatal(err)
	}
	m, err := Parse(data)
	if err != nil {
		t.Fatalf("Parse(%s): %v", name, err)
	}
	return m
}

func state[T State](t *testing.T, m *Machine, name string) T {
	t.Helper()
	s, ok := m.States[name].(T)
	if !ok {
		t.Fatalf("state %q is %T, not the type wanted", name, m.States[name])
	}
	return s
}

func TestToolsPermits(t *testing.T) {
	def := `{
	  "StartAt": "Open",
	  "ToolCategories": {"web": ["search", "fetch"], "danger": ["shell", "rm"]},
	  "DefaultTools": {"Denied": ["danger"]},
	  "States": {
	    "Open":       {"Type": "Task", "Agent": "A", "Next": "None"},
	    "None":       {"Type": "Task", "Agent": "A", "Tools": {"Allowed": []}, "Next": "Listed"},
	    "Listed":     {"Type": "Task", "Agent": "A", "Tools": {"Allowed": ["read", "web"], "Denied": ["fetch"]}, "Next": "Categories"},
	    "Categories": {"Type": "Task", "Agent": "A", "Tools": {"AllowedCategories": ["danger"], "Denied": ["rm"]}, "Next": "Star"},
	    "Star":       {"Type": "Task", "Agent": "A", "Tools": {"Allowed": ["*"], "Denied": ["web"]}, "Next": "DenyAll"},
	    "DenyAll":    {"Type": "Task", "Agent": "A", "Tools": {"Denied": ["*"]}, "End": true}
	  }
	}`
	m, err := Parse([]byte(def))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		state string
		tool  string
		want  bool
	}{
		{"Open", "anything", true},
		{"Open", "shell", false},
		{"Open", "rm", false},
		{"None", "read", false},
		{"None", "search", false},
		{"Listed", "read", true},
		{"Listed", "search", true},
		{"Listed", "fetch", false},
		{"Listed", "write", false},
		{"Categories", "shell", true},
		{"Categories", "rm", false},
		{"Categories", "read", false},
		{"Star", "read", true},
		{"Star", "search", false},
		{"DenyAll", "read", false},
	}
	for _, tt := range tests {
		t.Run(tt.state+"/"+tt.tool, func(t *testing.T) {
			task := state[*Task](t, m, tt.state)
			if got := task.Tools.Permits(tt.tool); got != tt.want {
				t.Errorf("%s: Tools.Permits(%q) = %v, want %v", tt.state, tt.tool, got, tt.want)
			}
		})
	}
	if open := state[*Task](t, m, "Open"); open.Tools != m.Extensions.DefaultTools {
		t.Errorf("Open.Tools = %p, want the DefaultTools block %p", open.Tools, m.Extensions.DefaultTools)
	}
	var none *ToolsConfig
	if !none.Permits("x") {
		t.Errorf("(*ToolsConfig)(nil).Permits(%q) = false, want true", "x")
	}
	if !(&ToolsConfig{}).Permits("x") {
		t.Errorf("ToolsConfig{}.Permits(%q) = false, want true", "x")
	}
}

func TestTaskBlocksCompiled(t *testing.T) {
	m := parseFile(t, "agent-task-blocks.json")
	full := state[*Task](t, m, "Analyze")

	mem := full.Memory
	if got := mem.Read.Keys; len(got) != 2 || got[0] != "profile" || got[1] != "history" {
		t.Errorf("Memory.Read.Keys = %q, want [profile history]", got)
	}
	if got := mem.Read.InjectAt.String(); got != "$.context.memory" {
		t.Errorf("Memory.Read.InjectAt = %q, want %q", got, "$.context.memory")
	}
	if !mem.Read.HasDefault {
		t.Errorf("Memory.Read.HasDefault = false, want true")
	}
	if len(mem.Write) != 4 {
		t.Fatalf("len(Memory.Write) = %d, want 4", len(mem.Write))
	}
	writes := []struct {
		key      string
		hasValue bool
		hasExpr  bool
		ttl      TTL
		merge    bool
	}{
		{"last_result", false, true, TTL{Duration: 30 * 24 * time.Hour}, false},
		{"history", false, true, TTL{Never: true}, true},
		{"seen", true, false, TTL{}, false},
		{"raw", false, false, TTL{}, false},
	}
	for i, w := range writes {
		got := mem.Write[i]
		if got.Key != w.key || got.HasValue != w.hasValue || (got.ValueExpr != nil) != w.hasExpr || got.TTL != w.ttl || got.Merge != w.merge {
			t.Errorf("Memory.Write[%d] = %+v, want key %q, value %v, expr %v, TTL %+v, merge %v", i, got, w.key, w.hasValue, w.hasExpr, w.ttl, w.merge)
		}
	}
	if got := mem.Namespace; len(got.Paths) != 2 || len(got.Literals) != 3 || got.Literals[1] != "/" || got.Paths[1].String() != "$.project.id" {
		t.Errorf("Memory.Namespace = %+v, want 2 paths between 3 literals", got)
	}

	ctx := full.Context
	if ctx.Strategy != "priority_based" || ctx.MaxTokens != 8000 || len(ctx.Priority) != 2 || len(ctx.Include) != 1 || len(ctx.Exclude) != 1 {
		t.Errorf("Context = %+v, want priority_based, 8000 tokens, 2 priorities, 1 include, 1 exclude", ctx)
	}
	if s := ctx.Summarize; s.When != "TokensExceed" || s.Using != "Summarizer" || s.Target.String() != "$.context.history" || s.Ratio != 0.25 {
		t.Errorf("Context.Summarize = %+v", s)
	}

	tools := full.Tools
	if !tools.HasAllowed || len(tools.Allowed) != 2 || tools.Timeout != 30*time.Second {
		t.Errorf("Tools = %+v, want 2 allowed tools and a 30s timeout", tools)
	}
	want := RateLimit{MaxPerMinute: 10, MaxPerHour: 100, MaxPerDay: 1000, MaxConcurrent: 2, BurstLimit: 3, OnExceed: "wait"}
	if got := tools.RateLimits["web_search"]; got != want {
		t.Errorf("Tools.RateLimits[web_search] = %+v, want %+v", got, want)
	}
	if got := tools.RateLimits["*"]; got != (RateLimit{MaxPerMinute: 60, OnExceed: "fail"}) {
		t.Errorf("Tools.RateLimits[*] = %+v, want 60 per minute, OnExceed fail", got)
	}
	if !tools.Permits("fetch_url") || tools.Permits("write_file") || tools.Permits("delete") {
		t.Errorf("Tools.Permits: fetch_url (from category research) must be allowed, write_file and delete not")
	}

	wantBudget := BudgetConfig{MaxTokens: 5000, MaxInputTokens: 4000, MaxOutputTokens: 1000, MaxCost: 0.5, Priority: "high"}
	if *full.Budget != wantBudget {
		t.Errorf("Budget = %+v, want %+v", *full.Budget, wantBudget)
	}

	in, out := full.Guardrails.Input, full.Guardrails.Output
	if len(in.Rules) != 3 || in.Validator != "InputChecker" || in.OnFail != "reject" {
		t.Errorf("Guardrails.Input = %+v", in)
	}
	if r := in.Rules[0]; r.Type != "length" || r.Max != 10000 || r.Min != 1 || r.Action != "block" {
		t.Errorf("Guardrails.Input.Rules[0] = %+v, want length 1..10000, block", r)
	}
	if r := in.Rules[2]; r.Type != "pii" || len(r.Detect) != 2 || r.Action != "redact" {
		t.Errorf("Guardrails.Input.Rules[2] = %+v, want pii email+phone, redact", r)
	}
	if len(out.Rules) != 5 || out.MaxRetries != 2 || out.OnFail != "fail_state" {
		t.Fatalf("Guardrails.Output = %+v", out)
	}
	if re := out.Rules[0].Pattern; re == nil || !re.MatchString("my PASSWORD = x") || re.MatchString("pass") {
		t.Errorf("Guardrails.Output.Rules[0].Pattern = %v, want a compiled case-insensitive regexp", re)
	}
	if r := out.Rules[1]; len(r.Detect) != 4 {
		t.Errorf("Guardrails.Output.Rules[1].Detect = %q, want all four kinds for true", r.Detect)
	}
	if r := out.Rules[2]; r.Type != "custom" || r.Validator != "FactChecker" || r.Action != "retry" {
		t.Errorf("Guardrails.Output.Rules[2] = %+v", r)
	}

	if r := full.Reasoning; !r.Required || r.Format != "chain_of_thought" || r.MinSteps != 2 || r.MaxSteps != 10 || r.Store.String() != "$.reasoning" {
		t.Errorf("Reasoning = %+v", r)
	}
}

func TestTaskBlockDefaults(t *testing.T) {
	m := parseFile(t, "agent-task-blocks.json")
	min := state[*Task](t, m, "Minimal")
	if got := min.Memory.Read.InjectAt.String(); got != DefaultInjectAt {
		t.Errorf("Memory.Read.InjectAt = %q, want %q", got, DefaultInjectAt)
	}
	if min.Memory.Read.HasDefault || min.Memory.Write != nil || !min.Memory.Namespace.IsZero() || min.Memory.NamespaceExpr != nil {
		t.Errorf("Memory = %+v, want only Read set", min.Memory)
	}
	if c := min.Context; c.Strategy != "sliding_window" || c.MaxTokens != 0 || c.Summarize != nil {
		t.Errorf("Context = %+v, want sliding_window with no limit", c)
	}
	if !min.Tools.HasAllowed || len(min.Tools.Allowed) != 0 || min.Tools.Permits("anything") {
		t.Errorf("Tools = %+v, want an empty allowlist that permits nothing", min.Tools)
	}
	if b := *min.Budget; b != (BudgetConfig{MaxCost: 2, Priority: "normal"}) {
		t.Errorf("Budget = %+v, want MaxCost 2, Priority normal", b)
	}
	if g := min.Guardrails; g.Input != nil || g.Output.Validator != "Checker" || g.Output.OnFail != "reject" || len(g.Output.Rules) != 0 {
		t.Errorf("Guardrails = %+v / %+v", g, g.Output)
	}
	if r := *min.Reasoning; r.Required || r.Format != "free_form" || r.MinSteps != 0 || r.MaxSteps != 0 || r.Store != nil {
		t.Errorf("Reasoning = %+v, want the defaults", r)
	}

	other := state[*Task](t, m, "NumericCost")
	if other.Budget.MaxCost != 0.25 || other.Budget.Priority != "background" {
		t.Errorf("Budget = %+v, want MaxCost 0.25 from a numeric string", other.Budget)
	}
	if w := other.Memory.Write; len(w) != 1 || !w[0].HasValue || w[0].Key != "note" {
		t.Errorf("Memory.Write = %+v, want one literal write (object form)", w)
	}
	if other.Memory.NamespaceExpr == nil || other.Memory.NamespaceExpr.String() != "$.team.namespace" {
		t.Errorf("Memory.NamespaceExpr = %v, want $.team.namespace", other.Memory.NamespaceExpr)
	}
	if s := other.Context.Summarize; s.When != "Never" || s.Using != "" {
		t.Errorf("Context.Summarize = %+v, want When Never without Using", s)
	}
	if in := other.Guardrails.Input; in.OnFail != "continue" || in.Rules[0].Action != "warn" {
		t.Errorf("Guardrails.Input = %+v", in)
	}
	if m.Extensions == nil || m.Extensions.ToolCategories["research"][1] != "fetch_url" || m.Extensions.DefaultTools != nil {
		t.Errorf("Extensions = %+v, want ToolCategories only", m.Extensions)
	}
}

func TestApprovalCompiled(t *testing.T) {
	m := parseFile(t, "agent-approval.json")

	simple := state[*Approval](t, m, "Simple")
	if len(simple.Prompt.Text.Paths) != 2 || simple.Prompt.Expr != nil || simple.Prompt.Template != nil {
		t.Errorf("Simple.Prompt = %+v, want a text with two placeholders", simple.Prompt)
	}
	if got := simple.Options; len(got) != 2 || got[0] != "approve" || got[1] != "reject" {
		t.Errorf("Simple.Options = %q, want the default [approve reject]", got)
	}
	if simple.Timeout != 24*time.Hour || simple.HasResultPath || simple.Next != "FromExpr" || simple.Escalation != nil || simple.Editable != nil {
		t.Errorf("Simple = %+v", simple)
	}

	expr := state[*Approval](t, m, "FromExpr")
	if expr.Prompt.Expr == nil || !expr.Prompt.Text.IsZero() || len(expr.Options) != 3 || !expr.HasResultPath || expr.ResultPath.Path.String() != "$.approval" {
		t.Errorf("FromExpr = %+v", expr)
	}

	st := state[*Approval](t, m, "Structured")
	if st.Prompt.Template == nil || !st.Prompt.Text.IsZero() {
		t.Errorf("Structured.Prompt = %+v, want a template", st.Prompt)
	}
	esc := st.Escalation
	if esc.After != 24*time.Hour || esc.Message != "A review is waiting" || esc.Repeat != (Repeat{Every: 4 * time.Hour, MaxTimes: 3}) || len(esc.Notify) != 2 || esc.Notify[1] != "#reviews" {
		t.Errorf("Structured.Escalation = %+v, want after 24h, 2 recipients, repeat every 4h 3 times", *esc)
	}
	if len(st.Choices) != 2 || st.Default != "Rejected" || st.Next != "" || st.End || len(st.Catch) != 1 {
		t.Errorf("Structured routing = choices %d, default %q, next %q, end %v, catch %d", len(st.Choices), st.Default, st.Next, st.End, len(st.Catch))
	}

	edit := state[*Approval](t, m, "Edit")
	if edit.Editable == nil || len(edit.Editable.Fields) != 2 || edit.Editable.ResultPath.String() != "$.editedDraft" {
		t.Errorf("Edit.Editable = %+v", edit.Editable)
	}
	if edit.Escalation.Repeat != (Repeat{Every: 2 * time.Hour}) || !edit.ResultPath.Discard || !edit.HasResultPath || edit.Next != "Rejected" {
		t.Errorf("Edit = %+v", edit)
	}

	publish := state[*Approval](t, m, "Publish")
	if !publish.End || publish.Default != "Rejected" || publish.Timeout != time.Hour {
		t.Errorf("Publish = %+v, want End with a timeout Default", publish)
	}
}

func TestDebateCompiled(t *testing.T) {
	m := parseFile(t, "agent-debate.json")
	min := state[*Debate](t, m, "Minimal")
	wantComm := Communication{Style: "turn_based", VisibleHistory: "all"}
	if min.Rounds != 3 || min.Topic != "" || min.TopicExpr != nil || min.Consensus != nil || min.Parameters != nil {
		t.Errorf("Minimal = %+v, want the defaults", min)
	}
	if min.Communication.Style != wantComm.Style || min.Communication.VisibleHistory != wantComm.VisibleHistory || min.Communication.Order != nil {
		t.Errorf("Minimal.Communication = %+v, want %+v", min.Communication, wantComm)
	}

	full := state[*Debate](t, m, "Full")
	if full.Rounds != 2 || full.TopicExpr.String() != "$.question" || len(full.Agents) != 3 || full.ResultPath.Path.String() != "$.debate" {
		t.Errorf("Full = %+v", full)
	}
	if c := full.Communication; c.Style != "simultaneous" || c.VisibleHistory != "own" || len(c.Order) != 3 || c.Order[0] != "Con" {
		t.Errorf("Full.Communication = %+v, want simultaneous, own (from own_only), order Con first", c)
	}
	if c := *full.Consensus; c != (Consensus{Required: true, Threshold: 0.66, Arbiter: "Judge"}) {
		t.Errorf("Full.Consensus = %+v", c)
	}
	if len(full.Retry) != 1 || len(full.Catch) != 1 || full.Parameters == nil {
		t.Errorf("Full: retry %d, catch %d, parameters %v", len(full.Retry), len(full.Catch), full.Parameters)
	}

	fixed := state[*Debate](t, m, "FixedTopic")
	if fixed.Topic != "Tabs or spaces?" || fixed.Consensus.Threshold != 1 || fixed.Communication.VisibleHistory != "none" {
		t.Errorf("FixedTopic = %+v / %+v", fixed, fixed.Consensus)
	}
	if e := state[*Debate](t, m, "IntrinsicTopic").TopicExpr; e == nil || e.String() != "$.action.topic" {
		t.Errorf("IntrinsicTopic.TopicExpr = %v, want $.action.topic", e)
	}
}

func TestCheckpointCompiled(t *testing.T) {
	m := parseFile(t, "agent-checkpoint.json")
	start := state[*Checkpoint](t, m, "Start")
	if start.CheckpointName != "start" || start.Storage != "default" || start.TTL != (TTL{Duration: DefaultCheckpointTTL}) {
		t.Errorf("Start = %+v, want the default storage and a 7-day TTL", start)
	}
	left := state[*Checkpoint](t, m, "L")
	right := state[*Checkpoint](t, m, "R")
	if left.TTL != (TTL{Never: true}) || right.TTL != (TTL{Duration: time.Hour}) {
		t.Errorf("TTLs = %+v, %+v; want never and 1h", left.TTL, right.TTL)
	}
}

func TestExtensionsCompiled(t *testing.T) {
	m := parseFile(t, "agent-top-level.json")
	e := m.Extensions
	wantBudget := WorkflowBudget{MaxTokens: 100000, MaxCost: 5, Currency: "EUR", OnExceed: "Continue", Alerts: e.Budget.Alerts}
	if b := *e.Budget; b.MaxTokens != wantBudget.MaxTokens || b.MaxCost != 5 || b.Currency != "EUR" || b.OnExceed != "Continue" {
		t.Errorf("Budget = %+v, want %+v", b, wantBudget)
	}
	wantAlerts := []BudgetAlert{{At: 0.5, Message: "half spent"}, {At: 0.9}, {At: 1}}
	if len(e.Budget.Alerts) != len(wantAlerts) {
		t.Fatalf("Budget.Alerts = %+v, want %+v", e.Budget.Alerts, wantAlerts)
	}
	for i, a := range wantAlerts {
		if e.Budget.Alerts[i] != a {
			t.Errorf("Budget.Alerts[%d] = %+v, want %+v", i, e.Budget.Alerts[i], a)
		}
	}
	if mem := *e.Memory; mem.Backend != "memory" || mem.DefaultTTL != (TTL{Duration: 7 * 24 * time.Hour}) || !mem.Namespace.IsZero() {
		t.Errorf("Memory = %+v", mem)
	}
	if g := e.Governance; g == nil || g.OnViolation() != governance.FailFast {
		t.Errorf("Governance = %v, want the compiled block with OnViolation FAIL_FAST", e.Governance)
	}
	research := state[*Task](t, m, "Research")
	write := state[*Task](t, m, "Write")
	inner := state[*Task](t, state[*Map](t, m, "Nested").Processor, "Inner")
	if research.Tools != e.DefaultTools {
		t.Errorf("Research.Tools = %+v, want DefaultTools", research.Tools)
	}
	tests := []struct {
		name  string
		tools *ToolsConfig
		tool  string
		want  bool
	}{
		{"default allows all", research.Tools, "web_search", true},
		{"default denies shell", research.Tools, "shell", false},
		{"category in Allowed", write.Tools, "fetch_url", true},
		{"category in Denied wins", write.Tools, "delete_file", false},
		{"unlisted", write.Tools, "read", false},
		{"nested AllowedCategories", inner.Tools, "web_search", true},
		{"nested outside category", inner.Tools, "shell", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.tools.Permits(tt.tool); got != tt.want {
				t.Errorf("Permits(%q) = %v, want %v", tt.tool, got, tt.want)
			}
		})
	}

	plain := parseFile(t, "core-all-states.json")
	if plain.Extensions != nil {
		t.Errorf("Extensions = %+v, want nil without agent-native top-level blocks", plain.Extensions)
	}
	budget := parseFile(t, "example-customer-support.json").Extensions.Budget
	if budget.Currency != "USD" || budget.OnExceed != "Fail" || budget.MaxCost != 3 {
		t.Errorf("Budget = %+v, want the USD and Fail defaults", budget)
	}
}

// TestDebateRoundsBound checks that Rounds is accepted from 1 to
// MaxDebateRounds and refused outside, at the field's pointer.
func TestDebateRoundsBound(t *testing.T) {
	tests := []struct {
		rounds int
		ok     bool
	}{
		{1, true},
		{MaxDebateRounds, true},
		{0, false},
		{MaxDebateRounds + 1, false},
		{1000, false},
	}
	for _, tt := range tests {
		t.Run(strconv.Itoa(tt.rounds), func(t *testing.T) {
			def := `{"StartAt":"D","States":{"D":{"Type":"Debate","Agents":["a","b"],"Rounds":` + strconv.Itoa(tt.rounds) + `,"End":true}}}`
			m, err := Parse([]byte(def))
			if tt.ok {
				if err != nil {
					t.Fatalf("Parse(Rounds %d): %v", tt.rounds, err)
				}
				if got := m.States["D"].(*Debate).Rounds; got != int64(tt.rounds) {
					t.Errorf("Rounds = %d, want %d", got, tt.rounds)
				}
				return
			}
			if got, want := problemPointers(t, def), []string{"/States/D/Rounds (D)"}; !slices.Equal(got, want) {
				t.Errorf("Parse(Rounds %d) problems at %q, want %q", tt.rounds, got, want)
			}
		})
	}
}
