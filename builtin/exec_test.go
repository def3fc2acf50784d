package builtin

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	asl "github.com/aslrun/aslrun"
	"github.com/aslrun/aslrun/agents"
	"github.com/aslrun/aslrun/jsonvalue"
)

// script writes an executable sh script with body to dir and returns its
// path.
func script(t *testing.T, dir, name, body string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, []byte("#!/bin/sh\n"+body+"\n"), 0o755); err != nil {
		t.Fatalf("write script: %v", err)
	}
	return path
}

// needSh skips the test where there is no sh to run scripts with.
func needSh(t *testing.T) {
	t.Helper()
	if _, err := os.Stat("/bin/sh"); err != nil {
		t.Skip("no /bin/sh")
	}
}

// execRequest is the request the exec tests send.
func execRequest(t *testing.T, input string) *agents.Request {
	t.Helper()
	return &agents.Request{Agent: "Linter", Execution: "exec-1", State: "Lint", Step: "Lint#1", Attempt: 2, Input: decode(t, input)}
}

func TestExecResult(t *testing.T) {
	needSh(t)
	t.Setenv("ASLRUN_TEST_TOKEN", "tok")
	dir := t.TempDir()
	tests := []struct {
		name  string
		body  string
		env   map[string]string
		input string
		want  string
	}{{
		name:  "input on stdin",
		body:  "cat",
		input: `{"files": ["a.go", "b.go"], "n": 1.50}`,
		want:  `{"files": ["a.go", "b.go"], "n": 1.50}`,
	}, {
		name: "request in the environment",
		body: `printf '{"agent":"%s","execution":"%s","state":"%s","attempt":"%s","key":"%s"}' ` +
			`"$ASLRUN_AGENT" "$ASLRUN_EXECUTION" "$ASLRUN_STATE" "$ASLRUN_ATTEMPT" "$ASLRUN_IDEMPOTENCY_KEY"`,
		input: `null`,
		want:  `{"agent": "Linter", "execution": "exec-1", "state": "Lint", "attempt": "2", "key": "exec-1/Lint#1/2"}`,
	}, {
		name:  "Env expanded and added",
		body:  `printf '["%s", "%s", "%s"]' "$TOKEN" "$PLAIN" "$HOME_SET"`,
		env:   map[string]string{"TOKEN": "Bearer ${ASLRUN_TEST_TOKEN}!", "PLAIN": "a$b", "HOME_SET": "${HOME}"},
		input: `{}`,
		want:  fmt.Sprintf(`["Bearer tok!", "a$b", %q]`, os.Getenv("HOME")),
	}, {
		name:  "Env wins over the process environment",
		body:  `printf '"%s"' "$ASLRUN_TEST_TOKEN"`,
		env:   map[string]string{"ASLRUN_TEST_TOKEN": "mine"},
		input: `{}`,
		want:  `"mine"`,
	}, {
		name:  "working directory",
		body:  `printf '"%s"' "$(pwd -P)"`,
		input: `{}`,
		want:  fmt.Sprintf("%q", evalSymlinks(t, dir)),
	}, {
		name:  "empty stdout is null",
		body:  "cat >/dev/null",
		input: `{"a": 1}`,
		want:  `null`,
	}, {
		name:  "white space is null",
		body:  `printf ' \n\t'`,
		input: `{}`,
		want:  `null`,
	}, {
		name:  "stdin not read",
		body:  `echo '{"ok": true}'`,
		input: `{"big": "` + strings.Repeat("x", 1<<20) + `"}`,
		want:  `{"ok": true}`,
	}, {
		name:  "an error object with exit 0 is a result",
		body:  `echo '{"Error": "X", "Cause": "y"}'`,
		input: `{}`,
		want:  `{"Error": "X", "Cause": "y"}`,
	}, {
		name:  "stderr does not mix with the result",
		body:  `echo progress >&2; echo '[1, 2]'; echo done >&2`,
		input: `{}`,
		want:  `[1, 2]`,
	}}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := script(t, dir, fmt.Sprintf("s%d.sh", i), tt.body)
			a, err := Exec(ExecConfig{Command: []string{path}, Dir: dir, Env: tt.env, Logger: slog.New(&logRecorder{})})
			if err != nil {
				t.Fatalf("Exec: %v", err)
			}
			got, err := a.Invoke(context.Background(), execRequest(t, tt.input))
			if err != nil {
				t.Fatalf("Invoke: %v", err)
			}
			if want := decode(t, tt.want); !jsonvalue.Equal(got, want) || marshal(got) != marshal(want) {
				t.Errorf("Invoke = %s, want %s", marshal(got), marshal(want))
			}
		})
	}
}

func evalSymlinks(t *testing.T, path string) string {
	t.Helper()
	p, err := filepath.EvalSymlinks(path)
	if err != nil {
		t.Fatalf("EvalSymlinks: %v", err)
	}
	return p
}

