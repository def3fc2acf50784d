package builtin

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aslrun/aslrun/agents"
	"github.com/aslrun/aslrun/jsonvalue"
)

// briefFile is the agents file of the documentation.
const briefFile = `{
  "Classifier": { "Type": "llm", "Model": "gpt-4o-mini", "APIKeyEnv": "OPENAI_API_KEY", "JSON": true },
  "Linter":     { "Type": "exec", "Command": ["python3", "lint.py"], "TimeoutSeconds": 30 },
  "Notify":     { "Type": "http", "URL": "https://hooks.example.com/x", "Headers": {"Authorization": "Bearer ${HOOK_TOKEN}"} }
}`

func TestParseAgentsFile(t *testing.T) {
	f, err := ParseAgentsFile([]byte(briefFile))
	if err != nil {
		t.Fatalf("ParseAgentsFile: %v", err)
	}
	if got, want := f.Names(), []string{"Classifier", "Linter", "Notify"}; !slices.Equal(got, want) {
		t.Errorf("Names() = %q, want %q", got, want)
	}
	llm := f.agents["Classifier"].llm
	if llm == nil || llm.Model != "gpt-4o-mini" || llm.APIKeyEnv != "OPENAI_API_KEY" || !llm.JSON || llm.APIKey != "" || llm.MaxRetries != 0 {
		t.Errorf("Classifier = %+v, want the llm of the file", llm)
	}
	ex := f.agents["Linter"].exec
	if ex == nil || !slices.Equal(ex.Command, []string{"python3", "lint.py"}) || ex.Timeout != 30*time.Second || ex.Dir != "" {
		t.Errorf("Linter = %+v, want the exec of the file", ex)
	}
	h := f.agents["Notify"].http
	if h == nil || h.URL != "https://hooks.example.com/x" || h.Headers["Authorization"] != "Bearer ${HOOK_TOKEN}" || h.Timeout != 0 {
		t.Errorf("Notify = %+v, want the http of the file", h)
	}
}

func TestParseAgentsFileFields(t *testing.T) {
	f, err := ParseAgentsFile([]byte(`{
	  "Local": {"Type": "llm", "Comment": "ollama", "BaseURL": "http://localhost:11434/v1", "Model": "llama3",
	            "System": "Be brief.", "Temperature": 0, "MaxTokens": 256, "TimeoutSeconds": 1.5, "MaxRetries": 0,
	            "InputCostPerMTok": 0.15, "OutputCostPerMTok": 0.6},
	  "Inline": {"Type": "llm", "Model": "m", "APIKey": "${INLINE_KEY}", "MaxRetries": 4},
	  "Run":    {"Type": "exec", "Command": ["./run.sh", "--fast"], "Dir": "tools", "Env": {"MODE": "ci", "TOKEN": "${T}"}}
	}`))
	if err != nil {
		t.Fatalf("ParseAgentsFile: %v", err)
	}
	l := f.agents["Local"].llm
	if l.BaseURL != "http://localhost:11434/v1" || l.Model != "llama3" || l.System != "Be brief." || l.Temperature == nil || *l.Temperature != 0 ||
		l.MaxTokens != 256 || l.Timeout != 1500*time.Millisecond || l.MaxRetries != -1 || l.InputCostPerMTok != 0.15 || l.OutputCostPerMTok != 0.6 {
		t.Errorf("Local = %+v, want every field of the file (MaxRetries 0 as -1)", l)
	}
	if i := f.agents["Inline"].llm; i.APIKey != "" || i.APIKeyEnv != "INLINE_KEY" || i.MaxRetries != 4 || i.Temperature != nil {
		t.Errorf("Inline = %+v, want APIKeyEnv INLINE_KEY (from APIKey) and MaxRetries 4", i)
	}
	if r := f.agents["Run"].exec; r.Dir != "tools" || r.Env["MODE"] != "ci" || r.Env["TOKEN"] != "${T}" {
		t.Errorf("Run = %+v, want Dir and Env of the file", r)
	}
}

