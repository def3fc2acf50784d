package states

import (
	"errors"
	"strconv"
	"strings"

	"github.com/aslrun/aslrun/jsonata"
	"github.com/aslrun/aslrun/jsonvalue"
)

// downgrade is AWS's message for a JSONPath state or machine in a
// definition whose top-level QueryLanguage is JSONata.
const downgrade = "'QueryLanguage' can not be 'JSONPath' if set to 'JSONata' for whole state machine"

// jsonataStateFields lists the fields each state type accepts in JSONata
// (besides Type, Comment and QueryLanguage). Approval and Debate are not
// there: their fields are JSONPath paths.
var jsonataStateFields = map[string][]string{
	"Pass":       {"Next", "End", "Assign", "Output", "WritePolicy"},
	"Task":       {"Next", "End", "Assign", "Output", "Agent", "Resource", "Credentials", "Arguments", "TimeoutSeconds", "HeartbeatSeconds", "Retry", "Catch", "Tools", "Budget", "Model", "Generation", "Streaming", "WritePolicy", "Feedback", "Metadata", "Audit", "Cache", "Idempotent", "IdempotencyKey", "CacheResult", "CacheTTL"},
	"Choice":     {"Assign", "Output", "Choices", "Default"},
	"Wait":       {"Next", "End", "Assign", "Output", "Seconds", "Timestamp"},
	"Succeed":    {"Output"},
	"Fail":       {"Error", "Cause"},
	"Map":        {"Next", "End", "Assign", "Output", "Items", "ItemSelector", "ItemProcessor", "Iterator", "MaxConcurrency", "ToleratedFailureCount", "ToleratedFailurePercentage", "Label", "ItemReader", "ItemBatcher", "ResultWriter", "Retry", "Catch", "WritePolicy"},
	"Parallel":   {"Next", "End", "Assign", "Output", "Arguments", "Branches", "Retry", "Catch", "WritePolicy"},
	"Checkpoint": {"Next", "End", "Assign", "Output", "Name", "Storage", "TTL"},
	"Workflow":   {"Next", "End", "Assign", "Output", "WorkflowId", "Arguments", "Timeout", "Retry", "Catch", "WritePolicy"},
}

// jsonataOnly are the fields only a JSONata state has.
var jsonataOnly = map[string]bool{"Arguments": true, "Output": true, "Items": true, "Condition": true}

// jsonPathOnly are the fields only a JSONPath state has, with what a
// JSONata state uses instead.
var jsonPathOnly = map[string]string{
	"InputPath":                      "$states.input in Arguments or Output",
	"OutputPath":                     "Output",
	"Parameters":                     "Arguments (ItemSelector on a Map)",
	"Input":                          "Arguments",
	"ResultSelector":                 "Output",
	"ResultPath":                     "Output",
	"Result":                         "Output",
	"ItemsPath":                      "Items",
	"ItemsPath.$":                    "Items",
	"SecondsPath":                    `Seconds with a "{% … %}" expression`,
	"TimestampPath":                  `Timestamp with a "{% … %}" expression`,
	"TimeoutSecondsPath":             `TimeoutSeconds with a "{% … %}" expression`,
	"HeartbeatSecondsPath":           `HeartbeatSeconds with a "{% … %}" expression`,
	"MaxConcurrencyPath":             `MaxConcurrency with a "{% … %}" expression`,
	"ToleratedFailureCountPath":      `ToleratedFailureCount with a "{% … %}" expression`,
	"ToleratedFailurePercentagePath": `ToleratedFailurePercentage with a "{% … %}" expression`,
	"ErrorPath":                      `Error with a "{% … %}" expression`,
	"CausePath":                      `Cause with a "{% … %}" expression`,
	"Error.$":                        `Error with a "{% … %}" expression`,
	"Cause.$":                        `Cause with a "{% … %}" expression`,
	"Variable":                       "Condition",
	"Variable.$":                     "Condition",
	"Memory":                         "Arguments and Assign (Memory reads and writes the document with JSONPath paths)",
	"Context":                        "Arguments (Context windows select with JSONPath paths)",
	"Guardrails":                     "a JSONPath state (Guardrails target JSONPath paths)",
	"Reasoning":                      "a JSONPath state (Reasoning stores its trace at a JSONPath path)",
}

