package guardrails

import (
	"context"
	"errors"
	"fmt"
	"testing"

	asl "github.com/aslrun/aslrun"
	"github.com/aslrun/aslrun/jsonvalue"
)

func TestCheckSemantic(t *testing.T) {
	content := `{"msg": "mail john@example.com, you fool"}`
	tests := []struct {
		name       string
		stage      Stage
		set        string
		answers    map[string]Verdict
		wantAsked  []string
		wantSeen   []string // what each validator call got
		wantFinds  []string
		wantRetry  bool
		wantCause  string // "": no violation
		wantError  asl.ErrorName
		wantResult string // "": the content as it came
	}{
		{
			name:      "a passing check",
			stage:     Output,
			set:       `{"Rules": [{"Type": "semantic", "Check": "is polite", "Validator": "Judge"}]}`,
			answers:   map[string]Verdict{"Judge": {Valid: true}},
			wantAsked: []string{"Judge"},
			wantSeen:  []string{`{"check": "is polite", "content": ` + content + `}`},
		},
		{
			name:      "a failing check blocks",
			stage:     Output,
			set:       `{"Rules": [{"Type": "semantic", "Check": "is polite", "Validator": "Judge"}]}`,
			answers:   map[string]Verdict{"Judge": {Valid: false, Reason: "it calls the reader\na fool"}},
			wantAsked: []string{"Judge"},
			wantSeen:  []string{`{"check": "is polite", "content": ` + content + `}`},
			wantFinds: []string{"0 semantic/block  $ "},
			wantCause: `Guardrails.Output.Rules[0] (semantic) at $: validator "Judge" found that the content does not satisfy the check "is polite": it calls the reader a fool`,
			wantError: asl.ErrAgentGuardrailViolation,
		},
		{
			name:      "on Input a failure is Agent.InvalidInput",
			stage:     Input,
			set:       `{"Rules": [{"Type": "semantic", "Check": "is on topic", "Validator": "Judge"}]}`,
			answers:   map[string]Verdict{"Judge": {Valid: false}},
			wantAsked: []string{"Judge"},
			wantSeen:  []string{`{"check": "is on topic", "content": ` + content + `}`},
			wantFinds: []string{"0 semantic/block  $ "},
			wantCause: `Guardrails.Input.Rules[0] (semantic) at $: validator "Judge" found that the content does not satisfy the check "is on topic"`,
			wantError: asl.ErrAgentInvalidInput,
		},
		{
			name:      "the set's Validator judges a rule without one, then the content",
			stage:     Output,
			set:       `{"Rules": [{"Type": "semantic", "Check": "is polite", "Action": "warn"}], "Validator": "V"}`,
			answers:   map[string]Verdict{"V": {Valid: true}},
			wantAsked: []string{"V", "V"},
			wantSeen:  []string{`{"check": "is polite", "content": ` + content + `}`, content},
		},
		{
			name:      "warn and flag record findings only",
			stage:     Output,
			set:       `{"Rules": [{"Type": "semantic", "Check": "is polite", "Validator": "A", "Action": "warn"}, {"Type": "semantic", "Check": "is short", "Validator": "B", "Action": "flag"}]}`,
			answers:   map[string]Verdict{"A": {Valid: false}, "B": {Valid: false}},
			wantAsked: []string{"A", "B"},
			wantSeen:  []string{`{"check": "is polite", "content": ` + content + `}`, `{"check": "is short", "content": ` + content + `}`},
			wantFinds: []string{"0 semantic/warn  $ ", "1 semantic/flag  $ "},
		},
		{
			name:      "retry asks for a new output",
			stage:     Output,
			set:       `{"Rules": [{"Type": "semantic", "Check": "is polite", "Validator": "Judge", "Action": "retry"}], "MaxRetries": 2}`,
			answers:   map[string]Verdict{"Judge": {Valid: false}},
			wantAsked: []string{"Judge"},
			wantSeen:  []string{`{"check": "is polite", "content": ` + content + `}`},
			wantFinds: []string{"0 semantic/retry  $ "},
			wantRetry: true,
			wantCause: `Guardrails.Output.Rules[0] (semantic) at $: validator "Judge" found that the content does not satisfy the check "is polite"`,
			wantError: asl.ErrAgentGuardrailViolation,
		},
		{
			name:      "continue records the failure",
			stage:     Output,
			set:       `{"Rules": [{"Type": "semantic", "Check": "is polite", "Validator": "Judge"}], "OnFail": "continue"}`,
			answers:   map[string]Verdict{"Judge": {Valid: false}},
			wantAsked: []string{"Judge"},
			wantSeen:  []string{`{"check": "is polite", "content": ` + content + `}`},
			wantFinds: []string{"0 semantic/block  $ "},
		},
		{
			name:       "the validator sees what the rules before left",
			stage:      Output,
			set:        `{"Rules": [{"Type": "pii", "Action": "redact"}, {"Type": "semantic", "Check": "is polite", "Validator": "Judge"}]}`,
			answers:    map[string]Verdict{"Judge": {Valid: true}},
			wantAsked:  []string{"Judge"},
			wantSeen:   []string{`{"check": "is polite", "content": {"msg": "mail [REDACTED:email], you fool"}}`},
			wantFinds:  []string{"0 pii/redact email $.msg j***@example.com"},
			wantResult: `{"msg": "mail [REDACTED:email], you fool"}`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			set := parseSet(t, tt.stage, tt.set)
			v := &verdicts{answers: tt.answers}
			in := decode(t, content)
			res, err := Check(context.Background(), set, tt.stage, in, v.validate)
			if err != nil {
				t.Fatalf("Check error = %v", err)
			}
			if fmt.Sprint(v.asked) != fmt.Sprint(tt.wantAsked) {
				t.Errorf("validators asked = %q, want %q", v.asked, tt.wantAsked)
			}
			if len(v.seen) != len(tt.wantSeen) {
				t.Fatalf("validators saw %d contents, want %d", len(v.seen), len(tt.wantSeen))
			}
			for i, want := range tt.wantSeen {
				if !jsonvalue.Equal(v.seen[i], decode(t, want)) {
					t.Errorf("validator call %d saw %s, want %s", i, marshal(v.seen[i]), want)
				}
			}
			if got := summaries(res.Findings); fmt.Sprint(got) != fmt.Sprint(tt.wantFinds) {
				t.Errorf("Findings = %q, want %q", got, tt.wantFinds)
			}
			if res.Retry != tt.wantRetry {
				t.Errorf("Retry = %v, want %v", res.Retry, tt.wantRetry)
			}
			switch {
			case tt.wantCause == "" && res.Violation != nil:
				t.Errorf("Violation = %v, want none", res.Violation)
			case tt.wantCause != "" && res.Violation == nil:
				t.Errorf("Violation = nil, want %s: %s", tt.wantError, tt.wantCause)
			case tt.wantCause != "" && (res.Violation.Name != tt.wantError || res.Violation.Cause != tt.wantCause):
				t.Errorf("Violation = %s: %q\nwant        %s: %q", res.Violation.Name, res.Violation.Cause, tt.wantError, tt.wantCause)
			}
			want := content
			if tt.wantResult != "" {
				want = tt.wantResult
			}
			if !jsonvalue.Equal(res.Content, decode(t, want)) {
				t.Errorf("Content = %s, want %s", marshal(res.Content), want)
			}
		})
	}
}

func TestCheckSemanticErrors(t *testing.T) {
	boom := asl.Errorf(asl.ErrAgentModelError, "the judge is down")
	set := parseSet(t, Output, `{"Rules": [{"Type": "semantic", "Check": "is polite", "Validator": "Judge"}]}`)
	v := &verdicts{errs: map[string]error{"Judge": boom}}
	res, err := Check(context.Background(), set, Output, "hello", v.validate)
	if err == nil {
		t.Fatalf("Check = %+v, nil error; want the validator's", res)
	}
	var ae *asl.Error
	if !errors.As(err, &ae) || ae.Name != asl.ErrAgentModelError {
		t.Errorf("Check error = %v, want it to wrap Agent.ModelError", err)
	}
	want := `validator "Judge" of Guardrails.Output.Rules[0] (semantic): Agent.ModelError: the judge is down`
	if err.Error() != want {
		t.Errorf("Check error = %q, want %q", err, want)
	}
}