func TestParseAgentsFileErrors(t *testing.T) {
	tests := []struct {
		name, text, wantPointer string
	}{
		{"not an object", `[]`, ""},
		{"empty name", `{"": {"Type": "http", "URL": "http://h"}}`, "/"},
		{"escaped name", `{"a/b~c": 5}`, "/a~1b~0c"},
		{"agent not an object", `{"A": "llm"}`, "/A"},
		{"no Type", `{"A": {"Model": "m"}}`, "/A/Type"},
		{"Type not a string", `{"A": {"Type": 1}}`, "/A/Type"},
		{"unknown Type", `{"A": {"Type": "grpc"}}`, "/A/Type"},
		{"Comment not a string", `{"A": {"Type": "llm", "Model": "m", "Comment": 1}}`, "/A/Comment"},
		{"first agent by name", `{"B": {"Type": "llm"}, "A": {"Type": "http", "Methods": ["TRACE"]}}`, "/A/Methods/0"},
		{"Resources not an object", `{"Resources": ["x"]}`, "/Resources"},
		{"Resources empty resource", `{"Resources": {"": "A"}}`, "/Resources/"},
		{"Resources agent not a string", `{"Resources": {"arn:aws:states:::sqs:sendMessage": 1}}`, "/Resources/arn:aws:states:::sqs:sendMessage"},
		{"Resources empty agent", `{"Resources": {"f": ""}}`, "/Resources/f"},

		{"llm without Model", `{"A": {"Type": "llm"}}`, "/A/Model"},
		{"llm empty Model", `{"A": {"Type": "llm", "Model": ""}}`, "/A/Model"},
		{"llm Model a number", `{"A": {"Type": "llm", "Model": 4}}`, "/A/Model"},
		{"llm unknown field", `{"A": {"Type": "llm", "Model": "m", "Temprature": 1}}`, "/A/Temprature"},
		{"llm field of exec", `{"A": {"Type": "llm", "Model": "m", "Command": ["x"]}}`, "/A/Command"},
		{"llm lower-case field", `{"A": {"Type": "llm", "model": "m"}}`, "/A/model"},
		{"llm TimeoutSeconds below a millisecond", `{"A": {"Type": "llm", "Model": "m", "TimeoutSeconds": 1e-12}}`, "/A/TimeoutSeconds"},
		{"llm JSON a string", `{"A": {"Type": "llm", "Model": "m", "JSON": "true"}}`, "/A/JSON"},
		{"llm negative Temperature", `{"A": {"Type": "llm", "Model": "m", "Temperature": -0.1}}`, "/A/Temperature"},
		{"llm Temperature a string", `{"A": {"Type": "llm", "Model": "m", "Temperature": "0.2"}}`, "/A/Temperature"},
		{"llm huge Temperature", `{"A": {"Type": "llm", "Model": "m", "Temperature": 1e400}}`, "/A/Temperature"},
		{"llm MaxTokens 0", `{"A": {"Type": "llm", "Model": "m", "MaxTokens": 0}}`, "/A/MaxTokens"},
		{"llm MaxTokens fraction", `{"A": {"Type": "llm", "Model": "m", "MaxTokens": 1.5}}`, "/A/MaxTokens"},
		{"llm MaxRetries 11", `{"A": {"Type": "llm", "Model": "m", "MaxRetries": 11}}`, "/A/MaxRetries"},
		{"llm MaxRetries negative", `{"A": {"Type": "llm", "Model": "m", "MaxRetries": -1}}`, "/A/MaxRetries"},
		{"llm TimeoutSeconds 0", `{"A": {"Type": "llm", "Model": "m", "TimeoutSeconds": 0}}`, "/A/TimeoutSeconds"},
		{"llm TimeoutSeconds too long", `{"A": {"Type": "llm", "Model": "m", "TimeoutSeconds": 86401}}`, "/A/TimeoutSeconds"},
		{"llm both keys", `{"A": {"Type": "llm", "Model": "m", "APIKey": "k", "APIKeyEnv": "K"}}`, "/A/APIKey"},
		{"llm bad APIKeyEnv", `{"A": {"Type": "llm", "Model": "m", "APIKeyEnv": "OPENAI-KEY"}}`, "/A/APIKeyEnv"},
		{"llm bad BaseURL", `{"A": {"Type": "llm", "Model": "m", "BaseURL": "localhost:11434"}}`, "/A/BaseURL"},
		{"llm negative price", `{"A": {"Type": "llm", "Model": "m", "OutputCostPerMTok": -1}}`, "/A/OutputCostPerMTok"},
		{"llm HTTPClient is not a file field", `{"A": {"Type": "llm", "Model": "m", "HTTPClient": {}}}`, "/A/HTTPClient"},

		{"exec without Command", `{"A": {"Type": "exec"}}`, "/A/Command"},
		{"exec Command a string", `{"A": {"Type": "exec", "Command": "python3 lint.py"}}`, "/A/Command"},
		{"exec empty Command", `{"A": {"Type": "exec", "Command": []}}`, "/A/Command"},
		{"exec word not a string", `{"A": {"Type": "exec", "Command": ["a", 5]}}`, "/A/Command/1"},
		{"exec empty program", `{"A": {"Type": "exec", "Command": ["", "x"]}}`, "/A/Command/0"},
		{"exec NUL in a word", `{"A": {"Type": "exec", "Command": ["a", "b\u0000"]}}`, "/A/Command/1"},
		{"exec empty Dir", `{"A": {"Type": "exec", "Command": ["a"], "Dir": ""}}`, "/A/Dir"},
		{"exec Env an array", `{"A": {"Type": "exec", "Command": ["a"], "Env": ["A=1"]}}`, "/A/Env"},
		{"exec Env value a number", `{"A": {"Type": "exec", "Command": ["a"], "Env": {"A": 1}}}`, "/A/Env/A"},
		{"exec Env bad name", `{"A": {"Type": "exec", "Command": ["a"], "Env": {"A=B": "1"}}}`, "/A/Env/A=B"},
		{"exec Env bad reference", `{"A": {"Type": "exec", "Command": ["a"], "Env": {"A/B": "1", "T": "${T"}}}`, "/A/Env/T"},
		{"exec unknown field", `{"A": {"Type": "exec", "Command": ["a"], "Args": []}}`, "/A/Args"},
		{"unknown field escaped", `{"A": {"Type": "exec", "Command": ["a"], "x/y": 1}}`, "/A/x~1y"},
		{"exec field of http", `{"A": {"Type": "exec", "Command": ["a"], "URL": "http://h"}}`, "/A/URL"},

		{"request tool unknown field", `{"A": {"Type": "http", "Body": "x"}}`, "/A/Body"},
		{"request tool bad method", `{"A": {"Type": "http", "Methods": ["GET", "CONNECT"]}}`, "/A/Methods/1"},
		{"request tool bad prefix", `{"A": {"Type": "http", "URLPrefixes": ["ftp://x/"]}}`, "/A/URLPrefixes/0"},
		{"request tool headers without prefixes", `{"A": {"Type": "http", "Headers": {"X-Api-Key": "${K}"}}}`, "/A/Headers"},
		{"request tool secret header", `{"A": {"Type": "http", "URLPrefixes": ["https://api.example.com/"], "Headers": {"Authorization": "Bearer abc"}}}`, "/A/Headers/Authorization"},
		{"request tool MaxBytes", `{"A": {"Type": "http", "MaxBytes": 0}}`, "/A/MaxBytes"},
		{"Description not a string", `{"A": {"Type": "http", "Description": 1}}`, "/A/Description"},
		{"InputSchema not an object", `{"A": {"Type": "exec", "Command": ["x"], "InputSchema": []}}`, "/A/InputSchema"},
		{"InputSchema of a string", `{"A": {"Type": "exec", "Command": ["x"], "InputSchema": {"type": "string"}}}`, "/A/InputSchema/type"},
		{"InputSchema invalid", `{"A": {"Type": "exec", "Command": ["x"], "InputSchema": {"type": "object", "properties": {"q": {"type": 5}}}}}`, "/A/InputSchema"},
		{"http relative URL", `{"A": {"Type": "http", "URL": "hooks/x"}}`, "/A/URL"},
		{"http Headers an array", `{"A": {"Type": "http", "URL": "http://h", "Headers": []}}`, "/A/Headers"},
		{"http bad header name", `{"A": {"Type": "http", "URL": "http://h", "Headers": {"X Token": "t"}}}`, "/A/Headers/X Token"},
		{"http Idempotency-Key", `{"A": {"Type": "http", "URL": "http://h", "Headers": {"Idempotency-Key": "k"}}}`, "/A/Headers/Idempotency-Key"},
		{"http header reference", `{"A": {"Type": "http", "URL": "http://h", "Headers": {"Authorization": "Bearer ${HOOK TOKEN}"}}}`, "/A/Headers/Authorization"},
		{"http unknown field", `{"A": {"Type": "http", "URL": "http://h", "Method": "PUT"}}`, "/A/Method"},

		{"Hosts an array", `{"Hosts": ["localhost"]}`, "/Hosts"},
		{"Hosts Allow a string", `{"Hosts": {"Allow": "localhost"}}`, "/Hosts/Allow"},
		{"Hosts pattern not a string", `{"Hosts": {"Allow": ["a.example", 5]}}`, "/Hosts/Allow/1"},
		{"Hosts bad pattern", `{"Hosts": {"Allow": ["a.example", "http://localhost:11434"]}}`, "/Hosts/Allow/1"},
		{"Hosts bad CIDR", `{"Hosts": {"Allow": ["10.0.0.1/8"]}}`, "/Hosts/Allow/0"},
		{"Hosts Only a string", `{"Hosts": {"Only": "yes"}}`, "/Hosts/Only"},
		{"Hosts unknown field", `{"Hosts": {"Deny": []}}`, "/Hosts/Deny"},
		{"Hosts is no agent", `{"Hosts": {"Type": "http", "URL": "http://h"}}`, "/Hosts/Type"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, err := ParseAgentsFile([]byte(tt.text))
			var fe *FileError
			if !errors.As(err, &fe) {
				t.Fatalf("ParseAgentsFile = %v, %v, want a *FileError at %q", f, err, tt.wantPointer)
			}
			if fe.Pointer != tt.wantPointer {
				t.Errorf("ParseAgentsFile error = %v, want it at %q", err, tt.wantPointer)
			}
		})
	}
}

