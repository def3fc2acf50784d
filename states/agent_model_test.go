package states

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	asl "github.com/aslrun/aslrun"
	"github.com/aslrun/aslrun/jsonata"
	"github.com/aslrun/aslrun/jsonpath"
)

func TestModelCompiled(t *testing.T) {
	m := parseFile(t, "agent-model-generation.json")
	all := FallbackErrors()
	tests := []struct {
		state      string
		preferred  string
		fallback   []string
		fallbackOn []asl.ErrorName
	}{
		{"Full", "gpt-4o", []string{"claude-3-5-sonnet@20240620", "openrouter/meta-llama/llama-3.1-70b:free"}, all},
		{"Defaults", "small.model_v2", []string{"large-model"}, all},
		{"PreferredOnly", "local", nil, nil},
		{"JSONata", "gpt-4o-mini", []string{"gpt-4o"}, []asl.ErrorName{asl.ErrAgentModelError}},
	}
	for _, tt := range tests {
		t.Run(tt.state, func(t *testing.T) {
			got := state[*Task](t, m, tt.state).Model
			if got == nil {
				t.Fatal("Model = nil")
			}
			if got.Preferred != tt.preferred || !slices.Equal(got.Fallback, tt.fallback) || !slices.Equal(got.FallbackOn, tt.fallbackOn) {
				t.Errorf("Model = %+v, want Preferred %q, Fallback %q, FallbackOn %q", got, tt.preferred, tt.fallback, tt.fallbackOn)
			}
			if want := append([]string{tt.preferred}, tt.fallback...); !slices.Equal(got.Models(), want) {
				t.Errorf("Models() = %q, want %q", got.Models(), want)
			}
		})
	}
	if got := state[*Task](t, m, "Dynamic").Model; got != nil {
		t.Errorf("Model of a Task without one = %+v, want nil", got)
	}
}

func TestModelChoiceFallsBackOn(t *testing.T) {
	def := `{"StartAt":"T","States":{"T":{"Type":"Task","Agent":"A","End":true,
	  "Model":{"Preferred":"a","Fallback":"b","FallbackOn":["RateLimitExceeded","Agent.ContextOverflow"]}}}}`
	mc := mustParse(t, def).States["T"].(*Task).Model
	for _, tt := range []struct {
		name asl.ErrorName
		want bool
	}{
		{asl.ErrRateLimitExceeded, true},
		{asl.ErrAgentContextOverflow, true},
		{"RateLimitExceeded", false}, // names are normalised at parse time
		{asl.ErrTimeout, false},
		{asl.ErrTaskFailed, false},
	} {
		if got := mc.FallsBackOn(tt.name); got != tt.want {
			t.Errorf("FallsBackOn(%q) = %v, want %v", tt.name, got, tt.want)
		}
	}
	var none *ModelChoice
	if none.FallsBackOn(asl.ErrTimeout) || none.Models() != nil {
		t.Errorf("a nil ModelChoice falls back or has models")
	}
}

func mustParse(t *testing.T, def string) *Machine {
	t.Helper()
	m, err := Parse([]byte(def))
	if err != nil {
		t.Fatalf("Parse(%s): %v", def, err)
	}
	return m
}

