//go:build pebble

package pebble_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aslrun/aslrun/agents"
	"github.com/aslrun/aslrun/engine"
	"github.com/aslrun/aslrun/jsonvalue"
	"github.com/aslrun/aslrun/states"
	"github.com/aslrun/aslrun/store/pebble"
)

// The crash test: the loop workflow of bench/workflows (its Work agent
// mocked) run in strict durability on a Pebble store by child processes,
// each killed with SIGKILL after it acknowledged some commits, then
// resumed to the end; its output must be the uninterrupted run's.

// crashEnv names the folder a TestCrashChild process runs the loop in.
const crashEnv = "ASLRUN_PEBBLE_CRASH_DB"

// Parameters of the crash test: the execution, its turns (a commit each,
// about), and the commits each child acknowledges before it is killed.
const (
	crashID    = "crash-loop"
	crashTurns = 40
)

var crashKills = []int{7, 12}

// loopFixture reads the loop workflow, its mocks and its input.
func loopFixture(t testing.TB) (*states.Machine, *agents.Registry, any) {
	t.Helper()
	dir := filepath.Join("..", "..", "bench", "workflows")
	read := func(name string) []byte {
		data, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		return data
	}
	m, err := states.Parse(read("loop.json"))
	if err != nil {
		t.Fatalf("loop.json: %v", err)
	}
	mocks, err := agents.ParseMocks(read("mock.json"))
	if err != nil {
		t.Fatalf("mock.json: %v", err)
	}
	reg := agents.NewRegistry()
	if err := mocks.Register(reg); err != nil {
		t.Fatal(err)
	}
	input, err := jsonvalue.Decode(fmt.Appendf(nil, `{"doc":%s,"i":0,"n":%d}`, read("document.json"), crashTurns))
	if err != nil {
		t.Fatal(err)
	}
	return m, reg, input
}

// outputJSON is a result's output as JSON text, failing t unless the
// execution succeeded.
func outputJSON(t *testing.T, what string, res *engine.Result, err error) []byte {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	if res.Status != engine.StatusSucceeded {
		t.Fatalf("%s: status %s (%s: %s), want SUCCEEDED", what, res.Status, res.Error, res.Cause)
	}
	out, err := json.Marshal(res.Output)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestCrashResume(t *testing.T) {
	if testing.Short() {
		t.Skip("starts child processes")
	}
	m, reg, input := loopFixture(t)

	// The uninterrupted run.
	ref := openTest(t, filepath.Join(t.TempDir(), "ref"))
	res, err := engine.New(engine.Config{Agents: reg, Store: ref, Durability: engine.DurabilityStrict}).
		Run(t.Context(), m, input, engine.StartOptions{ID: crashID})
	want := outputJSON(t, "uninterrupted run", res, err)

	path := filepath.Join(t.TempDir(), "db")
	var seq int64 // the execution's Seq when the child starts
	for round, kill := range crashKills {
		cmd := exec.Command(os.Args[0], "-test.run=^TestCrashChild$")
		cmd.Env = append(os.Environ(), crashEnv+"="+path)
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		acked := 0
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if !strings.HasPrefix(sc.Text(), "committed") {
				continue
			}
			if acked++; acked == kill {
				cmd.Process.Kill() // SIGKILL, between or in the middle of commits
			}
		}
		cmd.Wait()
		if acked < kill {
			t.Fatalf("round %d: the child acknowledged %d commits before ending, want it killed after %d", round, acked, kill)
		}

		s := openTest(t, path)
		e, err := s.Load(t.Context(), crashID)
		if err != nil {
			t.Fatalf("round %d: Load after SIGKILL = %v", round, err)
		}
		if e.Seq < seq+int64(acked) {
			t.Errorf("round %d: Seq %d after SIGKILL, want at least %d (%d + %d acknowledged)", round, e.Seq, seq+int64(acked), seq, acked)
		}
		if e.Status != engine.StatusRunning {
			t.Errorf("round %d: status %s after SIGKILL, want RUNNING", round, e.Status)
		}
		if err := s.VerifyHistory(t.Context(), crashID); err != nil {
			t.Errorf("round %d: VerifyHistory after SIGKILL = %v", round, err)
		}
		seq = e.Seq
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	}

	s := openTest(t, path)
	x := engine.New(engine.Config{Agents: reg, Store: s, Durability: engine.DurabilityStrict})
	res, err = x.Resume(t.Context(), crashID, engine.ResumeOptions{})
	if got := outputJSON(t, "resumed run", res, err); !bytes.Equal(got, want) {
		t.Errorf("output after %d kills and a resume:\n%s\nwant (uninterrupted):\n%s", len(crashKills), got, want)
	}
	if err := s.VerifyHistory(t.Context(), crashID); err != nil {
		t.Errorf("VerifyHistory after the resumed run = %v", err)
	}
}

// TestCrashChild is the child process of TestCrashResume: it runs the
// loop (or resumes it when the folder has it) and prints "committed" for
// every commit that returned nil, until it is killed.
func TestCrashChild(t *testing.T) {
	path := os.Getenv(crashEnv)
	if path == "" {
		t.Skip("run by TestCrashResume")
	}
	s, err := pebble.Open(path, pebble.Options{LockTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	m, reg, input := loopFixture(t)
	x := engine.New(engine.Config{Agents: reg, Store: s, Durability: engine.DurabilityStrict,
		Hooks: engine.Hooks{Committed: func(_ time.Duration, err error) {
			if err == nil {
				fmt.Fprintln(os.Stdout, "committed")
			}
		}}})
	_, err = s.Load(t.Context(), crashID)
	switch {
	case errors.Is(err, engine.ErrNotFound):
		_, err = x.Run(t.Context(), m, input, engine.StartOptions{ID: crashID})
	case err == nil:
		_, err = x.Resume(t.Context(), crashID, engine.ResumeOptions{})
	}
	if err != nil {
		t.Fatal(err)
	}
}
