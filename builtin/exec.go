package builtin

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	asl "github.com/aslrun/aslrun"
	"github.com/aslrun/aslrun/agents"
	"github.com/aslrun/aslrun/jsonvalue"
)

const (
	// stderrLines is how many of the last stderr lines a failure's cause quotes.
	stderrLines = 5
	// maxLine is the longest stderr line logged whole; longer ones are split.
	maxLine = 8 << 10
	// waitDelay is how long Wait waits for the command's pipes to close
	// after it exited or was killed (a background child may hold them).
	waitDelay = time.Second
)

// ExecConfig configures an agent that runs a command. Command is required;
// the zero value of every other field works.
// The agent keeps its own copy: changing the configuration afterwards
// does not change the agent.
type ExecConfig struct {
	// Command is the program and its arguments, run directly (not through
	// a shell). A program name without a slash is looked up in PATH; a
	// relative path with a slash is relative to Dir.
	Command []string
	// Dir is the command's working directory; empty means the current one.
	Dir string
	// Env is added to the process environment (and wins over it).
	// `${VAR}` in a value is replaced by the environment variable VAR at
	// call time (an unset variable fails the call).
	Env map[string]string
	// Timeout limits each run; the command and every process it started
	// (its PID namespace or process group, see Exec) are killed when it
	// passes, and the call fails with States.Timeout. Zero means no limit
	// of its own (the state's TimeoutSeconds still applies, and kills them
	// too).
	Timeout time.Duration
	// Logger receives the command's stderr, one record per line; nil means
	// slog.Default().
	Logger *slog.Logger
}

// execAgent is the agent Exec returns. It is immutable after Exec (but
// for warned).
type execAgent struct {
	cfg ExecConfig
	log *slog.Logger
	// isolation is how commands are confined: isolateAuto, or in tests a
	// given one.
	isolation isolation
	// warned logs, once, that the system refused namespaces.
	warned sync.Once
	// cgroupWarned logs, once, that sandboxed commands run without a
	// cgroup of their own.
	cgroupWarned sync.Once
}

// isolation is how an exec agent's command is confined (see runCommand).
type isolation uint8

const (
	// isolateAuto runs the command in a PID namespace of its own when the
	// system allows it (Linux), else as isolateGroup.
	isolateAuto isolation = iota
	// isolateGroup runs it in a process group of its own, with a
	// parent-death signal on Linux.
	isolateGroup
	// isolateUserNamespace is isolateAuto with a user namespace even
	// for root (tests use it to run the path other users take).
	isolateUserNamespace
)

// Exec returns an agent that runs cfg.Command once per call, so that
// agents can be written in any language:
//   - stdin is the request's input as compact JSON;
//   - the environment is the process's, plus cfg.Env, plus ASLRUN_AGENT,
//     ASLRUN_EXECUTION, ASLRUN_STATE, ASLRUN_ATTEMPT and
//     ASLRUN_IDEMPOTENCY_KEY (agents.Request.IdempotencyKey, the same when
//     a resumed execution repeats a call its stopped process had started);
//   - stdout, decoded strictly, is the result (empty stdout is null;
//     anything else that is not one JSON value is Agent.InvalidOutput);
//   - each stderr line is logged at Info level with the agent, the
//     execution and the state, and counts as a heartbeat
//     (agents.Request.Heartbeat), so a long-running command can keep a
//     state with HeartbeatSeconds alive by writing progress to stderr;
//   - a non-zero exit fails the call: with the error stdout names when it
//     is {"Error": "...", "Cause": "..."} (so a command can raise
//     Agent.ModelError or a name of its own), otherwise with
//     States.TaskFailed quoting the exit status and the last stderr lines.
//
// A command that cannot start is a plain error (States.TaskFailed).
//
// Nothing the command starts outlives the call. On Linux the command is
// process 1 of a PID namespace of its own (with a user namespace when
// aslrun does not run as root) and has a parent-death signal: when it
// ends, is killed at the call's cancellation or timeout, or dies because
// aslrun died (even by SIGKILL), the kernel kills every process left in
// its namespace. Where the system refuses namespaces (a container
// without the privilege, user namespaces disabled), the agent logs a
// warning once and runs the command in a process group of its own with
// the parent-death signal: the group is killed when the call ends, is
// cancelled or times out, but if aslrun dies only the command itself is
// killed, and the children it left running survive. On other Unix
// systems the process group is used without the parent-death signal; on
// other systems only the command is killed. The agent is safe for
// concurrent use.
func Exec(cfg ExecConfig) (agents.Agent, error) {
	if err := checkExec(cfg); err != nil {
		return nil, fmt.Errorf("exec agent: %w", err)
	}
	// Copy what the caller could change later.
	cfg.Command, cfg.Env = slices.Clone(cfg.Command), maps.Clone(cfg.Env)
	a := &execAgent{cfg: cfg, log: cfg.Logger}
	if a.log == nil {
		a.log = slog.Default()
	}
	return a, nil
}

