package guardrails

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	asl "github.com/aslrun/aslrun"
	"github.com/aslrun/aslrun/jsonvalue"
	"github.com/aslrun/aslrun/states"
)

// parseSet parses a Task whose Guardrails has set as its stage part and
// returns that set, as the engine would get it.
func parseSet(t testing.TB, stage Stage, set string) *states.GuardrailSet {
	t.Helper()
	def := fmt.Sprintf(`{"StartAt": "T", "States": {"T": {"Type": "Task", "Agent": "A", "End": true,
		"Guardrails": {%q: %s}}}}`, stage, set)
	m, err := states.Parse([]byte(def))
	if err != nil {
		t.Fatalf("states.Parse(%s) = %v", set, err)
	}
	g := m.States["T"].(*states.Task).Guardrails
	if stage == Input {
		return g.Input
	}
	return g.Output
}

// decode decodes JSON text for a test.
func decode(t testing.TB, text string) any {
	t.Helper()
	v, err := jsonvalue.Decode([]byte(text))
	if err != nil {
		t.Fatalf("jsonvalue.Decode(%s) = %v", text, err)
	}
	return v
}

// marshal writes v as JSON text for messages.
func marshal(v any) string {
	b, err := jsonvalue.Marshal(v)
	if err != nil {
		return fmt.Sprintf("%#v (%v)", v, err)
	}
	return string(b)
}

// verdicts is a Validator answering from a table, and recording what it
// was asked.
type verdicts struct {
	answers map[string]Verdict
	errs    map[string]error
	asked   []string
	seen    []any
}

func (v *verdicts) validate(ctx context.Context, agent string, content any) (Verdict, error) {
	v.asked = append(v.asked, agent)
	v.seen = append(v.seen, content)
	if err := v.errs[agent]; err != nil {
		return Verdict{}, err
	}
	vd, ok := v.answers[agent]
	if !ok {
		return Verdict{}, fmt.Errorf("no answer for agent %q", agent)
	}
	return vd, nil
}

// summary writes a finding in one line without its message.
func summary(f Finding) string {
	return fmt.Sprintf("%d %s/%s %s %s %s", f.Rule, f.Type, f.Action, f.Kind, f.Path, f.Excerpt)
}

func summaries(fs []Finding) []string {
	var out []string
	for _, f := range fs {
		out = append(out, summary(f))
	}
	return out
}

// sameValue reports whether a and b are the same map or slice, not a copy.
func sameValue(a, b any) bool {
	va, vb := reflect.ValueOf(a), reflect.ValueOf(b)
	if va.Kind() != vb.Kind() {
		return false
	}
	switch va.Kind() {
	case reflect.Map, reflect.Slice:
		return va.UnsafePointer() == vb.UnsafePointer()
	}
	return jsonvalue.Equal(a, b)
}

// ruleCase is a rule of one type with content it fails on and what the
// content becomes when its matches are redacted or masked.
type ruleCase struct {
	typ, rule      string
	fail, pass     string
	redact, mask   string
	kind, path     string
	excerpt        string
	failValidation bool // the failure comes from the validator
}

var ruleCases = []ruleCase{
	{
		typ: "length", rule: `{"Type": "length", "Max": 12}`,
		fail: `{"note": "too long"}`, pass: `{"a": "ok"}`,
		path: "$",
	},
	{
		typ: "pattern", rule: `{"Type": "pattern", "Block": ["secret"]}`,
		fail: `{"note": "a SECRET here"}`, pass: `{"note": "a secre t"}`,
		redact: `{"note": "a [REDACTED] here"}`, mask: `{"note": "a ***RET here"}`,
		path: "$.note", excerpt: "***RET",
	},
	{
		typ: "regex", rule: `{"Type": "regex", "Pattern": "API_KEY=\\w+"}`,
		fail: `{"note": "use API_KEY=abc123 now"}`, pass: `{"note": "use API_KEY= now"}`,
		redact: `{"note": "use [REDACTED] now"}`, mask: `{"note": "use **********c123 now"}`,
		path: "$.note", excerpt: "**********c123",
	},
	{
		typ: "pii", rule: `{"Type": "pii", "Detect": ["email"]}`,
		fail: `{"note": "write to john@example.com"}`, pass: `{"note": "write to john at example.com"}`,
		redact: `{"note": "write to [REDACTED:email]"}`, mask: `{"note": "write to j***@example.com"}`,
		kind: "email", path: "$.note", excerpt: "j***@example.com",
	},
	{
		typ: "custom", rule: `{"Type": "custom", "Validator": "Checker"}`,
		fail: `{"note": "off topic"}`, pass: `{"note": "on topic"}`,
		path: "$", failValidation: true,
	},
}

