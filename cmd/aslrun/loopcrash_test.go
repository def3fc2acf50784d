package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// The model loop's crash test: an execution whose one Task is a loop
// agent (3 model turns, 4 tool calls) on a fake Chat Completions server,
// run by `aslrun run` and `aslrun resume` processes killed with SIGKILL
// at random points of its progress.

// loopTurns is how many turns the fake's script has.
const loopTurns = 3

// loopCalls are the tool calls the script asks for, by id, tool and
// argument: two in the first turn, two in the second.
var loopCalls = [][]loopCall{
	{{"call_a", "Lookup", "a"}, {"call_b", "Price", "b"}},
	{{"call_c", "Lookup", "c"}, {"call_d", "Price", "d"}},
}

// loopEvents is how many events the fake and the count file see in an
// uninterrupted run: a request per turn and a line per tool call.
const loopEvents = loopTurns + 4

// loopCall is a tool call of the script.
type loopCall struct{ id, tool, item string }

// loopKey names a tool call by its tool and argument, as the count file
// and the history both tell them.
func loopKey(tool, item string) string { return tool + " " + item }

// loopTool is the command of the tools Lookup and Price: it appends its
// call's identity (the agent and its input) to $COUNTFILE, takes a
// moment (so that kills land inside tool calls too) and answers with its
// input.
const loopTool = `in=$(cat); printf '%s %s\n' "$ASLRUN_AGENT" "$in" >> "$COUNTFILE"; sleep 0.05; printf '{"tool":"%s","got":%s}' "$ASLRUN_AGENT" "$in"`

// loopWorkflow is one Task calling the loop agent.
const loopWorkflow = `{"StartAt":"Ask","States":{"Ask":{"Type":"Task","Agent":"Shopper","ResultPath":"$.answer","End":true}}}`

// loopRequest is a request the fake holds until the killer lets it go
// (or kills its sender).
type loopRequest struct {
	turn    int
	release chan struct{}
}

// loopFake is an OpenAI Chat Completions server scripting the loop: it
// answers each request by the conversation it holds (the number of tool
// results in it), so a turn sent again gets the same answer, and counts
// the requests of each turn. When arrived is set, each request is handed
// to it and answered once released.
type loopFake struct {
	arrived chan loopRequest
	mu      sync.Mutex
	// requests counts the requests of each turn (index 1 to loopTurns).
	requests [loopTurns + 1]int
	// bad lists the requests it could not place in the script.
	bad []string
}

func (f *loopFake) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Messages []struct {
			Role       string `json:"role"`
			Content    any    `json:"content"`
			ToolCallID string `json:"tool_call_id"`
		} `json:"messages"`
	}
	data, _ := io.ReadAll(r.Body)
	var results []string
	err := json.Unmarshal(data, &body)
	if err == nil {
		for _, m := range body.Messages {
			if m.Role == "tool" {
				s, _ := m.Content.(string)
				results = append(results, s)
			}
		}
	}
	turn := len(results)/2 + 1
	if err != nil || len(results)%2 != 0 || turn > loopTurns || r.URL.Path != "/v1/chat/completions" {
		f.mu.Lock()
		f.bad = append(f.bad, fmt.Sprintf("%s %s", r.URL.Path, data))
		f.mu.Unlock()
		http.Error(w, `{"error":{"message":"not in the script"}}`, http.StatusBadRequest)
		return
	}
	f.mu.Lock()
	f.requests[turn]++
	f.mu.Unlock()
	if f.arrived != nil {
		req := loopRequest{turn: turn, release: make(chan struct{})}
		select {
		case f.arrived <- req:
		case <-r.Context().Done():
			return
		}
		select {
		case <-req.release:
		case <-r.Context().Done():
			return // its sender was killed
		}
	}
	message := map[string]any{"role": "assistant"}
	finish := "stop"
	if turn <= len(loopCalls) {
		var calls []any
		for _, c := range loopCalls[turn-1] {
			calls = append(calls, map[string]any{"id": c.id, "type": "function",
				"function": map[string]any{"name": c.tool, "arguments": fmt.Sprintf(`{"item":%q}`, c.item)}})
		}
		message["content"], message["tool_calls"], finish = nil, calls, "tool_calls"
	} else {
		message["content"] = "found: " + strings.Join(results, "; ")
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]any{
		"id": fmt.Sprintf("chat-%d", turn), "object": "chat.completion", "created": 1, "model": "x",
		"choices": []any{map[string]any{"index": 0, "finish_reason": finish, "message": message}},
		"usage":   map[string]any{"prompt_tokens": 10 * turn, "completion_tokens": 5, "total_tokens": 10*turn + 5},
	})
}

