package builtin_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"

	"github.com/aslrun/aslrun/agents"
	"github.com/aslrun/aslrun/builtin"
	"github.com/aslrun/aslrun/egress"
	"github.com/aslrun/aslrun/engine"
	"github.com/aslrun/aslrun/jsonvalue"
	"github.com/aslrun/aslrun/states"
)

// ExampleLLM calls a local server that answers like an OpenAI-compatible
// chat-completions endpoint; with a real one, BaseURL is left empty (or
// names the provider) and the key comes from APIKeyEnv.
func ExampleLLM() {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, `{"choices": [{"message": {"role": "assistant", "content": "{\"intent\": \"refund\"}"}}],
		                    "usage": {"prompt_tokens": 42, "completion_tokens": 7, "total_tokens": 49}}`)
	}))
	defer srv.Close()

	// The local server is on loopback, which agents reach only when it is
	// listed.
	local, err := egress.New(egress.Config{Allow: []string{strings.TrimPrefix(srv.URL, "http://")}})
	if err != nil {
		fmt.Println(err)
		return
	}
	classifier, err := builtin.LLM(builtin.LLMConfig{
		BaseURL:           srv.URL,
		Hosts:             local,
		Model:             "gpt-4o-mini",
		System:            "Classify the ticket. Answer in JSON: {\"intent\": …}.",
		JSON:              true,
		InputCostPerMTok:  0.15,
		OutputCostPerMTok: 0.60,
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	req := &agents.Request{
		Agent: "Classifier",
		Input: map[string]any{"prompt": "I was charged twice for my order."},
		OnUsage: func(u agents.Usage) {
			fmt.Printf("usage: %d in, %d out, cost %.7f\n", u.InputTokens, u.OutputTokens, u.Cost)
		},
	}
	out, err := classifier.Invoke(context.Background(), req)
	if err != nil {
		fmt.Println(err)
		return
	}
	data, _ := jsonvalue.Marshal(out)
	fmt.Println(string(data))
	// Output:
	// usage: 42 in, 7 out, cost 0.0000105
	// {"intent":"refund"}
}

// ExampleExec runs a shell script as an agent: the input arrives on stdin,
// the call's identity in the environment, and the result is what the
// script prints. A non-zero exit with {"Error", "Cause"} on stdout raises
// that error.
func ExampleExec() {
	dir, err := os.MkdirTemp("", "example")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	lint := filepath.Join(dir, "lint.sh")
	os.WriteFile(lint, []byte(`#!/bin/sh
input=$(cat)
echo "linting $input" >&2
if [ "$ASLRUN_ATTEMPT" = 0 ]; then
  echo '{"Error": "Lint.Busy", "Cause": "try again"}'
  exit 1
fi
printf '{"state": "%s", "findings": []}' "$ASLRUN_STATE"
`), 0o755)

	linter, err := builtin.Exec(builtin.ExecConfig{
		Command: []string{lint},
		Logger:  slog.New(slog.DiscardHandler), // stderr lines are logged here
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	for attempt := range 2 {
		req := &agents.Request{Agent: "Linter", Execution: "x1", State: "Lint", Attempt: attempt, Input: map[string]any{"files": []any{"main.go"}}}
		out, err := linter.Invoke(context.Background(), req)
		if err != nil {
			fmt.Println("error:", err)
			continue
		}
		data, _ := jsonvalue.Marshal(out)
		fmt.Println("result:", string(data))
	}
	// Output:
	// error: Lint.Busy: try again
	// result: {"findings":[],"state":"Lint"}
}

// ExampleHTTP POSTs the input to a web service, with a header whose value
// comes from the environment, and returns the service's JSON answer.
func ExampleHTTP() {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		fmt.Fprintf(w, `{"got": %s, "auth": %q, "key": %q}`, body, r.Header.Get("Authorization"), r.Header.Get("Idempotency-Key"))
	}))
	defer srv.Close()
	os.Setenv("EXAMPLE_HOOK_TOKEN", "t0k")
	defer os.Unsetenv("EXAMPLE_HOOK_TOKEN")

	local, err := egress.New(egress.Config{Allow: []string{strings.TrimPrefix(srv.URL, "http://")}})
	if err != nil {
		fmt.Println(err)
		return
	}
	notify, err := builtin.HTTP(builtin.HTTPConfig{
		URL:     srv.URL + "/hooks/deploy",
		Hosts:   local,
		Headers: map[string]string{"Authorization": "Bearer ${EXAMPLE_HOOK_TOKEN}"},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	req := &agents.Request{Agent: "Notify", Execution: "x1", State: "Notify", Step: "Notify#1", Input: map[string]any{"text": "deployed"}}
	out, err := notify.Invoke(context.Background(), req)
	if err != nil {
		fmt.Println(err)
		return
	}
	data, _ := jsonvalue.Marshal(out)
	fmt.Println(string(data))
	// Output: {"auth":"Bearer t0k","got":{"text":"deployed"},"key":"x1/Notify#1/0"}
}

// ExampleAgentsFile_Register builds the agents of an agents file, as the
// command line does for --agents, and runs a workflow with them.
func ExampleAgentsFile_Register() {
	dir, err := os.MkdirTemp("", "example")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	// A tool next to the agents file: it wraps its input in {"echo": …}.
	os.WriteFile(filepath.Join(dir, "echo.sh"), []byte("#!/bin/sh\nprintf '{\"echo\": %s}' \"$(cat)\"\n"), 0o755)

	file, err := builtin.ParseAgentsFile([]byte(`{
	  "Echo":   {"Type": "exec", "Command": ["./echo.sh"], "TimeoutSeconds": 10},
	  "Notify": {"Type": "http", "URL": "https://hooks.example.com/x", "Headers": {"Authorization": "Bearer ${HOOK_TOKEN}"}}
	}`))
	if err != nil {
		fmt.Println(err)
		return
	}
	reg := agents.NewRegistry()
	// Relative paths are resolved against the file's directory.
	if err := file.Register(reg, dir, slog.New(slog.DiscardHandler)); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(reg.Names())

	m, err := states.Parse([]byte(`{
	  "StartAt": "Echo",
	  "States": {"Echo": {"Type": "Task", "Agent": "Echo", "Parameters": {"n.$": "$.n"}, "ResultPath": "$.echoed", "End": true}}
	}`))
	if err != nil {
		fmt.Println(err)
		return
	}
	res, err := engine.New(engine.Config{Agents: reg}).Run(context.Background(), m, map[string]any{"n": 7}, engine.StartOptions{})
	if err != nil {
		fmt.Println(err)
		return
	}
	out, _ := jsonvalue.Marshal(res.Output)
	fmt.Println(res.Status, string(out))
	// Output:
	// [Echo Notify]
	// SUCCEEDED {"echoed":{"echo":{"n":7}},"n":7}
}

// ExampleParseAgentsFile_secrets shows that an agents file, stored with
// every execution, may refer to secrets but not hold them.
func ExampleParseAgentsFile_secrets() {
	_, err := builtin.ParseAgentsFile([]byte(`{
	  "Classifier": {"Type": "llm", "Model": "gpt-4o-mini", "APIKey": "sk-proj-1234"}
	}`))
	var fe *builtin.FileError
	if errors.As(err, &fe) {
		fmt.Println(fe.Pointer, errors.Is(err, builtin.ErrLiteralSecret))
	}
	fmt.Println(err)

	_, err = builtin.ParseAgentsFile([]byte(`{
	  "Classifier": {"Type": "llm", "Model": "gpt-4o-mini", "APIKey": "${OPENAI_API_KEY}"},
	  "Notify":     {"Type": "http", "URL": "https://hooks.example.com/x",
	                 "Headers": {"Authorization": "Bearer ${HOOK_TOKEN}", "Content-Type": "application/json"}},
	  "Deploy":     {"Type": "exec", "Command": ["./deploy.sh"], "Env": {"GITHUB_TOKEN": "${DEPLOY_TOKEN}", "STAGE": "prod"}}
	}`))
	fmt.Println(err)
	// Output:
	// /Classifier/APIKey true
	// agents file /Classifier/APIKey: APIKey must not hold the key itself, since the agents file is stored with every execution: write "APIKeyEnv": "OPENAI_API_KEY" or "APIKey": "${OPENAI_API_KEY}", read from the environment when the agent is called
	// <nil>
}
