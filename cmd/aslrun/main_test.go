package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/synctest"

	"github.com/aslrun/aslrun/jsonvalue"
)

var update = flag.Bool("update", false, "rewrite golden files")

// invoke runs the CLI with args and returns its exit code and outputs.
func invoke(t *testing.T, stdin string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	// In process, possibly in a synctest bubble: no socket (see
	// cmdContext.serveReads).
	err := dispatch(context.Background(), &cmdContext{stdin: strings.NewReader(stdin), stdout: &out, stderr: &errOut}, args)
	var ee *exitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		code = ee.code
		if ee.msg != "" {
			errOut.WriteString("aslrun: " + ee.msg + "\n")
		}
	default:
		code = 2
		errOut.WriteString("aslrun: " + err.Error() + "\n")
	}
	return code, out.String(), errOut.String()
}

func writeFile(t *testing.T, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func jsonEqual(t *testing.T, got, want string) bool {
	t.Helper()
	g, err := jsonvalue.Decode([]byte(got))
	if err != nil {
		t.Fatalf("output %q is not JSON: %v", got, err)
	}
	w, err := jsonvalue.Decode([]byte(want))
	if err != nil {
		t.Fatal(err)
	}
	return jsonvalue.Equal(g, w)
}

func TestHelp(t *testing.T) {
	t.Parallel()
	if code, out, _ := invoke(t, "", "help"); code != 0 || !strings.Contains(out, "aslrun run FILE") {
		t.Errorf("help: code %d, output %q", code, out)
	}
	if code, _, errOut := invoke(t, ""); code != exitUsage || !strings.Contains(errOut, "Usage:") {
		t.Errorf("no arguments: code %d, stderr %q", code, errOut)
	}
	for _, cmd := range []string{"validate", "run", "resume", "approve", "list", "status", "history", "checkpoints", "worker", "gc", "graph", "conformance"} {
		code, out, _ := invoke(t, "", cmd, "--help")
		if code != 0 || !strings.Contains(out, "Usage: aslrun "+cmd) {
			t.Errorf("%s --help: code %d, output %q", cmd, code, out)
		}
	}
	code, _, errOut := invoke(t, "", "frobnicate")
	if code != exitUsage || !strings.Contains(errOut, `unknown command "frobnicate"`) {
		t.Errorf("unknown command: code %d, stderr %q", code, errOut)
	}
	code, _, errOut = invoke(t, "", "approve", "x")
	if code != exitUsage || !strings.Contains(errOut, "--decision is required") {
		t.Errorf("approve without a decision: code %d, stderr %q", code, errOut)
	}
}

func TestValidate(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	good := writeFile(t, dir, "good.json", `{"StartAt":"A","States":{"A":{"Type":"Pass","End":true}}}`)
	bad := writeFile(t, dir, "bad.json", `{"StartAt":"A","States":{
		"A":{"Type":"Pass","Next":"Nowhere"},
		"B":{"Type":"Task","End":true,"Retry":[{"ErrorEquals":["States.ALL","X"]}]}}}`)
	notJSON := writeFile(t, dir, "dup.json", `{"StartAt":"A","StartAt":"B"}`)

	code, out, _ := invoke(t, "", "validate", good)
	if code != 0 || out != good+": valid\n" {
		t.Errorf("valid file: code %d, output %q", code, out)
	}
	code, out, _ = invoke(t, "", "validate", good, bad, notJSON)
	if code != exitFailed {
		t.Errorf("invalid files: code %d, want %d", code, exitFailed)
	}
	for _, want := range []string{
		bad + `: /States/A/Next (A): transition to state "Nowhere", which does not exist`,
		bad + `: /States/B (B): missing required field Agent`,
		bad + `: /States/B/Retry/0/ErrorEquals (B): States.ALL must appear alone in ErrorEquals`,
		notJSON + `: invalid JSON at byte`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("validate output lacks %q:\n%s", want, out)
		}
	}
	if code, _, _ := invoke(t, "", "validate"); code != exitUsage {
		t.Errorf("validate without files: code %d, want %d", code, exitUsage)
	}
}

