package states

import (
	"reflect"
	"slices"
	"testing"

	"github.com/aslrun/aslrun/jsonvalue"
)

// parseAudit reads block (JSON text) as the Audit block of a Task state T
// at /States/T, and returns what the parser made of it and the problems it
// reported.
func parseAudit(t testing.TB, block string) (*AuditConfig, ErrorList) {
	t.Helper()
	v, err := jsonvalue.Decode([]byte(block))
	if err != nil {
		t.Fatalf("Decode(%q): %v", block, err)
	}
	p := &parser{}
	o := p.newObject(map[string]any{"Type": "Task", "Audit": v}, "/States/T", "T", "a state")
	return p.audit(o), p.errs
}

func TestAuditBlock(t *testing.T) {
	all := []string{MetricLatency, MetricTokens, MetricCost}
	tests := []struct {
		name    string
		block   string
		level   string
		redact  []string
		metrics []string
		trace   bool
	}{
		{"empty", `{}`, AuditStandard, nil, all, true},
		{"everything", `{"LogLevel": "debug", "Redact": ["$.customer.ssn", "$.cards[*].number", "$['odd key']"], "Metrics": ["cost", "latency"], "Trace": false}`,
			AuditDebug, []string{"$.customer.ssn", "$.cards[*].number", "$['odd key']"}, []string{MetricCost, MetricLatency}, false},
		{"minimal", `{"LogLevel": "minimal"}`, AuditMinimal, nil, all, true},
		{"full", `{"LogLevel": "full", "Trace": true}`, AuditFull, nil, all, true},
		{"no metrics", `{"Metrics": []}`, AuditStandard, nil, []string{}, true},
		{"deep path", `{"Redact": ["$..password"]}`, AuditStandard, []string{"$..password"}, all, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, errs := parseAudit(t, tt.block)
			if len(errs) > 0 || a == nil {
				t.Fatalf("audit(%s) = %+v, errors:\n%v", tt.block, a, errs)
			}
			var redact []string
			for _, p := range a.Redact {
				redact = append(redact, p.String())
			}
			if a.LogLevel != tt.level || !reflect.DeepEqual(redact, tt.redact) || !reflect.DeepEqual(a.Metrics, tt.metrics) || a.Trace != tt.trace {
				t.Errorf("audit(%s) = level %q redact %q metrics %q trace %v, want %q %q %q %v",
					tt.block, a.LogLevel, redact, a.Metrics, a.Trace, tt.level, tt.redact, tt.metrics, tt.trace)
			}
			for _, m := range all {
				if a.Measures(m) != slices.Contains(tt.metrics, m) {
					t.Errorf("Measures(%q) = %v", m, a.Measures(m))
				}
			}
			if a.Traced() != tt.trace {
				t.Errorf("Traced() = %v, want %v", a.Traced(), tt.trace)
			}
		})
	}
	var none *AuditConfig
	if !none.Measures(MetricCost) || !none.Traced() {
		t.Error("a Task without Audit is measured and traced")
	}
}

func TestAuditBlockRefused(t *testing.T) {
	const at = "/States/T/Audit"
	tests := []struct {
		name  string
		block string
		want  []string
	}{
		{"not an object", `"full"`, []string{`/States/T/Audit (T): Audit must be an object, not string`}},
		{"unknown level", `{"LogLevel": "verbose"}`,
			[]string{at + `/LogLevel (T): LogLevel must be one of "minimal", "standard", "full" or "debug", not "verbose"`}},
		{"level not a string", `{"LogLevel": 3}`, []string{at + `/LogLevel (T): LogLevel must be a string, not number`}},
		{"trace not a boolean", `{"Trace": "yes"}`, []string{at + `/Trace (T): Trace must be a boolean, not string`}},
		{"metrics not an array", `{"Metrics": "cost"}`, []string{at + `/Metrics (T): Metrics must be an array of strings, not string`}},
		{"unknown metric", `{"Metrics": ["latency", "carbon"]}`,
			[]string{at + `/Metrics/1 (T): Metrics[1] must be one of "latency", "tokens" or "cost", not "carbon"`}},
		{"metric twice", `{"Metrics": ["cost", "cost"]}`, []string{at + `/Metrics/1 (T): Metrics[1]: "cost" is listed twice`}},
		{"redact not an array", `{"Redact": "$.ssn"}`,
			[]string{at + `/Redact (T): Redact must be an array of 1 to 64 JSONPaths (like "$.customer.ssn"), not string`}},
		{"redact empty", `{"Redact": []}`,
			[]string{at + `/Redact (T): Redact must be an array of 1 to 64 JSONPaths (like "$.customer.ssn"), not 0 paths`}},
		{"redact not a string", `{"Redact": [1]}`, []string{at + `/Redact/0 (T): Redact[0] must be a JSONPath string, not number`}},
		{"redact bad path", `{"Redact": ["$.a[", "customer"]}`, []string{
			at + `/Redact/0 (T): Redact[0] is not a valid JSONPath: `,
			at + `/Redact/1 (T): Redact[1] is not a valid JSONPath: `}},
		{"redact context", `{"Redact": ["$$.Execution.Input"]}`,
			[]string{at + `/Redact/0 (T): Redact[0] must name a place in the execution's documents (start with $.), not $$.Execution.Input`}},
		{"redact variable", `{"Redact": ["$token"]}`,
			[]string{at + `/Redact/0 (T): Redact[0] must name a place in the execution's documents (start with $.), not $token`}},
		{"redact everything", `{"Redact": ["$"]}`,
			[]string{at + `/Redact/0 (T): Redact[0] is $, the whole document: name the fields that hold secrets, like $.customer.ssn`}},
		{"redact twice", `{"Redact": ["$.ssn", "$['ssn']"]}`, []string{at + `/Redact/1 (T): Redact[1]: $['ssn'] is listed twice`}},
		{"unknown field", `{"Level": "full"}`, []string{at + `/Level (T): unknown field "Level" in Audit`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, errs := parseAudit(t, tt.block)
			if len(errs) != len(tt.want) {
				t.Fatalf("audit(%s): %d problems, want %d:\n%v", tt.block, len(errs), len(tt.want), errs)
			}
			for i, e := range errs {
				if got := e.Error(); len(got) < len(tt.want[i]) || got[:len(tt.want[i])] != tt.want[i] {
					t.Errorf("problem %d = %q, want it to start with %q", i, got, tt.want[i])
				}
			}
		})
	}
}

func TestRedactPaths(t *testing.T) {
	m, err := Parse([]byte(`{"StartAt": "A", "States": {
	  "A": {"Type": "Task", "Agent": "X", "Audit": {"Redact": ["$.ssn", "$.card"]}, "Next": "M"},
	  "M": {"Type": "Map", "ItemsPath": "$.items", "ItemProcessor": {"StartAt": "B", "States": {
	    "B": {"Type": "Task", "Agent": "Y", "Audit": {"Redact": ["$.card", "$.pin"]}, "End": true}}}, "Next": "C"},
	  "C": {"Type": "Task", "Agent": "Z", "Audit": {"LogLevel": "full"}, "End": true}}}`))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, p := range m.RedactPaths() {
		got = append(got, p.String())
	}
	if want := []string{"$.ssn", "$.card", "$.pin"}; !reflect.DeepEqual(got, want) {
		t.Errorf("RedactPaths() = %q, want %q", got, want)
	}
}
