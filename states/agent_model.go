package states

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strings"

	asl "github.com/aslrun/aslrun"
	"github.com/aslrun/aslrun/jsonata"
	"github.com/aslrun/aslrun/jsonpath"
	"github.com/aslrun/aslrun/jsonvalue"
)

// This file holds the Model and Generation blocks of a Task: which model
// the agent uses, which it falls back to, and the sampling settings it
// generates with. Every type here is immutable after Parse and safe for
// concurrent use.

// The bounds of the Generation fields.
const (
	// MaxGenerationTokens is the largest Generation.MaxTokens.
	MaxGenerationTokens = 1_000_000
	// MaxStopSequences is the most entries Generation.StopSequences holds.
	MaxStopSequences = 4
	// MaxStopSequenceBytes is the longest stop sequence, in bytes.
	MaxStopSequenceBytes = 256
)

// ModelChoice is the Model block of a Task: the model the agent is asked to
// use and the models it falls back to, in order, when a call fails with
// one of FallbackOn.
//
// It is immutable after Parse and safe for concurrent use.
type ModelChoice struct {
	// Preferred names the model tried first; never empty.
	Preferred string
	// Fallback names the models tried next, in order; empty when there is
	// none. No entry repeats or equals Preferred.
	Fallback []string
	// FallbackOn lists the errors that move on to the next model, as full
	// names ("States.Timeout", "Agent.ModelError"): the names written bare
	// in the definition are normalised. It holds every name of
	// FallbackErrors when Fallback is set without FallbackOn, and is empty
	// when there is no Fallback.
	FallbackOn []asl.ErrorName
}

// Models returns Preferred followed by the Fallback models, in the order
// they are tried. A nil ModelChoice has none.
func (m *ModelChoice) Models() []string {
	if m == nil {
		return nil
	}
	return append([]string{m.Preferred}, m.Fallback...)
}

// FallsBackOn reports whether an error named name moves a call on to the
// next model. A nil ModelChoice never falls back.
func (m *ModelChoice) FallsBackOn(name asl.ErrorName) bool {
	return m != nil && slices.Contains(m.FallbackOn, name)
}

// FallbackErrors returns the errors Model.FallbackOn may name, in the
// order an absent FallbackOn lists them.
func FallbackErrors() []asl.ErrorName {
	return []asl.ErrorName{
		asl.ErrTimeout,
		asl.ErrRateLimitExceeded,
		asl.ErrBudgetExceeded,
		asl.ErrAgentModelError,
		asl.ErrAgentContextOverflow,
	}
}

// bareFallbackErrors maps the bare error names FallbackOn accepts to their
// full names.
var bareFallbackErrors = map[string]asl.ErrorName{
	"Timeout":           asl.ErrTimeout,
	"RateLimitExceeded": asl.ErrRateLimitExceeded,
	"BudgetExceeded":    asl.ErrBudgetExceeded,
	"ModelError":        asl.ErrAgentModelError,
}

// modelNamePattern is the grammar of a model name.
var modelNamePattern = regexp.MustCompile(`^[A-Za-z0-9._:/@-]{1,128}$`)

// Generation is the Generation block of a Task: the sampling settings the
// agent generates with. Each field is either a constant, parsed and checked
// here, or dynamic: a path or intrinsic (Temperature.$ and so on) in a
// JSONPath state, a "{% … %}" expression in a JSONata state, evaluated for
// each call (see Resolve). At most one form of a field is set; a field
// with none is left to the agent.
//
// It is immutable after Parse and safe for concurrent use.
type Generation struct {
	// Temperature is in [0, 2], valid when HasTemperature.
	Temperature    float64
	HasTemperature bool
	// TopP is in [0, 1], valid when HasTopP.
	TopP    float64
	HasTopP bool
	// MaxTokens bounds the generated tokens, in [1, MaxGenerationTokens];
	// 0 when not set.
	MaxTokens int64
	// StopSequences holds 1 to MaxStopSequences distinct, non-empty
	// strings of at most MaxStopSequenceBytes bytes; nil when not set.
	StopSequences []string

	// TemperaturePath, TopPPath, MaxTokensPath and StopSequencesPath are a
	// JSONPath state's Temperature.$, TopP.$, MaxTokens.$ and
	// StopSequences.$, read from the effective input; nil when absent.
	TemperaturePath   *jsonpath.Expr
	TopPPath          *jsonpath.Expr
	MaxTokensPath     *jsonpath.Expr
	StopSequencesPath *jsonpath.Expr

	// TemperatureExpr, TopPExpr, MaxTokensExpr and StopSequencesExpr are
	// a JSONata state's fields given as expressions; nil when literal or
	// absent.
	TemperatureExpr   *jsonata.Template
	TopPExpr          *jsonata.Template
	MaxTokensExpr     *jsonata.Template
	StopSequencesExpr *jsonata.Template
}