func TestRunExamples(t *testing.T) {
	t.Parallel()
	for _, ex := range []string{"support-triage", "document-digest", "technical-debate", "governed-payment"} {
		t.Run(ex, func(t *testing.T) {
			dir := filepath.Join("..", "..", "workflows", ex)
			want, err := os.ReadFile(filepath.Join(dir, "output.json"))
			if err != nil {
				t.Fatal(err)
			}
			synctest.Test(t, func(t *testing.T) {
				code, out, errOut := invoke(t, "", "run", filepath.Join(dir, "workflow.json"),
					"--input", "@"+filepath.Join(dir, "input.json"), "--mock", filepath.Join(dir, "mock.json"),
					"--db", filepath.Join(t.TempDir(), "ex.db"))
				if code != 0 {
					t.Fatalf("code %d, stderr %q", code, errOut)
				}
				if !jsonEqual(t, out, string(want)) {
					t.Errorf("output %s, want %s", out, want)
				}
				if !strings.HasPrefix(errOut, "execution: ") {
					t.Errorf("stderr %q, want the execution id", errOut)
				}
			})
		})
	}
}

func TestRun(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	echo := writeFile(t, dir, "echo.json", `{"StartAt":"E","States":{"E":{"Type":"Task","Agent":"Echo","ResultPath":"$.echo","End":true}}}`)
	fail := writeFile(t, dir, "fail.json", `{"StartAt":"F","States":{"F":{"Type":"Fail","Error":"Refund.Denied","Cause":"amount too high"}}}`)
	mock := writeFile(t, dir, "mock.json", `{"Echo":{"0":{"Return":{"said":"hi"}}}}`)
	badMock := writeFile(t, dir, "badmock.json", `{"Echo":{"0":{"Return":1,"Throw":{"Error":"E"}}}}`)
	inFile := writeFile(t, dir, "in.json", `{"from":"file"}`)
	invalid := writeFile(t, dir, "invalid.json", `{"StartAt":"A","States":{"A":{"Type":"Pass"}}}`)

	cases := []struct {
		name   string
		stdin  string
		args   []string
		code   int
		out    string // JSON compared as a value, when set
		stderr string // substring of stderr, when set
	}{
		{"default input", "", []string{"run", echo, "--mock", mock}, 0, `{"echo":{"said":"hi"}}`, "execution: "},
		{"inline input", "", []string{"run", "--mock", mock, echo, "--input", `{"a":1}`}, 0, `{"a":1,"echo":{"said":"hi"}}`, ""},
		{"file input", "", []string{"run", echo, "--mock", mock, "--input", "@" + inFile}, 0, `{"from":"file","echo":{"said":"hi"}}`, ""},
		{"stdin input", `{"from":"stdin"}`, []string{"run", echo, "--mock", mock, "--input", "-"}, 0, `{"from":"stdin","echo":{"said":"hi"}}`, ""},
		{"name", "", []string{"run", echo, "--mock", mock, "--name", "order-42"}, 0, "", "execution: order-42"},
		{"failure", "", []string{"run", fail}, exitFailed, `{"Error":"Refund.Denied","Cause":"amount too high"}`, ""},
		{"no mock", "", []string{"run", echo}, exitUsage, "", `state E: Agent names agent "Echo", which is not mocked, in the agents file or registered`},
		{"bad input", "", []string{"run", echo, "--input", `{"a":NaN}`}, exitUsage, "", "input from --input: invalid JSON at byte 5"},
		{"duplicate keys in input", "", []string{"run", echo, "--input", `{"a":1,"a":2}`}, exitUsage, "", `duplicate key "a"`},
		{"missing input file", "", []string{"run", echo, "--input", "@/nonexistent.json"}, exitUsage, "", "nonexistent.json"},
		{"bad mock", "", []string{"run", echo, "--mock", badMock}, exitUsage, "", badMock + ": mock /Echo/0: a response must have exactly one of Return or Throw"},
		{"invalid definition", "", []string{"run", invalid}, exitUsage, "", invalid + ": /States/A (A): missing Next or End"},
		{"two files", "", []string{"run", echo, fail}, exitUsage, "", "want exactly one FILE"},
		{"unknown flag", "", []string{"run", echo, "--store", "x.db"}, exitUsage, "", "flag provided but not defined: -store"},
		{"taken name", "", []string{"run", echo, "--mock", mock, "--name", "order-42"}, exitUsage, "", "order-42"},
	}
	db := filepath.Join(dir, "run.db")
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errOut := invoke(t, tc.stdin, append(tc.args, "--db", db)...)
			if code != tc.code {
				t.Fatalf("code %d, want %d (stdout %q, stderr %q)", code, tc.code, out, errOut)
			}
			if tc.out != "" && !jsonEqual(t, out, tc.out) {
				t.Errorf("stdout %s, want %s", out, tc.out)
			}
			if !strings.Contains(errOut, tc.stderr) {
				t.Errorf("stderr %q, want it to contain %q", errOut, tc.stderr)
			}
		})
	}
}