func TestExecErrors(t *testing.T) {
	needSh(t)
	dir := t.TempDir()
	tests := []struct {
		name     string
		body     string
		command  []string // instead of the script
		env      map[string]string
		iso      isolation
		wantName asl.ErrorName // "" for a plain error
	}{{
		name:     "error object on stdout",
		body:     `echo '{"Error": "Agent.ModelError", "Cause": "quota exceeded"}'; exit 3`,
		wantName: asl.ErrAgentModelError,
	}, {
		name:     "a name of its own, no cause",
		body:     `echo '{"Error": "Lint.Failed", "Findings": 3}'; exit 1`,
		wantName: "Lint.Failed",
	}, {
		name:     "exit status and the last stderr lines",
		body:     `for l in one two three four five six seven; do echo "line $l" >&2; done; exit 2`,
		wantName: asl.ErrTaskFailed,
	}, {
		name:     "stdout that is not an error object",
		body:     `echo '{"Error": 5}'; exit 1`,
		wantName: asl.ErrTaskFailed,
	}, {
		name:     "unterminated JSON",
		body:     `echo '{"Error": "X"'`,
		wantName: asl.ErrAgentInvalidOutput,
	}, {
		name:     "stdout not JSON",
		body:     `echo 'done.'`,
		wantName: asl.ErrAgentInvalidOutput,
	}, {
		name:     "two values on stdout",
		body:     `echo '{}'; echo '{}'`,
		wantName: asl.ErrAgentInvalidOutput,
	}, {
		name: "killed by a signal",
		body: `echo dying >&2; kill -9 $$`,
		// As process 1 of its PID namespace, a command ignores the
		// signals it sends itself: in a process group it dies of them.
		iso:      isolateGroup,
		wantName: asl.ErrTaskFailed,
	}, {
		name:     "stdout too large",
		body:     fmt.Sprintf("head -c %d /dev/zero", maxBody+1),
		wantName: asl.ErrTaskFailed,
	}, {
		name:     "program not found",
		command:  []string{"aslrun-test-no-such-program"},
		wantName: "",
	}, {
		name:     "missing program path",
		command:  []string{"./no-such-script.sh"},
		wantName: "",
	}, {
		name:     "Env variable unset",
		body:     `echo '{}'`,
		env:      map[string]string{"T": "${ASLRUN_TEST_SURELY_UNSET}"},
		wantName: "",
	}}
	golden := goldenCauses(t, "exec")
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			command := tt.command
			if command == nil {
				command = []string{script(t, dir, fmt.Sprintf("e%d.sh", i), tt.body)}
			}
			a, err := Exec(ExecConfig{Command: command, Dir: dir, Env: tt.env, Logger: slog.New(&logRecorder{})})
			if err != nil {
				t.Fatalf("Exec: %v", err)
			}
			a.(*execAgent).isolation = tt.iso
			got, err := a.Invoke(context.Background(), execRequest(t, `{}`))
			if err == nil {
				t.Fatalf("Invoke = %s, want an error", marshal(got))
			}
			if name := errName(err); name != tt.wantName {
				t.Errorf("Invoke error = %v (%q), want name %q", err, name, tt.wantName)
			}
			golden.check(t, err, dir, "DIR")
			var ue *UnsetEnvError
			if tt.env != nil && (!errors.As(err, &ue) || ue.Name != "ASLRUN_TEST_SURELY_UNSET") {
				t.Errorf("Invoke error = %v, want an *UnsetEnvError naming ASLRUN_TEST_SURELY_UNSET", err)
			}
		})
	}
}

func TestExecStderr(t *testing.T) {
	needSh(t)
	dir := t.TempDir()
	path := script(t, dir, "log.sh", `echo 'reading input' >&2; printf 'half' >&2; printf ' a line\r\n' >&2; printf 'no newline' >&2; echo '{}'`)
	rec := &logRecorder{}
	a, err := Exec(ExecConfig{Command: []string{path}, Logger: slog.New(rec)})
	if err != nil {
		t.Fatalf("Exec: %v", err)
	}
	var beats atomic.Int32
	req := execRequest(t, `{}`)
	req.OnHeartbeat = func() { beats.Add(1) }
	if _, err := a.Invoke(context.Background(), req); err != nil {
		t.Fatalf("Invoke: %v", err)
	}
	want := []string{"reading input", "half a line", "no newline"}
	if got := rec.lines(); !slices.Equal(got, want) {
		t.Errorf("logged lines = %q, want %q", got, want)
	}
	for _, r := range rec.records {
		if r["agent"] != "Linter" || r["execution"] != "exec-1" || r["state"] != "Lint" || r["level"] != "INFO" {
			t.Errorf("record = %v, want level INFO, agent Linter, execution exec-1, state Lint", r)
		}
	}
	if got := beats.Load(); got != 3 {
		t.Errorf("heartbeats = %d, want 3 (one per stderr line)", got)
	}
}