// checker answers "valid" unless the content is {"note": "off topic"}.
func topicChecker(ctx context.Context, agent string, content any) (Verdict, error) {
	if m, ok := content.(map[string]any); ok && m["note"] == "off topic" {
		return Verdict{Valid: false, Reason: "off topic"}, nil
	}
	return Verdict{Valid: true}, nil
}

// TestCheckMatrix runs every rule type with every action it takes, at
// both stages and with both kinds of OnFail, on content that fails it and
// content that passes.
func TestCheckMatrix(t *testing.T) {
	actions := []string{"block", "redact", "mask", "warn", "flag", "retry"}
	for _, stage := range []Stage{Input, Output} {
		for _, rc := range ruleCases {
			for _, action := range actions {
				if action == "retry" && stage == Input {
					continue // the parser refuses it
				}
				changes := action == "redact" || action == "mask"
				if changes && (rc.typ == "length" || rc.typ == "custom") {
					continue // the parser refuses it
				}
				for _, onFail := range []string{"reject", "continue"} {
					name := fmt.Sprintf("%s/%s/%s/%s", stage, rc.typ, action, onFail)
					t.Run(name, func(t *testing.T) {
						rule := strings.Replace(rc.rule, "{", fmt.Sprintf(`{"Action": %q, `, action), 1)
						set := parseSet(t, stage, fmt.Sprintf(`{"Rules": [%s], "OnFail": %q}`, rule, onFail))
						checkMatrixCase(t, set, stage, rc, action, onFail)
					})
				}
			}
		}
	}
}

func checkMatrixCase(t *testing.T, set *states.GuardrailSet, stage Stage, rc ruleCase, action, onFail string) {
	t.Helper()
	ctx := context.Background()

	pass := decode(t, rc.pass)
	res, err := Check(ctx, set, stage, pass, topicChecker)
	if err != nil {
		t.Fatalf("Check(%s) error = %v", rc.pass, err)
	}
	if len(res.Findings) != 0 || res.Violation != nil || res.Retry || !sameValue(res.Content, pass) {
		t.Errorf("Check(%s) = %+v, want no findings and the content shared", rc.pass, res)
	}

	fail := decode(t, rc.fail)
	res, err = Check(ctx, set, stage, fail, topicChecker)
	if err != nil {
		t.Fatalf("Check(%s) error = %v", rc.fail, err)
	}
	wantFinding := fmt.Sprintf("0 %s/%s %s %s %s", rc.typ, action, rc.kind, rc.path, rc.excerpt)
	if got := summaries(res.Findings); len(got) != 1 || got[0] != wantFinding {
		t.Errorf("Check(%s).Findings = %q, want [%q]", rc.fail, got, wantFinding)
	}

	switch action {
	case "redact", "mask":
		want := rc.redact
		if action == "mask" {
			want = rc.mask
		}
		if !jsonvalue.Equal(res.Content, decode(t, want)) {
			t.Errorf("Check(%s).Content = %s, want %s", rc.fail, marshal(res.Content), want)
		}
		if !jsonvalue.Equal(fail, decode(t, rc.fail)) {
			t.Errorf("Check modified its input: %s, want %s", marshal(fail), rc.fail)
		}
	default:
		if !sameValue(res.Content, fail) {
			t.Errorf("Check(%s).Content = %s, a copy; want the content itself", rc.fail, marshal(res.Content))
		}
	}

	wantRetry := action == "retry" && stage == Output
	if res.Retry != wantRetry {
		t.Errorf("Check(%s).Retry = %v, want %v", rc.fail, res.Retry, wantRetry)
	}

	raises := (action == "block" || action == "retry") && onFail != "continue"
	switch {
	case !raises && res.Violation != nil:
		t.Errorf("Check(%s).Violation = %v, want nil", rc.fail, res.Violation)
	case raises && res.Violation == nil:
		t.Errorf("Check(%s).Violation = nil, want one", rc.fail)
	case raises:
		want := asl.ErrAgentInvalidInput
		if stage == Output {
			want = asl.ErrAgentGuardrailViolation
			if rc.typ == "length" || rc.typ == "regex" {
				want = asl.ErrAgentInvalidOutput
			}
		}
		if res.Violation.Name != want {
			t.Errorf("Check(%s).Violation.Name = %s, want %s", rc.fail, res.Violation.Name, want)
		}
		prefix := fmt.Sprintf("Guardrails.%s.Rules[0] (%s) at %s: ", stage, rc.typ, rc.path)
		if !strings.HasPrefix(res.Violation.Cause, prefix) {
			t.Errorf("Check(%s).Violation.Cause = %q, want it to start with %q", rc.fail, res.Violation.Cause, prefix)
		}
		if strings.Contains(res.Violation.Cause, "john@") {
			t.Errorf("Check(%s).Violation.Cause = %q quotes the personal data", rc.fail, res.Violation.Cause)
		}
	}
}