func TestGraph(t *testing.T) {
	t.Parallel()
	def := filepath.Join("..", "..", "workflows", "code-review", "workflow.json")
	for _, format := range []string{"dot", "mermaid"} {
		t.Run(format, func(t *testing.T) {
			code, out, errOut := invoke(t, "", "graph", def, "--format", format)
			if code != 0 {
				t.Fatalf("code %d, stderr %q", code, errOut)
			}
			golden := filepath.Join("testdata", "code-review."+format)
			if *update {
				if err := os.WriteFile(golden, []byte(out), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run go test ./cmd/aslrun -update)", err)
			}
			if out != string(want) {
				t.Errorf("graph --format %s differs from %s:\n%s", format, golden, out)
			}
		})
	}
	if code, out, errOut := invoke(t, "", "graph", def, "--format", "svg"); code != 0 || !strings.HasPrefix(out, "<svg ") {
		t.Errorf("--format svg: code %d, stdout starts %.40q, stderr %q", code, out, errOut)
	}
	if code, _, errOut := invoke(t, "", "graph", def, "--format", "png"); code != exitUsage || !strings.Contains(errOut, "dot, mermaid or svg") {
		t.Errorf("--format png: code %d, stderr %q", code, errOut)
	}
}

func TestConformanceCommand(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeFile(t, dir, "ok.json", `{"name":"ok","definition":{"StartAt":"P","States":{"P":{"Type":"Pass","Result":1,"End":true}}},"expect":{"status":"SUCCEEDED","output":1}}`)
	writeFile(t, dir, "wrong.json", `{"name":"wrong","definition":{"StartAt":"P","States":{"P":{"Type":"Pass","Result":1,"End":true}}},"expect":{"status":"SUCCEEDED","output":2}}`)
	code, out, _ := invoke(t, "", "conformance", dir)
	if code != exitFailed {
		t.Errorf("code %d, want %d", code, exitFailed)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 2 || !strings.HasPrefix(lines[0], "FAIL "+filepath.Join(dir, "wrong.json")+": output 1, want 2") || lines[1] != "1 passed, 1 failed" {
		t.Errorf("output:\n%s", out)
	}
	skip := writeFile(t, dir, "skip.txt", "wrong.json known difference\n")
	code, out, _ = invoke(t, "", "conformance", filepath.Join(dir, "ok.json"), "--skip", skip)
	if code != 0 || strings.TrimSpace(out) != "1 passed, 0 failed" {
		t.Errorf("one passing file: code %d, output %q", code, out)
	}
}

// TestAgentsFile runs a workflow whose agent is a script configured in an
// agents file (its relative path is resolved against the file's directory,
// not the working directory), and continues it with aslrun approve, which
// rebuilds the agents from the copy stored with the execution.
func TestAgentsFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeFile(t, dir, "upper.sh", "#!/bin/sh\ntr a-z A-Z\n")
	if err := os.Chmod(filepath.Join(dir, "upper.sh"), 0o755); err != nil {
		t.Fatal(err)
	}
	agentsFile := writeFile(t, dir, "agents.json", `{"Upper":{"Type":"exec","Command":["./upper.sh"]}}`)
	wf := writeFile(t, dir, "wf.json", `{"StartAt":"U","States":{
		"U":{"Type":"Task","Agent":"Upper","ResultPath":"$.up","Next":"W"},
		"W":{"Type":"Approval","Prompt":"go on?","ResultPath":null,"Next":"Again"},
		"Again":{"Type":"Task","Agent":"Upper","InputPath":"$.up","ResultPath":"$.again","End":true}}}`)
	db := filepath.Join(dir, "a.db")
	code, out, errOut := invoke(t, "", "run", wf, "--agents", agentsFile, "--input", `{"word":"hello"}`, "--db", db, "--name", "e1")
	if code != exitWaiting {
		t.Fatalf("run: code %d, stdout %s, stderr %s", code, out, errOut)
	}
	code, out, errOut = invoke(t, "", "approve", "e1", "--decision", "approve", "--db", db)
	if code != 0 || !jsonEqual(t, out, `{"word":"hello","up":{"WORD":"HELLO"},"again":{"WORD":"HELLO"}}`) {
		t.Fatalf("approve: code %d, stdout %s, stderr %s", code, out, errOut)
	}
	bad := writeFile(t, dir, "bad.json", `{"Upper":{"Type":"exec"}}`)
	code, _, errOut = invoke(t, "", "run", wf, "--agents", bad, "--db", db)
	if code != exitUsage || !strings.Contains(errOut, "/Upper") {
		t.Errorf("bad agents file: code %d, stderr %q", code, errOut)
	}
	mock := writeFile(t, dir, "mock.json", `{}`)
	code, _, errOut = invoke(t, "", "run", wf, "--agents", agentsFile, "--mock", mock, "--db", db)
	if code != exitUsage || !strings.Contains(errOut, "cannot be used together") {
		t.Errorf("both files: code %d, stderr %q", code, errOut)
	}
}

