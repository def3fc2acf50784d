package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aslrun/aslrun/api"
	"github.com/aslrun/aslrun/client"
)

// TestServeLogsDrain: on SIGINT serve says at once that it drains and for
// how long — while an agent call it waits for still runs — and when it has
// stopped; a second signal ends it at once.
func TestServeLogsDrain(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()

	// Nothing running: "stopping" then "stopped", exit 0.
	p := startServe(t, filepath.Join(dir, "idle.db"), "--grace", "7s")
	if code := p.stop(t, syscall.SIGTERM); code != 0 {
		t.Fatalf("serve exited %d on SIGTERM; log:\n%s", code, p.log)
	}
	stopping, stopped := -1, -1
	for i, l := range strings.Split(p.log.String(), "\n") {
		switch {
		case strings.Contains(l, "msg=draining") && strings.Contains(l, "grace=7s") && strings.Contains(l, "terminated"):
			stopping = i
		case strings.Contains(l, "msg=stopped") && strings.Contains(l, "took="):
			stopped = i
		}
	}
	if stopping < 0 || stopped < stopping {
		t.Errorf("log has no \"draining … grace=7s\" line (%d) before \"stopped … took=\" (%d):\n%s", stopping, stopped, p.log)
	}

	// An agent call of two minutes in flight, and a grace of a minute: the
	// drain line comes while the server still waits for it.
	started := filepath.Join(dir, "started")
	writeFile(t, dir, "slow.sh", "touch "+started+"\nexec sleep 120\n")
	agentsFile := writeFile(t, dir, "agents.json", `{"Slow": {"Type": "exec", "Command": ["sh", "slow.sh"]}}`)
	p = startServe(t, filepath.Join(dir, "busy.db"), "--grace", "1m", "--agents", agentsFile)
	def := json.RawMessage(`{"StartAt":"Slow","States":{"Slow":{"Type":"Task","Agent":"Slow","End":true}}}`)
	if _, err := client.NewUnix(p.sock).Start(context.Background(), api.StartExecution{Definition: def, Name: "slow"}); err != nil {
		t.Fatal(err)
	}
	if !waitUntil(30*time.Second, func() bool { _, err := os.Stat(started); return err == nil }) {
		t.Fatalf("the agent's command did not start; log:\n%s", p.log)
	}
	if err := p.cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	p.log.waitFor(t, "msg=draining", "grace=1m0s", "interrupt")
	select {
	case err := <-p.done:
		t.Fatalf("serve exited (%v) before the agent call ended or the grace passed; log:\n%s", err, p.log)
	default:
	}
	if code := p.stop(t, syscall.SIGINT); code != 130 {
		t.Errorf("a second SIGINT: exit %d, want 130 at once; log:\n%s", code, p.log)
	}
}