func TestParseAgentsFileJSON(t *testing.T) {
	for _, text := range []string{``, `{"A": {"Type": "llm", "Model": "m",}}`, `{"A": {}, "A": {}}`, `{"A": {"Type": "llm", "Model": "m", "Temperature": NaN}}`} {
		t.Run(text, func(t *testing.T) {
			_, err := ParseAgentsFile([]byte(text))
			var je *jsonvalue.JSONError
			if !errors.As(err, &je) {
				t.Errorf("ParseAgentsFile error = %v, want a *jsonvalue.JSONError", err)
			}
		})
	}
}

func TestFileErrorMessage(t *testing.T) {
	tests := []struct {
		err  *FileError
		want string
	}{
		{&FileError{Pointer: "/Classifier/Model", Msg: "Model is required"}, "agents file /Classifier/Model: Model is required"},
		{&FileError{Msg: "an agents file must be an object"}, "agents file: an agents file must be an object"},
		{&FileError{Pointer: "/A/APIKey", Msg: "m", Err: ErrLiteralSecret}, "agents file /A/APIKey: m"},
	}
	for _, tt := range tests {
		if got := tt.err.Error(); got != tt.want {
			t.Errorf("%#v.Error() = %q, want %q", tt.err, got, tt.want)
		}
	}
	// The documentation's example, and the whole file's pointer.
	for text, want := range map[string]string{`{"Classifier": {"Type": "llm"}}`: "/Classifier/Model", `7`: ""} {
		_, err := ParseAgentsFile([]byte(text))
		var fe *FileError
		if !errors.As(err, &fe) || fe.Pointer != want || fe.Err != nil {
			t.Errorf("ParseAgentsFile(%s) error = %v, want a *FileError at %q", text, err, want)
		}
	}
}