// counts returns the requests of each turn so far.
func (f *loopFake) counts() map[int]int {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := map[int]int{}
	for turn := 1; turn <= loopTurns; turn++ {
		out[turn] = f.requests[turn]
	}
	return out
}

// loopSetup is what one execution of the loop needs: its fake, its count
// file and its agents file.
type loopSetup struct {
	fake              *loopFake
	countFile, agents string
}

// newLoopSetup starts a fake (holding its requests for a killer when
// held) and writes the agents file of a loop agent using it, with Lookup
// and Price as its tools, into dir.
func newLoopSetup(t *testing.T, dir string, held bool) *loopSetup {
	t.Helper()
	s := &loopSetup{fake: &loopFake{}, countFile: filepath.Join(dir, "calls.txt")}
	if held {
		s.fake.arrived = make(chan loopRequest)
	}
	srv := httptest.NewServer(s.fake)
	t.Cleanup(srv.Close)
	hostPort := strings.TrimPrefix(srv.URL, "http://")
	tool := map[string]any{"Type": "exec", "Command": []string{"sh", "-c", loopTool}, "Env": map[string]string{"COUNTFILE": s.countFile}}
	file := map[string]any{
		"Hosts":   map[string]any{"Allow": []string{hostPort}},
		"Models":  map[string]any{"m": map[string]any{"Provider": "openai", "Model": "x", "BaseURL": srv.URL + "/v1", "MaxRetries": 0}},
		"Shopper": map[string]any{"Type": "loop", "Model": "m", "System": "Find the items.", "Tools": []string{"Lookup", "Price"}, "MaxTurns": 5},
		"Lookup":  tool,
		"Price":   tool,
	}
	data, err := json.MarshalIndent(file, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	s.agents = writeFile(t, dir, "agents.json", string(data))
	return s
}

// loopCut is the item of a count file line whose input is not the JSON
// of a call: the command started as aslrun died, and read the end of its
// stdin before it got its parent-death signal. Such a run was in flight
// at a kill, and is no call's.
const loopCut = "(input cut short)"

// calls returns how many times each tool call ran, by loopKey, and how
// many lines the count file has. A line being written is not counted.
func (s *loopSetup) calls(t *testing.T) (map[string]int, int) {
	t.Helper()
	data, err := os.ReadFile(s.countFile)
	if errors.Is(err, os.ErrNotExist) {
		return map[string]int{}, 0
	}
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int{}
	n := 0
	for line := range strings.Lines(string(data)) {
		if !strings.HasSuffix(line, "\n") {
			break
		}
		n++
		tool, in, _ := strings.Cut(strings.TrimSuffix(line, "\n"), " ")
		var args struct{ Item string }
		if err := json.Unmarshal([]byte(in), &args); err != nil || args.Item == "" {
			args.Item = loopCut
		}
		out[loopKey(tool, args.Item)]++
	}
	return out, n
}

// loopCallNamed returns the call of the script whose step is name
// ("turn 1/tool call_a").
func loopCallNamed(name string) (loopCall, bool) {
	for i, turn := range loopCalls {
		for _, c := range turn {
			if name == fmt.Sprintf("turn %d/tool %s", i+1, c.id) {
				return c, true
			}
		}
	}
	return loopCall{}, false
}

// loopCommitted is what an execution's history holds of the loop: the
// turns and tool calls whose success was committed, each with how many
// times it appears.
type loopCommitted struct {
	turns map[int]int
	tools map[string]int
	// failed lists the steps that failed.
	failed []string
}

// loopHistory reads the loop's steps from execution id's history, which
// must verify. ok is false when the execution does not exist.
func loopHistory(t *testing.T, db, id string) (loopCommitted, bool) {
	t.Helper()
	c := loopCommitted{turns: map[int]int{}, tools: map[string]int{}}
	code, out, errOut := invoke(t, "", "history", id, "--json", "--db", db)
	if code == exitUsage {
		return c, false // killed before the execution was created
	}
	if code != 0 {
		t.Fatalf("%s: history: exit %d: %s", id, code, errOut)
	}
	if code, out, errOut := invoke(t, "", "history", id, "--verify", "--db", db); code != 0 {
		t.Errorf("%s: history does not verify: %s%s", id, out, errOut)
	}
	var events []struct {
		Type       string `json:"type"`
		Error      string `json:"error"`
		Cause      string `json:"cause"`
		Superseded bool   `json:"superseded"`
		Detail     struct {
			Name string `json:"name"`
			Turn int    `json:"turn"`
			Tool string `json:"tool"`
		} `json:"detail"`
	}
	if err := json.Unmarshal([]byte(out), &events); err != nil {
		t.Fatalf("%s: history --json: %v", id, err)
	}
	for _, e := range events {
		if e.Superseded {
			continue
		}
		detail := e.Detail
		switch e.Type {
		case "ModelTurnSucceeded":
			c.turns[detail.Turn]++
		case "ToolCallSucceeded":
			call, ok := loopCallNamed(detail.Name)
			if !ok || call.tool != detail.Tool {
				t.Errorf("%s: a ToolCallSucceeded event of step %q, tool %q, not in the script", id, detail.Name, detail.Tool)
			}
			c.tools[loopKey(call.tool, call.item)]++
		case "ModelTurnFailed", "ToolCallFailed":
			c.failed = append(c.failed, fmt.Sprintf("%s %s: %s %s", e.Type, detail.Name, e.Error, e.Cause))
		}
	}
	return c, true
}

// loopKill is what was true when a process was killed: the turns and
// tool calls committed then, and how often each had been sent or run.
type loopKill struct {
	where     string
	committed loopCommitted
	requests  map[int]int
	calls     map[string]int
}

// loopExecution is one execution of the loop, killed and resumed.
type loopExecution struct {
	setup *loopSetup
	db    string
	id    string
	start []string
	// env is more of the processes' environment.
	env   []string
	kills []loopKill
}

// loopProcess is how a process of the execution ended: its exit code,
// stdout and stderr, or killed, and then where.
type loopProcess struct {
	code        int
	out, errOut string
	killed      bool
	// where says at which event it was killed: "turn N's request" (in
	// flight: the fake held it), "a tool call's line" (in the tool call),
	// or either "+ D" when the kill came D after it.
	where string
}

// process runs aslrun with args. When after > 0 it kills it with SIGKILL
// once after more events (requests reaching the fake, lines added to the
// count file) have come since it started, delay after that event (at
// once when delay is 0: a request the event was is then in flight).
func (x *loopExecution) process(t *testing.T, after int, delay time.Duration, args ...string) loopProcess {
	t.Helper()
	cmd := aslrunCmd(args...)
	cmd.Env = append(cmd.Env, x.env...)
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	_, lines := x.setup.calls(t)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	tick := time.NewTicker(2 * time.Millisecond)
	defer tick.Stop()
	seen, where := 0, ""
	var fire <-chan time.Time
	// event counts n more events, the last being what, and reports
	// whether to kill now.
	event := func(n int, what string) bool {
		before := seen
		seen += n
		if after <= 0 || before >= after || seen < after {
			return false
		}
		where = what
		if delay == 0 {
			return true
		}
		where += fmt.Sprintf(" + %v", delay.Round(time.Millisecond))
		fire = time.After(delay)
		return false
	}
	kill := func() loopProcess {
		cmd.Process.Signal(syscall.SIGKILL)
		<-done
		return loopProcess{code: -1, killed: true, where: where}
	}
	for {
		select {
		case err := <-done:
			p := loopProcess{out: stdout.String(), errOut: stderr.String()}
			if ee := (*exec.ExitError)(nil); errors.As(err, &ee) {
				p.code = ee.ExitCode()
			} else if err != nil {
				t.Fatalf("aslrun %v: %v", args, err)
			}
			return p
		case req := <-x.setup.fake.arrived:
			if event(1, fmt.Sprintf("turn %d's request", req.turn)) {
				p := kill()
				close(req.release)
				return p
			}
			close(req.release)
		case <-tick.C:
			if _, n := x.setup.calls(t); n > lines {
				now := event(n-lines, "a tool call's line")
				lines = n
				if now {
					return kill()
				}
			}
		case <-fire:
			return kill()
		}
	}
}

// snapshot records what was committed and counted at a kill.
func (x *loopExecution) snapshot(t *testing.T, where string) (loopCommitted, bool) {
	t.Helper()
	c, exists := loopHistory(t, x.db, x.id)
	calls, _ := x.setup.calls(t)
	x.kills = append(x.kills, loopKill{where: where, committed: c, requests: x.setup.fake.counts(), calls: calls})
	return c, exists
}

// run starts the execution and kills it at random points of its progress
// (each process once, after 1 to as many events as its remaining work
// makes, at once or, when more events follow, up to 40 ms later),
// resuming it until it ends; after wantKills kills it lets it finish. It
// returns the execution's output.
func (x *loopExecution) run(t *testing.T, rng *rand.Rand, wantKills int) string {
	t.Helper()
	args, remaining := x.start, loopEvents
	for attempt := 0; ; attempt++ {
		if attempt > 30 {
			t.Fatalf("%s: not ended after %d processes", x.id, attempt)
		}
		after, delay := 0, time.Duration(0)
		if len(x.kills) < wantKills && remaining > 0 {
			after = 1 + rng.IntN(remaining)
			if after < remaining && rng.IntN(2) == 0 {
				delay = time.Duration(rng.Int64N(int64(40 * time.Millisecond)))
			}
		}
		p := x.process(t, after, delay, args...)
		if p.killed {
			c, exists := x.snapshot(t, p.where)
			args = []string{"resume", x.id, "--db", x.db}
			if !exists {
				args = x.start
			}
			remaining = loopEvents - len(c.turns) - len(c.tools)
			continue
		}
		if p.code == 0 {
			return p.out
		}
		// Killed after its last commit, before printing: the next
		// process finds it ended; read its output.
		var st struct {
			Status string          `json:"status"`
			Output json.RawMessage `json:"output"`
		}
		if sc, so, _ := invoke(t, "", "status", x.id, "--json", "--db", x.db); sc == 0 && json.Unmarshal([]byte(so), &st) == nil && st.Status == "SUCCEEDED" {
			return string(st.Output)
		}
		t.Fatalf("%s: aslrun %v: exit %d: %s%s", x.id, args, p.code, p.out, p.errOut)
	}
}

// check checks the execution's history and counts once it ended: every
// turn and tool call committed exactly once and none failed; under
// strict durability, no turn or tool call committed before a kill was
// sent or run again, and each was sent or run at most once more than the
// kills that found it uncommitted.
func (x *loopExecution) check(t *testing.T, strict bool) {
	t.Helper()
	c, _ := loopHistory(t, x.db, x.id)
	want := map[string]int{}
	for _, turn := range loopCalls {
		for _, call := range turn {
			want[loopKey(call.tool, call.item)] = 1
		}
	}
	if got := c.turns; !maps.Equal(got, map[int]int{1: 1, 2: 1, 3: 1}) {
		t.Errorf("%s: ModelTurnSucceeded events by turn %v, want turns 1 to 3 once each", x.id, got)
	}
	if got := c.tools; !maps.Equal(got, want) {
		t.Errorf("%s: ToolCallSucceeded events by call %v, want %v", x.id, got, want)
	}
	if len(c.failed) > 0 {
		t.Errorf("%s: failed steps: %v", x.id, c.failed)
	}
	requests := x.setup.fake.counts()
	calls, _ := x.setup.calls(t)
	x.setup.fake.mu.Lock()
	if bad := x.setup.fake.bad; len(bad) > 0 {
		t.Errorf("%s: requests out of the script: %q", x.id, bad)
	}
	x.setup.fake.mu.Unlock()
	for turn := 1; turn <= loopTurns; turn++ {
		if requests[turn] == 0 {
			t.Errorf("%s: turn %d was never sent", x.id, turn)
		}
	}
	for key := range want {
		if calls[key] == 0 {
			t.Errorf("%s: tool call %s never ran", x.id, key)
		}
	}
	for key, n := range calls {
		if want[key] == 0 && !strings.HasSuffix(key, " "+loopCut) {
			t.Errorf("%s: %d runs of tool call %s, not in the script", x.id, n, key)
		}
	}
	if !strict {
		return
	}
	for turn := 1; turn <= loopTurns; turn++ {
		uncommitted := 0
		for k, kill := range x.kills {
			if kill.committed.turns[turn] == 0 {
				uncommitted++
			} else if requests[turn] != kill.requests[turn] {
				t.Errorf("%s: turn %d, committed before kill %d, was sent again: %d requests then, %d in the end", x.id, turn, k+1, kill.requests[turn], requests[turn])
			}
		}
		if requests[turn] > 1+uncommitted {
			t.Errorf("%s: turn %d sent %d times, more than once plus the %d kills that found it uncommitted", x.id, turn, requests[turn], uncommitted)
		}
	}
	for key := range want {
		uncommitted := 0
		for k, kill := range x.kills {
			if kill.committed.tools[key] == 0 {
				uncommitted++
			} else if calls[key] != kill.calls[key] {
				t.Errorf("%s: tool call %s, committed before kill %d, ran again: %d runs then, %d in the end", x.id, key, k+1, kill.calls[key], calls[key])
			}
		}
		if calls[key] > 1+uncommitted {
			t.Errorf("%s: tool call %s ran %d times, more than once plus the %d kills that found it uncommitted", x.id, key, calls[key], uncommitted)
		}
	}
}

// loopReference runs the loop once, uninterrupted, in this process, and
// returns its output.
func loopReference(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	s := newLoopSetup(t, dir, false)
	wf := writeFile(t, dir, "workflow.json", loopWorkflow)
	code, out, errOut := invoke(t, "", "run", wf, "--agents", s.agents, "--input", `{"prompt":"Find a, b, c and d."}`,
		"--db", filepath.Join(dir, "ref.db"), "--name", "ref")
	if code != 0 {
		t.Fatalf("reference run: exit %d: %s%s", code, out, errOut)
	}
	var v struct{ Answer string }
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatalf("reference run: output %s: %v", out, err)
	}
	for _, want := range []string{`{"got":{"item":"a"},"tool":"Lookup"}`, `{"got":{"item":"b"},"tool":"Price"}`, `{"got":{"item":"c"},"tool":"Lookup"}`, `{"got":{"item":"d"},"tool":"Price"}`} {
		if !strings.Contains(v.Answer, want) {
			t.Fatalf("reference run: answer %q, want it to hold the tool result %s", v.Answer, want)
		}
	}
	calls, n := s.calls(t)
	if got := s.fake.counts(); !maps.Equal(got, map[int]int{1: 1, 2: 1, 3: 1}) || n != 4 || len(calls) != 4 {
		t.Fatalf("reference run: requests by turn %v, tool calls %v; want each once", got, calls)
	}
	return out
}

