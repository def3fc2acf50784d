package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aslrun/aslrun/engine"
	"github.com/aslrun/aslrun/store"
)

// distCrashDef reads rows.csv (CSV, first row the header) from the bucket
// "in", in batches of 100 rows, 4 children at a time; a batch whose first
// row has fail=yes fails, within a tolerated 5 %; the results go to the
// bucket "out". The agents file maps both buckets to folders.
const distCrashDef = `{"StartAt":"Rows","States":{"Rows":{"Type":"Map","Label":"rows",
	"ItemReader":{"Resource":"arn:aws:states:::s3:getObject","ReaderConfig":{"InputType":"CSV"},"Parameters":{"Bucket":"in","Key":"rows.csv"}},
	"ItemBatcher":{"MaxItemsPerBatch":100,"BatchInput":{"run.$":"$.run"}},
	"ToleratedFailurePercentage":5,"MaxConcurrency":4,
	"ResultWriter":{"Resource":"arn:aws:states:::s3:putObject","Parameters":{"Bucket":"out","Prefix":"results"}},
	"ItemProcessor":{"ProcessorConfig":{"Mode":"DISTRIBUTED","ExecutionType":"STANDARD"},"StartAt":"Check","States":{
		"Check":{"Type":"Choice","Choices":[{"Variable":"$.Items[0].fail","StringEquals":"yes","Next":"Bad"}],"Default":"Work"},
		"Bad":{"Type":"Fail","Error":"Row.Bad","Cause":"a bad batch"},
		"Work":{"Type":"Task","Agent":"Work","Parameters":{"first.$":"$.Items[0].id","run.$":"$.BatchInput.run"},"End":true}}},
	"End":true}}}`

