package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aslrun/aslrun/jsonpath"
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

// aslrunCmd returns a subprocess running aslrun with args.
func aslrunCmd(args ...string) *exec.Cmd {
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), "ASLRUN_TEST_AS_CLI=1")
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
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatalf("aslrun %v: %v", args, err)
		}
		if code == exitUsage && !strings.Contains(errOut.String(), "not found") && !strings.Contains(errOut.String(), "has ended") {
			t.Fatalf("aslrun %v: exit 2: %s", args, errOut.String())
		}
		return code, out.String(), false
	case <-timer:
		cmd.Process.Signal(syscall.SIGKILL)
		<-done
		return -1, "", true
	}
}

// TestCrashResume runs executions of a workflow using every state kind as
// subprocesses, kills them with SIGKILL at random moments, resumes them
// until they end, and checks that each ends with the output of an
// uninterrupted run, that its history verifies, and that no agent call
// whose result was committed was made again (its completion would then be
// in the history twice). ASLRUN_CRASH_EXECUTIONS runs more executions.
func TestCrashResume(t *testing.T) {
	if testing.Short() {
		t.Skip("crash test skipped in -short mode")
	}
	executions := 20
	if n, err := strconv.Atoi(os.Getenv("ASLRUN_CRASH_EXECUTIONS")); err == nil && n > 0 {
		executions = n
	}
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d (set ASLRUN_CRASH_SEED to replay)", seed)
	if s, err := strconv.ParseUint(os.Getenv("ASLRUN_CRASH_SEED"), 10, 64); err == nil {
		seed = s
	}
	rng := rand.New(rand.NewPCG(seed, seed))
	dir := t.TempDir()
	db := filepath.Join(dir, "crash.db")
	def, mock, input := "testdata/crash/pipeline.json", "testdata/crash/mock.json", "@testdata/crash/input.json"

	// The reference: one uninterrupted run.
	code, want, _ := crashRun(t, rng, false, 0, "run", def, "--mock", mock, "--input", input, "--db", db, "--name", "reference")
	if code != 0 {
		t.Fatalf("reference run exit %d", code)
	}
	kills := 0
	for i := range executions {
		id := fmt.Sprintf("e%02d", i)
		start := []string{"run", def, "--mock", mock, "--input", input, "--db", db, "--name", id}
		// Kill most starts, at a random moment of the ~3 s run.
		code, out, killed := crashRun(t, rng, true, 3*time.Second, start...)
		for attempts := 0; killed || code == exitUsage; attempts++ {
			if code == exitUsage && !killed {
				var st map[string]any
				if sc, so, _ := cli(t, "status", id, "--json", "--db", db); sc == 0 && json.Unmarshal([]byte(so), &st) == nil && st["status"] == "SUCCEEDED" {
					// Killed after its last commit, before printing: read it.
					b, _ := json.Marshal(st["output"])
					code, out = 0, string(b)
					break
				}
			}
			if killed {
				kills++
			}
			if attempts > 50 {
				t.Fatalf("%s: still not finished after 50 resumes", id)
			}
			// Keep killing until enough kills happened, then let it finish.
			kill := kills < 2*executions || rng.IntN(3) == 0
			args := []string{"resume", id, "--db", db}
			if code == exitUsage {
				// Killed before the execution was created: start it again.
				args = start
			}
			code, out, killed = crashRun(t, rng, kill, 2*time.Second, args...)
		}
		if code != 0 || !sameJSON(t, out, want) {
			t.Errorf("%s: exit %d, output %s; want exit 0 and %s", id, code, out, want)
		}
		checkHistory(t, db, id)
	}
	if min := executions * 3 / 2; kills < min {
		t.Errorf("%d kills across %d executions, want at least %d", kills, executions, min)
	}
	t.Logf("%d executions, %d kills", executions, kills)
}

func sameJSON(t *testing.T, a, b string) bool {
	t.Helper()
	x, err1 := jsonpath.Decode([]byte(a))
	y, err2 := jsonpath.Decode([]byte(b))
	return err1 == nil && err2 == nil && jsonpath.Equal(x, y)
}

// checkHistory verifies an execution's history and that no task
// completion appears twice for one idempotency key.
func checkHistory(t *testing.T, db, id string) {
	t.Helper()
	if code, out, _ := crashRun(t, nil, false, 0, "history", id, "--verify", "--db", db); code != 0 {
		t.Errorf("%s: history does not verify: %s", id, out)
	}
	_, out, _ := crashRun(t, nil, false, 0, "history", id, "--json", "--db", db)
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
