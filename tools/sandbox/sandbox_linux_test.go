package sandbox

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aslrun/aslrun/agents"
)

// requireSandbox skips t, saying why, when this machine cannot sandbox;
// under CI=true it fails instead.
func requireSandbox(t testing.TB) {
	t.Helper()
	if err := Available(); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("sandboxes must work under CI=true: %v", err)
		}
		t.Skipf("this machine cannot sandbox: %v", err)
	}
}

// requireFile skips t (fails it under CI=true) when the program p a test
// needs is missing.
func requireFile(t *testing.T, p string) {
	t.Helper()
	if _, err := os.Stat(p); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("the test needs %s under CI=true: %v", p, err)
		}
		t.Skipf("the test needs %s: %v", p, err)
	}
}

// run runs argv sandboxed by spec and returns its stdout, stderr and
// Wait's error.
func run(t *testing.T, ctx context.Context, spec Spec, argv ...string) (stdout, stderr string, err error) {
	t.Helper()
	c, err := Command(ctx, spec, argv)
	if err != nil {
		t.Fatalf("Command(%q) error: %v", argv, err)
	}
	var out, errOut bytes.Buffer
	c.Stdout, c.Stderr = &out, &errOut
	err = c.Run()
	return out.String(), errOut.String(), err
}

func TestAvailable(t *testing.T) {
	requireSandbox(t)
	if err := Probe(t.Context(), "/nonexistent/bwrap"); err == nil {
		t.Errorf("Probe(/nonexistent/bwrap) = nil, want an error")
	}
	// A "bwrap" that fails like a kernel refusing namespaces is quoted.
	fake := filepath.Join(t.TempDir(), "bwrap")
	script := "#!/bin/sh\necho 'bwrap: No permissions to create new namespace' >&2\nexit 1\n"
	if err := os.WriteFile(fake, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	err := Probe(t.Context(), fake)
	if err == nil || !strings.Contains(err.Error(), "No permissions to create new namespace") {
		t.Errorf("Probe(failing bwrap) = %v, want an error quoting its stderr", err)
	}
}

func TestRunsCommand(t *testing.T) {
	requireSandbox(t)
	t.Setenv("ASLRUN_SANDBOX_SECRET", "leaked")
	out, errOut, err := run(t, t.Context(), Spec{Env: []string{"FOO=bar baz"}},
		"sh", "-c", `echo hello; echo "$FOO"; pwd; env | grep -c ASLRUN_SANDBOX_SECRET; echo $$`)
	// grep -c exits 1 when it counts 0, so sh exits 0 through echo $$.
	if err != nil {
		t.Fatalf("Run error: %v (stderr %q)", err, errOut)
	}
	if want := "hello\nbar baz\n/\n0\n"; !strings.HasPrefix(out, want) {
		t.Errorf("stdout = %q, want it to start %q", out, want)
	}
	// sh's PID is small in a PID namespace of its own (bwrap is 1).
	if pid := strings.TrimPrefix(out, "hello\nbar baz\n/\n0\n"); pid != "2\n" && pid != "3\n" {
		t.Errorf("sh's PID = %q, want 2 or 3 (own PID namespace)", pid)
	}
}

func TestExitStatus(t *testing.T) {
	requireSandbox(t)
	_, _, err := run(t, t.Context(), Spec{}, "sh", "-c", "exit 3")
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 3 {
		t.Errorf("Run(exit 3) = %v, want an *exec.ExitError with code 3", err)
	}
}

func TestNetwork(t *testing.T) {
	requireSandbox(t)
	requireFile(t, "/usr/bin/bash")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	port := ln.Addr().(*net.TCPAddr).Port
	// bash's /dev/tcp connects; the listener's backlog accepts it.
	connect := fmt.Sprintf("echo hi > /dev/tcp/127.0.0.1/%d", port)
	for _, tc := range []struct {
		network bool
		ok      bool
	}{{false, false}, {true, true}} {
		t.Run(fmt.Sprintf("Network=%v", tc.network), func(t *testing.T) {
			spec := Spec{Limits: agents.SandboxLimits{Network: tc.network}}
			_, errOut, err := run(t, t.Context(), spec, "bash", "-c", connect)
			if (err == nil) != tc.ok {
				t.Errorf("connecting to the test's listener: err = %v (stderr %q), want success %v", err, errOut, tc.ok)
			}
			out, _, err := run(t, t.Context(), spec, "cat", "/proc/net/dev")
			if err != nil {
				t.Fatalf("cat /proc/net/dev: %v", err)
			}
			var ifaces []string
			for _, line := range strings.Split(out, "\n") {
				if name, _, ok := strings.Cut(line, ":"); ok {
					ifaces = append(ifaces, strings.TrimSpace(name))
				}
			}
			if onlyLo := len(ifaces) == 1 && ifaces[0] == "lo"; onlyLo == tc.network {
				t.Errorf("interfaces = %q, want only lo: %v", ifaces, !tc.network)
			}
		})
	}
}

func TestFiles(t *testing.T) {
	requireSandbox(t)
	rw, ro, hiddenDir := t.TempDir(), t.TempDir(), t.TempDir()
	for _, d := range []string{ro, hiddenDir} {
		if err := os.WriteFile(filepath.Join(d, "f"), []byte("content"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	spec := Spec{Limits: agents.SandboxLimits{Mounts: []agents.Mount{
		{Target: "/work/rw", Dir: rw, Bucket: "out"},
		{Target: "/work/ro", Dir: ro, Bucket: "in", ReadOnly: true},
	}}}
	for _, tc := range []struct {
		name   string
		script string
		ok     bool
	}{
		{"working directory is the first mount", `test "$(pwd)" = /work/rw`, true},
		{"write /usr", "echo x > /usr/x", false},
		{"write /etc", "echo x > /etc/x", false},
		{"write the root", "echo x > /x", false},
		{"write /tmp", "echo x > /tmp/x && cat /tmp/x", true},
		{"write the rw mount", "echo written > /work/rw/new", true},
		{"read the ro mount", "grep -q content /work/ro/f", true},
		{"write the ro mount", "echo x > /work/ro/new", false},
		{"read an unmounted folder", "cat " + filepath.Join(hiddenDir, "f"), false},
		{"see /root", "ls /root", false},
		{"see /home", "ls /home", false},
		{"see the test binary", "ls " + os.Args[0], false},
		{"read /etc/shadow", "test -s /etc/shadow && cat /etc/shadow", false},
		{"read /etc/passwd", "grep -q root /etc/passwd", true},
		{"write /etc/ssl/private", "mkdir -p /etc/ssl/private/x", false},
		{"write /dev/shm", "echo x > /dev/shm/x", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, errOut, err := run(t, t.Context(), spec, "sh", "-c", tc.script)
			if (err == nil) != tc.ok {
				t.Errorf("sh -c %q: err = %v (stderr %q), want success %v", tc.script, err, errOut, tc.ok)
			}
		})
	}
	if b, err := os.ReadFile(filepath.Join(rw, "new")); err != nil || string(b) != "written\n" {
		t.Errorf("the rw mount's file on the host = %q, %v; want %q", b, err, "written\n")
	}
	if _, err := os.Stat(filepath.Join(ro, "new")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the ro mount's folder got a file: Stat = %v", err)
	}
}

func TestMemory(t *testing.T) {
	requireSandbox(t)
	requireFile(t, "/usr/bin/python3")
	const mib = 1 << 20
	for _, tc := range []struct {
		alloc int
		ok    bool
	}{{10 * mib, true}, {200 * mib, false}} {
		t.Run(fmt.Sprint(tc.alloc/mib, "MiB"), func(t *testing.T) {
			spec := Spec{Limits: agents.SandboxLimits{Memory: 64 * mib}}
			script := fmt.Sprintf("b = bytearray(%d); print(len(b))", tc.alloc)
			out, errOut, err := run(t, t.Context(), spec, "python3", "-c", script)
			if (err == nil) != tc.ok {
				t.Errorf("allocating %d MiB under 64 MiB: err = %v (stdout %q, stderr %q), want success %v",
					tc.alloc/mib, err, out, errOut, tc.ok)
			}
			if !tc.ok && !strings.Contains(errOut, "MemoryError") {
				t.Errorf("stderr = %q, want a MemoryError", errOut)
			}
		})
	}
}

func TestCPU(t *testing.T) {
	requireSandbox(t)
	// Timeout only stops a broken test: the CPU limit must act first.
	spec := Spec{Limits: agents.SandboxLimits{CPU: 500 * time.Millisecond, Timeout: time.Minute}}
	start := time.Now()
	c, err := Command(t.Context(), spec, []string{"sh", "-c", "while :; do :; done"})
	if err != nil {
		t.Fatal(err)
	}
	err = c.Run()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || errors.Is(err, ErrTimeout) {
		t.Fatalf("busy loop with CPU 0.5s: err = %v, want an exit by signal", err)
	}
	// bwrap reports its child's death by signal N as exit status 128+N.
	if code := exit.ExitCode(); code != 128+int(syscall.SIGXCPU) && code != 128+int(syscall.SIGKILL) {
		t.Errorf("exit code = %d, want %d (SIGXCPU) or %d (SIGKILL)", code, 128+syscall.SIGXCPU, 128+syscall.SIGKILL)
	}
	if d := time.Since(start); d > 30*time.Second {
		t.Errorf("the busy loop ran %v", d)
	}
}

func TestTimeout(t *testing.T) {
	requireSandbox(t)
	spec := Spec{Limits: agents.SandboxLimits{Timeout: 200 * time.Millisecond}}
	c, err := Command(t.Context(), spec, []string{"sleep", "60"})
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	c.Stdout = &out // sleep holds it: Wait returns only once sleep died
	err = c.Run()
	if !errors.Is(err, ErrTimeout) {
		t.Errorf("sleep 60 with Timeout 200ms: err = %v, want ErrTimeout", err)
	}
	if errors.Is(err, exec.ErrWaitDelay) {
		t.Errorf("err = %v: sleep outlived bwrap", err)
	}
}

func TestContextCancel(t *testing.T) {
	requireSandbox(t)
	ctx, cancel := context.WithCancel(t.Context())
	c, err := Command(ctx, Spec{}, []string{"sh", "-c", "echo started; sleep 60; echo survived"})
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := c.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, len("started\n"))
	if _, err := stdout.Read(buf); err != nil {
		t.Fatalf("reading the sandbox's first line: %v", err)
	}
	cancel()
	// Reading to EOF means every process holding stdout (sh, sleep) died.
	rest, _ := readAll(stdout)
	err = c.Wait()
	if !errors.Is(err, context.Canceled) {
		t.Errorf("Wait after cancel = %v, want context.Canceled", err)
	}
	if rest != "" {
		t.Errorf("after cancel the sandbox wrote %q", rest)
	}
}

// readAll reads r to its end.
func readAll(r interface{ Read([]byte) (int, error) }) (string, error) {
	var b bytes.Buffer
	_, err := b.ReadFrom(r)
	return b.String(), err
}

func TestCgroup(t *testing.T) {
	requireSandbox(t)
	c, err := Command(t.Context(), Spec{}, []string{"true"})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Run(); err != nil {
		t.Fatal(err)
	}
	dir, skipped := c.Cgroup()
	if dir == "" && skipped == nil {
		t.Fatalf("Cgroup() = \"\", nil: want a cgroup or the reason there is none")
	}
	if dir == "" {
		t.Skipf("no cgroup here (rlimits only): %v", skipped)
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("cgroup %s still there after Wait: %v", dir, err)
	}
}

func TestRefused(t *testing.T) {
	requireSandbox(t)
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	mount := func(m agents.Mount) Spec {
		if m.Bucket == "" {
			m.Bucket = "b"
		}
		return Spec{Limits: agents.SandboxLimits{Mounts: []agents.Mount{m}}}
	}
	for _, tc := range []struct {
		name string
		spec Spec
		argv []string
		want string // a part of the message
	}{
		{"no argv", Spec{}, nil, "no command"},
		{"empty argv[0]", Spec{}, []string{""}, "no command"},
		{"NUL in an argument", Spec{}, []string{"echo", "a\x00b"}, "argument 1"},
		{"unknown command", Spec{}, []string{"no-such-command-xyz"}, `"no-such-command-xyz"`},
		{"command outside the sandbox", Spec{}, []string{os.Args[0]}, "outside what the sandbox sees"},
		{"command not executable", Spec{}, []string{"/etc/passwd"}, "not executable"},
		{"negative memory", Spec{Limits: agents.SandboxLimits{Memory: -1}}, []string{"true"}, "Memory -1"},
		{"tiny memory", Spec{Limits: agents.SandboxLimits{Memory: 1000}}, []string{"true"}, "1 MiB"},
		{"negative CPU", Spec{Limits: agents.SandboxLimits{CPU: -time.Second}}, []string{"true"}, "CPU -1s"},
		{"negative timeout", Spec{Limits: agents.SandboxLimits{Timeout: -time.Second}}, []string{"true"}, "Timeout -1s"},
		{"relative target", mount(agents.Mount{Target: "work", Dir: dir}), []string{"true"}, `bucket "b"`},
		{"unclean target", mount(agents.Mount{Target: "/work/../root", Dir: dir}), []string{"true"}, "not clean"},
		{"root target", mount(agents.Mount{Target: "/", Dir: dir}), []string{"true"}, "root"},
		{"proc target", mount(agents.Mount{Target: "/proc/x", Dir: dir}), []string{"true"}, "/proc"},
		{"dev target", mount(agents.Mount{Target: "/dev", Dir: dir}), []string{"true"}, "/dev"},
		{"system target", mount(agents.Mount{Target: "/usr/local/x", Dir: dir}), []string{"true"}, "/usr"},
		{"missing folder", mount(agents.Mount{Target: "/w", Dir: filepath.Join(dir, "nope")}), []string{"true"}, `bucket "b"`},
		{"folder is a file", mount(agents.Mount{Target: "/w", Dir: file}), []string{"true"}, "not a directory"},
		{"relative folder", mount(agents.Mount{Target: "/w", Dir: "rel"}), []string{"true"}, "not an absolute"},
		{"nested targets", Spec{Limits: agents.SandboxLimits{Mounts: []agents.Mount{
			{Target: "/w", Dir: dir, Bucket: "a"}, {Target: "/w/x", Dir: dir, Bucket: "c"}}}},
			[]string{"true"}, `bucket "c"`},
		{"working directory outside", Spec{Dir: "/root"}, []string{"true"}, `"/root"`},
		{"unclean working directory", Spec{Dir: "/tmp/../root"}, []string{"true"}, `"/tmp/../root"`},
		{"relative working directory", Spec{Dir: "tmp"}, []string{"true"}, `"tmp"`},
		{"bad environment", Spec{Env: []string{"NOEQUALS"}}, []string{"true"}, `"NOEQUALS"`},
		{"empty environment key", Spec{Env: []string{"=x"}}, []string{"true"}, `"=x"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Command(t.Context(), tc.spec, tc.argv)
			if err == nil {
				t.Fatalf("Command(%+v, %q) = %v, nil; want an error", tc.spec, tc.argv, c.Args)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Command error = %q, want it to name %q", err, tc.want)
			}
		})
	}
}

func TestLookPath(t *testing.T) {
	requireSandbox(t)
	bin := t.TempDir()
	if err := os.WriteFile(filepath.Join(bin, "tool"), []byte("#!/bin/sh\necho tool ran in \"$(pwd)\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	mounts := []agents.Mount{{Target: "/opt/tools", Dir: bin, Bucket: "tools", ReadOnly: true}}
	for _, tc := range []struct {
		name string
		spec Spec
		argv string
	}{
		{"in PATH", Spec{Env: []string{"PATH=/opt/tools:/usr/bin"}}, "tool"},
		{"absolute", Spec{}, "/opt/tools/tool"},
		{"relative to Dir", Spec{Dir: "/opt/tools"}, "./tool"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.spec.Limits.Mounts = mounts
			out, errOut, err := run(t, t.Context(), tc.spec, tc.argv)
			if err != nil || !strings.HasPrefix(out, "tool ran in /") {
				t.Errorf("running %q = %q, %v (stderr %q); want the tool's output", tc.argv, out, err, errOut)
			}
		})
	}
}

func TestStartTwice(t *testing.T) {
	requireSandbox(t)
	c, err := Command(t.Context(), Spec{}, []string{"true"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Cgroup(); err == nil {
		t.Errorf("Cgroup() before Start: nil error, want one")
	}
	if err := c.Wait(); err == nil {
		t.Errorf("Wait before Start = nil, want an error")
	}
	if err := c.Run(); err != nil {
		t.Fatal(err)
	}
	if err := c.Start(); err == nil {
		t.Errorf("second Start = nil, want an error")
	}
}

func BenchmarkSandboxedTrue(b *testing.B) {
	requireSandbox(b)
	for b.Loop() {
		c, err := Command(b.Context(), Spec{}, []string{"/bin/true"})
		if err != nil {
			b.Fatal(err)
		}
		if err := c.Run(); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkSandboxedTrueLimited(b *testing.B) {
	requireSandbox(b)
	spec := Spec{Limits: agents.SandboxLimits{Memory: 64 << 20, CPU: time.Second, Timeout: time.Minute}}
	for b.Loop() {
		c, err := Command(b.Context(), spec, []string{"/bin/true"})
		if err != nil {
			b.Fatal(err)
		}
		if err := c.Run(); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkDirectTrue(b *testing.B) {
	for b.Loop() {
		if err := exec.CommandContext(b.Context(), "/bin/true").Run(); err != nil {
			b.Fatal(err)
		}
	}
}

func TestCgroupParent(t *testing.T) {
	for _, tc := range []struct {
		name    string
		control string // "" means no cgroup.subtree_control file
		want    string // a part of the message, or "" for success
	}{
		{"not a cgroup", "", "not a cgroup v2 directory"},
		{"no controllers", "\n", "does not enable memory"},
		{"memory only", "cpu memory\n", "does not enable pids"},
		{"memory and pids", "cpu memory pids\n", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			if tc.control != "" {
				if err := os.WriteFile(filepath.Join(dir, "cgroup.subtree_control"), []byte(tc.control), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			got, err := cgroupParent(dir)
			switch {
			case tc.want == "" && (err != nil || got != dir):
				t.Errorf("cgroupParent(%s) = %q, %v; want %q, nil", tc.name, got, err, dir)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("cgroupParent(%s) = %q, %v; want an error naming %q", tc.name, got, err, tc.want)
			}
		})
	}
}