func TestCheckCauses(t *testing.T) {
	tests := []struct {
		name    string
		stage   Stage
		set     string
		content string
		want    string
	}{
		{
			name:    "pii with more findings",
			stage:   Output,
			set:     `{"Rules": [{"Type": "length", "Max": 1000}, {"Type": "pii"}]}`,
			content: `{"customer": {"contact": "j@example.com or +44 20 7946 0958"}, "z": "4111 1111 1111 1111"}`,
			want:    "Agent.GuardrailViolation: Guardrails.Output.Rules[1] (pii) at $.customer.contact: contains an email address; 2 more findings",
		},
		{
			name:    "pattern names the blocked substring",
			stage:   Input,
			set:     `{"Rules": [{"Type": "pattern", "Block": ["DROP TABLE", "rm -rf"]}]}`,
			content: `["ok", "please Rm -Rf /"]`,
			want:    `Agent.InvalidInput: Guardrails.Input.Rules[0] (pattern) at $[1]: contains blocked substring "rm -rf"`,
		},
		{
			name:    "regex names its pattern",
			stage:   Output,
			set:     `{"Rules": [{"Type": "regex", "Pattern": "\\d{3}"}]}`,
			content: `{"weird key": "x123"}`,
			want:    `Agent.InvalidOutput: Guardrails.Output.Rules[0] (regex) at $['weird key']: matches Pattern "\\d{3}"`,
		},
		{
			name:    "length over Max",
			stage:   Output,
			set:     `{"Rules": [{"Type": "length", "Max": 3}]}`,
			content: `"héllo"`,
			want:    "Agent.InvalidOutput: Guardrails.Output.Rules[0] (length) at $: content is 5 characters long, over Max 3",
		},
		{
			name:    "length under Min",
			stage:   Input,
			set:     `{"Rules": [{"Type": "length", "Min": 3, "Max": 10}]}`,
			content: `""`,
			want:    "Agent.InvalidInput: Guardrails.Input.Rules[0] (length) at $: content is 0 characters long, under Min 3",
		},
		{
			name:    "custom with a reason on several lines",
			stage:   Output,
			set:     `{"Rules": [{"Type": "custom", "Validator": "Facts"}]}`,
			content: `{}`,
			want:    `Agent.GuardrailViolation: Guardrails.Output.Rules[0] (custom) at $: validator "Facts" rejected the content: the date is wrong`,
		},
		{
			name:    "set validator",
			stage:   Input,
			set:     `{"Validator": "Facts"}`,
			content: `{}`,
			want:    `Agent.InvalidInput: Guardrails.Input.Validator at $: validator "Facts" rejected the content: the date is wrong`,
		},
	}
	facts := func(ctx context.Context, agent string, content any) (Verdict, error) {
		return Verdict{Reason: "  the date\n\tis wrong "}, nil
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			set := parseSet(t, tt.stage, tt.set)
			res, err := Check(context.Background(), set, tt.stage, decode(t, tt.content), facts)
			if err != nil {
				t.Fatalf("Check error = %v", err)
			}
			if res.Violation == nil {
				t.Fatalf("Check(%s).Violation = nil, want %q", tt.content, tt.want)
			}
			if got := res.Violation.Error(); got != tt.want {
				t.Errorf("Check(%s).Violation = %q, want %q", tt.content, got, tt.want)
			}
		})
	}
}

