package states

import (
	"fmt"
	"slices"

	"github.com/aslrun/aslrun/jsonpath"
	"github.com/aslrun/aslrun/jsonvalue"
)

// Audit levels: how much a state's log lines say (Audit.LogLevel).
const (
	AuditMinimal  = "minimal"
	AuditStandard = "standard"
	AuditFull     = "full"
	AuditDebug    = "debug"
)

// Audit metrics: what a state exports (Audit.Metrics).
const (
	MetricLatency = "latency"
	MetricTokens  = "tokens"
	MetricCost    = "cost"
)

// maxRedactPaths bounds a state's Redact list.
const maxRedactPaths = 64

// AuditConfig is a Task's Audit block: what of the state is logged,
// measured, traced, and which values never reach the store in plain text.
//
// It is immutable after Parse and safe for concurrent use.
type AuditConfig struct {
	// LogLevel is AuditMinimal, AuditStandard (the default), AuditFull or
	// AuditDebug.
	LogLevel string
	// Redact are the paths whose values are secrets of the execution (see
	// Machine.RedactPaths); nil when none.
	Redact []*jsonpath.Path
	// Metrics are the measures the state exports, of MetricLatency,
	// MetricTokens and MetricCost; all three when not given, none for [].
	Metrics []string
	// Trace is false when the state gets no span of its own.
	Trace bool
}

// Measures reports whether the state exports metric m.
func (a *AuditConfig) Measures(m string) bool {
	return a == nil || slices.Contains(a.Metrics, m)
}

// Traced reports whether the state gets a span.
func (a *AuditConfig) Traced() bool { return a == nil || a.Trace }

// audit reads a Task's Audit block.
func (p *parser) audit(o *object) *AuditConfig {
	const key = "Audit"
	ao, _ := o.child(key, key)
	if ao == nil {
		return nil
	}
	defer ao.done(key)
	a := &AuditConfig{LogLevel: AuditStandard, Trace: true, Metrics: []string{MetricLatency, MetricTokens, MetricCost}}
	if s, ok := ao.oneOf("LogLevel", AuditMinimal, AuditStandard, AuditFull, AuditDebug); ok {
		a.LogLevel = s
	}
	if b, ok := ao.boolean("Trace"); ok {
		a.Trace = b
	}
	if list, ok := ao.strings("Metrics"); ok {
		a.Metrics = []string{}
		for i, m := range list {
			at := fmt.Sprintf("%s/%d", ao.at("Metrics"), i)
			switch {
			case m != MetricLatency && m != MetricTokens && m != MetricCost:
				p.errorf(at, ao.state, "Metrics[%d] must be one of %s, not %q", i, quoteList([]string{MetricLatency, MetricTokens, MetricCost}), m)
			case slices.Contains(a.Metrics, m):
				p.errorf(at, ao.state, "Metrics[%d]: %q is listed twice", i, m)
			default:
				a.Metrics = append(a.Metrics, m)
			}
		}
	}
	a.Redact = p.redactPaths(ao)
	return a
}

// redactPaths reads Audit.Redact: 1 to maxRedactPaths JSONPaths on the
// state's documents, none of them the whole document.
func (p *parser) redactPaths(ao *object) []*jsonpath.Path {
	v, ok := ao.get("Redact")
	if !ok {
		return nil
	}
	list, isArr := v.([]any)
	if !isArr || len(list) == 0 || len(list) > maxRedactPaths {
		what := jsonvalue.TypeName(v)
		if isArr {
			what = fmt.Sprintf("%d paths", len(list))
		}
		ao.errorf("Redact", "Redact must be an array of 1 to %d JSONPaths (like \"$.customer.ssn\"), not %s", maxRedactPaths, what)
		return nil
	}
	var out []*jsonpath.Path
	seen := make(map[string]bool, len(list))
	for i, e := range list {
		at := fmt.Sprintf("%s/%d", ao.at("Redact"), i)
		s, isStr := e.(string)
		if !isStr {
			p.errorf(at, ao.state, "Redact[%d] must be a JSONPath string, not %s", i, jsonvalue.TypeName(e))
			continue
		}
		path, err := jsonpath.Compile(s)
		written := s
		if err == nil {
			if l, definite := path.Steps(); definite {
				written = l.String()
			}
		}
		switch {
		case err != nil:
			p.errorf(at, ao.state, "Redact[%d] is not a valid JSONPath: %s", i, errText(err))
		case path.IsContext() || path.Variable() != "":
			p.errorf(at, ao.state, "Redact[%d] must name a place in the execution's documents (start with $.), not %s", i, s)
		case s == "$":
			p.errorf(at, ao.state, "Redact[%d] is $, the whole document: name the fields that hold secrets, like $.customer.ssn", i)
		case seen[written]:
			p.errorf(at, ao.state, "Redact[%d]: %s is listed twice", i, s)
		default:
			seen[written] = true
			out = append(out, path)
		}
	}
	return out
}

// RedactPaths returns the Audit.Redact paths of every Task of m, nested
// machines (Map iterators, Parallel branches) included, each once in the
// order met (state names in order, a nested machine's after the state
// that holds it). An execution applies all of them to every document it
// records: the values they select are its secrets. Never modify it.
func (m *Machine) RedactPaths() []*jsonpath.Path {
	if m == nil {
		return nil
	}
	return m.redact
}

func (m *Machine) collectRedactPaths() []*jsonpath.Path {
	var out []*jsonpath.Path
	seen := map[string]bool{}
	m.Each(func(_, _ string, s State) bool {
		if t, ok := s.(*Task); ok && t.Audit != nil {
			for _, p := range t.Audit.Redact {
				if !seen[p.String()] {
					seen[p.String()] = true
					out = append(out, p)
				}
			}
		}
		return true
	})
	return out
}