// checkExec validates cfg.
func checkExec(cfg ExecConfig) error {
	if len(cfg.Command) == 0 || cfg.Command[0] == "" {
		return errors.New("the Command is required: the program and its arguments")
	}
	for i, w := range cfg.Command {
		if err := checkWord(w); err != nil {
			return fmt.Errorf("word %d of the Command: %w", i, err)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(cfg.Env)) {
		if err := checkEnv(k, cfg.Env[k]); err != nil {
			return fmt.Errorf("the Env entry %q: %w", k, err)
		}
	}
	if cfg.Timeout < 0 {
		return fmt.Errorf("the Timeout %s is negative", cfg.Timeout)
	}
	return nil
}

// checkWord checks one word of a command.
func checkWord(w string) error {
	if strings.IndexByte(w, 0) >= 0 {
		return errors.New("holds a NUL byte")
	}
	return nil
}

// checkEnv checks one Env entry: the name, and the ${VAR} syntax of the value.
func checkEnv(name, value string) error {
	if name == "" || strings.ContainsAny(name, "=\x00") {
		return fmt.Errorf("%q is not a variable name", name)
	}
	return checkTemplate(value)
}

var _ agents.Agent = (*execAgent)(nil)

// Invoke runs the command once.
func (a *execAgent) Invoke(ctx context.Context, req *agents.Request) (any, error) {
	input, err := jsonvalue.Marshal(req.Input)
	if err != nil {
		return nil, fmt.Errorf("exec agent %s: encode input: %w", req.Agent, err)
	}
	env, err := a.environ(req)
	if err != nil {
		return nil, fmt.Errorf("exec agent %s: %w", req.Agent, err)
	}
	runCtx := ctx
	if a.cfg.Timeout > 0 {
		var cancel context.CancelFunc
		runCtx, cancel = context.WithTimeout(ctx, a.cfg.Timeout)
		defer cancel()
	}
	stdout := &capped{max: maxBody}
	stderr := &lineWriter{onLine: func(line string) {
		a.log.Info("agent stderr", "agent", req.Agent, "execution", req.Execution, "state", req.State, "line", line)
		req.Heartbeat()
	}}
	// The command reads its input from a file that holds all of it before
	// the command starts, not from a pipe aslrun fills meanwhile: were
	// aslrun killed while filling the pipe, the command would read a
	// cut-off input, end of file and all, and might act on it before its
	// parent-death signal came.
	in, err := inputFile(input)
	if err != nil {
		return nil, fmt.Errorf("exec agent %s: %w", req.Agent, err)
	}
	defer in.Close()
	// runCommand may build the command twice: when the system refuses
	// the first confinement, nothing was written yet.
	newCmd := func() *exec.Cmd {
		cmd := exec.CommandContext(runCtx, a.cfg.Command[0], a.cfg.Command[1:]...)
		cmd.Dir = a.cfg.Dir
		cmd.Env = env
		in.Seek(0, io.SeekStart) // a file made here: it seeks
		cmd.Stdin = in
		cmd.Stdout, cmd.Stderr = stdout, stderr
		cmd.WaitDelay = waitDelay
		return cmd
	}
	if limits := agents.ToolLimitsFrom(ctx); limits != nil && limits.Sandbox != nil {
		err = a.runSandboxed(runCtx, limits, env, in, stdout, stderr)
		var ae *asl.Error
		if errors.As(err, &ae) && ctx.Err() == nil && runCtx.Err() == nil {
			return nil, err
		}
	} else {
		env = append(os.Environ(), env...)
		var used isolation
		used, err = runCommand(newCmd, a.isolation)
		if a.isolation == isolateAuto && used == isolateGroup {
			a.warned.Do(func() {
				a.log.Warn("the system refuses PID namespaces: exec agents run in process groups, and the processes a command leaves running outlive aslrun if it is killed", "agent", req.Agent)
			})
		}
	}
	stderr.flush()
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	name := a.display()
	if runCtx.Err() != nil {
		return nil, asl.Errorf(asl.ErrTimeout, "command %s did not finish within %s (the agent's Timeout)%s", name, a.cfg.Timeout, stderr.tail())
	}
	var exitErr *exec.ExitError
	switch {
	case errors.As(err, &exitErr):
		if e := errorObject(stdout.Bytes()); e != nil {
			return nil, e
		}
		return nil, asl.Errorf(asl.ErrTaskFailed, "command %s failed: %s%s", name, exitErr.ProcessState, stderr.tail())
	case errors.Is(err, exec.ErrWaitDelay):
		// The command succeeded; a process it left behind held its
		// output open until waitDelay passed.
	case err != nil:
		return nil, fmt.Errorf("exec agent %s: run %s: %w", req.Agent, name, err)
	}
	if stdout.over {
		return nil, asl.Errorf(asl.ErrTaskFailed, "command %s wrote more than %d bytes to stdout", name, maxBody)
	}
	return decodeResult(stdout.Bytes(), "the stdout of command "+name)
}

// inputFile returns an unnamed file (made in the temporary directory and
// removed at once) holding input, at its start.
func inputFile(input []byte) (*os.File, error) {
	f, err := os.CreateTemp("", "aslrun-input-*")
	if err != nil {
		return nil, fmt.Errorf("the command's input: %w", err)
	}
	os.Remove(f.Name())
	if _, err := f.Write(input); err != nil {
		f.Close()
		return nil, fmt.Errorf("the command's input: %w", err)
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		f.Close()
		return nil, fmt.Errorf("the command's input: %w", err)
	}
	return f, nil
}

// environ returns the command's own environment: the agent's Env
// (expanded) and the ASLRUN_ variables, added to aslrun's environment
// (but in a sandbox).
func (a *execAgent) environ(req *agents.Request) ([]string, error) {
	var env []string
	for _, k := range slices.Sorted(maps.Keys(a.cfg.Env)) {
		v, err := expand(a.cfg.Env[k], os.LookupEnv)
		if err != nil {
			return nil, fmt.Errorf("the Env entry %s: %w", k, err)
		}
		env = append(env, k+"="+v)
	}
	return append(env,
		"ASLRUN_AGENT="+req.Agent,
		"ASLRUN_EXECUTION="+req.Execution,
		"ASLRUN_STATE="+req.State,
		"ASLRUN_ATTEMPT="+strconv.Itoa(req.Attempt),
		"ASLRUN_IDEMPOTENCY_KEY="+req.IdempotencyKey(),
	), nil
}

// display returns the command for messages: its words, quoted when needed.
func (a *execAgent) display() string {
	words := make([]string, len(a.cfg.Command))
	for i, w := range a.cfg.Command {
		if w == "" || strings.ContainsAny(w, " \t\n\"'\\") {
			w = strconv.Quote(w)
		}
		words[i] = w
	}
	return excerpt([]byte(strings.Join(words, " ")))
}

// capped is a buffer that keeps the first max bytes written to it and
// notes whether more came; it never fails a write, so the command is not
// killed by a broken pipe. It has no ReadFrom (the buffer is not
// embedded), so that io.Copy goes through Write and the cap.
type capped struct {
	buf  bytes.Buffer
	max  int
	over bool
}

func (c *capped) Write(p []byte) (int, error) {
	if room := c.max - c.buf.Len(); len(p) > room {
		c.over = true
		c.buf.Write(p[:max(room, 0)])
		return len(p), nil
	}
	return c.buf.Write(p)
}

// Bytes returns what was kept.
func (c *capped) Bytes() []byte { return c.buf.Bytes() }

// lineWriter splits what is written to it into lines (without their line
// ending), calls onLine for each, and keeps the last few for a failure's
// cause. A line longer than maxLine is passed on in pieces. os/exec writes
// to it from one goroutine; flush and tail are called after the command
// ended.
type lineWriter struct {
	onLine  func(string)
	partial []byte
	last    []string
}

func (w *lineWriter) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			w.partial = append(w.partial, p...)
			for len(w.partial) >= maxLine {
				w.line(w.partial[:maxLine])
				w.partial = append(w.partial[:0], w.partial[maxLine:]...)
			}
			break
		}
		w.partial = append(w.partial, p[:i]...)
		w.line(w.partial)
		w.partial = w.partial[:0]
		p = p[i+1:]
	}
	return n, nil
}

// flush passes on a last line that had no line ending.
func (w *lineWriter) flush() {
	if len(w.partial) > 0 {
		w.line(w.partial)
		w.partial = nil
	}
}

func (w *lineWriter) line(b []byte) {
	s := strings.ToValidUTF8(strings.TrimSuffix(string(b), "\r"), "\uFFFD")
	w.onLine(s)
	if len(w.last) == stderrLines {
		w.last = append(w.last[:0], w.last[1:]...)
	}
	w.last = append(w.last, excerpt([]byte(s)))
}

// tail returns "; stderr: " and the last lines, or "" when there were none.
func (w *lineWriter) tail() string {
	if len(w.last) == 0 {
		return ""
	}
	return "; stderr: " + strings.Join(w.last, "\n")
}