func TestGenerationCompiled(t *testing.T) {
	m := parseFile(t, "agent-model-generation.json")

	full := state[*Task](t, m, "Full").Generation
	if !full.HasTemperature || full.Temperature != 0.7 || !full.HasTopP || full.TopP != 0.95 || full.MaxTokens != 4096 ||
		!slices.Equal(full.StopSequences, []string{"\n\nHuman:", "END"}) {
		t.Errorf("Full Generation = %+v", full)
	}
	if g := state[*Task](t, m, "Defaults").Generation; g == nil || g.HasTemperature || g.HasTopP || g.MaxTokens != 0 || g.StopSequences != nil {
		t.Errorf("empty Generation = %+v, want nothing set", g)
	}
	zero := state[*Task](t, m, "PreferredOnly").Generation
	if !zero.HasTemperature || zero.Temperature != 0 || !zero.HasTopP || zero.TopP != 1 || zero.MaxTokens != MaxGenerationTokens {
		t.Errorf("bounds Generation = %+v, want Temperature 0, TopP 1, MaxTokens %d", zero, MaxGenerationTokens)
	}

	dyn := state[*Task](t, m, "Dynamic").Generation
	paths := map[string]*jsonpath.Expr{
		"$.settings.temperature":        dyn.TemperaturePath,
		"$$.Execution.Input.topP":       dyn.TopPPath,
		"States.MathAdd($.budget, 100)": dyn.MaxTokensPath,
		"$.stops":                       dyn.StopSequencesPath,
	}
	for want, got := range paths {
		if got == nil || got.String() != want {
			t.Errorf("dynamic field = %v, want %s", got, want)
		}
	}
	if dyn.HasTemperature || dyn.HasTopP || dyn.MaxTokens != 0 || dyn.StopSequences != nil {
		t.Errorf("dynamic Generation has constants: %+v", dyn)
	}

	ja := state[*Task](t, m, "JSONata").Generation
	if ja.TemperatureExpr == nil || ja.MaxTokensExpr == nil || ja.StopSequencesExpr == nil || ja.TopPExpr != nil || !ja.HasTopP || ja.TopP != 0.5 {
		t.Errorf("JSONata Generation = %+v, want Temperature, MaxTokens and StopSequences expressions, TopP 0.5", ja)
	}
	if ja.TemperaturePath != nil || ja.MaxTokensPath != nil {
		t.Errorf("JSONata Generation has paths: %+v", ja)
	}
	if g := state[*Task](t, m, "JSONataConstants").Generation; g.Temperature != 2 || g.TopP != 0 || !g.HasTopP || g.MaxTokens != 1 || len(g.StopSequences) != MaxStopSequences {
		t.Errorf("JSONata constants = %+v", g)
	}
}