func TestCheckLength(t *testing.T) {
	tests := []struct {
		content  string
		min, max int64
		want     bool // passes
	}{
		{`"abc"`, 0, 3, true},
		{`"abcd"`, 0, 3, false},
		{`"日本語"`, 3, 3, true}, // characters, not bytes
		{`"ab"`, 3, 10, false},
		{`{"a":1}`, 7, 7, true}, // compact JSON text
		{`{"a": 1}`, 8, 100, false},
		{`[1, 2, 3]`, 0, 7, true},
		{`[1, 2, 3]`, 0, 6, false},
		{`12345`, 0, 5, true},
		{`null`, 5, 10, false},
		{`{"k":"日本語"}`, 11, 11, true},
		{`{"k":"日本語"}`, 12, 20, false},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%s/%d-%d", tt.content, tt.min, tt.max), func(t *testing.T) {
			set := &states.GuardrailSet{OnFail: "reject", Rules: []states.GuardrailRule{{Type: "length", Action: "block", Min: tt.min, Max: tt.max}}}
			res, err := Check(context.Background(), set, Output, decode(t, tt.content), nil)
			if err != nil {
				t.Fatalf("Check error = %v", err)
			}
			if got := res.Violation == nil; got != tt.want {
				t.Errorf("Check(%s, Min %d, Max %d) passes = %v, want %v (%v)", tt.content, tt.min, tt.max, got, tt.want, res.Violation)
			}
		})
	}
	t.Run("outside the model", func(t *testing.T) {
		set := &states.GuardrailSet{OnFail: "reject", Rules: []states.GuardrailRule{{Type: "length", Action: "block", Max: 100}}}
		res, err := Check(context.Background(), set, Output, map[string]any{"c": make(chan int)}, nil)
		if err != nil {
			t.Fatalf("Check error = %v", err)
		}
		if res.Violation == nil || res.Violation.Name != asl.ErrAgentInvalidOutput {
			t.Errorf("Check(a channel).Violation = %v, want Agent.InvalidOutput", res.Violation)
		}
	})
}

