package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"testing/synctest"
	"time"
)

// TestRunRefusals: what is refused before an execution exists exits 2 and
// prints no `execution: ID`, and leaves no execution behind.
func TestRunRefusals(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	db := filepath.Join(dir, "x.db")
	guarded := writeFile(t, dir, "guarded.json", `{"StartAt":"P","Governance":{"Guard":{"Schema":{"type":"object","required":["order"]}}},
		"States":{"P":{"Type":"Pass","End":true}}}`)
	two := writeFile(t, dir, "two.json", `{"StartAt":"A","States":{
		"A":{"Type":"Task","Agent":"Writer","Next":"M"},
		"M":{"Type":"Map","ItemProcessor":{"StartAt":"R","States":{"R":{"Type":"Task","Agent":"Reviewer","End":true}}},"Next":"D"},
		"D":{"Type":"Debate","Agents":["Writer","Critic"],"Topic":"t","End":true}}}`)
	mock := writeFile(t, dir, "mock.json", `{"Writer":{"0":{"Return":1}}}`)
	for _, tc := range []struct {
		name   string
		args   []string
		stderr []string
	}{
		{"schema", []string{"run", guarded, "--input", `{"item":1}`}, []string{"Governance.SchemaViolation", "$.order is required"}},
		{"payload", []string{"run", guarded, "--input", `{"order":"0123456789"}`, "--max-payload", "10"}, []string{"the execution input of 22 bytes passes the payload limit of 10 bytes", "--max-payload"}},
		{"not JSON", []string{"run", guarded, "--input", `{"order":}`}, []string{"input from --input"}},
		{"agents", []string{"run", two, "--mock", mock}, []string{
			`state D: Agents names agent "Critic"`, `state M/R: Agent names agent "Reviewer"`, "--mock FILE or --agents FILE"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, _, errOut := invoke(t, "", append(tc.args, "--db", db)...)
			if code != exitUsage || strings.Contains(errOut, "execution:") {
				t.Errorf("exit %d, stderr %q; want 2 and no execution line", code, errOut)
			}
			for _, want := range tc.stderr {
				if !strings.Contains(errOut, want) {
					t.Errorf("stderr %q does not say %q", errOut, want)
				}
			}
		})
	}
	if code, out, _ := invoke(t, "", "list", "--db", db, "--json"); code != 0 || strings.TrimSpace(out) != "[]" {
		t.Errorf("list after refusals = %d %s, want no execution", code, out)
	}
	code, _, errOut := invoke(t, "", "run", guarded, "--input", `{"order":"o"}`, "--db", db, "--name", "ok")
	if code != 0 || !strings.Contains(errOut, "execution: ok") {
		t.Errorf("an accepted input: exit %d, %q", code, errOut)
	}
	// A fork from a checkpoint that does not exist creates nothing.
	code, _, errOut = invoke(t, "", "resume", "ok", "--from-checkpoint", "nope", "--fork", "--name", "f", "--db", db)
	if code != exitUsage || strings.Contains(errOut, "execution:") {
		t.Errorf("failed fork: exit %d, %q; want 2 and no execution line", code, errOut)
	}
}

// TestMaxPayload: the limit is --max-payload; a document past it fails the
// execution and stderr says its size and the limit.
func TestMaxPayload(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	wf := writeFile(t, dir, "big.json", `{"StartAt":"Big","States":{"Big":{"Type":"Pass","Parameters":{"s.$":"States.ArrayRange(1, 300, 1)"},"End":true}}}`)
	code, out, errOut := invoke(t, "", "run", wf, "--db", filepath.Join(dir, "a.db"), "--max-payload", "100")
	if code != exitFailed || !jsonEqual(t, out, `{"Error":"States.DataLimitExceeded","Cause":"The state/task 'Big' returned a result with a size exceeding the maximum number of bytes service limit."}`) ||
		!strings.Contains(errOut, "state Big: a document of 1099 bytes passes the payload limit of 100 bytes") {
		t.Errorf("exit %d, %s, %q", code, out, errOut)
	}
	for _, limit := range []string{"2000", "-1"} {
		if code, _, errOut := invoke(t, "", "run", wf, "--db", filepath.Join(dir, "b"+limit+".db"), "--max-payload", limit); code != 0 {
			t.Errorf("--max-payload %s: exit %d, %q", limit, code, errOut)
		}
	}
}