// otherLanguage explains why field is not valid in a state of language
// ql when it belongs to the other language, or returns "".
func otherLanguage(ql, field string) string {
	if ql == JSONata {
		if instead, ok := jsonPathOnly[field]; ok {
			return field + " is a JSONPath field, not valid on a JSONata state: use " + instead
		}
		return ""
	}
	if jsonataOnly[field] {
		return field + ` is a JSONata field, not valid on a JSONPath state: set "QueryLanguage": "JSONata" to use it`
	}
	return ""
}

// jsonataTemplate compiles the value of key, a JSON value whose
// "{% … %}" strings are expressions; every expression that does not compile
// is reported at its own pointer.
func (p *parser) jsonataTemplate(o *object, key string) *jsonata.Template {
	v, ok := o.get(key)
	if !ok {
		return nil
	}
	return p.compileJSONata(o, key, v)
}

func (p *parser) compileJSONata(o *object, key string, v any) *jsonata.Template {
	if p.halfExpressions(o, key, v, o.at(key)) {
		return nil
	}
	t, err := jsonata.CompileTemplate(v, key)
	if err != nil {
		var problems jsonata.Problems
		if !errors.As(err, &problems) {
			o.errorf(key, "%v", err)
			return nil
		}
		for _, pr := range problems {
			p.errorf(o.at(key)+pr.Pointer, o.state, "%s", pr.Msg)
		}
		return nil
	}
	return t
}

// halfExpressions reports, at its own pointer under ptr, every string of
// v (the value of field key, at any depth) that opens an expression with
// "{%" and does not close it with "%}", or closes one it did not open:
// AWS refuses them rather than take them as literal strings. It returns
// whether it found any.
func (p *parser) halfExpressions(o *object, key string, v any, ptr string) bool {
	switch x := v.(type) {
	case string:
		open, closed := strings.HasPrefix(x, "{%"), strings.HasSuffix(x, "%}")
		if jsonata.IsExpression(x) || !open && !closed {
			return false
		}
		switch {
		case open && closed:
			p.errorf(ptr, o.state, `%s: %q is too short to be a JSONata expression ("{%% … %%}")`, key, x)
		case open:
			p.errorf(ptr, o.state, `%s: a JSONata expression must end with "%%}": %q starts with "{%%" but does not end with "%%}"`, key, clip(x))
		default:
			p.errorf(ptr, o.state, `%s: a JSONata expression must start with "{%%": %q ends with "%%}" but does not start with "{%%"`, key, clip(x))
		}
		return true
	case map[string]any:
		found := false
		for _, k := range sortedKeys(x) {
			found = p.halfExpressions(o, key, x[k], ptr+"/"+jsonvalue.EscapePointer(k)) || found
		}
		return found
	case []any:
		found := false
		for i, e := range x {
			found = p.halfExpressions(o, key, e, ptr+"/"+strconv.Itoa(i)) || found
		}
		return found
	}
	return false
}

// clip shortens a long string of a definition for a message.
func clip(s string) string {
	const max = 60
	if r := []rune(s); len(r) > max {
		return string(r[:max]) + "…"
	}
	return s
}

// jsonataExpr compiles the value of key when it is an expression string;
// other values are left to the caller (it returns nil, false).
func (p *parser) jsonataExpr(o *object, key string) (*jsonata.Template, bool) {
	v, ok := o.m[key]
	if !ok {
		return nil, false
	}
	s, isStr := v.(string)
	if !isStr || !jsonata.IsExpression(s) {
		return nil, false
	}
	o.used[key] = true
	return p.compileJSONata(o, key, v), true
}

// jsonataInteger reads a field that is an integer within [min, max] or
// an expression computing one.
func (p *parser) jsonataInteger(o *object, key string, min, max int64) (int64, bool, *jsonata.Template) {
	if t, ok := p.jsonataExpr(o, key); ok {
		return 0, false, t
	}
	if v, ok := o.m[key]; ok {
		if str, isStr := v.(string); isStr {
			o.used[key] = true
			if p.halfExpressions(o, key, str, o.at(key)) {
				return 0, false, nil
			}
			o.errorf(key, `%s must be an integer or a JSONata expression ("{%% … %%}"), not a plain string`, key)
			return 0, false, nil
		}
	}
	n, ok := o.integer(key, min, max)
	return n, ok, nil
}

// jsonataNumber reads a field that is a number within [min, max] or an
// expression computing one.
func (p *parser) jsonataNumber(o *object, key string, min, max float64) (float64, bool, *jsonata.Template) {
	if t, ok := p.jsonataExpr(o, key); ok {
		return 0, false, t
	}
	if v, ok := o.m[key]; ok {
		if str, isStr := v.(string); isStr {
			o.used[key] = true
			if p.halfExpressions(o, key, str, o.at(key)) {
				return 0, false, nil
			}
			o.errorf(key, `%s must be a number or a JSONata expression ("{%% … %%}"), not a plain string`, key)
			return 0, false, nil
		}
	}
	f, ok := o.number(key, min, max)
	return f, ok, nil
}