// writeTool writes an executable script that prints its working directory
// and its first argument as a JSON array.
func writeTool(t *testing.T, dir, name string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	script(t, dir, name, `echo "tool says" >&2; printf '["%s", "%s"]' "$(pwd -P)" "$1"`)
}

func TestRegister(t *testing.T) {
	needSh(t)
	base := evalSymlinks(t, t.TempDir())
	tools := filepath.Join(base, "tools")
	writeTool(t, tools, "run.sh")
	writeTool(t, base, "top.sh")
	t.Setenv("ASLRUN_TEST_LLM_KEY", "sk-env")
	llmEP := newEndpoint(t, reply{body: chat(`{"intent": "refund"}`, `{"prompt_tokens": 5, "completion_tokens": 2}`)})
	hookEP := newEndpoint(t, reply{body: `{"delivered": true}`})
	text := `{
	  "InTools":  {"Type": "exec", "Command": ["./run.sh", "x"], "Dir": "tools"},
	  "AtBase":   {"Type": "exec", "Command": ["sh", "top.sh", "y"]},
	  "Nested":   {"Type": "exec", "Command": ["tools/run.sh", "z"]},
	  "Absolute": {"Type": "exec", "Command": ["` + filepath.Join(tools, "run.sh") + `", "w"], "Dir": "` + base + `"},
	  "Classify": {"Type": "llm", "BaseURL": "` + llmEP.url + `", "Model": "m", "APIKeyEnv": "ASLRUN_TEST_LLM_KEY", "JSON": true},
	  "Notify":   {"Type": "http", "URL": "` + hookEP.url + `"},
	  "Hosts":    {"Allow": ["` + llmEP.host() + `", "` + hookEP.host() + `"]}
	}`
	f, err := ParseAgentsFile([]byte(text))
	if err != nil {
		t.Fatalf("ParseAgentsFile: %v", err)
	}
	rec := &logRecorder{}
	reg := agents.NewRegistry()
	if err := f.Register(reg, base, slog.New(rec)); err != nil {
		t.Fatalf("Register: %v", err)
	}
	if got, want := reg.Names(), f.Names(); !slices.Equal(got, want) {
		t.Fatalf("registered %q, want %q", got, want)
	}
	tests := []struct{ agent, want string }{
		{"InTools", `["` + tools + `", "x"]`},
		{"AtBase", `["` + base + `", "y"]`},
		{"Nested", `["` + base + `", "z"]`},
		{"Absolute", `["` + base + `", "w"]`},
		{"Classify", `{"intent": "refund"}`},
		{"Notify", `{"delivered": true}`},
	}
	for _, tt := range tests {
		t.Run(tt.agent, func(t *testing.T) {
			a, _ := reg.Lookup(tt.agent)
			got, err := a.Invoke(context.Background(), &agents.Request{Agent: tt.agent, Execution: "e", State: "S", Input: map[string]any{}})
			if err != nil {
				t.Fatalf("Invoke: %v", err)
			}
			if want := decode(t, tt.want); !jsonvalue.Equal(got, want) {
				t.Errorf("Invoke = %s, want %s", marshal(got), marshal(want))
			}
		})
	}
	if got := len(rec.lines()); got != 4 {
		t.Errorf("logger got %d stderr lines, want 4 (one per exec agent)", got)
	}
	if calls := llmEP.received(); len(calls) != 1 || calls[0].header.Get("Authorization") != "Bearer sk-env" {
		t.Errorf("llm endpoint got %d requests, want 1 with the key of the environment", len(calls))
	}
}

func TestRegisterRelativeBase(t *testing.T) {
	needSh(t)
	base := evalSymlinks(t, t.TempDir())
	writeTool(t, base, "run.sh")
	f, err := ParseAgentsFile([]byte(`{"Run": {"Type": "exec", "Command": ["./run.sh"]}}`))
	if err != nil {
		t.Fatalf("ParseAgentsFile: %v", err)
	}
	t.Chdir(base)
	reg := agents.NewRegistry()
	if err := f.Register(reg, "", slog.New(&logRecorder{})); err != nil {
		t.Fatalf("Register: %v", err)
	}
	// Once registered, the agent no longer depends on the working directory.
	t.Chdir(t.TempDir())
	a, _ := reg.Lookup("Run")
	got, err := a.Invoke(context.Background(), &agents.Request{Input: nil})
	if err != nil {
		t.Fatalf("Invoke: %v", err)
	}
	if want := `["` + base + `",""]`; marshal(got) != want {
		t.Errorf("Invoke = %s, want %s", marshal(got), want)
	}
}