// TestStoredMaxPayload: run --max-payload stores the limit with the
// execution; a resume, with no --max-payload or another one, keeps it. The
// runs park on a Wait inside a synctest bubble, whose clock starts in 2000:
// outside it the Wait is long due.
func TestStoredMaxPayload(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	db := filepath.Join(dir, "p.db")
	// Big makes a document of 1,099 bytes.
	wf := writeFile(t, dir, "nap.json", `{"StartAt":"Nap","States":{
		"Nap":{"Type":"Wait","Seconds":60,"Next":"Big"},
		"Big":{"Type":"Pass","Parameters":{"s.$":"States.ArrayRange(1, 300, 1)"},"End":true}}}`)
	for _, tc := range []struct {
		name, limit string
		resume      []string // more flags of resume
		wantCode    int
		wantErr     string
	}{
		{name: "kept", limit: "1000", wantCode: exitFailed, wantErr: "state Big: a document of 1099 bytes passes the payload limit of 1000 bytes"},
		{name: "raised", limit: "2000", resume: []string{"--max-payload", "100"}, wantCode: 0},
		{name: "unlimited", limit: "-1", resume: []string{"--max-payload", "100"}, wantCode: 0},
	} {
		synctest.Test(t, func(t *testing.T) {
			if code, out, errOut := invoke(t, "", "run", wf, "--db", db, "--name", tc.name, "--max-payload", tc.limit); code != exitWaiting {
				t.Fatalf("run %s: exit %d, %s%s", tc.name, code, out, errOut)
			}
		})
		code, out, errOut := invoke(t, "", append([]string{"resume", tc.name, "--db", db}, tc.resume...)...)
		if code != tc.wantCode || !strings.Contains(errOut, tc.wantErr) {
			t.Errorf("resume %s %q: exit %d, %s%s; want exit %d and %q", tc.name, tc.resume, code, out, errOut, tc.wantCode, tc.wantErr)
		}
	}
	// Without a limit of its own, the resume's applies.
	synctest.Test(t, func(t *testing.T) {
		if code, out, errOut := invoke(t, "", "run", wf, "--db", db, "--name", "plain"); code != exitWaiting {
			t.Fatalf("run plain: exit %d, %s%s", code, out, errOut)
		}
	})
	if code, out, errOut := invoke(t, "", "resume", "plain", "--db", db, "--max-payload", "100"); code != exitFailed || !strings.Contains(errOut, "limit of 100 bytes") {
		t.Errorf("resume plain --max-payload 100: exit %d, %s%s; want it failed at 100 bytes", code, out, errOut)
	}
}

// TestWaitingOutput: the exit-3 JSON always has approvals; every pending
// approval is named on stderr; status shows escalation and deadline apart
// and the whole digest, which approve takes; resuming what is not due
// changes nothing.
func TestWaitingOutput(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	db := filepath.Join(dir, "x.db")
	wait := writeFile(t, dir, "wait.json", `{"StartAt":"W","States":{"W":{"Type":"Wait","Seconds":3600,"End":true}}}`)
	code, out, _ := invoke(t, "", "run", wait, "--db", db, "--name", "w")
	var w map[string]any
	if err := json.Unmarshal([]byte(out), &w); code != exitWaiting || err != nil {
		t.Fatalf("run: exit %d, %s", code, out)
	}
	if a, ok := w["approvals"].([]any); !ok || len(a) != 0 {
		t.Errorf("approvals = %v, want []", w["approvals"])
	}
	_, before, _ := invoke(t, "", "history", "w", "--json", "--db", db)
	for range 2 {
		if code, _, errOut := invoke(t, "", "resume", "w", "--db", db); code != exitWaiting {
			t.Fatalf("resume: exit %d %s", code, errOut)
		}
	}
	if _, after, _ := invoke(t, "", "history", "w", "--json", "--db", db); after != before {
		t.Errorf("an early resume changed the history:\n%s\nwant\n%s", after, before)
	}

	two := writeFile(t, dir, "two.json", `{"StartAt":"P","States":{"P":{"Type":"Parallel","End":true,"Branches":[
		{"StartAt":"A","States":{"A":{"Type":"Approval","Prompt":"a","Timeout":"48h","Escalation":{"After":"4h","Notify":["lead"]},"End":true}}},
		{"StartAt":"B","States":{"B":{"Type":"Approval","Prompt":"b","End":true}}}]}}}`)
	code, _, errOut := invoke(t, "", "run", two, "--db", db, "--name", "two", "--no-prompt")
	if code != exitWaiting || strings.Count(errOut, "aslrun approve two --approval ") != 2 {
		t.Fatalf("run: exit %d, stderr %q; want both approvals named", code, errOut)
	}
	code, out, _ = invoke(t, "", "status", "two", "--db", db)
	if code != 0 || !strings.Contains(out, "escalates") || !strings.Contains(out, "deadline") {
		t.Errorf("status = %s; want the escalation and the deadline apart", out)
	}
	digest := regexp.MustCompile(`digest\s+([0-9a-f]+)`).FindAllStringSubmatch(out, -1)
	if len(digest) != 2 || len(digest[0][1]) != 64 {
		t.Fatalf("status shows digests %v, want two whole SHA-256 digests", digest)
	}
	id := regexp.MustCompile(`approval\s+(\S+) at P/0/A`).FindStringSubmatch(out)
	if id == nil {
		t.Fatalf("status names no approval at P/0/A: %s", out)
	}
	code, _, errOut = invoke(t, "", "approve", "two", "--approval", id[1], "--digest", digest[0][1], "--decision", "approve", "--db", db)
	if code != exitWaiting {
		t.Errorf("approve with the digest status shows: exit %d, %q", code, errOut)
	}
}

