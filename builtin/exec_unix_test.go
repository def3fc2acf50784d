//go:build unix

package builtin

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aslrun/aslrun"
)

// gone reports whether process pid has ended: it no longer exists, or it
// is a zombie nobody has reaped yet.
func gone(pid int) bool {
	if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
		return true
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// The state follows the parenthesized command name.
	_, rest, ok := strings.Cut(string(stat), ") ")
	return ok && strings.HasPrefix(rest, "Z")
}

// waitGone waits up to 5 s for process pid to end.
func waitGone(t *testing.T, pid int) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if gone(pid) {
			return
		}
	}
	syscall.Kill(pid, syscall.SIGKILL)
	t.Errorf("process %d outlived the command that started it", pid)
}

// TestExecKillsProcessGroup checks that a timeout, the agent's or the
// context's, kills the command and the processes it started.
func TestExecKillsProcessGroup(t *testing.T) {
	needSh(t)
	tests := []struct {
		name     string
		timeout  time.Duration // the agent's
		ctx      time.Duration // the context's
		wantName asl.ErrorName
		wantErr  error
	}{
		{name: "agent Timeout", timeout: 200 * time.Millisecond, wantName: asl.ErrTimeout},
		{name: "context deadline", ctx: 200 * time.Millisecond, wantErr: context.DeadlineExceeded},
		{name: "context first", timeout: time.Minute, ctx: 200 * time.Millisecond, wantErr: context.DeadlineExceeded},
	}
	golden := goldenCauses(t, "exec_unix")
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			pidFile := filepath.Join(dir, "child.pid")
			// The child is a second shell, so that it is not the
			// script's last command (which a shell may exec in place).
			path := script(t, dir, "slow.sh", `sh -c 'sleep 60' & echo $! > `+pidFile+`; echo started >&2; sleep 60; echo '{}'`)
			a, err := Exec(ExecConfig{Command: []string{path}, Timeout: tt.timeout, Logger: slog.New(&logRecorder{})})
			if err != nil {
				t.Fatalf("Exec: %v", err)
			}
			ctx := context.Background()
			if tt.ctx > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, tt.ctx)
				defer cancel()
			}
			start := time.Now()
			_, err = a.Invoke(ctx, execRequest(t, `{}`))
			if took := time.Since(start); took > 10*time.Second {
				t.Errorf("the call took %s, want it cut short", took)
			}
			switch {
			case tt.wantErr != nil && (!errors.Is(err, tt.wantErr) || errName(err) != ""):
				t.Errorf("Invoke error = %v, want %v", err, tt.wantErr)
			case tt.wantErr == nil && errName(err) != tt.wantName:
				t.Errorf("Invoke error = %v, want %s", err, tt.wantName)
			}
			golden.check(t, err, dir, "DIR")
			data, err := os.ReadFile(pidFile)
			if err != nil {
				t.Fatalf("the script did not start its child: %v", err)
			}
			pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
			if err != nil {
				t.Fatalf("child pid %q: %v", data, err)
			}
			waitGone(t, pid)
		})
	}
}

// TestExecLeftoverChild checks that a command that succeeds but leaves a
// process holding its stdout open still returns, once waitDelay passed.
func TestExecLeftoverChild(t *testing.T) {
	needSh(t)
	path := script(t, t.TempDir(), "leave.sh", `echo '{"done": true}'; sleep 3 &`)
	a, err := Exec(ExecConfig{Command: []string{path}, Logger: slog.New(&logRecorder{})})
	if err != nil {
		t.Fatalf("Exec: %v", err)
	}
	start := time.Now()
	got, err := a.Invoke(context.Background(), execRequest(t, `{}`))
	if err != nil || marshal(got) != `{"done":true}` {
		t.Errorf("Invoke = %s, %v, want {\"done\":true}", marshal(got), err)
	}
	if took := time.Since(start); took > waitDelay+2*time.Second {
		t.Errorf("the call took %s, want about %s", took, waitDelay)
	}
}