// TestExecConcurrent runs one agent from several goroutines, for the race
// detector and to see that calls do not mix their input and output.
func TestExecConcurrent(t *testing.T) {
	needSh(t)
	path := script(t, t.TempDir(), "cat.sh", "echo start >&2; cat")
	a, err := Exec(ExecConfig{Command: []string{path}, Logger: slog.New(&logRecorder{})})
	if err != nil {
		t.Fatalf("Exec: %v", err)
	}
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			in := map[string]any{"i": jsonvalue.IntNumber(int64(i))}
			got, err := a.Invoke(context.Background(), &agents.Request{Agent: "Cat", Input: in})
			if err != nil || !jsonvalue.Equal(got, in) {
				t.Errorf("Invoke(%s) = %s, %v, want the input back", marshal(in), marshal(got), err)
			}
		})
	}
	wg.Wait()
}

func TestExecConfig(t *testing.T) {
	tests := []struct {
		name    string
		cfg     ExecConfig
		wantErr bool
	}{
		{"minimal", ExecConfig{Command: []string{"true"}}, false},
		{"with everything", ExecConfig{Command: []string{"python3", "lint.py", ""}, Dir: "tools", Env: map[string]string{"A": "${B}", "C": "$D"}, Timeout: time.Second}, false},
		{"no command", ExecConfig{}, true},
		{"empty program", ExecConfig{Command: []string{""}}, true},
		{"NUL in an argument", ExecConfig{Command: []string{"echo", "a\x00b"}}, true},
		{"bad Env name", ExecConfig{Command: []string{"true"}, Env: map[string]string{"A=B": "x"}}, true},
		{"empty Env name", ExecConfig{Command: []string{"true"}, Env: map[string]string{"": "x"}}, true},
		{"unterminated ${", ExecConfig{Command: []string{"true"}, Env: map[string]string{"A": "${B"}}, true},
		{"negative Timeout", ExecConfig{Command: []string{"true"}, Timeout: -1}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Exec(tt.cfg)
			if (err != nil) != tt.wantErr {
				t.Errorf("Exec(%+v) error = %v, want error %t", tt.cfg, err, tt.wantErr)
			}
		})
	}
}

func TestLineWriter(t *testing.T) {
	tests := []struct {
		name   string
		writes []string
		want   []string
		tail   string
	}{{
		name:   "lines across writes",
		writes: []string{"a\nb", "c\r\n", "\n", "d"},
		want:   []string{"a", "bc", "", "d"},
		tail:   "; stderr: a\nbc\n\nd",
	}, {
		name:   "last five kept",
		writes: []string{"1\n2\n3\n4\n5\n6\n7\n"},
		want:   []string{"1", "2", "3", "4", "5", "6", "7"},
		tail:   "; stderr: 3\n4\n5\n6\n7",
	}, {
		name:   "long line split",
		writes: []string{strings.Repeat("x", maxLine+3), "\n"},
		want:   []string{strings.Repeat("x", maxLine), "xxx"},
		tail:   "; stderr: " + strings.Repeat("x", excerptLen) + "…\nxxx",
	}, {
		name:   "invalid UTF-8",
		writes: []string{"a\xffb\n"},
		want:   []string{"a\uFFFDb"},
		tail:   "; stderr: a\uFFFDb",
	}, {
		name: "nothing",
		tail: "",
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			w := &lineWriter{onLine: func(s string) { got = append(got, s) }}
			for _, s := range tt.writes {
				if n, err := w.Write([]byte(s)); n != len(s) || err != nil {
					t.Fatalf("Write(%q) = %d, %v, want %d, nil", s, n, err, len(s))
				}
			}
			w.flush()
			if !slices.Equal(got, tt.want) {
				t.Errorf("lines = %q, want %q", got, tt.want)
			}
			if tail := w.tail(); tail != tt.tail {
				t.Errorf("tail() = %q, want %q", tail, tt.tail)
			}
		})
	}
}

func TestCapped(t *testing.T) {
	c := &capped{max: 5}
	for _, s := range []string{"ab", "cdef", "gh"} {
		if n, err := c.Write([]byte(s)); n != len(s) || err != nil {
			t.Fatalf("Write(%q) = %d, %v, want %d, nil", s, n, err, len(s))
		}
	}
	if got := string(c.Bytes()); got != "abcde" || !c.over {
		t.Errorf("capped = %q, over %t, want \"abcde\", over true", got, c.over)
	}
	// os/exec copies a command's output with io.Copy, which must not
	// find a way around Write.
	c = &capped{max: 5}
	if n, err := io.Copy(c, strings.NewReader("0123456789")); n != 10 || err != nil {
		t.Fatalf("io.Copy = %d, %v, want 10, nil", n, err)
	}
	if got := string(c.Bytes()); got != "01234" || !c.over {
		t.Errorf("after io.Copy capped = %q, over %t, want \"01234\", over true", got, c.over)
	}
}