// TestNoPromptWithoutTerminal: standard input from /dev/null is no
// terminal: run exits 3 without asking.
func TestNoPromptWithoutTerminal(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	wf := writeFile(t, dir, "a.json", `{"StartAt":"A","States":{"A":{"Type":"Approval","Prompt":"ok?","End":true}}}`)
	cmd := aslrunCmd("run", wf, "--db", filepath.Join(dir, "x.db"))
	null, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer null.Close()
	var errOut strings.Builder
	cmd.Stdin, cmd.Stderr = null, &errOut
	err = cmd.Run()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != exitWaiting || strings.Contains(errOut.String(), "decision:") {
		t.Errorf("run with stdin from /dev/null: %v, stderr %q; want exit 3 and no prompt", err, errOut.String())
	}
}

// TestSignals: SIGINT or SIGTERM during a run stops it at its last commit
// with 130 or 143 and the command that continues it, which then finishes.
func TestSignals(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	wf := writeFile(t, dir, "slow.json", `{"StartAt":"First","States":{
		"First":{"Type":"Pass","Result":1,"ResultPath":"$.first","Next":"Slow"},
		"Slow":{"Type":"Task","Agent":"Slow","ResultPath":"$.slow","End":true}}}`)
	mock := writeFile(t, dir, "mock.json", `{"Slow":{"0":{"Return":"late","DelaySeconds":600}}}`)
	// The call in flight is made again on resume, with the same invocation
	// number: this mock answers it at once.
	quick := writeFile(t, dir, "quick.json", `{"Slow":{"0":{"Return":"done"}}}`)
	for _, tc := range []struct {
		sig  syscall.Signal
		code int
	}{{syscall.SIGINT, 130}, {syscall.SIGTERM, 143}} {
		t.Run(tc.sig.String(), func(t *testing.T) {
			db := filepath.Join(dir, tc.sig.String()+".db")
			cmd := aslrunCmd("run", wf, "--mock", mock, "--db", db, "--name", "s")
			stderr, err := cmd.StderrPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			lines := bufio.NewScanner(stderr)
			if !lines.Scan() || lines.Text() != "execution: s" {
				t.Fatalf("first stderr line %q, want execution: s", lines.Text())
			}
			// The execution exists; its agent call takes ten minutes.
			if err := cmd.Process.Signal(tc.sig); err != nil {
				t.Fatal(err)
			}
			var rest strings.Builder
			for lines.Scan() {
				rest.WriteString(lines.Text() + "\n")
			}
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			var ee *exec.ExitError
			select {
			case err = <-done:
			case <-time.After(time.Minute):
				cmd.Process.Kill()
				t.Fatal("the run did not stop on the signal")
			}
			if !errors.As(err, &ee) || ee.ExitCode() != tc.code || !strings.Contains(rest.String(), "continue it with `aslrun resume s`") {
				t.Fatalf("after %v: %v, stderr %q; want exit %d and the resume command", tc.sig, err, rest.String(), tc.code)
			}
			code, out, errOut := invoke(t, "", "resume", "s", "--mock", quick, "--db", db)
			if code != 0 || !jsonEqual(t, out, `{"first":1,"slow":"done"}`) {
				t.Errorf("resume: exit %d, %s %s", code, out, errOut)
			}
		})
	}
}

// TestDatabaseNotOurs: only a missing file becomes a new database; an
// empty file or one that is not an aslrun database is an error naming it.
func TestDatabaseNotOurs(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	empty := writeFile(t, dir, "empty.db", "")
	other := writeFile(t, dir, "other.db", "not a database")
	for _, db := range []string{empty, other} {
		code, _, errOut := invoke(t, "", "status", "x", "--db", db)
		if code != exitUsage || !strings.Contains(errOut, db) || !strings.Contains(errOut, "not an aslrun database") {
			t.Errorf("status --db %s: exit %d, %q; want 2 naming the file", db, code, errOut)
		}
		if fi, err := os.Stat(db); err != nil || fi.Size() > 20 {
			t.Errorf("%s was changed: %v %v", db, fi, err)
		}
	}
	missing := filepath.Join(dir, "new.db")
	if code, _, errOut := invoke(t, "", "list", "--db", missing); code != exitUsage || !strings.Contains(errOut, "database "+missing+" does not exist") {
		t.Errorf("list on a missing file: exit %d, %q; want 2, saying it does not exist", code, errOut)
	}
	if _, err := os.Stat(missing); !os.IsNotExist(err) {
		t.Errorf("list made %s: %v", missing, err)
	}
}