// TestCheckOrder checks that rules see the content as the rules before
// them left it, that the set's Validator comes last, and what stops Check.
func TestCheckOrder(t *testing.T) {
	content := `{"msg": "mail john@example.com now", "n": 1}`
	tests := []struct {
		name        string
		set         string
		answers     map[string]Verdict
		wantAsked   []string
		wantSeen    string // what the last validator saw
		wantFinds   []string
		wantContent string
		wantError   asl.ErrorName
	}{
		{
			name:        "redact before regex and validator",
			set:         `{"Rules": [{"Type": "pii", "Action": "redact"}, {"Type": "regex", "Pattern": "john", "Action": "block"}], "Validator": "V"}`,
			answers:     map[string]Verdict{"V": {Valid: true}},
			wantAsked:   []string{"V"},
			wantSeen:    `{"msg": "mail [REDACTED:email] now", "n": 1}`,
			wantFinds:   []string{"0 pii/redact email $.msg j***@example.com"},
			wantContent: `{"msg": "mail [REDACTED:email] now", "n": 1}`,
		},
		{
			name:        "a violation stops Check",
			set:         `{"Rules": [{"Type": "custom", "Validator": "C1"}, {"Type": "pattern", "Block": ["mail"]}, {"Type": "custom", "Validator": "C2"}], "Validator": "V"}`,
			answers:     map[string]Verdict{"C1": {Valid: true}, "C2": {Valid: true}, "V": {Valid: true}},
			wantAsked:   []string{"C1"},
			wantSeen:    content,
			wantFinds:   []string{"1 pattern/block  $.msg **il"},
			wantContent: content,
			wantError:   asl.ErrAgentGuardrailViolation,
		},
		{
			name:        "continue runs everything",
			set:         `{"Rules": [{"Type": "pattern", "Block": ["mail"]}, {"Type": "custom", "Validator": "C1"}, {"Type": "pii", "Action": "mask"}], "Validator": "V", "OnFail": "continue"}`,
			answers:     map[string]Verdict{"C1": {Valid: false}, "V": {Valid: false, Reason: "no"}},
			wantAsked:   []string{"C1", "V"},
			wantSeen:    `{"msg": "mail j***@example.com now", "n": 1}`,
			wantFinds:   []string{"0 pattern/block  $.msg **il", "1 custom/block  $ ", "2 pii/mask email $.msg j***@example.com", "-1 validator/block  $ "},
			wantContent: `{"msg": "mail j***@example.com now", "n": 1}`,
		},
		{
			name:        "warnings then the validator's violation",
			set:         `{"Rules": [{"Type": "pii", "Action": "warn"}, {"Type": "pattern", "Block": ["now"], "Action": "flag"}], "Validator": "V", "OnFail": "fail_state"}`,
			answers:     map[string]Verdict{"V": {Valid: false}},
			wantAsked:   []string{"V"},
			wantSeen:    content,
			wantFinds:   []string{"0 pii/warn email $.msg j***@example.com", "1 pattern/flag  $.msg **w", "-1 validator/block  $ "},
			wantContent: content,
			wantError:   asl.ErrAgentGuardrailViolation,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			set := parseSet(t, Output, tt.set)
			v := &verdicts{answers: tt.answers}
			res, err := Check(context.Background(), set, Output, decode(t, content), v.validate)
			if err != nil {
				t.Fatalf("Check error = %v", err)
			}
			if fmt.Sprint(v.asked) != fmt.Sprint(tt.wantAsked) {
				t.Errorf("validators asked = %q, want %q", v.asked, tt.wantAsked)
			}
			if len(v.seen) > 0 && !jsonvalue.Equal(v.seen[len(v.seen)-1], decode(t, tt.wantSeen)) {
				t.Errorf("last validator saw %s, want %s", marshal(v.seen[len(v.seen)-1]), tt.wantSeen)
			}
			if got := summaries(res.Findings); fmt.Sprint(got) != fmt.Sprint(tt.wantFinds) {
				t.Errorf("Findings = %q, want %q", got, tt.wantFinds)
			}
			if !jsonvalue.Equal(res.Content, decode(t, tt.wantContent)) {
				t.Errorf("Content = %s, want %s", marshal(res.Content), tt.wantContent)
			}
			var got asl.ErrorName
			if res.Violation != nil {
				got = res.Violation.Name
			}
			if got != tt.wantError {
				t.Errorf("Violation = %v, want name %q", res.Violation, tt.wantError)
			}
		})
	}
}

// TestCheckNested checks paths, document order and copy-on-write in
// nested content.
func TestCheckNested(t *testing.T) {
	content := decode(t, `{
		"b": {"list": ["x", "call 555-123-4567", {"deep": "a@example.com"}], "keep": {"k": "v"}},
		"a": "4111 1111 1111 1111 and DE89 3704 0044 0532 0130 00",
		"n": 12, "t": true, "z": null,
		"key with space": "+44 20 7946 0958",
		"a@example.com": "keys are not looked at"
	}`)
	before := marshal(content)
	set := parseSet(t, Output, `{"Rules": [{"Type": "pii", "Action": "redact"}]}`)
	res, err := Check(context.Background(), set, Output, content, nil)
	if err != nil {
		t.Fatalf("Check error = %v", err)
	}
	want := []string{
		"0 pii/redact card $.a ***************1111",
		"0 pii/redact iban $.a ********…30 00",
		"0 pii/redact phone $.b.list[1] ********4567",
		"0 pii/redact email $.b.list[2].deep a***@example.com",
		"0 pii/redact phone $['key with space'] ************0958",
	}
	if got := summaries(res.Findings); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("Findings =\n%q\nwant\n%q", got, want)
	}
	wantContent := decode(t, `{
		"b": {"list": ["x", "call [REDACTED:phone]", {"deep": "[REDACTED:email]"}], "keep": {"k": "v"}},
		"a": "[REDACTED:card] and [REDACTED:iban]",
		"n": 12, "t": true, "z": null,
		"key with space": "[REDACTED:phone]",
		"a@example.com": "keys are not looked at"
	}`)
	if !jsonvalue.Equal(res.Content, wantContent) {
		t.Errorf("Content = %s, want %s", marshal(res.Content), marshal(wantContent))
	}
	if after := marshal(content); after != before {
		t.Errorf("Check modified its input: %s, want %s", after, before)
	}
	in, out := content.(map[string]any), res.Content.(map[string]any)
	if !sameValue(in["b"].(map[string]any)["keep"], out["b"].(map[string]any)["keep"]) {
		t.Errorf("the unchanged object $.b.keep was copied; want it shared")
	}
	if sameValue(in["b"], out["b"]) {
		t.Errorf("the changed object $.b is shared with the input; want a copy")
	}
}