// loopCrashModes runs executions of the loop on the database db makes
// (a file path or a URL, one per mode), strict and batched, killing each
// process at a random point of its progress, and checks each against the
// reference output want. env is more of the processes' environment.
func loopCrashModes(t *testing.T, want string, env []string, db func(t *testing.T, dir string) string) {
	t.Helper()
	executions, killsEach := 2, 3
	if long(t) {
		executions, killsEach = 10, 6
	}
	seed := uint64(time.Now().UnixNano())
	if s, err := strconv.ParseUint(os.Getenv("ASLRUN_CRASH_SEED"), 10, 64); err == nil {
		seed = s
	}
	t.Logf("seed %d (set ASLRUN_CRASH_SEED to replay)", seed)
	for i, mode := range []string{"strict", "batched"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			rng := rand.New(rand.NewPCG(seed, uint64(i)))
			dir := t.TempDir()
			url := db(t, dir)
			wf := writeFile(t, dir, "workflow.json", loopWorkflow)
			var kills []string
			cut := 0 // tool runs that read a cut input as their process died
			for e := range executions {
				id := fmt.Sprintf("loop-%s-%d", mode, e)
				s := newLoopSetup(t, t.TempDir(), true)
				x := &loopExecution{setup: s, db: url, id: id, env: env,
					start: []string{"run", wf, "--agents", s.agents, "--input", `{"prompt":"Find a, b, c and d."}`,
						"--db", url, "--name", id, "--durability", mode}}
				out := x.run(t, rng, killsEach)
				if !sameJSON(t, out, want) {
					t.Errorf("%s: output %s, want %s", id, out, want)
				}
				x.check(t, mode == "strict")
				calls, _ := s.calls(t)
				for _, c := range []string{"Lookup", "Price"} {
					cut += calls[loopKey(c, loopCut)]
				}
				for _, k := range x.kills {
					kills = append(kills, fmt.Sprintf("%s at %s (%d turns, %d tool calls committed)", id, k.where, len(k.committed.turns), len(k.committed.tools)))
				}
			}
			if len(kills) < executions {
				t.Errorf("%d kills across %d executions, want at least one each", len(kills), executions)
			}
			t.Logf("%s: %d executions, %d kills, %d tool runs with their input cut short by a kill:\n%s", mode, executions, len(kills), cut, strings.Join(kills, "\n"))
		})
	}
}

