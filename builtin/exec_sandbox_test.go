package builtin

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	asl "github.com/aslrun/aslrun"
	"github.com/aslrun/aslrun/agents"
	"github.com/aslrun/aslrun/tools/sandbox"
)

// needSandbox skips a test on a machine that cannot sandbox, saying why,
// but fails it under CI=true, where the machine must.
func needSandbox(t *testing.T) {
	t.Helper()
	if err := sandbox.Available(); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI must be able to sandbox: %v", err)
		}
		t.Skipf("this machine cannot sandbox: %v", err)
	}
}

func TestExecSandboxed(t *testing.T) {
	needSandbox(t)
	dir := t.TempDir()
	out := t.TempDir()
	script := `#!/bin/sh
read -r input
echo "$input" > /out/seen.json
net=$(grep -c : /proc/net/dev)
if touch ./x 2>/dev/null; then dirw=yes; else dirw=no; fi
if [ -e ` + out + ` ]; then host=yes; else host=no; fi
printf '{"interfaces": %s, "dirWritable": "%s", "hostVisible": "%s", "secret": "%s", "agent": "%s"}' "$net" "$dirw" "$host" "${ASLRUN_TEST_SECRET:-}" "$ASLRUN_AGENT"
`
	if err := os.WriteFile(filepath.Join(dir, "tool.sh"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("ASLRUN_TEST_SECRET", "s3cret")
	a, err := Exec(ExecConfig{Command: []string{"./tool.sh"}, Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	limits := &agents.ToolLimits{State: "Act", Sandbox: &agents.SandboxLimits{
		Mounts: []agents.Mount{{Target: "/out", Dir: out, Bucket: "results"}},
	}}
	ctx := agents.WithToolLimits(context.Background(), limits)
	got, err := a.Invoke(ctx, &agents.Request{Agent: "Tool", Input: map[string]any{"q": "hi"}})
	if err != nil {
		t.Fatalf("Invoke: %v", err)
	}
	const want = `{"agent":"Tool","dirWritable":"no","hostVisible":"no","interfaces":1,"secret":""}`
	if marshal(got) != want {
		t.Errorf("sandboxed, the command saw %s; want %s: one interface (lo), a read-only Dir, no other host folder, none of aslrun's environment, its own ASLRUN_ variables", marshal(got), want)
	}
	if data, err := os.ReadFile(filepath.Join(out, "seen.json")); err != nil || strings.TrimSpace(string(data)) != `{"q":"hi"}` {
		t.Errorf("the mounted bucket holds %q (%v), want the input written through", data, err)
	}

	// The same command unsandboxed sees the host: the test can fail.
	got, err = a.Invoke(context.Background(), &agents.Request{Agent: "Tool", Input: map[string]any{}})
	if m, _ := got.(map[string]any); err != nil || m["hostVisible"] != "yes" || m["secret"] != "s3cret" || m["dirWritable"] != "yes" {
		t.Fatalf("unsandboxed, the command saw %s (%v), want the host's folders and environment", marshal(got), err)
	}
}

func TestExecSandboxRefusals(t *testing.T) {
	needSandbox(t)
	a, err := Exec(ExecConfig{Command: []string{"sleep", "30"}})
	if err != nil {
		t.Fatal(err)
	}
	ctx := agents.WithToolLimits(context.Background(), &agents.ToolLimits{State: "Act", Sandbox: &agents.SandboxLimits{Timeout: 100 * time.Millisecond}})
	_, err = a.Invoke(ctx, &agents.Request{Agent: "Sleep"})
	if errName(err) != asl.ErrTimeout || !strings.Contains(errCause(err), "Tools.Sandbox.Timeout") {
		t.Errorf("Invoke past the sandbox's Timeout = %v, want States.Timeout naming Tools.Sandbox.Timeout", err)
	}
	ctx = agents.WithToolLimits(context.Background(), &agents.ToolLimits{State: "Act", Sandbox: &agents.SandboxLimits{
		Mounts: []agents.Mount{{Target: "/data", Dir: filepath.Join(t.TempDir(), "missing"), Bucket: "corpus"}},
	}})
	_, err = a.Invoke(ctx, &agents.Request{Agent: "Sleep"})
	if errName(err) != asl.ErrPermissions || !strings.Contains(errCause(err), "corpus") || !strings.Contains(errCause(err), "state 'Act'") {
		t.Errorf("Invoke with a mount of a missing folder = %v, want States.Permissions naming the bucket and the state", err)
	}
	mem, err := Exec(ExecConfig{Command: []string{"python3", "-c", "b = bytearray(300 << 20); print('{}')"}})
	if err != nil {
		t.Fatal(err)
	}
	ctx = agents.WithToolLimits(context.Background(), &agents.ToolLimits{State: "Act", Sandbox: &agents.SandboxLimits{Memory: 128 << 20}})
	if _, err := mem.Invoke(ctx, &agents.Request{Agent: "Mem"}); errName(err) != asl.ErrTaskFailed {
		t.Errorf("Invoke allocating 300 MiB under Memory 128 MiB = %v, want States.TaskFailed", err)
	}
}