// TestRunDurability: --durability and --db :memory: choose how a run is
// kept; what cannot be had is refused before anything runs, naming why.
func TestRunDurability(t *testing.T) {
	dir := t.TempDir()
	pass := writeFile(t, dir, "pass.json", `{"StartAt":"P","States":{"P":{"Type":"Pass","Result":{"ok":true},"End":true}}}`)
	approval := writeFile(t, dir, "approval.json", `{"StartAt":"A","States":{"A":{"Type":"Approval","Prompt":"ok?","End":true}}}`)
	_, statErr := os.Stat(defaultDB)
	hadDefault := statErr == nil
	db := filepath.Join(dir, "a.db")
	for _, tc := range []struct {
		name string
		args []string
		code int
		out  string // stdout or stderr contains
	}{
		{"memory", []string{"run", pass, "--db", ":memory:"}, 0, `"ok": true`},
		{"none", []string{"run", pass, "--durability", "none"}, 0, `"ok": true`},
		{"batched", []string{"run", pass, "--durability", "batched", "--db", db, "--name", "b"}, 0, `"ok": true`},
		{"strict", []string{"run", pass, "--durability", "strict", "--db", db, "--name", "s"}, 0, `"ok": true`},
		{"unknown mode", []string{"run", pass, "--durability", "fast", "--db", db}, exitUsage, `--durability: durability "fast": want strict, batched or none`},
		{"none with a database", []string{"run", pass, "--durability", "none", "--db", db}, exitUsage, "--durability none keeps nothing: drop --db"},
		{"memory but batched", []string{"run", pass, "--durability", "batched", "--db", ":memory:"}, exitUsage, "--db :memory: keeps nothing, which is --durability none, not batched"},
		{"none cannot park", []string{"run", approval, "--db", ":memory:"}, exitUsage, `state "A" is an Approval, which needs a store to wait`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errOut := invoke(t, "", tc.args...)
			if code != tc.code || !strings.Contains(out+errOut, tc.out) {
				t.Errorf("aslrun %v: exit %d, %s%s; want exit %d and %q", tc.args, code, out, errOut, tc.code, tc.out)
			}
		})
	}
	if _, err := os.Stat(defaultDB); !hadDefault && !errors.Is(err, os.ErrNotExist) {
		t.Errorf("durability none made the default database: %v", err)
	}
	code, out, _ := invoke(t, "", "status", "b", "--json", "--db", db)
	if code != 0 || !strings.Contains(out, `"SUCCEEDED"`) {
		t.Errorf("status of the batched run: exit %d, %s", code, out)
	}
}

// TestMemoryListsCollections: `aslrun memory` shows a namespace's semantic
// and episodic collections under the namespace, their entries' texts and
// events (not vectors), and `memory NAMESPACE` includes them.
func TestMemoryListsCollections(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "m.db")
	wf := writeFile(t, dir, "w.json", `{"StartAt":"S","States":{
		"S":{"Type":"Pass","Memory":{"Type":"semantic","Namespace":"kb","Write":{"Collection":"notes","Key":"n1","Value":"the office opens at nine"}},"Next":"E"},
		"E":{"Type":"Pass","Memory":{"Type":"episodic","Namespace":"kb","Write":{"Value":{"kind":"opened"}}},"Next":"K"},
		"K":{"Type":"Pass","Memory":{"Namespace":"other","Write":{"Key":"k","Value":1}},"End":true}}}`)
	if code, _, errOut := invoke(t, "", "run", wf, "--db", db); code != 0 {
		t.Fatalf("run: exit %d: %s", code, errOut)
	}
	code, out, errOut := invoke(t, "", "memory", "kb", "--db", db)
	if code != 0 {
		t.Fatalf("memory: exit %d: %s", code, errOut)
	}
	for _, want := range []string{"kb (semantic notes)   n1", `"the office opens at nine"`, "kb (episodic events)", `{"kind":"opened"}`} {
		if !strings.Contains(out, want) {
			t.Errorf("memory kb printed\n%s\nwithout %q", out, want)
		}
	}
	if strings.Contains(out, "other") || strings.Contains(out, "vector") || strings.Contains(out, "\\x1f") {
		t.Errorf("memory kb printed\n%s", out)
	}
}