// TestModelLoopCrash runs a loop agent's execution (3 model turns on a
// fake Chat Completions server, 4 tool calls as exec agents) on bbolt,
// strict and batched, killing its `aslrun run` and `aslrun resume`
// processes with SIGKILL at random points of its progress (on a request
// reaching the fake, held there, or a tool call's line in the count file,
// or a little after), and resuming it until it ends. Each execution must
// end with the output of an uninterrupted run and a history that verifies
// and commits each turn and tool call once; under strict durability no
// turn or tool call committed before a kill may be sent or run again.
// By default 2 executions of 3 kills per mode; ASLRUN_LONG=1 runs 10 of 6.
func TestModelLoopCrash(t *testing.T) {
	if testing.Short() {
		t.Skip("crash test skipped in -short mode")
	}
	t.Parallel()
	want := loopReference(t)
	loopCrashModes(t, want, nil, func(t *testing.T, dir string) string { return filepath.Join(dir, "loop.db") })
}

// TestModelLoopCrashPostgres is TestModelLoopCrash on PostgreSQL (a fresh
// database for each mode).
func TestModelLoopCrashPostgres(t *testing.T) {
	if testing.Short() {
		t.Skip("crash test skipped in -short mode")
	}
	t.Parallel()
	want := loopReference(t)
	// A killed process's lease lapses soon, so that the next one takes
	// the execution at once; one process runs it at a time, so no other
	// competes for it while a renewal is late.
	loopCrashModes(t, want, []string{envLeaseTTL + "=300ms"}, func(t *testing.T, _ string) string {
		url, _ := pgDatabase(t)
		return url
	})
}

