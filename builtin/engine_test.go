package builtin_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/aslrun/aslrun/agents"
	"github.com/aslrun/aslrun/builtin"
	"github.com/aslrun/aslrun/engine"
	"github.com/aslrun/aslrun/jsonvalue"
	"github.com/aslrun/aslrun/states"
)

// runWithAgents registers the agents file text (relative paths against
// dir) and runs the workflow on input.
func runWithAgents(t *testing.T, dir, agentsText, workflow, input string) *engine.Result {
	t.Helper()
	file, err := builtin.ParseAgentsFile([]byte(agentsText))
	if err != nil {
		t.Fatalf("ParseAgentsFile: %v", err)
	}
	reg := agents.NewRegistry()
	if err := file.Register(reg, dir, slog.New(slog.DiscardHandler)); err != nil {
		t.Fatalf("Register: %v", err)
	}
	m, err := states.Parse([]byte(workflow))
	if err != nil {
		t.Fatalf("states.Parse: %v", err)
	}
	in, err := jsonvalue.Decode([]byte(input))
	if err != nil {
		t.Fatalf("input: %v", err)
	}
	res, err := engine.New(engine.Config{Agents: reg}).Run(context.Background(), m, in, engine.StartOptions{})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	return res
}

func writeScript(t *testing.T, dir, name, body string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, name), []byte("#!/bin/sh\n"+body+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
}

// TestEngineRetriesCommandError runs an exec agent whose first attempt
// raises an error of its own, which the state's Retry matches; the retry
// wait passes on the bubble's clock.
func TestEngineRetriesCommandError(t *testing.T) {
	if _, err := os.Stat("/bin/sh"); err != nil {
		t.Skip("no /bin/sh")
	}
	dir := t.TempDir()
	writeScript(t, dir, "lint.sh", `cat >/dev/null
if [ "$ASLRUN_ATTEMPT" = 0 ]; then echo '{"Error": "Lint.Busy", "Cause": "locked"}'; exit 75; fi
printf '{"attempt": %s, "key": "%s"}' "$ASLRUN_ATTEMPT" "$ASLRUN_IDEMPOTENCY_KEY"`)
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		res := runWithAgents(t, dir, `{"Linter": {"Type": "exec", "Command": ["./lint.sh"]}}`, `{
		  "StartAt": "Lint",
		  "States": {"Lint": {"Type": "Task", "Agent": "Linter", "End": true,
		    "Retry": [{"ErrorEquals": ["Lint.Busy"], "IntervalSeconds": 5, "MaxAttempts": 1}]}}
		}`, `{}`)
		if res.Status != engine.StatusSucceeded {
			t.Fatalf("Run = %s %s: %s, want SUCCEEDED", res.Status, res.Error, res.Cause)
		}
		out := res.Output.(map[string]any)
		key, _ := out["key"].(string)
		if fmt.Sprint(out["attempt"]) != "1" || !strings.HasPrefix(key, res.ID+"/") || !strings.HasSuffix(key, "/1") {
			t.Errorf("output = %v, want attempt 1 and the key of attempt 1 of execution %s", out, res.ID)
		}
		if took := time.Since(start); took != 5*time.Second {
			t.Errorf("the run took %s, want the 5 s of the retry", took)
		}
	})
}

// TestEngineCatchesServiceError runs an http agent whose service raises
// Agent.ModelError, which the state's Catch matches.
func TestEngineCatchesServiceError(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusBadGateway)
		io.WriteString(w, `{"Error": "Agent.ModelError", "Cause": "model overloaded"}`)
	}))
	defer srv.Close()
	res := runWithAgents(t, t.TempDir(), `{"Ask": {"Type": "http", "URL": "`+srv.URL+`"}, "Hosts": {"Allow": ["`+strings.TrimPrefix(srv.URL, "http://")+`"]}}`, `{
	  "StartAt": "Ask",
	  "States": {
	    "Ask": {"Type": "Task", "Agent": "Ask", "End": true,
	      "Catch": [{"ErrorEquals": ["Agent.ModelError"], "ResultPath": "$.error", "Next": "Fallback"}]},
	    "Fallback": {"Type": "Pass", "End": true}
	  }
	}`, `{"q": 1}`)
	want := `{"error":{"Cause":"model overloaded","Error":"Agent.ModelError"},"q":1}`
	if got, _ := jsonvalue.Marshal(res.Output); res.Status != engine.StatusSucceeded || string(got) != want {
		t.Errorf("Run = %s %s, want SUCCEEDED %s", res.Status, got, want)
	}
}

// TestEngineStateTimeout runs an exec agent longer than its state's
// TimeoutSeconds: the execution fails with States.Timeout, promptly.
func TestEngineStateTimeout(t *testing.T) {
	if _, err := os.Stat("/bin/sh"); err != nil {
		t.Skip("no /bin/sh")
	}
	dir := t.TempDir()
	writeScript(t, dir, "slow.sh", `sleep 60`)
	start := time.Now()
	res := runWithAgents(t, dir, `{"Slow": {"Type": "exec", "Command": ["./slow.sh"]}}`, `{
	  "StartAt": "Slow",
	  "States": {"Slow": {"Type": "Task", "Agent": "Slow", "TimeoutSeconds": 1, "End": true}}
	}`, `{}`)
	if res.Status != engine.StatusFailed || res.Error != "States.Timeout" {
		t.Errorf("Run = %s %s: %s, want FAILED States.Timeout", res.Status, res.Error, res.Cause)
	}
	if took := time.Since(start); took > 10*time.Second {
		t.Errorf("the run took %s, want about 1 s", took)
	}
}

// TestEngineHostRefused runs a Task whose http agent reaches an unlisted
// loopback server: the state fails with States.Permissions naming the
// host and how to allow it, which a Catch can match, and the server gets
// no request.
func TestEngineHostRefused(t *testing.T) {
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		io.WriteString(w, `{}`)
	}))
	defer srv.Close()
	res := runWithAgents(t, t.TempDir(), `{"Ask": {"Type": "http", "URL": "`+srv.URL+`"}}`, `{
	  "StartAt": "Ask",
	  "States": {
	    "Ask": {"Type": "Task", "Agent": "Ask", "End": true,
	      "Catch": [{"ErrorEquals": ["States.Permissions"], "ResultPath": "$.error", "Next": "Refused"}]},
	    "Refused": {"Type": "Pass", "End": true}
	  }
	}`, `{}`)
	out, _ := res.Output.(map[string]any)
	e, _ := out["error"].(map[string]any)
	cause, _ := e["Cause"].(string)
	if res.Status != engine.StatusSucceeded || e["Error"] != "States.Permissions" || !strings.Contains(cause, "--allow-host "+strings.TrimPrefix(srv.URL, "http://")) {
		got, _ := jsonvalue.Marshal(res.Output)
		t.Errorf("Run = %s %s, want the Catch of States.Permissions naming --allow-host", res.Status, got)
	}
	if n := hits.Load(); n != 0 {
		t.Errorf("the refused server got %d requests", n)
	}
}
