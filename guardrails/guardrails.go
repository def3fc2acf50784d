package guardrails

import (
	"context"
	"fmt"
	"strings"
	"unicode/utf8"

	asl "github.com/aslrun/aslrun"
	"github.com/aslrun/aslrun/jsonvalue"
	"github.com/aslrun/aslrun/states"
)

// Stage says which part of a Guardrails block a set is: Input or Output.
type Stage int

const (
	// Input is Guardrails.Input, checked on the agent's effective input.
	Input Stage = iota
	// Output is Guardrails.Output, checked on the agent's result.
	Output
)

// String returns "Input" or "Output", as the definition spells them.
func (s Stage) String() string {
	if s == Output {
		return "Output"
	}
	return "Input"
}

// Validator asks the agent named agent whether content passes: the set's
// Validator and the Validator of custom and semantic rules. The engine
// implements it by calling that agent with content as its input (the
// content after the rules before it; never modify it). For a semantic
// rule, content is the object
//
//	{"check": "does not give medical advice", "content": …}
//
// holding the rule's Check and the content to judge. The agent answers
//
//	{"valid": true}  or  {"valid": false, "reason": "one line saying why"}
//
// which ParseVerdict decodes. An error (the call failed, or the answer
// is not a verdict) fails the Check with that error wrapped.
type Validator func(ctx context.Context, agent string, content any) (Verdict, error)

// Verdict is a validating agent's answer.
type Verdict struct {
	// Valid is true when the content passes.
	Valid bool
	// Reason says why it does not; it may be empty.
	Reason string
}

// ParseVerdict decodes a validating agent's answer: an object with the
// key "valid" (a boolean) and optionally "reason" (a string), and no
// other key. Anything else is an *asl.Error named Agent.InvalidOutput
// saying what is wrong.
func ParseVerdict(v any) (Verdict, error) {
	m, ok := v.(map[string]any)
	if !ok {
		return Verdict{}, verdictError("got %s", jsonvalue.TypeName(v))
	}
	var vd Verdict
	valid, present := m["valid"]
	if !present {
		return Verdict{}, verdictError(`"valid" is missing`)
	}
	if vd.Valid, ok = valid.(bool); !ok {
		return Verdict{}, verdictError(`"valid" is %s, not a boolean`, jsonvalue.TypeName(valid))
	}
	if reason, present := m["reason"]; present {
		if vd.Reason, ok = reason.(string); !ok {
			return Verdict{}, verdictError(`"reason" is %s, not a string`, jsonvalue.TypeName(reason))
		}
	}
	for k := range m {
		if k != "valid" && k != "reason" {
			return Verdict{}, verdictError("unknown key %q", k)
		}
	}
	return vd, nil
}

func verdictError(format string, args ...any) *asl.Error {
	return asl.Errorf(asl.ErrAgentInvalidOutput,
		`a validator must answer {"valid": boolean, "reason": string}: `+format, args...)
}

// Result is what Check found.
type Result struct {
	// Content is the content after the redact and mask rules: the content
	// given to Check, shared and not copied, when no rule changed it.
	Content any
	// Findings lists what every rule found, in rule order (the set's
	// Validator last), then in document order.
	Findings []Finding
	// Violation is the error the engine raises; nil when the content
	// passes or the set's OnFail is "continue".
	Violation *asl.Error
	// Retry is true on Output when a "retry" rule failed: the engine has
	// the agent regenerate its output (up to the set's MaxRetries times)
	// and raises Violation when it has no retries left.
	Retry bool
}

// Finding is one thing a rule found.
type Finding struct {
	// Rule is the rule's index in the set's Rules, -1 for the set's Validator.
	Rule int
	// Type is the rule's Type, or "validator" for the set's Validator.
	Type string
	// Action is the rule's Action ("block" for the set's Validator).
	Action string
	// Kind is the kind of personal data a pii rule found ("email",
	// "phone", "card", "iban"), empty for other rules.
	Kind string
	// Path is where in the content, like $.a.b[2]; $ for length,
	// custom, semantic and validator findings.
	Path string
	// Excerpt is what was found, masked (j***@example.com, ****1111):
	// never the raw text. It is empty for length, custom, semantic and
	// validator findings.
	Excerpt string
	// Message says what was found in one line, without the path, like
	// "contains an email address".
	Message string
}

// JSON returns the finding as a JSON object with the keys rule, type,
// action, kind, path, excerpt and message, for history events.
func (f Finding) JSON() map[string]any {
	return map[string]any{
		"rule":    jsonvalue.IntNumber(int64(f.Rule)),
		"type":    f.Type,
		"action":  f.Action,
		"kind":    f.Kind,
		"path":    f.Path,
		"excerpt": f.Excerpt,
		"message": f.Message,
	}
}

// Check applies set to content at stage: its Rules in order, then its
// Validator (see the package documentation). A nil set passes everything.
// validate is called for custom and semantic rules and the set's
// Validator; it may be nil when the set has none of them.
//
// The error is only for a validator that could not answer (validate
// returned an error, or was needed and nil); rule failures are in the
// Result.
func Check(ctx context.Context, set *states.GuardrailSet, stage Stage, content any, validate Validator) (*Result, error) {
	res := &Result{Content: content}
	if set == nil {
		return res, nil
	}
	c := checker{set: set, stage: stage, res: res, raise: set.OnFail != "continue"}
	for i := range set.Rules {
		r := &set.Rules[i]
		start := len(res.Findings)
		var n int
		var err error
		switch r.Type {
		case "length":
			n = c.length(i, r)
		case "custom":
			n, err = c.validator(ctx, i, r.Type, r.Action, r.Validator, validate, nil)
		case "semantic":
			agent := r.Validator
			if agent == "" {
				agent = set.Validator
			}
			n, err = c.validator(ctx, i, r.Type, r.Action, agent, validate, r)
		default:
			n = c.scan(i, r)
		}
		if err != nil {
			return nil, err
		}
		if n > 0 && c.fail(i, r.Type, r.Action, res.Findings[start], n) {
			return res, nil
		}
	}
	if set.Validator != "" {
		start := len(res.Findings)
		n, err := c.validator(ctx, -1, "validator", "block", set.Validator, validate, nil)
		if err != nil {
			return nil, err
		}
		if n > 0 {
			c.fail(-1, "validator", "block", res.Findings[start], n)
		}
	}
	return res, nil
}

