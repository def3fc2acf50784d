package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/aslrun/aslrun/api"
	"github.com/aslrun/aslrun/builtin"
	"github.com/aslrun/aslrun/client"
	"github.com/aslrun/aslrun/egress"
	"github.com/aslrun/aslrun/engine"
)

// TestRunAllowHost: run's http agent reaches a loopback server only when
// --allow-host or the agents file's Hosts lists it; a refusal fails the
// execution with States.Permissions saying how to allow the host, and
// bad or stray host flags are usage errors.
func TestRunAllowHost(t *testing.T) {
	t.Parallel()
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		io.WriteString(w, `{"sent": true}`)
	}))
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "http://")
	dir := t.TempDir()
	wf := writeFile(t, dir, "notify.json", `{"StartAt":"Notify","States":{"Notify":{"Type":"Task","Agent":"Notify","End":true}}}`)
	bare := writeFile(t, dir, "bare.json", `{"Notify": {"Type": "http", "URL": "`+srv.URL+`"}}`)
	listed := writeFile(t, dir, "listed.json", `{"Notify": {"Type": "http", "URL": "`+srv.URL+`"}, "Hosts": {"Allow": ["`+host+`"]}}`)
	mock := writeFile(t, dir, "mock.json", `{"Notify":{"0":{"Return":1}}}`)
	tests := []struct {
		name     string
		args     []string
		code     int
		stdout   string // a part of it
		stderr   string // a part of it
		wantHits int32
	}{
		{name: "refused", args: []string{"--agents", bare}, code: exitFailed,
			stdout: `host ` + host + ` (127.0.0.1) is loopback and not in the allowed hosts; allow it with --allow-host ` + host},
		{name: "flag", args: []string{"--agents", bare, "--allow-host", host}, code: 0, stdout: `"sent": true`, wantHits: 1},
		{name: "flag without port", args: []string{"--agents", bare, "--allow-host", "127.0.0.1"}, code: 0, stdout: `"sent": true`, wantHits: 1},
		{name: "file", args: []string{"--agents", listed}, code: 0, stdout: `"sent": true`, wantHits: 1},
		{name: "only, listed", args: []string{"--agents", listed, "--only-allowed-hosts"}, code: 0, stdout: `"sent": true`, wantHits: 1},
		{name: "other port", args: []string{"--agents", bare, "--allow-host", "127.0.0.1:1"}, code: exitFailed, stdout: "States.Permissions"},
		{name: "bad pattern", args: []string{"--agents", bare, "--allow-host", "http://localhost:11434"}, code: exitUsage,
			stderr: `invalid value "http://localhost:11434" for flag -allow-host: host pattern "http://localhost:11434": is a URL`},
		{name: "without agents", args: []string{"--allow-host", host}, code: exitUsage, stderr: "--allow-host and --only-allowed-hosts go with --agents FILE"},
		{name: "with a mock", args: []string{"--mock", mock, "--only-allowed-hosts"}, code: exitUsage, stderr: "go with --agents FILE"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := hits.Load()
			code, out, errOut := invoke(t, "", append([]string{"run", wf, "--db", ":memory:"}, tt.args...)...)
			if code != tt.code || !strings.Contains(out, tt.stdout) || !strings.Contains(errOut, tt.stderr) {
				t.Errorf("exit %d, stdout %q, stderr %q; want %d, %q, %q", code, out, errOut, tt.code, tt.stdout, tt.stderr)
			}
			if tt.code == exitFailed && !strings.Contains(out, `"Error": "States.Permissions"`) {
				t.Errorf("stdout %q, want States.Permissions", out)
			}
			if got := hits.Load() - before; got != tt.wantHits {
				t.Errorf("the server got %d requests, want %d", got, tt.wantHits)
			}
		})
	}
}

// TestStoredHosts: the agents file stored with an execution holds the
// hosts --allow-host added, so whatever continues it reaches them; the
// flags of the process continuing it join them.
func TestStoredHosts(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "agents.json")
	if err := os.WriteFile(file, []byte(`{"Hook": {"Type": "http", "URL": "http://localhost:9/x"}, "Hosts": {"Allow": ["db.internal"]}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(file)
	_, stored, err := fileAgents(data, file, dir, egress.Config{Allow: []string{"localhost:9"}, Only: true})
	if err != nil {
		t.Fatalf("fileAgents: %v", err)
	}
	f, err := builtin.ParseAgentsFile(stored)
	if err != nil {
		t.Fatalf("the stored file: %v", err)
	}
	if got := f.Hosts(); strings.Join(got.Allow, " ") != "db.internal localhost:9" || !got.Only {
		t.Errorf("stored Hosts = %+v, want db.internal and localhost:9, Only", got)
	}
	// Rebuilt with the continuing process's flags: they join the stored ones.
	e := &engine.Execution{ID: "x", AgentsKind: "agents", Agents: stored}
	if _, err := agentsOf(egress.Config{Allow: []string{"10.0.0.0/8"}})(e); err != nil {
		t.Errorf("agentsOf: %v", err)
	}
	if _, _, err := fileAgents(data, file, dir, egress.Config{Allow: []string{"10.0.0.1/8"}}); err == nil || !strings.Contains(err.Error(), "write 10.0.0.0/8") {
		t.Errorf("fileAgents with a bad pattern: %v, want the pattern's error", err)
	}
}

// TestServeAllowHost: a real `aslrun serve` whose agents file's http
// agent calls a loopback server: refused without --allow-host
// (States.Permissions), reached with it.
func TestServeAllowHost(t *testing.T) {
	if testing.Short() {
		t.Skip("serve test skipped in -short mode")
	}
	t.Parallel()
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		io.WriteString(w, `{"sent": true}`)
	}))
	defer srv.Close()
	dir := t.TempDir()
	agentsFile := writeFile(t, dir, "agents.json", `{"Notify": {"Type": "http", "URL": "`+srv.URL+`"}}`)
	def := json.RawMessage(`{"StartAt":"Notify","States":{"Notify":{"Type":"Task","Agent":"Notify","End":true}}}`)
	for _, tt := range []struct {
		name   string
		args   []string
		status string
		hits   int32
	}{
		{"refused", nil, "FAILED", 0},
		{"allowed", []string{"--allow-host", strings.TrimPrefix(srv.URL, "http://")}, "SUCCEEDED", 1},
	} {
		before := hits.Load()
		p := startServe(t, filepath.Join(dir, tt.name+".db"), append([]string{"--agents", agentsFile}, tt.args...)...)
		c := client.NewUnix(p.sock)
		ctx := context.Background()
		if _, err := c.Start(ctx, api.StartExecution{Definition: def, Name: "n"}); err != nil {
			t.Fatalf("%s: start: %v", tt.name, err)
		}
		e, err := c.Wait(ctx, "n", 20*time.Millisecond)
		if err != nil {
			t.Fatalf("%s: wait: %v", tt.name, err)
		}
		if e.Status != tt.status || tt.status == "FAILED" && (e.Error != "States.Permissions" || !strings.Contains(e.Cause, "--allow-host")) {
			t.Errorf("%s: execution %s %s %q, want %s (States.Permissions naming --allow-host when failed)", tt.name, e.Status, e.Error, e.Cause, tt.status)
		}
		if got := hits.Load() - before; got != tt.hits {
			t.Errorf("%s: the server got %d requests, want %d", tt.name, got, tt.hits)
		}
		p.stop(t, syscall.SIGTERM)
	}
}
