package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"os"
	"reflect"
	"slices"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"

	asl "github.com/aslrun/aslrun"
	"github.com/aslrun/aslrun/tools"
)

// toolError returns err's cause when it is an Agent.ToolError, failing the
// test otherwise.
func toolError(t *testing.T, err error) string {
	t.Helper()
	var ae *asl.Error
	if !errors.As(err, &ae) || ae.Name != asl.ErrAgentToolError {
		t.Fatalf("error = %v, want an %s", err, asl.ErrAgentToolError)
	}
	return ae.Cause
}

func TestMCPTools(t *testing.T) {
	cfg := testConfig("t")
	cfg.PathArgs = map[string][]string{"echo": {"text"}}
	s := startTest(t, cfg, nil)
	var names []string
	for _, tl := range s.Tools() {
		names = append(names, tl.Name)
		if tl.Category != Category {
			t.Errorf("%s: Category = %q, want %q", tl.Name, tl.Category, Category)
		}
		if tl.Call == nil {
			t.Errorf("%s: Call is nil", tl.Name)
		}
	}
	slices.Sort(names)
	want := []string{"t.add", "t.addtool", "t.crash", "t.echo", "t.fail", "t.mixed", "t.pid", "t.slow"}
	if !slices.Equal(names, want) {
		t.Errorf("tools = %v, want %v", names, want)
	}

	add := tool(t, s, "t.add")
	if add.Description != "Adds two integers." {
		t.Errorf("t.add Description = %q", add.Description)
	}
	var in struct {
		Type       string         `json:"type"`
		Properties map[string]any `json:"properties"`
		Required   []string       `json:"required"`
	}
	if err := json.Unmarshal(add.Input, &in); err != nil {
		t.Fatalf("t.add Input %s: %v", add.Input, err)
	}
	if in.Type != "object" || in.Properties["a"] == nil || in.Properties["b"] == nil {
		t.Errorf("t.add Input = %s, want an object schema with a and b", add.Input)
	}
	if len(add.Output) == 0 {
		t.Errorf("t.add Output is empty, want the schema of {sum}")
	}
	for _, tl := range s.Tools() {
		if err := tl.Check(); err != nil {
			t.Errorf("%s: Check: %v", tl.Name, err)
		}
	}
}

