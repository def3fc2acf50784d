package sandbox

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// pidsMax is pids.max of a sandbox's cgroup: enough for a build, not for
// a fork bomb.
const pidsMax = 512

// probeTimeout bounds Available's probe.
const probeTimeout = 30 * time.Second

// available is Available's result, computed once per process.
var available = sync.OnceValues(func() (string, error) {
	p, err := exec.LookPath("bwrap")
	if err != nil {
		return "", fmt.Errorf("sandbox: bwrap is not in PATH (install Debian's bubblewrap): %w", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), probeTimeout)
	defer cancel()
	return p, Probe(ctx, p)
})

// Available reports whether this machine can run sandboxes: nil, or an
// error saying why not (bwrap missing, or the kernel refusing the
// namespaces, quoting bwrap). It probes once per process (see Probe) and
// returns the same answer afterwards. It is safe for concurrent use.
func Available() error {
	_, err := available()
	return err
}

// Probe runs the program bwrapPath with the namespaces, mounts and flags
// Command uses to run /usr/bin/true (or true from the default PATH), and
// returns nil when it succeeds or an error quoting bwrap's complaint. It
// is not cached: Available is the cached form.
func Probe(ctx context.Context, bwrapPath string) error {
	if _, err := os.Stat(bwrapPath); err != nil {
		return fmt.Errorf("sandbox: bwrap (install Debian's bubblewrap): %w", err)
	}
	args, err := bwrapArgs(Spec{}, []string{"true"})
	if err != nil {
		return err
	}
	cmd := exec.CommandContext(ctx, bwrapPath, args...)
	cmd.Env = []string{}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		msg := strings.TrimSpace(stderr.String())
		if msg == "" {
			msg = "no message"
		}
		return fmt.Errorf("sandbox: %s cannot create the sandbox (%s): %w", bwrapPath, msg, err)
	}
	return nil
}

// Command returns the process that runs argv in a sandbox confined as
// spec says, not yet started; it refuses (and runs nothing) when the
// machine cannot sandbox (Available) or spec cannot be honoured. argv[0]
// without a slash is looked up in the PATH of spec.Env inside the
// sandbox, a relative one with a slash in spec.Dir.
//
// The process is killed when ctx is done or spec.Limits.Timeout passes
// after Start. Its standard input, output and error are the embedded
// exec.Cmd's, unset (the null device) by default.
func Command(ctx context.Context, spec Spec, argv []string) (*Cmd, error) {
	bwrap, err := available()
	if err != nil {
		return nil, err
	}
	args, err := bwrapArgs(spec, argv)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancelCause(ctx)
	cmd := exec.CommandContext(ctx, bwrap, args...)
	cmd.Env = []string{}
	cmd.Dir = "/"
	cmd.WaitDelay = waitDelay
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	return &Cmd{
		Cmd:          cmd,
		limits:       spec.Limits,
		cgroupParent: spec.CgroupParent,
		ctx:          ctx,
		cancel:       cancel,
	}, nil
}

// enterCgroup makes the process's cgroup and has the embedded Cmd start
// in it, or records in cgroupErr why it won't. The returned func closes
// the cgroup's descriptor once the process has started.
func (c *Cmd) enterCgroup() (closeFD func()) {
	parent, err := cgroupParent(c.cgroupParent)
	if err != nil {
		c.cgroupErr = err
		return func() {}
	}
	var b [8]byte
	_, _ = rand.Read(b[:])
	dir := filepath.Join(parent, "aslrun-sandbox-"+hex.EncodeToString(b[:]))
	if err := os.Mkdir(dir, 0o755); err != nil {
		c.cgroupErr = fmt.Errorf("sandbox: cgroup: %w", err)
		return func() {}
	}
	c.cgroup = dir
	memory := "max"
	if c.limits.Memory > 0 {
		memory = strconv.FormatInt(c.limits.Memory, 10)
	}
	err = writeCgroup(dir, "memory.max", memory)
	if err == nil && c.limits.Memory > 0 {
		if err = writeCgroup(dir, "memory.swap.max", "0"); errors.Is(err, os.ErrNotExist) {
			err = nil // no swap accounting: no swap to escape to
		}
	}
	if err == nil {
		err = writeCgroup(dir, "pids.max", strconv.Itoa(pidsMax))
	}
	var f *os.File
	if err == nil {
		f, err = os.Open(dir)
	}
	if err != nil {
		c.cgroupErr = errors.Join(err, c.leaveCgroup())
		return func() {}
	}
	c.SysProcAttr.UseCgroupFD = true
	c.SysProcAttr.CgroupFD = int(f.Fd())
	return func() { f.Close() }
}

// leaveCgroup kills what is left in the process's cgroup and removes it.
func (c *Cmd) leaveCgroup() error {
	dir := c.cgroup
	if dir == "" {
		return nil
	}
	c.cgroup = ""
	if err := writeCgroup(dir, "cgroup.kill", "1"); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("sandbox: killing cgroup %s: %w", dir, err)
	}
	// The killed processes leave the cgroup asynchronously; rmdir
	// fails with EBUSY until they have.
	var err error
	for delay := time.Millisecond; delay < time.Second; delay *= 2 {
		if err = syscall.Rmdir(dir); err != syscall.EBUSY {
			break
		}
		time.Sleep(delay)
	}
	if err != nil {
		return fmt.Errorf("sandbox: removing cgroup %s: %w", dir, err)
	}
	return nil
}

// writeCgroup writes value to the control file name of the cgroup dir.
func writeCgroup(dir, name, value string) error {
	if err := os.WriteFile(filepath.Join(dir, name), []byte(value), 0); err != nil {
		return fmt.Errorf("sandbox: cgroup: %w", err)
	}
	return nil
}

// cgroupParent returns the cgroup v2 directory under which sandboxes'
// cgroups go (given, or the server's own), or why there is none.
func cgroupParent(given string) (string, error) {
	dir := given
	if dir == "" {
		if _, err := os.Stat("/sys/fs/cgroup/cgroup.controllers"); err != nil {
			return "", errors.New("sandbox: no cgroup v2 hierarchy at /sys/fs/cgroup")
		}
		own, err := ownCgroup()
		if err != nil {
			return "", err
		}
		dir = filepath.Join("/sys/fs/cgroup", own)
	}
	ctl, err := os.ReadFile(filepath.Join(dir, "cgroup.subtree_control"))
	if err != nil {
		return "", fmt.Errorf("sandbox: %s is not a cgroup v2 directory: %w", dir, err)
	}
	enabled := strings.Fields(string(ctl))
	for _, want := range []string{"memory", "pids"} {
		if !slices.Contains(enabled, want) {
			return "", fmt.Errorf("sandbox: cgroup %s does not enable %s for its children (cgroup.subtree_control %q)", dir, want, strings.TrimSpace(string(ctl)))
		}
	}
	if err := syscall.Access(dir, 2 /* W_OK */); err != nil {
		return "", fmt.Errorf("sandbox: cgroup %s is not writable: %w", dir, err)
	}
	return dir, nil
}

// ownCgroup returns this process's cgroup v2 path ("0::/path" in
// /proc/self/cgroup).
func ownCgroup() (string, error) {
	f, err := os.Open("/proc/self/cgroup")
	if err != nil {
		return "", fmt.Errorf("sandbox: own cgroup: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if p, ok := strings.CutPrefix(sc.Text(), "0::"); ok {
			return p, nil
		}
	}
	return "", errors.New("sandbox: own cgroup: no cgroup v2 entry in /proc/self/cgroup")
}