// jsonataAssign reads a JSONata Assign block: an object whose keys are
// variable names and whose values are templates.
func (p *parser) jsonataAssign(o *object, key string) *jsonata.Template {
	m, ok := assignBlock(o, key)
	if !ok {
		return nil
	}
	for _, k := range sortedKeys(m) {
		p.variableName(o, key, k, k)
		if k == "states" {
			p.errorf(o.at(key)+"/"+jsonvalue.EscapePointer(k), o.state, "the variable name \"states\" is reserved: $states holds the state's input, result, error output and context")
		}
	}
	return p.jsonataTemplate(o, key)
}

// jsonataState reads the type-specific fields of a JSONata state (the
// common ones are in c).
func (p *parser) jsonataState(o *object, c Common) State {
	switch c.Type {
	case "Pass":
		return &Pass{Common: c}
	case "Succeed":
		return &Succeed{Common: c}
	case "Task":
		return p.jsonataTask(o, c)
	case "Choice":
		return p.jsonataChoice(o, c)
	case "Wait":
		return p.jsonataWait(o, c)
	case "Fail":
		return p.jsonataFail(o, c)
	case "Map":
		return p.jsonataMap(o, c)
	case "Parallel":
		return p.jsonataParallel(o, c)
	case "Checkpoint":
		return p.checkpoint(o, c)
	case "Workflow":
		return p.jsonataWorkflow(o, c)
	}
	return nil
}

func (p *parser) jsonataTask(o *object, c Common) *Task {
	s := &Task{Common: c}
	p.taskTarget(o, s, "Arguments")
	if v, ok := p.credentials(o, true); ok {
		s.CredentialsJSONata = p.compileJSONata(o, "Credentials", v)
	}
	s.Arguments = p.jsonataTemplate(o, "Arguments")
	s.TimeoutSeconds, _, s.TimeoutSecondsExpr = p.jsonataInteger(o, "TimeoutSeconds", 1, MaxTimeoutSeconds)
	s.HeartbeatSeconds, _, s.HeartbeatSecondsExpr = p.jsonataInteger(o, "HeartbeatSeconds", 1, MaxTimeoutSeconds)
	if s.HeartbeatSeconds > 0 && s.TimeoutSeconds > 0 && s.HeartbeatSeconds >= s.TimeoutSeconds {
		o.errorf("HeartbeatSeconds", "HeartbeatSeconds must be smaller than TimeoutSeconds")
	}
	s.Retry = p.retry(o)
	s.Catch = p.catch(o, true)
	s.Tools = p.tools(o, "Tools")
	s.Budget = p.budget(o, "Budget")
	s.Model = p.model(o, "Model")
	s.Generation = p.generation(o, "Generation", true)
	s.Streaming = p.streaming(o)
	s.Feedback = p.taskFeedback(o)
	s.Audit = p.audit(o)
	s.Cache = p.taskCache(o, true)
	if v, ok := o.m["Metadata"]; ok {
		if _, isObj := v.(map[string]any); !isObj {
			o.errorf("Metadata", "Metadata must be an object (its strings may be \"{%% … %%}\" expressions), not %s", jsonvalue.TypeName(v))
		} else {
			s.MetadataJSONata = p.jsonataTemplate(o, "Metadata")
		}
	}
	return s
}

func (p *parser) jsonataChoice(o *object, c Common) *Choice {
	s := &Choice{Common: c}
	arr := p.choices(o)
	for i, v := range arr {
		ro := p.newObject(v, o.at("Choices")+"/"+strconv.Itoa(i), o.state, "a choice rule")
		if ro == nil {
			continue
		}
		r := ChoiceRule{}
		r.Next, _ = ro.requiredStr("Next")
		r.AssignJSONata = p.jsonataAssign(ro, "Assign")
		r.Output = p.jsonataTemplate(ro, "Output")
		ro.has("Comment")
		switch cond, ok := ro.get("Condition"); {
		case !ok:
			ro.errorf("", "missing required field Condition")
		default:
			if s, isStr := cond.(string); isStr && jsonata.IsExpression(s) {
				r.ConditionExpr = p.compileJSONata(ro, "Condition", cond)
			} else if _, isBool := cond.(bool); isBool {
				r.ConditionExpr = p.compileJSONata(ro, "Condition", cond)
			} else if !(isStr && p.halfExpressions(ro, "Condition", s, ro.at("Condition"))) {
				ro.errorf("Condition", `Condition must be a boolean or a JSONata expression ("{%% … %%}"), not %s`, jsonvalue.TypeName(cond))
			}
		}
		for _, k := range sortedKeys(ro.m) {
			if ro.used[k] {
				continue
			}
			if msg := otherLanguage(JSONata, k); msg != "" || isOperator(k) || k == "And" || k == "Or" || k == "Not" {
				ro.used[k] = true
				if msg == "" {
					msg = k + " is a JSONPath choice rule field, not valid on a JSONata state: use Condition"
				}
				ro.errorf(k, "%s", msg)
			}
		}
		ro.done("a choice rule")
		s.Choices = append(s.Choices, r)
	}
	s.Default, _ = o.str("Default")
	return s
}

