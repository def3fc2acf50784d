package main

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// cancelOnWrite cancels a context at the first write that contains
// marker: a command's stderr, cancelled as a Ctrl-C would the moment it
// says the execution exists.
type cancelOnWrite struct {
	mu     sync.Mutex
	buf    bytes.Buffer
	marker string
	cancel context.CancelFunc
}

func (w *cancelOnWrite) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Write(p)
	if strings.Contains(w.buf.String(), w.marker) {
		w.cancel()
	}
	return len(p), nil
}

// TestResumeAfterCancelAtStart: a run cancelled right after the execution
// exists (before its first commit), then resumed, records one
// ExecutionStarted, and its history verifies.
func TestResumeAfterCancelAtStart(t *testing.T) {
	t.Parallel()
	for _, first := range []string{
		`"A":{"Type":"Task","Agent":"Writer","Next":"B"}`,
		`"A":{"Type":"Pass","Result":1,"ResultPath":"$.p","Next":"B"}`,
	} {
		dir := t.TempDir()
		db := filepath.Join(dir, "c.db")
		wf := writeFile(t, dir, "c.json", `{"StartAt":"A","States":{`+first+`,"B":{"Type":"Task","Agent":"Writer","End":true}}}`)
		mock := writeFile(t, dir, "mock.json", `{"Writer":{"0":{"Return":1},"1":{"Return":2}}}`)
		ctx, cancel := context.WithCancel(context.Background())
		stderr := &cancelOnWrite{marker: "execution: c1\n", cancel: cancel}
		err := dispatch(ctx, &cmdContext{stdin: strings.NewReader(""), stdout: &bytes.Buffer{}, stderr: stderr},
			[]string{"run", wf, "--mock", mock, "--name", "c1", "--db", db})
		cancel()
		if err == nil {
			t.Fatalf("%s: the run cancelled at its start ended well; stderr %s", first, stderr.buf.String())
		}
		if code, out, errOut := invoke(t, "", "resume", "c1", "--db", db); code != 0 {
			t.Fatalf("%s: resume: exit %d, %s %s", first, code, out, errOut)
		}
		code, out, errOut := invoke(t, "", "history", "c1", "--json", "--db", db)
		if code != 0 {
			t.Fatalf("history: exit %d, %s", code, errOut)
		}
		var events []struct{ Type string }
		if err := json.Unmarshal([]byte(out), &events); err != nil {
			t.Fatal(err)
		}
		started := 0
		var types []string
		for _, e := range events {
			types = append(types, e.Type)
			if e.Type == "ExecutionStarted" {
				started++
			}
		}
		if started != 1 || types[0] != "ExecutionStarted" {
			t.Errorf("%s: history %v has %d ExecutionStarted, want 1, first", first, types, started)
		}
		if code, out, _ := invoke(t, "", "history", "c1", "--verify", "--db", db); code != 0 {
			t.Errorf("history --verify: exit %d, %s", code, out)
		}
	}
}