// TestDistributedMapCrash runs a Distributed Map over 10,000 CSV rows
// (ASLRUN_LONG=1: 1,000,000) as a real aslrun process, kills it with
// SIGKILL once half of its batches have called their agent, resumes it,
// and checks that it ends as an uninterrupted run (its output and result
// files) and that no child that had finished before the kill ran again.
func TestDistributedMapCrash(t *testing.T) {
	if testing.Short() {
		t.Skip("crash test skipped in -short mode")
	}
	t.Parallel()
	rows := 10000
	if long(t) {
		rows = 1000000
	}
	batches := rows / 100
	failed := (rows + 2299) / 2300 // the batches starting with a row i%2300 == 0
	dir := t.TempDir()
	in := filepath.Join(dir, "in")
	os.Mkdir(in, 0o755)
	var b strings.Builder
	b.WriteString("id,fail,text\n")
	for i := range rows {
		fail := "no"
		if i%2300 == 0 {
			fail = "yes" // the first row of batches 0, 23, 46, 69, 92: 5 %
		}
		fmt.Fprintf(&b, "row%d,%s,\"text, %d\"\n", i, fail, i)
	}
	if err := os.WriteFile(filepath.Join(in, "rows.csv"), []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	// Each run's agents file maps "in" to the rows and "out" to a folder
	// of its own, and runs Work as a command that adds a line to the run's
	// calls file and answers {"ok": true} after 30 ms.
	setup := func(name string) (def, agentsFile, out, db string) {
		out = filepath.Join(dir, name+"-out")
		os.Mkdir(filepath.Join(dir, name), 0o755)
		os.Mkdir(out, 0o755)
		def = filepath.Join(dir, name, "rows.json") // the same machine name
		os.WriteFile(def, []byte(distCrashDef), 0o644)
		agentsFile = filepath.Join(dir, name, "agents.json")
		text, err := json.Marshal(map[string]any{
			"Work":    map[string]any{"Type": "exec", "Command": []string{"sh", "-c", `echo . >> "$0"; sleep 0.03; echo '{"ok":true}'`, filepath.Join(dir, name+".calls")}},
			"Buckets": map[string]any{"in": map[string]any{"Dir": in}, "out": map[string]any{"Dir": out}},
		})
		if err != nil {
			t.Fatal(err)
		}
		os.WriteFile(agentsFile, text, 0o644)
		return def, agentsFile, out, filepath.Join(dir, name+".db")
	}
	input := `{"run":"r1"}`

	refDef, refAgents, refOut, refDB := setup("reference")
	code, want, _ := crashRun(t, nil, false, 0, "run", refDef, "--agents", refAgents, "--input", input, "--db", refDB, "--name", "dm")
	if code != 0 {
		t.Fatalf("reference run: exit %d: %s", code, want)
	}

	def, agentsFile, out, db := setup("crash")
	cmd := aslrunCmd("run", def, "--agents", agentsFile, "--input", input, "--db", db, "--name", "dm")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	if !waitForLines(filepath.Join(dir, "crash.calls"), (batches-failed)/2, exited) {
		t.Fatal("the run ended before half of its batches had called their agent")
	}
	cmd.Process.Signal(syscall.SIGKILL)
	<-exited

	finished := childrenEnded(t, db)
	t.Logf("%d children had ended at the kill", len(finished))
	if len(finished) == batches {
		t.Fatal("every child had ended at the kill")
	}
	code, got, _ := crashRun(t, nil, false, 0, "resume", "dm", "--db", db)
	if code != 0 {
		t.Fatalf("resume: exit %d: %s", code, got)
	}
	if !sameJSON(t, got, want) {
		t.Errorf("resumed output %s, want %s (the reference's)", got, want)
	}
	after := childrenEnded(t, db)
	if len(after) != batches {
		t.Errorf("%d children ended, want %d", len(after), batches)
	}
	for id, seq := range finished {
		if after[id] != seq {
			t.Errorf("child %s had ended at the kill (commit %d) but was committed again (commit %d)", id, seq, after[id])
		}
	}
	// map-runs lists the map run with its counts.
	code, text, errText := invoke(t, "", "map-runs", "dm", "--json", "--db", db)
	var runs []map[string]any
	if code != 0 || json.Unmarshal([]byte(text), &runs) != nil || len(runs) != 1 {
		t.Fatalf("map-runs: exit %d: %s%s", code, text, errText)
	}
	r := runs[0]
	if r["mapRunId"] != "dm/Rows#1.0" || r["label"] != "rows" || r["status"] != "SUCCEEDED" || r["total"] != float64(batches) || r["succeeded"] != float64(batches-failed) || r["failed"] != float64(failed) || r["pending"] != 0.0 {
		t.Errorf("map-runs: %v", r)
	}
	if code, _, errText := invoke(t, "", "map-runs", "nope", "--db", db); code != exitUsage || !strings.Contains(errText, "not found") {
		t.Errorf("map-runs of an unknown execution: exit %d, %s; want exit 2, not found", code, errText)
	}
	// The result files list the same children, with the same outcomes.
	for _, f := range []string{"SUCCEEDED_0.json", "FAILED_0.json"} {
		a := resultSummary(t, filepath.Join(refOut, "results/Rows#1.0", f))
		c := resultSummary(t, filepath.Join(out, "results/Rows#1.0", f))
		if a != c {
			t.Errorf("%s differs from the reference:\n%s\nwant:\n%s", f, c, a)
		}
	}
}

// waitForLines waits until the file at path holds n lines (of two bytes:
// ".\n"), reading it as the agents of a run add to it, or until exited is
// closed (then false).
func waitForLines(path string, n int, exited <-chan struct{}) bool {
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for {
		if st, err := os.Stat(path); err == nil && st.Size() >= int64(2*n) {
			return true
		}
		select {
		case <-exited:
			return false
		case <-tick.C:
		}
	}
}

// childrenEnded returns the children of the map run that have ended,
// with their commit counts.
func childrenEnded(t *testing.T, db string) map[string]int64 {
	t.Helper()
	st, err := store.OpenBolt(db, store.BoltOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	x := engine.New(engine.Config{Store: st})
	children, err := x.MapRunChildren(context.Background(), "dm/Rows#1.0")
	if err != nil {
		t.Fatal(err)
	}
	ended := map[string]int64{}
	for _, c := range children {
		if c.Status.Ended() {
			e, err := st.Load(context.Background(), c.ID)
			if err != nil {
				t.Fatal(err)
			}
			ended[c.ID] = e.Seq
		}
	}
	return ended
}

// resultSummary is a result file's children with their status and
// output or error, one per line, in order.
func resultSummary(t *testing.T, path string) string {
	t.Helper()
	var entries []map[string]any
	readJSONFile(t, path, &entries)
	var b strings.Builder
	for _, e := range entries {
		fmt.Fprintln(&b, e["Name"], e["Status"], e["Input"], e["Output"], e["Error"])
	}
	return b.String()
}

func readJSONFile(t *testing.T, path string, v any) {
	t.Helper()
	text, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(text, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}