func (p *parser) jsonataWait(o *object, c Common) *Wait {
	s := &Wait{Common: c}
	_, hasSeconds := o.m["Seconds"]
	_, hasTimestamp := o.m["Timestamp"]
	if hasSeconds == hasTimestamp {
		o.errorf("", "a JSONata Wait state needs exactly one of Seconds or Timestamp")
	}
	s.Seconds, s.HasSeconds, s.SecondsExpr = p.jsonataInteger(o, "Seconds", 0, MaxTimeoutSeconds)
	if t, ok := p.jsonataExpr(o, "Timestamp"); ok {
		s.TimestampExpr = t
	} else if ts, ok := o.str("Timestamp"); ok && !p.halfExpressions(o, "Timestamp", ts, o.at("Timestamp")) {
		t, valid := ParseTimestamp(ts)
		if !valid {
			o.errorf("Timestamp", "String does not match RFC3339 timestamp: %q", ts)
		}
		s.Timestamp = t
	}
	return s
}

func (p *parser) jsonataFail(o *object, c Common) *Fail {
	s := &Fail{Common: c}
	if t, ok := p.jsonataExpr(o, "Error"); ok {
		s.ErrorExpr = t
	} else if str, ok := o.str("Error"); ok && !p.halfExpressions(o, "Error", str, o.at("Error")) {
		s.Error = str
	}
	if t, ok := p.jsonataExpr(o, "Cause"); ok {
		s.CauseExpr = t
	} else if str, ok := o.str("Cause"); ok && !p.halfExpressions(o, "Cause", str, o.at("Cause")) {
		s.Cause = str
	}
	return s
}

func (p *parser) jsonataMap(o *object, c Common) *Map {
	s := &Map{Common: c, Mode: "INLINE"}
	if v, ok := o.m["Items"]; ok {
		str, isStr := v.(string)
		_, isArr := v.([]any)
		switch {
		case isStr && jsonata.IsExpression(str), isArr:
			s.Items = p.jsonataTemplate(o, "Items")
		case isStr && p.halfExpressions(o, "Items", str, o.at("Items")):
			o.used["Items"] = true
		default:
			o.used["Items"] = true
			o.errorf("Items", `Items must be an array or a JSONata expression ("{%% … %%}"), not %s`, jsonvalue.TypeName(v))
		}
	}
	s.ItemSelectorJSONata = p.jsonataTemplate(o, "ItemSelector")
	p.processor(o, s)
	s.MaxConcurrency, _, s.MaxConcurrencyExpr = p.jsonataInteger(o, "MaxConcurrency", 0, 1<<31-1)
	s.ToleratedFailureCount, s.HasToleratedFailureCount, s.ToleratedFailureCountExpr = p.jsonataInteger(o, "ToleratedFailureCount", 0, 1<<31-1)
	if t, ok := p.jsonataExpr(o, "ToleratedFailurePercentage"); ok {
		s.ToleratedFailurePercentageExpr = t
	} else {
		s.ToleratedFailurePercentage, s.HasToleratedFailurePercentage = o.number("ToleratedFailurePercentage", 0, 100)
	}
	s.Label, _ = o.str("Label")
	p.distributed(o, s)
	s.Retry = p.retry(o)
	s.Catch = p.catch(o, true)
	return s
}

func (p *parser) jsonataParallel(o *object, c Common) *Parallel {
	s := &Parallel{Common: c}
	s.Branches = p.branches(o)
	s.Arguments = p.jsonataTemplate(o, "Arguments")
	s.Retry = p.retry(o)
	s.Catch = p.catch(o, true)
	return s
}