// TestWalkthroughs follows the README's walkthroughs: a code review that
// waits for a senior engineer, approved by a second command, and a research
// flow whose synthesis fails and is resumed from its checkpoint.
func TestWalkthroughs(t *testing.T) {
	t.Parallel()
	ex := func(name, file string) string { return filepath.Join("..", "..", "workflows", name, file) }
	wantFile := func(t *testing.T, out, file string) {
		t.Helper()
		want, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		if !jsonEqual(t, out, string(want)) {
			t.Errorf("output %s, want %s", out, want)
		}
	}
	t.Run("approve from another terminal", func(t *testing.T) {
		db := filepath.Join(t.TempDir(), "w.db")
		code, out, errOut := invoke(t, "", "run", ex("code-review", "workflow.json"), "--input", "@"+ex("code-review", "input.json"),
			"--mock", ex("code-review", "mock.json"), "--db", db, "--name", "pr-482")
		if code != exitWaiting || !strings.Contains(errOut, "aslrun approve pr-482 --decision request_changes|approve_anyway") {
			t.Fatalf("run: code %d, stdout %s, stderr %q", code, out, errOut)
		}
		code, out, _ = invoke(t, "", "status", "pr-482", "--db", db)
		if code != 0 || !strings.Contains(out, "SeniorReview#1") || !strings.Contains(out, "Serious findings in PR #482") {
			t.Errorf("status: code %d, %s", code, out)
		}
		code, out, errOut = invoke(t, "", "approve", "pr-482", "--decision", "request_changes", "--by", "lena@example.com",
			"--comment", "use a parameterized query", "--db", db)
		if code != 0 {
			t.Fatalf("approve: code %d, stderr %q", code, errOut)
		}
		wantFile(t, out, ex("code-review", "output.json"))
	})
	t.Run("resume from a checkpoint", func(t *testing.T) {
		db := filepath.Join(t.TempDir(), "w.db")
		code, out, errOut := invoke(t, "", "run", ex("research-flow", "workflow.json"), "--input", "@"+ex("research-flow", "input.json"),
			"--mock", ex("research-flow", "mock.json"), "--db", db, "--name", "r-1")
		if code != exitFailed || !strings.Contains(out, "Agent.ModelError") {
			t.Fatalf("run: code %d, stdout %s, stderr %q", code, out, errOut)
		}
		code, out, _ = invoke(t, "", "checkpoints", "r-1", "--db", db)
		if code != 0 || !strings.Contains(out, "sources-gathered") {
			t.Errorf("checkpoints: code %d, %s", code, out)
		}
		code, _, errOut = invoke(t, "", "resume", "r-1", "--from-checkpoint", "published", "--db", db)
		if code != exitUsage || !strings.Contains(errOut, `no checkpoint "published"; available: sources-gathered`) {
			t.Errorf("resume from an unknown checkpoint: code %d, stderr %q; want the available ones listed", code, errOut)
		}
		code, out, errOut = invoke(t, "", "resume", "r-1", "--from-checkpoint", "sources-gathered", "--mock", ex("research-flow", "mock-resume.json"), "--db", db)
		if code != 0 {
			t.Fatalf("resume: code %d, stdout %s, stderr %q", code, out, errOut)
		}
		wantFile(t, out, ex("research-flow", "output.json"))
	})
}