func TestCheckMaxFindings(t *testing.T) {
	var items []any
	for i := range 60 {
		items = append(items, fmt.Sprintf("user%d@example.com", i))
	}
	set := parseSet(t, Output, `{"Rules": [{"Type": "pii", "Detect": ["email"], "Action": "warn"}]}`)
	res, err := Check(context.Background(), set, Output, items, nil)
	if err != nil {
		t.Fatalf("Check error = %v", err)
	}
	if len(res.Findings) != maxFindings+1 {
		t.Fatalf("len(Findings) = %d, want %d", len(res.Findings), maxFindings+1)
	}
	if f := res.Findings[maxFindings-1]; f.Path != "$[49]" {
		t.Errorf("Findings[49].Path = %q, want $[49]", f.Path)
	}
	if f := res.Findings[maxFindings]; f.Path != "$" || f.Message != "10 more matches not listed" {
		t.Errorf("last finding = %+v, want the 10 others counted at $", f)
	}
}

func TestCheckNilSet(t *testing.T) {
	content := map[string]any{"a": "john@example.com"}
	res, err := Check(context.Background(), nil, Input, content, nil)
	if err != nil || res.Violation != nil || len(res.Findings) != 0 || !sameValue(res.Content, content) {
		t.Errorf("Check(nil set) = %+v, %v; want the content unchanged", res, err)
	}
}

func TestCheckValidatorErrors(t *testing.T) {
	boom := errors.New("agent unreachable")
	canceled, cancel := context.WithCancel(context.Background())
	cancel()
	tests := []struct {
		name     string
		ctx      context.Context
		set      string
		validate Validator
		wantIs   error
		wantText string
	}{
		{
			name:     "custom rule's validator fails",
			ctx:      context.Background(),
			set:      `{"Rules": [{"Type": "custom", "Validator": "C"}]}`,
			validate: (&verdicts{errs: map[string]error{"C": boom}}).validate,
			wantIs:   boom,
			wantText: `validator "C" of Guardrails.Output.Rules[0] (custom): agent unreachable`,
		},
		{
			name:     "set's validator fails",
			ctx:      context.Background(),
			set:      `{"Rules": [{"Type": "length", "Max": 100}], "Validator": "V"}`,
			validate: (&verdicts{errs: map[string]error{"V": boom}}).validate,
			wantIs:   boom,
			wantText: `validator "V" of Guardrails.Output.Validator: agent unreachable`,
		},
		{
			name:     "no validator function",
			ctx:      context.Background(),
			set:      `{"Validator": "V"}`,
			wantText: `validator "V" of Guardrails.Output.Validator: no validator function was given to check`,
		},
		{
			name:     "context canceled",
			ctx:      canceled,
			set:      `{"Validator": "V"}`,
			validate: topicChecker,
			wantIs:   context.Canceled,
			wantText: `validator "V" of Guardrails.Output.Validator: context canceled`,
		},
		{
			name: "the answer is not a verdict",
			ctx:  context.Background(),
			set:  `{"Validator": "V"}`,
			validate: func(ctx context.Context, agent string, content any) (Verdict, error) {
				return ParseVerdict(map[string]any{"ok": true})
			},
			wantText: `validator "V" of Guardrails.Output.Validator: Agent.InvalidOutput: a validator must answer {"valid": boolean, "reason": string}: "valid" is missing`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			set := parseSet(t, Output, tt.set)
			res, err := Check(tt.ctx, set, Output, map[string]any{}, tt.validate)
			if err == nil {
				t.Fatalf("Check = %+v, nil error; want %q", res, tt.wantText)
			}
			if res != nil {
				t.Errorf("Check result = %+v, want nil with an error", res)
			}
			if err.Error() != tt.wantText {
				t.Errorf("Check error = %q, want %q", err, tt.wantText)
			}
			if tt.wantIs != nil && !errors.Is(err, tt.wantIs) {
				t.Errorf("Check error = %v, want it to wrap %v", err, tt.wantIs)
			}
		})
	}
}