// GenerationValues are the sampling settings of one agent call: a
// Generation with its dynamic fields evaluated. A field not set is left to
// the agent.
type GenerationValues struct {
	// Temperature is valid when HasTemperature.
	Temperature    float64
	HasTemperature bool
	// TopP is valid when HasTopP.
	TopP    float64
	HasTopP bool
	// MaxTokens is 0 when not set.
	MaxTokens int64
	// StopSequences is nil when not set.
	StopSequences []string
}

// GenerationEval evaluates one dynamic Generation field for a call. field
// is the field's name ("Temperature", "TopP", "MaxTokens" or
// "StopSequences"); exactly one of path (a JSONPath state's field.$) and
// expr (a JSONata state's expression) is set.
type GenerationEval func(field string, path *jsonpath.Expr, expr *jsonata.Template) (any, error)

// Resolve returns the settings of one call: the constant fields as parsed,
// and each dynamic field's value computed by eval and checked against the
// bounds a constant must meet. An error of eval is returned as it is
// (wrapped with the field's name); a value out of bounds returns a
// *GenerationError. A nil Generation resolves to no settings.
func (g *Generation) Resolve(eval GenerationEval) (GenerationValues, error) {
	var v GenerationValues
	if g == nil {
		return v, nil
	}
	v.Temperature, v.HasTemperature = g.Temperature, g.HasTemperature
	v.TopP, v.HasTopP = g.TopP, g.HasTopP
	v.MaxTokens, v.StopSequences = g.MaxTokens, g.StopSequences
	dynamic := func(field string, path *jsonpath.Expr, expr *jsonata.Template) (any, bool, error) {
		if path == nil && expr == nil {
			return nil, false, nil
		}
		x, err := eval(field, path, expr)
		if err != nil {
			return nil, false, fmt.Errorf("field Generation.%s: %w", field, err)
		}
		return x, true, nil
	}
	x, ok, err := dynamic("Temperature", g.TemperaturePath, g.TemperatureExpr)
	if err != nil {
		return GenerationValues{}, err
	}
	if ok {
		if v.Temperature, err = generationNumber("Temperature", x, 0, 2); err != nil {
			return GenerationValues{}, err
		}
		v.HasTemperature = true
	}
	if x, ok, err = dynamic("TopP", g.TopPPath, g.TopPExpr); err != nil {
		return GenerationValues{}, err
	}
	if ok {
		if v.TopP, err = generationNumber("TopP", x, 0, 1); err != nil {
			return GenerationValues{}, err
		}
		v.HasTopP = true
	}
	if x, ok, err = dynamic("MaxTokens", g.MaxTokensPath, g.MaxTokensExpr); err != nil {
		return GenerationValues{}, err
	}
	if ok {
		if v.MaxTokens, err = generationInteger("MaxTokens", x, 1, MaxGenerationTokens); err != nil {
			return GenerationValues{}, err
		}
	}
	if x, ok, err = dynamic("StopSequences", g.StopSequencesPath, g.StopSequencesExpr); err != nil {
		return GenerationValues{}, err
	}
	if ok {
		if v.StopSequences, err = generationStops(x); err != nil {
			return GenerationValues{}, err
		}
	}
	return v, nil
}

// GenerationError is a dynamic Generation field whose value is out of
// bounds or of the wrong type.
type GenerationError struct {
	// Field is the field's name, like "Temperature".
	Field string
	// Value is the value the field computed.
	Value any
	// Msg says what the value should have been.
	Msg string
}