// TestModelGenerationProblems checks which definitions are accepted, and
// the pointer of every problem of the others.
func TestModelGenerationProblems(t *testing.T) {
	task := func(fields string) string {
		return `{"StartAt":"T","States":{"T":{"Type":"Task","Agent":"A","End":true,` + fields + `}}}`
	}
	jsonataTask := func(fields string) string {
		return `{"QueryLanguage":"JSONata","StartAt":"T","States":{"T":{"Type":"Task","Agent":"A","End":true,` + fields + `}}}`
	}
	long := strings.Repeat("x", 128)
	tests := []struct {
		name string
		def  string
		want []string // pointer (state) of each problem; nil: the definition parses
	}{
		{"preferred only", task(`"Model":{"Preferred":"gpt-4o"}`), nil},
		{"name of 128 characters", task(`"Model":{"Preferred":"` + long + `"}`), nil},
		{"name of 129 characters", task(`"Model":{"Preferred":"` + long + `x"}`), []string{"/States/T/Model/Preferred (T)"}},
		{"name punctuation", task(`"Model":{"Preferred":"org/model-1.5_b:latest@v2"}`), nil},
		{"name with a space", task(`"Model":{"Preferred":"gpt 4"}`), []string{"/States/T/Model/Preferred (T)"}},
		{"name not ASCII", task(`"Model":{"Preferred":"modèle"}`), []string{"/States/T/Model/Preferred (T)"}},
		{"name as a path", task(`"Model":{"Preferred":"$.model"}`), []string{"/States/T/Model/Preferred (T)"}},
		{"missing preferred", task(`"Model":{"Fallback":"b"}`), []string{"/States/T/Model (T)"}},
		{"fallback string", task(`"Model":{"Preferred":"a","Fallback":"b"}`), nil},
		{"fallback array", task(`"Model":{"Preferred":"a","Fallback":["b","c"],"FallbackOn":["Timeout"]}`), nil},
		{"fallback repeats", task(`"Model":{"Preferred":"a","Fallback":["b","c","b"]}`), []string{"/States/T/Model/Fallback/2 (T)"}},
		{"fallback is preferred", task(`"Model":{"Preferred":"a","Fallback":["b","a"]}`), []string{"/States/T/Model/Fallback/1 (T)"}},
		{"fallback empty", task(`"Model":{"Preferred":"a","Fallback":[]}`), []string{"/States/T/Model/Fallback (T)"}},
		{"fallback number", task(`"Model":{"Preferred":"a","Fallback":1}`), []string{"/States/T/Model/Fallback (T)"}},
		{"fallbackOn full names", task(`"Model":{"Preferred":"a","Fallback":"b","FallbackOn":["States.Timeout","States.RateLimitExceeded","States.BudgetExceeded","Agent.ModelError","Agent.ContextOverflow"]}`), nil},
		{"fallbackOn bare names", task(`"Model":{"Preferred":"a","Fallback":"b","FallbackOn":["Timeout","RateLimitExceeded","BudgetExceeded","ModelError"]}`), nil},
		{"fallbackOn without fallback", task(`"Model":{"Preferred":"a","FallbackOn":["Timeout"]}`), []string{"/States/T/Model/FallbackOn (T)"}},
		{"fallbackOn other error", task(`"Model":{"Preferred":"a","Fallback":"b","FallbackOn":["Timeout","States.TaskFailed"]}`), []string{"/States/T/Model/FallbackOn/1 (T)"}},
		{"fallbackOn ALL", task(`"Model":{"Preferred":"a","Fallback":"b","FallbackOn":["States.ALL"]}`), []string{"/States/T/Model/FallbackOn/0 (T)"}},
		{"fallbackOn alias repeats", task(`"Model":{"Preferred":"a","Fallback":"b","FallbackOn":["ModelError","Agent.ModelError"]}`), []string{"/States/T/Model/FallbackOn/1 (T)"}},
		{"fallbackOn empty", task(`"Model":{"Preferred":"a","Fallback":"b","FallbackOn":[]}`), []string{"/States/T/Model/FallbackOn (T)"}},
		{"model unknown field", task(`"Model":{"Preferred":"a","Temperature":1}`), []string{"/States/T/Model/Temperature (T)"}},
		{"preferred dynamic", task(`"Model":{"Preferred":"a","Preferred.$":"$.m"}`), []string{"/States/T/Model/Preferred.$ (T)"}},
		{"model on a Pass", `{"StartAt":"P","States":{"P":{"Type":"Pass","Model":{"Preferred":"a"},"End":true}}}`, []string{"/States/P/Model (P)"}},
		{"generation on a Map", `{"StartAt":"M","States":{"M":{"Type":"Map","ItemProcessor":{"StartAt":"S","States":{"S":{"Type":"Succeed"}}},"Generation":{},"End":true}}}`, []string{"/States/M/Generation (M)"}},
		{"generation on a Debate", `{"StartAt":"D","States":{"D":{"Type":"Debate","Agents":["a","b"],"Generation":{"Temperature":1},"End":true}}}`, []string{"/States/D/Generation (D)"}},
		{"model inside a branch", `{"StartAt":"P","States":{"P":{"Type":"Parallel","End":true,"Branches":[{"StartAt":"T","States":{"T":{"Type":"Task","Agent":"A","End":true,"Model":{"Preferred":"a","Fallback":"a"}}}}]}}}`,
			[]string{"/States/P/Branches/0/States/T/Model/Fallback (T)"}},
		{"generation constants", task(`"Generation":{"Temperature":1.2,"TopP":0.9,"MaxTokens":256,"StopSequences":["###"]}`), nil},
		{"generation empty", task(`"Generation":{}`), nil},
		{"temperature above 2", task(`"Generation":{"Temperature":2.0001}`), []string{"/States/T/Generation/Temperature (T)"}},
		{"temperature negative", task(`"Generation":{"Temperature":-1}`), []string{"/States/T/Generation/Temperature (T)"}},
		{"topP above 1", task(`"Generation":{"TopP":1.01}`), []string{"/States/T/Generation/TopP (T)"}},
		{"maxTokens fraction", task(`"Generation":{"MaxTokens":10.5}`), []string{"/States/T/Generation/MaxTokens (T)"}},
		{"maxTokens written 1e3", task(`"Generation":{"MaxTokens":1e3}`), nil},
		{"maxTokens too many", task(`"Generation":{"MaxTokens":1000001}`), []string{"/States/T/Generation/MaxTokens (T)"}},
		{"stop of 256 bytes", task(`"Generation":{"StopSequences":["` + strings.Repeat("é", 128) + `"]}`), nil},
		{"stop of 257 bytes", task(`"Generation":{"StopSequences":["` + strings.Repeat("é", 128) + `x"]}`), []string{"/States/T/Generation/StopSequences/0 (T)"}},
		{"five stops", task(`"Generation":{"StopSequences":["a","b","c","d","e"]}`), []string{"/States/T/Generation/StopSequences (T)"}},
		{"empty stop", task(`"Generation":{"StopSequences":["a",""]}`), []string{"/States/T/Generation/StopSequences/1 (T)"}},
		{"paths", task(`"Generation":{"Temperature.$":"$.t","TopP.$":"$$.Execution.Input.p","MaxTokens.$":"States.MathAdd($.n, 1)","StopSequences.$":"$.s"}`), nil},
		{"path and constant", task(`"Generation":{"TopP":0.5,"TopP.$":"$.p"}`), []string{"/States/T/Generation/TopP.$ (T)"}},
		{"bad path", task(`"Generation":{"Temperature.$":"$..["}`), []string{"/States/T/Generation/Temperature.$ (T)"}},
		{"path without .$", task(`"Generation":{"Temperature":"$.t"}`), []string{"/States/T/Generation/Temperature (T)"}},
		{"generation unknown field", task(`"Generation":{"Seed":7}`), []string{"/States/T/Generation/Seed (T)"}},
		{"jsonata expressions", jsonataTask(`"Generation":{"Temperature":"{% $states.input.t %}","TopP":"{% 0.5 %}","MaxTokens":"{% 10 %}","StopSequences":"{% ['x'] %}"},"Model":{"Preferred":"a"}`), nil},
		{"jsonata constants", jsonataTask(`"Generation":{"Temperature":0.1,"TopP":0.2,"MaxTokens":3,"StopSequences":["x"]}`), nil},
		{"jsonata path field", jsonataTask(`"Generation":{"MaxTokens.$":"$.n"}`), []string{"/States/T/Generation/MaxTokens.$ (T)"}},
		{"jsonata plain string", jsonataTask(`"Generation":{"TopP":"0.5"}`), []string{"/States/T/Generation/TopP (T)"}},
		{"jsonata bad expression", jsonataTask(`"Generation":{"MaxTokens":"{% ( %}"}`), []string{"/States/T/Generation/MaxTokens (T)"}},
		{"jsonata stop expression entry", jsonataTask(`"Generation":{"StopSequences":["a","{% $x %}"]}`), []string{"/States/T/Generation/StopSequences/1 (T)"}},
		{"jsonata out of range", jsonataTask(`"Generation":{"Temperature":2.5}`), []string{"/States/T/Generation/Temperature (T)"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.want == nil {
				if _, err := Parse([]byte(tt.def)); err != nil {
					t.Fatalf("Parse(%s): %v", tt.def, err)
				}
				return
			}
			got := problemPointers(t, tt.def)
			if !slices.Equal(got, tt.want) {
				t.Errorf("Parse(%s) problems at %q, want %q", tt.def, got, tt.want)
			}
		})
	}
}