// checker holds one Check's progress.
type checker struct {
	set   *states.GuardrailSet
	stage Stage
	res   *Result
	// raise is true unless OnFail is "continue".
	raise bool
}

// fail handles a failure of rule i, which found n things, first f; it
// returns true when Check must stop.
func (c *checker) fail(i int, typ, action string, f Finding, n int) bool {
	if action != "block" && action != "retry" {
		return false
	}
	if action == "retry" && c.stage == Output {
		c.res.Retry = true
	}
	if !c.raise {
		return false
	}
	cause := fmt.Sprintf("%s at %s: %s", c.ruleName(i, typ), f.Path, f.Message)
	if n > 1 {
		cause += fmt.Sprintf("; %d more findings", n-1)
	}
	c.res.Violation = &asl.Error{Name: c.errorName(typ), Cause: cause}
	return true
}

// ruleName names rule i for causes and errors: Guardrails.Output.Rules[1]
// (pii), or Guardrails.Output.Validator.
func (c *checker) ruleName(i int, typ string) string {
	if i < 0 {
		return fmt.Sprintf("Guardrails.%s.Validator", c.stage)
	}
	return fmt.Sprintf("Guardrails.%s.Rules[%d] (%s)", c.stage, i, typ)
}

// errorName is the error a failure of a rule of type typ raises.
func (c *checker) errorName(typ string) asl.ErrorName {
	switch {
	case c.stage == Input:
		return asl.ErrAgentInvalidInput
	case typ == "length" || typ == "regex":
		return asl.ErrAgentInvalidOutput
	}
	return asl.ErrAgentGuardrailViolation
}

// length applies a length rule to the whole content and returns the
// number of findings (0 or 1).
func (c *checker) length(i int, r *states.GuardrailRule) int {
	n, ok := contentLength(c.res.Content, r.Min, r.Max)
	var msg string
	switch {
	case !ok:
		msg = "content is outside the JSON model, so it has no length"
	case n < r.Min:
		msg = fmt.Sprintf("content is %d characters long, under Min %d", n, r.Min)
	case r.Max > 0 && n > r.Max:
		msg = fmt.Sprintf("content is %d characters long, over Max %d", n, r.Max)
	default:
		return 0
	}
	c.res.Findings = append(c.res.Findings, Finding{Rule: i, Type: r.Type, Action: r.Action, Path: "$", Message: msg})
	return 1
}

// validator asks agent about the content for rule i (-1: the set's
// Validator) and returns the number of findings (0 or 1). semantic is the
// rule when it is a semantic one: the agent then gets {"check": Check,
// "content": content}.
func (c *checker) validator(ctx context.Context, i int, typ, action, agent string, validate Validator, semantic *states.GuardrailRule) (int, error) {
	where := c.ruleName(i, typ)
	if agent == "" {
		return 0, fmt.Errorf("%s: no validator agent is named (the rule's Validator or the set's)", where)
	}
	if validate == nil {
		return 0, fmt.Errorf("validator %q of %s: no validator function was given to check", agent, where)
	}
	if err := ctx.Err(); err != nil {
		return 0, fmt.Errorf("validator %q of %s: %w", agent, where, err)
	}
	content := c.res.Content
	if semantic != nil {
		content = map[string]any{"check": semantic.Check, "content": content}
	}
	vd, err := validate(ctx, agent, content)
	if err != nil {
		return 0, fmt.Errorf("validator %q of %s: %w", agent, where, err)
	}
	if vd.Valid {
		return 0, nil
	}
	msg := fmt.Sprintf("validator %q rejected the content", agent)
	if semantic != nil {
		msg = fmt.Sprintf("validator %q found that the content does not satisfy the check %q", agent, semantic.Check)
	}
	if reason := oneLine(vd.Reason); reason != "" {
		msg += ": " + reason
	}
	c.res.Findings = append(c.res.Findings, Finding{Rule: i, Type: typ, Action: action, Path: "$", Message: msg})
	return 1, nil
}

// contentLength returns the length of v in characters: a string's own,
// or that of its compact JSON text. When the length in bytes already shows
// that it is within [min, max] (max 0: no bound), that is returned without
// writing the text. It is false when v is outside the JSON model.
func contentLength(v any, min, max int64) (int64, bool) {
	if s, ok := v.(string); ok {
		return int64(utf8.RuneCountInString(s)), true
	}
	size := int64(jsonvalue.Size(v))
	if size < 0 {
		return 0, false
	}
	// A character is 1 to 4 bytes long.
	if size/4 >= min && (max == 0 || size <= max) {
		return size, true
	}
	text, err := jsonvalue.Marshal(v)
	if err != nil {
		return 0, false
	}
	return int64(utf8.RuneCount(text)), true
}

// maxReason is how many characters of a validator's reason a message keeps.
const maxReason = 200

// oneLine turns a validator's reason into one line of at most maxReason
// characters.
func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if n := 0; len(s) > maxReason {
		for i := range s {
			if n == maxReason {
				return s[:i] + "…"
			}
			n++
		}
	}
	return s
}