// Error returns "Generation.<Field> <Msg>, not <Value as JSON>".
func (e *GenerationError) Error() string {
	js, err := jsonvalue.Marshal(e.Value)
	if err != nil {
		js = []byte(jsonvalue.TypeName(e.Value))
	}
	return fmt.Sprintf("Generation.%s %s, not %s", e.Field, e.Msg, clip(string(js)))
}

// errGenerationNumber marks a value that is not a finite number.
var errGenerationNumber = errors.New("not a number")

// generationFloat returns x as a float64 when it is a JSON number.
func generationFloat(x any) (float64, error) {
	var f float64
	switch n := x.(type) {
	case json.Number:
		var ok bool
		if f, ok = jsonvalue.Float64(n); !ok {
			return 0, errGenerationNumber
		}
	case float64:
		f = n
	case int:
		f = float64(n)
	case int64:
		f = float64(n)
	default:
		return 0, errGenerationNumber
	}
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, errGenerationNumber
	}
	return f, nil
}

func generationNumber(field string, x any, min, max float64) (float64, error) {
	f, err := generationFloat(x)
	if err != nil || f < min || f > max {
		return 0, &GenerationError{Field: field, Value: x, Msg: fmt.Sprintf("must be a number between %g and %g", min, max)}
	}
	return f, nil
}

func generationInteger(field string, x any, min, max int64) (int64, error) {
	bad := &GenerationError{Field: field, Value: x, Msg: fmt.Sprintf("must be an integer between %d and %d", min, max)}
	var i int64
	switch n := x.(type) {
	case json.Number:
		var ok bool
		if i, ok = jsonvalue.Int64(n); !ok {
			return 0, bad
		}
	case int:
		i = int64(n)
	case int64:
		i = n
	case float64:
		if n != math.Trunc(n) || n < float64(min) || n > float64(max) {
			return 0, bad
		}
		i = int64(n)
	default:
		return 0, bad
	}
	if i < min || i > max {
		return 0, bad
	}
	return i, nil
}

func generationStops(x any) ([]string, error) {
	bad := &GenerationError{Field: "StopSequences", Value: x, Msg: fmt.Sprintf("must be an array of 1 to %d distinct, non-empty strings of at most %d bytes", MaxStopSequences, MaxStopSequenceBytes)}
	arr, ok := x.([]any)
	if !ok || len(arr) == 0 || len(arr) > MaxStopSequences {
		return nil, bad
	}
	out := make([]string, 0, len(arr))
	for _, e := range arr {
		s, ok := e.(string)
		if !ok || s == "" || len(s) > MaxStopSequenceBytes || slices.Contains(out, s) {
			return nil, bad
		}
		out = append(out, s)
	}
	return out, nil
}

// modelUnsupported are the dynamic forms of the Model fields: model names
// are fixed in the definition.
var modelUnsupported = []string{"Preferred.$", "Fallback.$", "FallbackOn.$"}

func (p *parser) model(o *object, key string) *ModelChoice {
	mo, _ := o.child(key, key)
	if mo == nil {
		return nil
	}
	defer mo.done(key)
	mo.unsupported(key+" (model names are written in the definition)", modelUnsupported...)
	m := &ModelChoice{}
	if s, ok := mo.name("Preferred", true); ok && p.modelName(mo, mo.at("Preferred"), "Preferred", s) {
		m.Preferred = s
	}
	m.Fallback = p.fallbackModels(mo, m.Preferred)
	_, hasFallback := mo.m["Fallback"]
	if _, ok := mo.m["FallbackOn"]; ok && !hasFallback {
		mo.errorf("FallbackOn", "FallbackOn needs a Fallback model to fall back to")
	}
	m.FallbackOn = p.fallbackOn(mo)
	if hasFallback && m.FallbackOn == nil {
		if _, ok := mo.m["FallbackOn"]; !ok {
			m.FallbackOn = FallbackErrors()
		}
	}
	return m
}

// modelName reports, at ptr, a model name s (written as what) that does
// not follow the grammar, and returns whether it does.
func (p *parser) modelName(o *object, ptr, what, s string) bool {
	if modelNamePattern.MatchString(s) {
		return true
	}
	if jsonata.IsExpression(s) || strings.HasPrefix(s, "$") {
		p.errorf(ptr, o.state, "%s must be a model name, not an expression or path: model names are written in the definition", what)
		return false
	}
	p.errorf(ptr, o.state, "%s must be a model name (1 to 128 letters, digits or -_.:/@), not %q", what, clip(s))
	return false
}