func TestGenerationResolve(t *testing.T) {
	temp, _ := jsonpath.CompileExpr("$.t")
	topP, _ := jsonpath.CompileExpr("$.p")
	maxTokens, _ := jsonata.CompileTemplate("{% $n %}", "MaxTokens")
	stops, _ := jsonpath.CompileExpr("$.s")
	dynamic := &Generation{TemperaturePath: temp, TopPPath: topP, MaxTokensExpr: maxTokens, StopSequencesPath: stops}
	// values maps a field to the value its path or expression yields.
	evalFrom := func(values map[string]any) GenerationEval {
		return func(field string, path *jsonpath.Expr, expr *jsonata.Template) (any, error) {
			if (path == nil) == (expr == nil) {
				t.Errorf("eval(%s) got path %v and expression %v, want exactly one", field, path, expr)
			}
			return values[field], nil
		}
	}
	good := map[string]any{"Temperature": json.Number("0.3"), "TopP": json.Number("1"), "MaxTokens": json.Number("2048"), "StopSequences": []any{"a", "b"}}
	with := func(field string, v any) map[string]any {
		m := map[string]any{}
		for k, x := range good {
			m[k] = x
		}
		m[field] = v
		return m
	}
	tests := []struct {
		name      string
		g         *Generation
		values    map[string]any
		want      GenerationValues
		wantField string // the field of the *GenerationError wanted; "" when none
	}{
		{"nil", nil, nil, GenerationValues{}, ""},
		{"constants", &Generation{Temperature: 0, HasTemperature: true, MaxTokens: 5, StopSequences: []string{"x"}}, nil,
			GenerationValues{HasTemperature: true, MaxTokens: 5, StopSequences: []string{"x"}}, ""},
		{"dynamic", dynamic, good, GenerationValues{Temperature: 0.3, HasTemperature: true, TopP: 1, HasTopP: true, MaxTokens: 2048, StopSequences: []string{"a", "b"}}, ""},
		{"go numbers", dynamic, with("MaxTokens", float64(12)), GenerationValues{Temperature: 0.3, HasTemperature: true, TopP: 1, HasTopP: true, MaxTokens: 12, StopSequences: []string{"a", "b"}}, ""},
		{"temperature too high", dynamic, with("Temperature", json.Number("2.5")), GenerationValues{}, "Temperature"},
		{"temperature string", dynamic, with("Temperature", "0.5"), GenerationValues{}, "Temperature"},
		{"topP null", dynamic, with("TopP", nil), GenerationValues{}, "TopP"},
		{"maxTokens fraction", dynamic, with("MaxTokens", json.Number("1.5")), GenerationValues{}, "MaxTokens"},
		{"maxTokens float fraction", dynamic, with("MaxTokens", 1.5), GenerationValues{}, "MaxTokens"},
		{"maxTokens zero", dynamic, with("MaxTokens", json.Number("0")), GenerationValues{}, "MaxTokens"},
		{"maxTokens huge", dynamic, with("MaxTokens", json.Number("1e30")), GenerationValues{}, "MaxTokens"},
		{"stops not an array", dynamic, with("StopSequences", "END"), GenerationValues{}, "StopSequences"},
		{"stops empty", dynamic, with("StopSequences", []any{}), GenerationValues{}, "StopSequences"},
		{"stops repeated", dynamic, with("StopSequences", []any{"a", "a"}), GenerationValues{}, "StopSequences"},
		{"stops not strings", dynamic, with("StopSequences", []any{"a", json.Number("1")}), GenerationValues{}, "StopSequences"},
		{"stops too long", dynamic, with("StopSequences", []any{strings.Repeat("s", MaxStopSequenceBytes+1)}), GenerationValues{}, "StopSequences"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.g.Resolve(evalFrom(tt.values))
			var ge *GenerationError
			if tt.wantField != "" {
				if !errors.As(err, &ge) || ge.Field != tt.wantField {
					t.Fatalf("Resolve() error = %v, want a *GenerationError for %s", err, tt.wantField)
				}
				if !strings.HasPrefix(err.Error(), "Generation."+tt.wantField+" ") {
					t.Errorf("Resolve() error %q does not name Generation.%s", err, tt.wantField)
				}
				return
			}
			if err != nil {
				t.Fatalf("Resolve() error = %v", err)
			}
			if got.Temperature != tt.want.Temperature || got.HasTemperature != tt.want.HasTemperature || got.TopP != tt.want.TopP ||
				got.HasTopP != tt.want.HasTopP || got.MaxTokens != tt.want.MaxTokens || !slices.Equal(got.StopSequences, tt.want.StopSequences) {
				t.Errorf("Resolve() = %+v, want %+v", got, tt.want)
			}
		})
	}

	failure := errors.New("no such path")
	_, err := dynamic.Resolve(func(string, *jsonpath.Expr, *jsonata.Template) (any, error) { return nil, failure })
	if !errors.Is(err, failure) || !strings.HasPrefix(err.Error(), "field Generation.Temperature: ") {
		t.Errorf("Resolve() with a failing eval = %v, want %v wrapped with the field", err, failure)
	}
}