func TestRegisterConflicts(t *testing.T) {
	f, err := ParseAgentsFile([]byte(briefFile))
	if err != nil {
		t.Fatalf("ParseAgentsFile: %v", err)
	}
	t.Run("name taken", func(t *testing.T) {
		reg := agents.NewRegistry()
		if err := reg.Register("Notify", agents.Func(func(context.Context, *agents.Request) (any, error) { return nil, nil })); err != nil {
			t.Fatal(err)
		}
		err := f.Register(reg, t.TempDir(), nil)
		if !errors.Is(err, agents.ErrDuplicate) {
			t.Errorf("Register error = %v, want agents.ErrDuplicate", err)
		}
		if got := reg.Names(); !slices.Equal(got, []string{"Notify"}) {
			t.Errorf("registry holds %q after a failed Register, want only [Notify]", got)
		}
	})
	t.Run("twice", func(t *testing.T) {
		reg := agents.NewRegistry()
		if err := f.Register(reg, t.TempDir(), nil); err != nil {
			t.Fatalf("Register: %v", err)
		}
		if err := f.Register(reg, t.TempDir(), nil); !errors.Is(err, agents.ErrDuplicate) {
			t.Errorf("second Register error = %v, want agents.ErrDuplicate", err)
		}
	})
	t.Run("nil registry", func(t *testing.T) {
		if err := f.Register(nil, "", nil); err == nil {
			t.Error("Register(nil) = nil, want an error")
		}
	})
}

func TestResolved(t *testing.T) {
	needSh(t)
	t.Setenv("T", "t")
	base := evalSymlinks(t, t.TempDir())
	tools := filepath.Join(base, "tools")
	writeTool(t, tools, "run.sh")
	text := `{
	  "Run":    {"Type": "exec", "Command": ["./run.sh", "a b"], "Dir": "tools", "Env": {"T": "${T}"}, "TimeoutSeconds": 5, "Comment": "c"},
	  "Path":   {"Type": "exec", "Command": ["sh", "-c", "true"]},
	  "Notify": {"Type": "http", "URL": "https://hooks.example.com/x", "Headers": {"Authorization": "Bearer ${HOOK_TOKEN}"}}
	}`
	f, err := ParseAgentsFile([]byte(text))
	if err != nil {
		t.Fatalf("ParseAgentsFile: %v", err)
	}
	data, err := f.Resolved(base)
	if err != nil {
		t.Fatalf("Resolved: %v", err)
	}
	want := `{"Notify":{"Headers":{"Authorization":"Bearer ${HOOK_TOKEN}"},"Type":"http","URL":"https://hooks.example.com/x"},` +
		`"Path":{"Command":["sh","-c","true"],"Dir":"` + base + `","Type":"exec"},` +
		`"Run":{"Command":["` + filepath.Join(tools, "run.sh") + `","a b"],"Comment":"c","Dir":"` + tools + `","Env":{"T":"${T}"},"TimeoutSeconds":5,"Type":"exec"}}`
	if string(data) != want {
		t.Errorf("Resolved =\n%s\nwant\n%s", data, want)
	}
	// The resolved text builds the same agents from anywhere.
	g, err := ParseAgentsFile(data)
	if err != nil {
		t.Fatalf("ParseAgentsFile(Resolved): %v", err)
	}
	reg := agents.NewRegistry()
	if err := g.Register(reg, t.TempDir(), slog.New(&logRecorder{})); err != nil {
		t.Fatalf("Register: %v", err)
	}
	a, _ := reg.Lookup("Run")
	got, err := a.Invoke(context.Background(), &agents.Request{Input: nil})
	if err != nil {
		t.Fatalf("Invoke: %v", err)
	}
	if want := `["` + tools + `","a b"]`; marshal(got) != want {
		t.Errorf("Invoke = %s, want %s", marshal(got), want)
	}
	// Resolving again changes nothing.
	again, err := g.Resolved(t.TempDir())
	if err != nil || string(again) != string(data) {
		t.Errorf("Resolved twice = %s, %v, want %s", again, err, data)
	}
}