func TestParseVerdict(t *testing.T) {
	tests := []struct {
		in      string
		want    Verdict
		wantErr string // the cause; empty when valid
	}{
		{`{"valid": true}`, Verdict{Valid: true}, ""},
		{`{"valid": false, "reason": "too vague"}`, Verdict{Reason: "too vague"}, ""},
		{`{"valid": true, "reason": ""}`, Verdict{Valid: true}, ""},
		{`{}`, Verdict{}, `"valid" is missing`},
		{`{"valid": "true"}`, Verdict{}, `"valid" is string, not a boolean`},
		{`{"valid": 1}`, Verdict{}, `"valid" is number, not a boolean`},
		{`{"valid": false, "reason": 3}`, Verdict{}, `"reason" is number, not a string`},
		{`{"valid": false, "reason": null}`, Verdict{}, `"reason" is null, not a string`},
		{`{"valid": true, "score": 0.9}`, Verdict{}, `unknown key "score"`},
		{`true`, Verdict{}, `got boolean`},
		{`[{"valid": true}]`, Verdict{}, `got array`},
		{`null`, Verdict{}, `got null`},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParseVerdict(decode(t, tt.in))
			if tt.wantErr == "" {
				if err != nil || got != tt.want {
					t.Errorf("ParseVerdict(%s) = %+v, %v; want %+v", tt.in, got, err, tt.want)
				}
				return
			}
			var aerr *asl.Error
			if !errors.As(err, &aerr) {
				t.Fatalf("ParseVerdict(%s) error = %v, want an *asl.Error", tt.in, err)
			}
			wantCause := `a validator must answer {"valid": boolean, "reason": string}: ` + tt.wantErr
			if aerr.Name != asl.ErrAgentInvalidOutput || aerr.Cause != wantCause {
				t.Errorf("ParseVerdict(%s) error = %s: %q, want Agent.InvalidOutput: %q", tt.in, aerr.Name, aerr.Cause, wantCause)
			}
			if got != (Verdict{}) {
				t.Errorf("ParseVerdict(%s) = %+v with an error, want the zero Verdict", tt.in, got)
			}
		})
	}
}

func TestFindingJSON(t *testing.T) {
	f := Finding{Rule: -1, Type: "validator", Action: "block", Path: "$", Message: `validator "V" rejected the content`}
	got := marshal(f.JSON())
	want := `{"action":"block","excerpt":"","kind":"","message":"validator \"V\" rejected the content","path":"$","rule":-1,"type":"validator"}`
	if got != want {
		t.Errorf("Finding.JSON() = %s, want %s", got, want)
	}
}

func TestStageString(t *testing.T) {
	for stage, want := range map[Stage]string{Input: "Input", Output: "Output"} {
		if got := stage.String(); got != want {
			t.Errorf("Stage(%d).String() = %q, want %q", int(stage), got, want)
		}
	}
}

func TestPatternMatching(t *testing.T) {
	tests := []struct {
		name  string
		block []string
		in    string
		want  []string
	}{
		{"case-insensitive", []string{"Secret"}, "SECRET secret SeCrEt", []string{"SECRET", "secret", "SeCrEt"}},
		{"non-ASCII folding", []string{"école"}, "ÉCOLE and École", []string{"ÉCOLE", "École"}},
		{"Kelvin sign folds to k", []string{"kelvin"}, "\u212aelvin", []string{"\u212aelvin"}},
		{"long s folds to s", []string{"sun"}, "\u017fun", []string{"\u017fun"}},
		{"overlaps: first, then longer", []string{"cde", "abc", "abcdef"}, "xabcdefx cde", []string{"abcdef", "cde"}},
		{"adjacent", []string{"ab"}, "ababab", []string{"ab", "ab", "ab"}},
		{"no match", []string{"drop table"}, "drop  table", nil},
		{"empty term ignored", []string{""}, "anything", nil},
		{"invalid UTF-8 in text", []string{"x"}, "\xffx\xfe", []string{"x"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			for _, sp := range findBlocked(tt.in, tt.block, nil) {
				got = append(got, tt.in[sp.start:sp.end])
			}
			if fmt.Sprint(got) != fmt.Sprint(tt.want) {
				t.Errorf("findBlocked(%q, %q) = %q, want %q", tt.in, tt.block, got, tt.want)
			}
		})
	}
}

