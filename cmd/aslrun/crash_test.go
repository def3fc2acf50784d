package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/aslrun/aslrun/jsonvalue"
)

// TestMain lets the test binary act as aslrun itself, so that the crash
// test can run it as a subprocess and kill it.
func TestMain(m *testing.M) {
	if os.Getenv("ASLRUN_TEST_AS_CLI") == "1" {
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// aslrunCmd returns a subprocess running aslrun with args. Under the race
// detector, the subprocess does not sleep the detector's default second
// before it exits (atexit_sleep_ms): the tests start dozens of them.
func aslrunCmd(args ...string) *exec.Cmd {
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), "ASLRUN_TEST_AS_CLI=1",
		"GORACE="+strings.TrimSpace(os.Getenv("GORACE")+" atexit_sleep_ms=0"))
	return cmd
}

// crashRun runs aslrun with args and kills it with SIGKILL after a random
// delay up to maxDelay (or lets it finish). It returns the exit code (-1
// when killed), stdout and whether it was killed; a usage error (exit 2)
// fails the test unless it says the execution does not exist.
func crashRun(t *testing.T, rng *rand.Rand, kill bool, maxDelay time.Duration, args ...string) (int, string, bool) {
	t.Helper()
	cmd := aslrunCmd(args...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var timer <-chan time.Time
	if kill {
		timer = time.After(time.Duration(rng.Int64N(int64(maxDelay))))
	}
	select {
	case err := <-done:
		code := 0
		if ee := (*exec.ExitError)(nil); errors.As(err, &ee) {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatalf("aslrun %v: %v", args, err)
		}
		// Exit 2 is expected when a kill came before the execution (or its
		// database) was created, or after it ended.
		msg := errOut.String()
		if code == exitUsage && !strings.Contains(msg, "not found") && !strings.Contains(msg, "has ended") && !strings.Contains(msg, "does not exist") {
			t.Fatalf("aslrun %v: exit 2: %s", args, errOut.String())
		}
		return code, out.String(), false
	case <-timer:
		cmd.Process.Signal(syscall.SIGKILL)
		<-done
		return -1, "", true
	}
}

// long reports whether the long runs were asked for with ASLRUN_LONG=1
// (CI does not set it): the full-size crash soak instead of a small one
// that makes every kind of check.
func long(t *testing.T) bool {
	t.Helper()
	if os.Getenv("ASLRUN_LONG") == "1" {
		return true
	}
	t.Log("small size: ASLRUN_LONG=1 runs the full-size soak")
	return false
}

// TestCrashResume runs executions of a workflow using every state kind as
// subprocesses, kills them with SIGKILL at random moments, resumes them
// until they end, and checks that each ends with the output of an
// uninterrupted run, that its history verifies (also after the later
// executions sharing its database were killed), and that no agent call
// whose result was committed was made again (its completion would then be
// in the history twice).
//
// The executions run in lanes, concurrently: each lane has its own
// database and runs its executions one after the other, strict or (every
// other lane) batched. By default 3 lanes
// run 2 executions each; ASLRUN_LONG=1 runs 20 executions in 4 lanes, and
// ASLRUN_CRASH_EXECUTIONS sets the number of executions.
func TestCrashResume(t *testing.T) {
	if testing.Short() {
		t.Skip("crash test skipped in -short mode")
	}
	t.Parallel()
	executions, lanes := 6, 3
	if long(t) {
		executions, lanes = 20, 4
	}
	if n, err := strconv.Atoi(os.Getenv("ASLRUN_CRASH_EXECUTIONS")); err == nil && n > 0 {
		executions = n
	}
	lanes = min(lanes, executions)
	seed := uint64(time.Now().UnixNano())
	if s, err := strconv.ParseUint(os.Getenv("ASLRUN_CRASH_SEED"), 10, 64); err == nil {
		seed = s
	}
	t.Logf("seed %d (set ASLRUN_CRASH_SEED to replay)", seed)
	dir := t.TempDir()
	def, mock, input := "testdata/crash/pipeline.json", "testdata/crash/mock.json", "@testdata/crash/input.json"

	outputs := make([]string, executions) // by execution
	kills := make([]int, lanes)           // by lane
	var want string
	var wg sync.WaitGroup
	wg.Go(func() {
		// The reference: one uninterrupted run.
		t.Run("reference", func(t *testing.T) {
			code, out, _ := crashRun(t, nil, false, 0, "run", def, "--mock", mock, "--input", input,
				"--db", filepath.Join(dir, "reference.db"), "--name", "reference")
			if code != 0 {
				t.Fatalf("reference run exit %d", code)
			}
			want = out
		})
	})
	for lane := range lanes {
		wg.Go(func() {
			t.Run(fmt.Sprintf("lane%d", lane), func(t *testing.T) {
				rng := rand.New(rand.NewPCG(seed, uint64(lane)))
				db := filepath.Join(dir, fmt.Sprintf("lane%d.db", lane))
				mine := 0 // executions in this lane
				for i := lane; i < executions; i += lanes {
					mine++
				}
				var ids []string
				for i := lane; i < executions; i += lanes {
					id := fmt.Sprintf("e%02d", i)
					ids = append(ids, id)
					start := []string{"run", def, "--mock", mock, "--input", input, "--db", db, "--name", id}
					if lane%2 == 1 {
						// Every other lane runs batched: a kill may lose the
						// last window, never a half-written transition.
						start = append(start, "--durability", "batched")
					}
					outputs[i] = crashExecution(t, rng, &kills[lane], 2*mine, db, id, start...)
					checkHistory(t, db, id)
				}
				// The lane's later kills left its earlier executions intact.
				for _, id := range ids {
					if code, out, errOut := invoke(t, "", "history", id, "--verify", "--db", db); code != 0 {
						t.Errorf("%s: history no longer verifies at the end of the lane: %s%s", id, out, errOut)
					}
				}
			})
		})
	}
	wg.Wait()
	if want != "" {
		for i, out := range outputs {
			if out != "" && !sameJSON(t, out, want) {
				t.Errorf("e%02d: output %s, want %s", i, out, want)
			}
		}
	}
	total := 0
	for _, k := range kills {
		total += k
	}
	if min := executions * 3 / 2; total < min {
		t.Errorf("%d kills across %d executions, want at least %d", total, executions, min)
	}
	t.Logf("%d executions in %d lanes, %d kills", executions, lanes, total)
}

// crashExecution starts execution id with the command line start, kills it
// at a random moment of the ~3 s run, and resumes it (killing it again while
// *kills < killsFirst, then now and then) until it ends. It returns the
// execution's output, after checking that it succeeded.
func crashExecution(t *testing.T, rng *rand.Rand, kills *int, killsFirst int, db, id string, start ...string) string {
	t.Helper()
	code, out, killed := crashRun(t, rng, true, 3*time.Second, start...)
	for attempts := 0; killed || code == exitUsage; attempts++ {
		if code == exitUsage && !killed {
			var st map[string]any
			if sc, so, _ := invoke(t, "", "status", id, "--json", "--db", db); sc == 0 && json.Unmarshal([]byte(so), &st) == nil && st["status"] == "SUCCEEDED" {
				// Killed after its last commit, before printing: read it.
				b, _ := json.Marshal(st["output"])
				code, out = 0, string(b)
				break
			}
		}
		if killed {
			*kills++
		}
		if attempts > 50 {
			t.Fatalf("%s: still not finished after 50 resumes", id)
		}
		// Keep killing until enough kills happened, then let it finish.
		kill := *kills < killsFirst || rng.IntN(3) == 0
		args := []string{"resume", id, "--db", db}
		if code == exitUsage {
			// Killed before the execution was created: start it again.
			args = start
		}
		code, out, killed = crashRun(t, rng, kill, 2*time.Second, args...)
	}
	if code != 0 {
		t.Errorf("%s: exit %d, output %s; want exit 0", id, code, out)
	}
	return out
}

func sameJSON(t *testing.T, a, b string) bool {
	t.Helper()
	x, err1 := jsonvalue.Decode([]byte(a))
	y, err2 := jsonvalue.Decode([]byte(b))
	return err1 == nil && err2 == nil && jsonvalue.Equal(x, y)
}

// checkHistory verifies an execution's history and that no task
// completion appears twice for one idempotency key.
func checkHistory(t *testing.T, db, id string) {
	t.Helper()
	if code, out, errOut := invoke(t, "", "history", id, "--verify", "--db", db); code != 0 {
		t.Errorf("%s: history does not verify: %s%s", id, out, errOut)
	}
	_, out, _ := invoke(t, "", "history", id, "--json", "--db", db)
	var events []struct {
		Type   string         `json:"type"`
		Detail map[string]any `json:"detail"`
	}
	if err := json.Unmarshal([]byte(out), &events); err != nil {
		t.Fatalf("%s: history --json: %v", id, err)
	}
	seen := map[string]bool{}
	for _, e := range events {
		if e.Type != "TaskSucceeded" && e.Type != "TaskFailed" {
			continue
		}
		key := fmt.Sprint(e.Detail["step"], "/", e.Detail["attempt"])
		if seen[key] {
			t.Errorf("%s: the call %s completed twice: a committed call was made again", id, key)
		}
		seen[key] = true
	}
	if len(seen) < 9 {
		t.Errorf("%s: %d task completions in the history, want at least 9", id, len(seen))
	}
}
