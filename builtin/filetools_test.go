package builtin_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/aslrun/aslrun/agents"
	"github.com/aslrun/aslrun/builtin"
	"github.com/aslrun/aslrun/engine"
	"github.com/aslrun/aslrun/states"
)

// described is a Go agent that describes itself as a tool.
type described struct{ agents.Func }

func (described) Description() string { return "Count the words of a text" }
func (described) InputSchema() map[string]any {
	return map[string]any{"type": "object", "properties": map[string]any{"text": map[string]any{"type": "string"}}}
}

// TestLoopOffersToolDescriptions: a loop agent offers the model each
// agent it calls with the file's Description and InputSchema, or the
// agent's own (the request and file tools, a Go agent with the methods),
// or "the agent NAME" with any object.
func TestLoopOffersToolDescriptions(t *testing.T) {
	type offered struct {
		Description string          `json:"description"`
		Parameters  json.RawMessage `json:"parameters"`
	}
	var mu sync.Mutex
	got := map[string]offered{}
	chat := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body struct {
			Tools []struct {
				Function struct {
					Name string `json:"name"`
					offered
				} `json:"function"`
			} `json:"tools"`
		}
		data, _ := io.ReadAll(r.Body)
		if err := json.Unmarshal(data, &body); err != nil {
			t.Errorf("chat: %v", err)
		}
		mu.Lock()
		for _, tl := range body.Tools {
			got[tl.Function.Name] = tl.Function.offered
		}
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"choices":[{"index":0,"finish_reason":"stop","message":{"role":"assistant","content":"ok"}}],"usage":{"prompt_tokens":1,"completion_tokens":1}}`)
	}))
	defer chat.Close()
	dir := t.TempDir()
	file := fmt.Sprintf(`{
	  "Hosts": {"Allow": [%q]},
	  "Models": {"m": {"Provider": "openai", "Model": "x", "BaseURL": %q, "MaxRetries": 0}},
	  "Web":   {"Type": "http", "Methods": ["GET"]},
	  "Notes": {"Type": "file", "Root": %q, "Description": "The team's notes"},
	  "Lint":  {"Type": "exec", "Command": ["true"], "Description": "Lint a file", "InputSchema": {"type": "object", "properties": {"file": {"type": "string"}}, "required": ["file"]}},
	  "Plain": {"Type": "exec", "Command": ["true"]},
	  "L":     {"Type": "loop", "Model": "m", "Tools": ["Web", "Notes", "Lint", "Plain", "Count"]}
	}`, strings.TrimPrefix(chat.URL, "http://"), chat.URL+"/v1", dir)
	f, err := builtin.ParseAgentsFile([]byte(file))
	if err != nil {
		t.Fatal(err)
	}
	reg := agents.NewRegistry()
	if err := reg.Register("Count", described{}); err != nil {
		t.Fatal(err)
	}
	if err := f.Register(reg, t.TempDir(), nil); err != nil {
		t.Fatal(err)
	}
	m, err := states.Parse([]byte(`{"StartAt":"L","States":{"L":{"Type":"Task","Agent":"L","End":true}}}`))
	if err != nil {
		t.Fatal(err)
	}
	res, err := engine.New(engine.Config{Agents: reg}).Run(context.Background(), m, "go", engine.StartOptions{})
	if err != nil || res.Status != engine.StatusSucceeded {
		t.Fatalf("Run = %v, %v", res, err)
	}
	for name, want := range map[string]struct{ description, schema string }{
		"Web":   {"Make an HTTP request (GET)", `"enum":["GET"]`},
		"Notes": {"The team's notes", `"operation"`},
		"Lint":  {"Lint a file", `"required":["file"]`},
		"Plain": {"the agent Plain", `{"type":"object"}`},
		"Count": {"Count the words of a text", `"text"`},
	} {
		o, ok := got[name]
		if !ok {
			t.Errorf("the model was not offered %s (it got %v)", name, got)
			continue
		}
		if !strings.HasPrefix(o.Description, want.description) || !strings.Contains(string(o.Parameters), want.schema) {
			t.Errorf("%s was offered as %q with %s, want %q… with %s", name, o.Description, o.Parameters, want.description, want.schema)
		}
	}
}