func TestRegexEmptyMatches(t *testing.T) {
	set := parseSet(t, Output, `{"Rules": [{"Type": "regex", "Pattern": "x*", "Action": "redact"}]}`)
	res, err := Check(context.Background(), set, Output, "abxxc", nil)
	if err != nil {
		t.Fatalf("Check error = %v", err)
	}
	if res.Content != "ab[REDACTED]c" || len(res.Findings) != 1 {
		t.Errorf("Check(x* on abxxc) = %q with %d findings, want ab[REDACTED]c with 1", res.Content, len(res.Findings))
	}
}

func TestMask(t *testing.T) {
	tests := []struct {
		kind, in, want, excerpt string
	}{
		{"email", "john.doe@example.com", "j***@example.com", "j***@example.com"},
		{"card", "4111 1111 1111 1111", "***************1111", "***************1111"},
		{"phone", "+44 20 7946 0958", "************0958", "************0958"},
		{"", "password", "****word", "****word"},
		{"", "abcdef", "***def", "***def"},
		{"", "ab", "*b", "*b"},
		{"", "a", "*", "*"},
		{"", "日本語のテキスト", "****テキスト", "****テキスト"},
		{"iban", "FR14 2004 1010 0505 0001 3M02 606", "****************************2 606", "********…2 606"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			if got := mask(tt.kind, tt.in); got != tt.want {
				t.Errorf("mask(%q, %q) = %q, want %q", tt.kind, tt.in, got, tt.want)
			}
			if got := excerpt(tt.kind, tt.in); got != tt.excerpt {
				t.Errorf("excerpt(%q, %q) = %q, want %q", tt.kind, tt.in, got, tt.excerpt)
			}
		})
	}
}

func TestFormatPath(t *testing.T) {
	tests := []struct {
		path []seg
		want string
	}{
		{nil, "$"},
		{[]seg{{key: "a", index: -1}, {key: "b_2", index: -1}, {index: 2}}, "$.a.b_2[2]"},
		{[]seg{{key: "2x", index: -1}}, "$['2x']"},
		{[]seg{{key: "", index: -1}}, "$['']"},
		{[]seg{{key: "it's a\\b", index: -1}}, `$['it\'s a\\b']`},
		{[]seg{{key: "tab\there", index: -1}}, `$['tab\u0009here']`},
		{[]seg{{key: "bad\xff", index: -1}}, "$['bad\uFFFD']"},
	}
	for _, tt := range tests {
		if got := formatPath(tt.path); got != tt.want {
			t.Errorf("formatPath(%v) = %q, want %q", tt.path, got, tt.want)
		}
	}
}

// TestCheckRetryOnInput checks that a retry rule on Input, which the
// parser refuses, acts as block when a set is built by hand.
func TestCheckRetryOnInput(t *testing.T) {
	set := &states.GuardrailSet{OnFail: "reject", Rules: []states.GuardrailRule{{Type: "pattern", Action: "retry", Block: []string{"x"}}}}
	for _, tt := range []struct {
		stage     Stage
		wantRetry bool
		wantName  asl.ErrorName
	}{
		{Input, false, asl.ErrAgentInvalidInput},
		{Output, true, asl.ErrAgentGuardrailViolation},
	} {
		t.Run(tt.stage.String(), func(t *testing.T) {
			res, err := Check(context.Background(), set, tt.stage, "x", nil)
			if err != nil {
				t.Fatalf("Check error = %v", err)
			}
			if res.Retry != tt.wantRetry || res.Violation == nil || res.Violation.Name != tt.wantName {
				t.Errorf("Check = Retry %v, Violation %v; want Retry %v, %s", res.Retry, res.Violation, tt.wantRetry, tt.wantName)
			}
		})
	}
}

func TestOneLine(t *testing.T) {
	long := strings.Repeat("é", maxReason+10)
	tests := []struct {
		in, want string
	}{
		{"", ""},
		{" a\n b\t\tc ", "a b c"},
		{strings.Repeat("x", maxReason), strings.Repeat("x", maxReason)},
		{long, strings.Repeat("é", maxReason) + "…"},
	}
	for _, tt := range tests {
		if got := oneLine(tt.in); got != tt.want {
			t.Errorf("oneLine(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}
