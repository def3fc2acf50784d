package builtin

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/aslrun/aslrun/agents"
)

// echoScript is a command that answers its JSON input back: the cost of
// a call is the agent's and the process's, not the command's work.
const echoScript = "#!/bin/sh\nexec cat\n"

func benchScript(b *testing.B) string {
	b.Helper()
	dir := b.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "echo.sh"), []byte(echoScript), 0o755); err != nil {
		b.Fatal(err)
	}
	return dir
}

// BenchmarkExecCommandDirect runs the echo command with os/exec: the
// floor an exec tool's call stands on.
func BenchmarkExecCommandDirect(b *testing.B) {
	dir := benchScript(b)
	for b.Loop() {
		cmd := exec.Command("./echo.sh")
		cmd.Dir = dir
		if _, err := cmd.Output(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkExecTool is one call of an exec agent (its own PID namespace).
func BenchmarkExecTool(b *testing.B) {
	a, err := Exec(ExecConfig{Command: []string{"./echo.sh"}, Dir: benchScript(b)})
	if err != nil {
		b.Fatal(err)
	}
	req := &agents.Request{Agent: "Echo", Input: map[string]any{"q": "hi"}}
	for b.Loop() {
		if _, err := a.Invoke(context.Background(), req); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkExecToolSandboxed is one call of the same agent under a
// state's Tools.Sandbox (bubblewrap; no network).
func BenchmarkExecToolSandboxed(b *testing.B) {
	a, err := Exec(ExecConfig{Command: []string{"./echo.sh"}, Dir: benchScript(b)})
	if err != nil {
		b.Fatal(err)
	}
	ctx := agents.WithToolLimits(context.Background(), &agents.ToolLimits{State: "Bench", Sandbox: &agents.SandboxLimits{}})
	req := &agents.Request{Agent: "Echo", Input: map[string]any{"q": "hi"}}
	for b.Loop() {
		if _, err := a.Invoke(ctx, req); err != nil {
			b.Fatal(err)
		}
	}
}