// fallbackModels reads Model.Fallback: one model name or a non-empty array
// of them, none repeated and none equal to preferred.
func (p *parser) fallbackModels(mo *object, preferred string) []string {
	v, ok := mo.get("Fallback")
	if !ok {
		return nil
	}
	ptr := mo.at("Fallback")
	var items []any
	var ptrs, whats []string
	switch x := v.(type) {
	case string:
		items, ptrs, whats = []any{x}, []string{ptr}, []string{"Fallback"}
	case []any:
		if len(x) == 0 {
			mo.errorf("Fallback", "Fallback must name at least one model")
			return nil
		}
		items = x
		for i := range x {
			ptrs = append(ptrs, fmt.Sprintf("%s/%d", ptr, i))
			whats = append(whats, fmt.Sprintf("Fallback[%d]", i))
		}
	default:
		mo.errorf("Fallback", "Fallback must be a model name or an array of model names, not %s", jsonvalue.TypeName(v))
		return nil
	}
	var out []string
	for i, item := range items {
		s, isStr := item.(string)
		switch {
		case !isStr:
			p.errorf(ptrs[i], mo.state, "%s must be a model name, not %s", whats[i], jsonvalue.TypeName(item))
		case !p.modelName(mo, ptrs[i], whats[i], s):
		case s == preferred:
			p.errorf(ptrs[i], mo.state, "%s is %q, the Preferred model: a fallback must be another model", whats[i], s)
		case slices.Contains(out, s):
			p.errorf(ptrs[i], mo.state, "Fallback lists %q more than once", s)
		default:
			out = append(out, s)
		}
	}
	return out
}

// fallbackOn reads Model.FallbackOn: a non-empty array of the error names
// of FallbackErrors, full or bare, returned normalised. It returns nil when
// the field is absent or wrong as a whole.
func (p *parser) fallbackOn(mo *object) []asl.ErrorName {
	v, ok := mo.get("FallbackOn")
	if !ok {
		return nil
	}
	arr, isArr := v.([]any)
	switch {
	case !isArr:
		mo.errorf("FallbackOn", "FallbackOn must be an array of error names, not %s", jsonvalue.TypeName(v))
		return nil
	case len(arr) == 0:
		mo.errorf("FallbackOn", "FallbackOn must list at least one error name")
		return nil
	}
	allowed := FallbackErrors()
	out := make([]asl.ErrorName, 0, len(arr))
	for i, e := range arr {
		ptr := fmt.Sprintf("%s/%d", mo.at("FallbackOn"), i)
		s, isStr := e.(string)
		if !isStr {
			p.errorf(ptr, mo.state, "FallbackOn[%d] must be an error name, not %s", i, jsonvalue.TypeName(e))
			continue
		}
		name, bare := bareFallbackErrors[s]
		if !bare {
			name = asl.ErrorName(s)
		}
		switch {
		case !slices.Contains(allowed, name):
			p.errorf(ptr, mo.state, "FallbackOn[%d] must be %s, not %q", i, fallbackNames(), clip(s))
		case slices.Contains(out, name):
			p.errorf(ptr, mo.state, "FallbackOn lists %q more than once", name)
		default:
			out = append(out, name)
		}
	}
	return out
}

// fallbackNames lists the names FallbackOn accepts, for a message.
func fallbackNames() string {
	var names []string
	for _, n := range FallbackErrors() {
		names = append(names, string(n))
	}
	return orList(names) + " (States. and Agent. may be left out, except for Agent.ContextOverflow)"
}

// generationFields are the fields of a Generation block.
var generationFields = []string{"Temperature", "TopP", "MaxTokens", "StopSequences"}