func TestMCPCall(t *testing.T) {
	s := startTest(t, testConfig("t"), nil)
	tests := []struct {
		tool    string
		input   map[string]any
		want    any
		wantErr string // the Agent.ToolError's cause
	}{
		{tool: "t.echo", input: map[string]any{"text": "hello"}, want: "hello"},
		{tool: "t.echo", input: map[string]any{"text": ""}, want: ""},
		{tool: "t.add", input: map[string]any{"a": json.Number("2"), "b": 40}, want: map[string]any{"sum": json.Number("42")}},
		{tool: "t.mixed", want: []any{"a picture", map[string]any{"type": "image", "mimeType": "image/png", "data": "AQID"}}},
		{tool: "t.fail", wantErr: "mcp server t: tool fail: boom"},
	}
	for _, tt := range tests {
		t.Run(tt.tool, func(t *testing.T) {
			got, err := tool(t, s, tt.tool).Call(context.Background(), nil, tt.input)
			if tt.wantErr != "" {
				if cause := toolError(t, err); cause != tt.wantErr {
					t.Errorf("%s: cause = %q, want %q", tt.tool, cause, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("%s: %v", tt.tool, err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("%s(%v) = %#v, want %#v", tt.tool, tt.input, got, tt.want)
			}
		})
	}
	refused := []struct {
		tool  string
		input map[string]any
	}{
		{"add", map[string]any{"a": "two", "b": 1}},
		{"echo", nil},
		{"nope", nil}, // a tool the server does not have
	}
	for _, tt := range refused {
		t.Run("refused "+tt.tool, func(t *testing.T) {
			_, err := s.call(context.Background(), tt.tool, tt.input)
			t.Log(toolError(t, err))
		})
	}
}

func TestMCPCancel(t *testing.T) {
	l := newLines()
	s := startTest(t, testConfig("t"), slog.New(l))
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		_, err := tool(t, s, "t.slow").Call(ctx, nil, nil)
		errc <- err
	}()
	l.wait(t, "slow: started")
	cancel()
	select {
	case err := <-errc:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("cancelled call: error = %v, want context.Canceled", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the cancelled call did not return")
	}
	l.wait(t, "slow: cancelled")
	if got, err := tool(t, s, "t.echo").Call(context.Background(), nil, map[string]any{"text": "after"}); err != nil || got != "after" {
		t.Errorf("echo after a cancel = %v, %v; want after", got, err)
	}
}

func TestMCPTimeout(t *testing.T) {
	cfg := testConfig("t")
	cfg.Timeout = 100 * time.Millisecond
	s := startTest(t, cfg, nil)
	_, err := tool(t, s, "t.slow").Call(context.Background(), nil, nil)
	if cause, want := toolError(t, err), "mcp server t: tool slow: no result within 100ms"; cause != want {
		t.Errorf("cause = %q, want %q", cause, want)
	}
}

// restarted returns a channel that receives the tool list after each
// restart or list change.
func restarted(s *Server) chan []tools.Tool {
	ch := make(chan []tools.Tool, 10)
	s.OnChange(func(ts []tools.Tool) { ch <- ts })
	return ch
}

func waitChange(t *testing.T, ch chan []tools.Tool) []tools.Tool {
	t.Helper()
	select {
	case ts := <-ch:
		return ts
	case <-time.After(20 * time.Second):
		t.Fatal("no restart or tool list change")
		return nil
	}
}

func TestMCPServerKilled(t *testing.T) {
	l := newLines()
	s := startTest(t, testConfig("fs"), slog.New(l))
	changes := restarted(s)
	pid := s.pid()

	errc := make(chan error, 1)
	go func() {
		_, err := tool(t, s, "fs.slow").Call(context.Background(), nil, nil)
		errc <- err
	}()
	l.wait(t, "slow: started")
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	want := "mcp server fs: the process exited: signal: killed"
	select {
	case err := <-errc:
		if cause := toolError(t, err); cause != want {
			t.Errorf("call in flight: cause = %q, want %q", cause, want)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the call in flight did not return")
	}
	// Until the restart (half a second later), calls fail at once.
	_, err := tool(t, s, "fs.echo").Call(context.Background(), nil, map[string]any{"text": "x"})
	if cause := toolError(t, err); cause != want {
		t.Errorf("call while down: cause = %q, want %q", cause, want)
	}

	ts := waitChange(t, changes)
	if len(ts) != 8 {
		t.Errorf("after the restart: %d tools, want 8", len(ts))
	}
	if got, err := tool(t, s, "fs.echo").Call(context.Background(), nil, map[string]any{"text": "back"}); err != nil || got != "back" {
		t.Errorf("echo after the restart = %v, %v; want back", got, err)
	}
	if s.pid() == pid {
		t.Errorf("the restarted server has the old pid %d", pid)
	}

	// A tool that makes the server exit.
	_, err = tool(t, s, "fs.crash").Call(context.Background(), nil, nil)
	if cause, want := toolError(t, err), "mcp server fs: the process exited: exit status 3"; cause != want {
		t.Errorf("crash: cause = %q, want %q", cause, want)
	}
	waitChange(t, changes)
	if got, err := tool(t, s, "fs.pid").Call(context.Background(), nil, nil); err != nil || got == "" {
		t.Errorf("pid after the second restart = %v, %v", got, err)
	}
}

func TestMCPListChanged(t *testing.T) {
	s := startTest(t, testConfig("t"), nil)
	changes := restarted(s)
	if _, err := tool(t, s, "t.addtool").Call(context.Background(), nil, map[string]any{"name": "extra"}); err != nil {
		t.Fatal(err)
	}
	ts := waitChange(t, changes)
	if !slices.ContainsFunc(ts, func(tl tools.Tool) bool { return tl.Name == "t.extra" }) {
		t.Fatalf("OnChange got no t.extra")
	}
	if got, err := tool(t, s, "t.extra").Call(context.Background(), nil, nil); err != nil || got != "added" {
		t.Errorf("t.extra = %v, %v; want added", got, err)
	}
}

func TestMCPClose(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	l := newLines()
	s, err := Start(context.Background(), testConfig("t"), nil, slog.New(l))
	if err != nil {
		t.Fatal(err)
	}
	pid := s.pid()
	errc := make(chan error, 1)
	go func() {
		_, err := tool(t, s, "t.slow").Call(context.Background(), nil, nil)
		errc <- err
	}()
	l.wait(t, "slow: started")
	if err := s.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	if cause, want := toolError(t, <-errc), "mcp server t: closed"; cause != want {
		t.Errorf("call in flight at Close: cause = %q, want %q", cause, want)
	}
	if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
		t.Errorf("process %d after Close: kill 0 = %v, want ESRCH", pid, err)
	}
	if _, err := tool(t, s, "t.echo").Call(context.Background(), nil, nil); err == nil {
		t.Error("a call after Close succeeded")
	}
	if err := s.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

func TestMCPCloseWhileRestarting(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	s, err := Start(context.Background(), testConfig("t"), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, err = tool(t, s, "t.crash").Call(context.Background(), nil, nil)
	toolError(t, err)
	if err := s.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
}

func TestMCPStartErrors(t *testing.T) {
	stdio := testConfig("t")
	tests := []struct {
		name string
		cfg  ServerConfig
	}{
		{"bad name", ServerConfig{Name: "a.b", Command: []string{"x"}}},
		{"empty name", ServerConfig{Command: []string{"x"}}},
		{"neither", ServerConfig{Name: "t"}},
		{"both", ServerConfig{Name: "t", Command: []string{"x"}, URL: "http://127.0.0.1:1/"}},
		{"empty program", ServerConfig{Name: "t", Command: []string{""}}},
		{"header for stdio", ServerConfig{Name: "t", Command: []string{"x"}, Header: map[string]string{"A": "b"}}},
		{"env for http", ServerConfig{Name: "t", URL: "http://127.0.0.1:1/", Env: map[string]string{"A": "b"}}},
		{"negative timeout", ServerConfig{Name: "t", Command: []string{"x"}, Timeout: -time.Second}},
		{"missing program", ServerConfig{Name: "t", Command: []string{"/nonexistent/mcp-server"}}},
		{"program that is no server", ServerConfig{Name: "t", Command: []string{"/bin/true"}}},
		{"unknown path tool", func() ServerConfig {
			c := stdio
			c.PathArgs = map[string][]string{"nope": {"path"}}
			return c
		}()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := os.Stat("/bin/true"); err != nil && tt.name == "program that is no server" {
				t.Skip("no /bin/true")
			}
			s, err := Start(context.Background(), tt.cfg, nil, nil)
			if err == nil {
				s.Close()
				t.Fatalf("Start(%+v) succeeded", tt.cfg)
			}
			t.Log(err)
		})
	}
}

func TestMCPBackoff(t *testing.T) {
	var got []time.Duration
	for d := minBackoff; len(got) < 9; d = nextBackoff(d) {
		got = append(got, d)
	}
	want := []time.Duration{500 * time.Millisecond, time.Second, 2 * time.Second, 4 * time.Second,
		8 * time.Second, 16 * time.Second, 30 * time.Second, 30 * time.Second, 30 * time.Second}
	if !slices.Equal(got, want) {
		t.Errorf("backoff = %v, want %v", got, want)
	}
}