// TestLoopFakeScript: the fake answers by the conversation it is sent,
// whatever was sent before, and refuses what its script does not hold.
func TestLoopFakeScript(t *testing.T) {
	f := &loopFake{}
	srv := httptest.NewServer(f)
	defer srv.Close()
	post := func(path, body string) (int, map[string]any) {
		t.Helper()
		resp, err := http.Post(srv.URL+path, "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var v map[string]any
		json.NewDecoder(resp.Body).Decode(&v)
		return resp.StatusCode, v
	}
	tool := func(id, content string) string {
		return fmt.Sprintf(`{"role":"tool","tool_call_id":%q,"content":%q}`, id, content)
	}
	user := `{"role":"user","content":"Find a, b, c and d."}`
	for _, tc := range []struct {
		name, path, messages string
		status               int
		want                 string // a part of the reply
	}{
		{"turn 1", "/v1/chat/completions", user, 200, `"call_b"`},
		{"turn 1 again", "/v1/chat/completions", user, 200, `"call_a"`},
		{"turn 2", "/v1/chat/completions", user + "," + tool("call_a", "A") + "," + tool("call_b", "B"), 200, `"call_d"`},
		{"turn 3", "/v1/chat/completions", user + "," + tool("call_a", "A") + "," + tool("call_b", "B") + "," + tool("call_c", "C") + "," + tool("call_d", "D"), 200, `found: A; B; C; D`},
		{"half a turn's results", "/v1/chat/completions", user + "," + tool("call_a", "A"), 400, ""},
		{"past the script", "/v1/chat/completions", strings.Repeat(tool("x", "X")+",", 6) + user, 400, ""},
		{"another path", "/v1/responses", user, 400, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status, reply := post(tc.path, `{"model":"x","messages":[`+tc.messages+`]}`)
			data, _ := json.Marshal(reply)
			if status != tc.status || !strings.Contains(string(data), tc.want) {
				t.Errorf("POST %s = %d %s, want %d with %s", tc.path, status, data, tc.status, tc.want)
			}
		})
	}
	if got := f.counts(); !maps.Equal(got, map[int]int{1: 2, 2: 1, 3: 1}) || len(f.bad) != 3 {
		t.Errorf("requests by turn %v, %d refused; want turn 1 twice, 2 and 3 once, 3 refused", got, len(f.bad))
	}
}