func (p *parser) generation(o *object, key string, jsonataState bool) *Generation {
	gen, _ := o.child(key, key)
	if gen == nil {
		return nil
	}
	defer gen.done(key)
	g := &Generation{}
	if jsonataState {
		for _, f := range generationFields {
			if gen.has(f + ".$") {
				gen.errorf(f+".$", `%s.$ is a JSONPath field, not valid on a JSONata state: use %s with a "{%% … %%}" expression`, f, f)
			}
		}
		g.Temperature, g.HasTemperature, g.TemperatureExpr = p.jsonataNumber(gen, "Temperature", 0, 2)
		g.TopP, g.HasTopP, g.TopPExpr = p.jsonataNumber(gen, "TopP", 0, 1)
		g.MaxTokens, _, g.MaxTokensExpr = p.jsonataInteger(gen, "MaxTokens", 1, MaxGenerationTokens)
		if t, ok := p.jsonataExpr(gen, "StopSequences"); ok {
			g.StopSequencesExpr = t
		} else if s, isStr := gen.m["StopSequences"].(string); isStr {
			gen.used["StopSequences"] = true
			if !p.halfExpressions(gen, "StopSequences", s, gen.at("StopSequences")) {
				gen.errorf("StopSequences", `StopSequences must be an array of strings or a JSONata expression ("{%% … %%}"), not a plain string`)
			}
		} else {
			g.StopSequences = p.stopSequences(gen, true)
		}
		return g
	}
	for _, f := range generationFields {
		gen.exclusive(f, f+".$")
	}
	if !stringNumber(gen, "Temperature", "a number") {
		g.Temperature, g.HasTemperature = gen.number("Temperature", 0, 2)
	}
	g.TemperaturePath = p.expr(gen, "Temperature.$")
	if !stringNumber(gen, "TopP", "a number") {
		g.TopP, g.HasTopP = gen.number("TopP", 0, 1)
	}
	g.TopPPath = p.expr(gen, "TopP.$")
	if !stringNumber(gen, "MaxTokens", "an integer") {
		g.MaxTokens, _ = gen.integer("MaxTokens", 1, MaxGenerationTokens)
	}
	g.MaxTokensPath = p.expr(gen, "MaxTokens.$")
	g.StopSequences = p.stopSequences(gen, false)
	g.StopSequencesPath = p.expr(gen, "StopSequences.$")
	return g
}

// stringNumber reports a numeric Generation field of a JSONPath state
// written as a string (a path or expression meant for key.$), and returns
// whether it did.
func stringNumber(gen *object, key, want string) bool {
	if _, isStr := gen.m[key].(string); !isStr {
		return false
	}
	gen.used[key] = true
	gen.errorf(key, "%s must be %s, not a string: use %s.$ to read it from the input", key, want, key)
	return true
}

// stopSequences reads Generation.StopSequences: 1 to MaxStopSequences
// distinct, non-empty strings of at most MaxStopSequenceBytes bytes. In a
// JSONata state an entry may not be an expression: one expression computes
// the whole field.
func (p *parser) stopSequences(gen *object, jsonataState bool) []string {
	const key = "StopSequences"
	v, present := gen.m[key]
	if !present {
		return nil
	}
	list, ok := gen.strings(key)
	if !ok {
		return nil
	}
	arr, _ := v.([]any)
	if len(arr) == 0 || len(arr) > MaxStopSequences {
		gen.errorf(key, "StopSequences must list 1 to %d strings, not %d", MaxStopSequences, len(arr))
		return nil
	}
	good := true
	for i, s := range list {
		ptr := fmt.Sprintf("%s/%d", gen.at(key), i)
		switch {
		case s == "":
			p.errorf(ptr, gen.state, "StopSequences[%d] must not be empty", i)
		case len(s) > MaxStopSequenceBytes:
			p.errorf(ptr, gen.state, "StopSequences[%d] must be at most %d bytes long, not %d", i, MaxStopSequenceBytes, len(s))
		case jsonataState && jsonata.IsExpression(s):
			p.errorf(ptr, gen.state, `StopSequences[%d] is a JSONata expression: an expression must compute the whole field ("StopSequences": "{%% … %%}")`, i)
		case jsonataState && p.halfExpressions(gen, key, s, ptr):
		case slices.Index(list, s) < i:
			p.errorf(ptr, gen.state, "StopSequences lists %q more than once", clip(s))
		default:
			continue
		}
		good = false
	}
	if !good {
		return nil
	}
	return list
}