func FuzzParseAgentsFile(f *testing.F) {
	for _, s := range []string{
		briefFile,
		`{}`,
		`{"A": {"Type": "llm", "Model": "m", "Temperature": 0.7, "MaxTokens": 10, "MaxRetries": 0, "TimeoutSeconds": 0.001}}`,
		`{"A": {"Type": "exec", "Command": ["../x", "-v"], "Dir": "/abs", "Env": {"K": "${V}"}}}`,
		`{"A": {"Type": "exec", "Command": ["a/b"], "Dir": "../up"}}`,
		`{"A": {"Type": "http", "URL": "http://[::1]:80/p?q#f", "Headers": {"X": "${A}${B}"}}}`,
		`{"a/b": {"Type": "http", "URL": "https://h", "TimeoutSeconds": 86400}}`,
		`{"Hosts": {"Allow": ["localhost:11434", "*.example.com", "10.0.0.0/8", "[::1]:8080", "*"], "Only": true, "Comment": "c"}}`,
		`{"Hosts": {"Allow": []}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		file, err := ParseAgentsFile(data)
		if err != nil {
			return
		}
		// What the parser accepts, the constructors accept too.
		base := t.TempDir()
		if err := file.Register(agents.NewRegistry(), base, nil); err != nil {
			t.Fatalf("ParseAgentsFile accepted %q but Register failed: %v", data, err)
		}
		resolved, err := file.Resolved(base)
		if err != nil {
			t.Fatalf("Resolved(%q): %v", data, err)
		}
		again, err := ParseAgentsFile(resolved)
		if err != nil {
			t.Fatalf("ParseAgentsFile(Resolved(%q)) = %v", data, err)
		}
		if !slices.Equal(again.Names(), file.Names()) {
			t.Fatalf("Resolved(%q) names %q, want %q", data, again.Names(), file.Names())
		}
	})
}

// TestParseAgentsFileSecrets checks that a file may refer to secrets but
// never hold one, and that the error names the field without quoting the
// value.
func TestParseAgentsFileSecrets(t *testing.T) {
	const secret = "s3cr3t-Value"
	refused := []struct {
		name, agent, wantPointer string
	}{
		{"APIKey literal", `{"Type": "llm", "Model": "m", "APIKey": "` + secret + `"}`, "/A/APIKey"},
		{"APIKey scheme and reference", `{"Type": "llm", "Model": "m", "APIKey": "Bearer ${K}"}`, "/A/APIKey"},
		{"APIKey two references", `{"Type": "llm", "Model": "m", "APIKey": "${K}${L}"}`, "/A/APIKey"},
		{"APIKey reference and literal", `{"Type": "llm", "Model": "m", "APIKey": "${K}` + secret + `"}`, "/A/APIKey"},
		{"Authorization literal", `{"Type": "http", "URL": "http://h", "Headers": {"Authorization": "Bearer ` + secret + `"}}`, "/A/Headers/Authorization"},
		{"authorization in lower case", `{"Type": "http", "URL": "http://h", "Headers": {"authorization": "` + secret + `"}}`, "/A/Headers/authorization"},
		{"Proxy-Authorization literal", `{"Type": "http", "URL": "http://h", "Headers": {"Proxy-Authorization": "Basic ` + secret + `"}}`, "/A/Headers/Proxy-Authorization"},
		{"X-Api-Key literal", `{"Type": "http", "URL": "http://h", "Headers": {"X-Api-Key": "` + secret + `"}}`, "/A/Headers/X-Api-Key"},
		{"Api-Key literal", `{"Type": "http", "URL": "http://h", "Headers": {"Api-Key": "` + secret + `"}}`, "/A/Headers/Api-Key"},
		{"Cookie literal", `{"Type": "http", "URL": "http://h", "Headers": {"Cookie": "session=` + secret + `"}}`, "/A/Headers/Cookie"},
		{"token header", `{"Type": "http", "URL": "http://h", "Headers": {"X-Hook-Token": "` + secret + `"}}`, "/A/Headers/X-Hook-Token"},
		{"secret header", `{"Type": "http", "URL": "http://h", "Headers": {"X-Client-Secret": "` + secret + `"}}`, "/A/Headers/X-Client-Secret"},
		{"auth header", `{"Type": "http", "URL": "http://h", "Headers": {"X-Auth": "` + secret + `"}}`, "/A/Headers/X-Auth"},
		{"header reference beside a literal", `{"Type": "http", "URL": "http://h", "Headers": {"Authorization": "${USER}:` + secret + `"}}`, "/A/Headers/Authorization"},
		{"Cookie with one literal token", `{"Type": "http", "URL": "http://h", "Headers": {"Cookie": "session=${S}; csrf=` + secret + `"}}`, "/A/Headers/Cookie"},
		{"Env KEY literal", `{"Type": "exec", "Command": ["a"], "Env": {"OPENAI_API_KEY": "` + secret + `"}}`, "/A/Env/OPENAI_API_KEY"},
		{"Env TOKEN literal", `{"Type": "exec", "Command": ["a"], "Env": {"GITHUB_TOKEN": "` + secret + `"}}`, "/A/Env/GITHUB_TOKEN"},
		{"Env SECRET literal", `{"Type": "exec", "Command": ["a"], "Env": {"AWS_SECRET_ACCESS_KEY": "` + secret + `"}}`, "/A/Env/AWS_SECRET_ACCESS_KEY"},
		{"Env PASSWORD literal", `{"Type": "exec", "Command": ["a"], "Env": {"DB_PASSWORD": "` + secret + `"}}`, "/A/Env/DB_PASSWORD"},
		{"Env AUTH literal", `{"Type": "exec", "Command": ["a"], "Env": {"BASIC_AUTH": "` + secret + `"}}`, "/A/Env/BASIC_AUTH"},
		{"Env CREDENTIAL literal", `{"Type": "exec", "Command": ["a"], "Env": {"CREDENTIALS": "` + secret + `"}}`, "/A/Env/CREDENTIALS"},
		{"Env lower-case name", `{"Type": "exec", "Command": ["a"], "Env": {"api_key": "` + secret + `"}}`, "/A/Env/api_key"},
		{"Env escaped name", `{"Type": "exec", "Command": ["a"], "Env": {"A/TOKEN": "` + secret + `"}}`, "/A/Env/A~1TOKEN"},
		{"Env reference beside a literal", `{"Type": "exec", "Command": ["a"], "Env": {"TOKEN": "${T}` + secret + `"}}`, "/A/Env/TOKEN"},
	}
	for _, tt := range refused {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseAgentsFile([]byte(`{"A": ` + tt.agent + `}`))
			var fe *FileError
			if !errors.As(err, &fe) || !errors.Is(err, ErrLiteralSecret) {
				t.Fatalf("ParseAgentsFile error = %v, want a *FileError wrapping ErrLiteralSecret at %q", err, tt.wantPointer)
			}
			if fe.Pointer != tt.wantPointer {
				t.Errorf("ParseAgentsFile error at %q, want %q", fe.Pointer, tt.wantPointer)
			}
			// Only the text can show that the message keeps the secret out.
			if strings.Contains(err.Error(), secret) {
				t.Errorf("ParseAgentsFile error = %v, want it without the secret", err)
			}
		})
	}

	accepted := []string{
		`{"Type": "llm", "Model": "m", "APIKeyEnv": "OPENAI_API_KEY"}`,
		`{"Type": "llm", "Model": "m", "APIKey": "${OPENAI_API_KEY}"}`,
		`{"Type": "llm", "Model": "m"}`,
		`{"Type": "http", "URL": "http://h", "Headers": {"Authorization": "Bearer ${TOKEN}", "X-Api-Key": "${API_KEY}", "Proxy-Authorization": "Basic ${PROXY_BASIC}"}}`,
		`{"Type": "http", "URL": "http://h", "Headers": {"Cookie": "session=${SESSION}; csrftoken=${CSRF}", "X-Hook-Token": "${HOOK_TOKEN}"}}`,
		`{"Type": "http", "URL": "http://h", "Headers": {"Content-Type": "application/vnd.api+json", "Accept": "*/*", "X-Request-Id": "req-123"}}`,
		`{"Type": "exec", "Command": ["a"], "Env": {"MODE": "ci", "LEVEL": "3", "GITHUB_TOKEN": "${GITHUB_TOKEN}", "DB_PASSWORD": "${PG_PASS}"}}`,
	}
	for _, agent := range accepted {
		t.Run(agent, func(t *testing.T) {
			if _, err := ParseAgentsFile([]byte(`{"A": ` + agent + `}`)); err != nil {
				t.Errorf("ParseAgentsFile: %v, want it accepted", err)
			}
		})
	}
}

// TestResolvedHoldsNoSecret runs agents whose secrets come from the
// environment and checks that the text stored with an execution holds
// their references, never their values, and that the values are read
// when the agents are called.
func TestResolvedHoldsNoSecret(t *testing.T) {
	needSh(t)
	base := evalSymlinks(t, t.TempDir())
	llmEP := newEndpoint(t, reply{body: chat("ok", "")})
	hookEP := newEndpoint(t, reply{body: `{"delivered": true}`})
	text := `{
	  "Chat":  {"Type": "llm", "BaseURL": "` + llmEP.url + `", "Model": "m", "APIKey": "${ASLRUN_TEST_CHAT_KEY}"},
	  "Chat2": {"Type": "llm", "BaseURL": "` + llmEP.url + `", "Model": "m", "APIKeyEnv": "ASLRUN_TEST_CHAT2_KEY"},
	  "Hook":  {"Type": "http", "URL": "` + hookEP.url + `", "Headers": {"Authorization": "Bearer ${ASLRUN_TEST_HOOK_TOKEN}", "Cookie": "session=${ASLRUN_TEST_SESSION}"}},
	  "Tool":  {"Type": "exec", "Command": ["sh", "-c", "printf '\"%s\"' \"$API_TOKEN\""], "Env": {"API_TOKEN": "${ASLRUN_TEST_TOOL_TOKEN}"}},
	  "Hosts": {"Allow": ["` + llmEP.host() + `", "` + hookEP.host() + `"]}
	}`
	// run sets the variables to values made of prefix, calls every agent
	// of the file, checks that each used its value and returns the values.
	run := func(t *testing.T, text []byte, prefix string) []string {
		t.Helper()
		vars := []string{"ASLRUN_TEST_CHAT_KEY", "ASLRUN_TEST_CHAT2_KEY", "ASLRUN_TEST_HOOK_TOKEN", "ASLRUN_TEST_SESSION", "ASLRUN_TEST_TOOL_TOKEN"}
		values := make([]string, len(vars))
		for i, v := range vars {
			values[i] = prefix + "-value-of-" + v
			t.Setenv(v, values[i])
		}
		f, err := ParseAgentsFile(text)
		if err != nil {
			t.Fatalf("ParseAgentsFile: %v", err)
		}
		reg := agents.NewRegistry()
		if err := f.Register(reg, base, slog.New(&logRecorder{})); err != nil {
			t.Fatalf("Register: %v", err)
		}
		llmBefore, hookBefore := len(llmEP.received()), len(hookEP.received())
		results := map[string]any{}
		for _, name := range f.Names() {
			a, _ := reg.Lookup(name)
			got, err := a.Invoke(context.Background(), &agents.Request{Agent: name, Execution: "e", State: name, Input: map[string]any{"prompt": "hi"}})
			if err != nil {
				t.Fatalf("Invoke %s: %v", name, err)
			}
			results[name] = got
		}
		llmCalls, hookCalls := llmEP.received()[llmBefore:], hookEP.received()[hookBefore:]
		if len(llmCalls) != 2 || len(hookCalls) != 1 {
			t.Fatalf("the endpoints got %d and %d requests, want 2 and 1", len(llmCalls), len(hookCalls))
		}
		for i, want := range []string{"Bearer " + values[0], "Bearer " + values[1]} {
			if got := llmCalls[i].header.Get("Authorization"); got != want {
				t.Errorf("llm request %d: Authorization = %q, want %q", i, got, want)
			}
		}
		if got, want := hookCalls[0].header.Get("Authorization"), "Bearer "+values[2]; got != want {
			t.Errorf("http request: Authorization = %q, want %q", got, want)
		}
		if got, want := hookCalls[0].header.Get("Cookie"), "session="+values[3]; got != want {
			t.Errorf("http request: Cookie = %q, want %q", got, want)
		}
		if got := results["Tool"]; got != values[4] {
			t.Errorf("exec agent saw API_TOKEN = %v, want %q", got, values[4])
		}
		resolved, err := f.Resolved(base)
		if err != nil {
			t.Fatalf("Resolved: %v", err)
		}
		for _, v := range values {
			if strings.Contains(string(resolved), v) {
				t.Errorf("Resolved = %s, holds the secret %q", resolved, v)
			}
		}
		for _, ref := range []string{`"${ASLRUN_TEST_CHAT_KEY}"`, `"ASLRUN_TEST_CHAT2_KEY"`, `"Bearer ${ASLRUN_TEST_HOOK_TOKEN}"`, `"session=${ASLRUN_TEST_SESSION}"`, `"${ASLRUN_TEST_TOOL_TOKEN}"`} {
			if !strings.Contains(string(resolved), ref) {
				t.Errorf("Resolved = %s, want it to keep the reference %s", resolved, ref)
			}
		}
		return values
	}

	f, err := ParseAgentsFile([]byte(text))
	if err != nil {
		t.Fatalf("ParseAgentsFile: %v", err)
	}
	stored, err := f.Resolved(base)
	if err != nil {
		t.Fatalf("Resolved: %v", err)
	}
	first := run(t, []byte(text), "first")
	// What a resume rebuilds from the stored text reads the environment
	// of the process that runs it, when it runs: new values, none stored.
	second := run(t, stored, "second")
	again, err := f.Resolved(base)
	if err != nil || string(again) != string(stored) {
		t.Errorf("Resolved after the calls = %s, %v, want %s as before them", again, err, stored)
	}
	for _, v := range append(first, second...) {
		if strings.Contains(string(stored), v) {
			t.Errorf("the stored text %s holds the secret %q", stored, v)
		}
	}
}

func TestAgentsFileResources(t *testing.T) {
	f, err := ParseAgentsFile([]byte(`{
	  "Notify": {"Type": "http", "URL": "http://127.0.0.1:1/hook"},
	  "Resources": {
	    "arn:aws:states:::sns:publish": "Notify",
	    "arn:aws:lambda:us-east-1:123456789012:function:classify": "Classifier"
	  }
	}`))
	if err != nil {
		t.Fatal(err)
	}
	if got := f.Names(); !slices.Equal(got, []string{"Notify"}) {
		t.Errorf("Names() = %v, want [Notify]: Resources is no agent", got)
	}
	if got := f.Resources(); len(got) != 2 || got["arn:aws:states:::sns:publish"] != "Notify" {
		t.Errorf("Resources() = %v", got)
	}
	reg := agents.NewRegistry()
	if err := f.Register(reg, t.TempDir(), nil); err != nil {
		t.Fatal(err)
	}
	if name, ok := reg.ResolveResource("arn:aws:states:::sns:publish", "", ""); name != "Notify" || !ok {
		t.Errorf("ResolveResource(sns:publish) = %q, %v, want Notify, true", name, ok)
	}
	// Classifier is mapped but not registered: resolved to a name that is
	// missing, so the check at start can say which.
	arn := "arn:aws:lambda:us-east-1:123456789012:function:classify"
	if name, ok := reg.ResolveResource(arn, arn, "classify"); name != "Classifier" || ok {
		t.Errorf("ResolveResource(classify) = %q, %v, want Classifier, false", name, ok)
	}
	// The resolved text keeps the map, so a resumed execution resolves
	// the same way.
	text, err := f.Resolved(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	again, err := ParseAgentsFile(text)
	if err != nil {
		t.Fatal(err)
	}
	if got := again.Resources(); len(got) != 2 || got[arn] != "Classifier" {
		t.Errorf("Resources() after Resolved = %v", got)
	}
	// A resource mapped already (by Go, or another file) is refused.
	if err := again.Register(reg, "", nil); err == nil {
		t.Error("Register into a registry holding the same agents and resources succeeded")
	}
	fresh := agents.NewRegistry()
	if err := fresh.RegisterResource("arn:aws:states:::sns:publish", "Other"); err != nil {
		t.Fatal(err)
	}
	if err := again.Register(fresh, "", nil); !errors.Is(err, agents.ErrDuplicate) {
		t.Errorf("Register with a resource mapped already: %v, want ErrDuplicate", err)
	}
	if _, ok := fresh.Lookup("Notify"); ok {
		t.Error("a refused Register registered agent Notify")
	}
}
