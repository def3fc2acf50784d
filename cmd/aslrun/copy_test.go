package main

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/aslrun/aslrun/engine"
	"github.com/aslrun/aslrun/store"
	"github.com/aslrun/aslrun/store/postgres"
	"github.com/aslrun/aslrun/store/postgres/pgtest"
)

// example returns the path of a file of an example workflow.
func example(name, file string) string { return filepath.Join("..", "..", "workflows", name, file) }

// runExample runs an example on db and checks its exit code.
func runExample(t *testing.T, db string, want int, args ...string) string {
	t.Helper()
	code, out, errOut := invoke(t, "", append(args, "--db", db)...)
	if code != want {
		t.Fatalf("%v: code %d, want %d; stdout %s, stderr %q", args, code, want, out, errOut)
	}
	return out
}

// copySource builds a bbolt database by running examples: support-triage
// twice (agent memory), a code review left waiting for its approval and
// one decided, a research flow that failed and was rolled back to its
// checkpoint and finished, a document digest; and two versions of a
// registered workflow.
func copySource(t *testing.T) string {
	t.Helper()
	db := filepath.Join(t.TempDir(), "src.db")
	runExample(t, db, 0, "run", example("support-triage", "workflow.json"), "--input", "@"+example("support-triage", "input.json"),
		"--mock", example("support-triage", "mock.json"), "--name", "st-1")
	runExample(t, db, 0, "run", example("support-triage", "workflow.json"), "--input", "@"+example("support-triage", "second-input.json"),
		"--mock", example("support-triage", "mock.json"), "--name", "st-2")
	for _, id := range []string{"pr-1", "pr-2"} {
		runExample(t, db, exitWaiting, "run", example("code-review", "workflow.json"), "--input", "@"+example("code-review", "input.json"),
			"--mock", example("code-review", "mock.json"), "--name", id)
	}
	runExample(t, db, 0, "approve", "pr-2", "--decision", "request_changes", "--by", "lena@example.com", "--comment", "use a parameterized query")
	runExample(t, db, exitFailed, "run", example("research-flow", "workflow.json"), "--input", "@"+example("research-flow", "input.json"),
		"--mock", example("research-flow", "mock.json"), "--name", "r-1")
	runExample(t, db, 0, "resume", "r-1", "--from-checkpoint", "sources-gathered", "--mock", example("research-flow", "mock-resume.json"))
	runExample(t, db, 0, "run", example("document-digest", "workflow.json"), "--input", "@"+example("document-digest", "input.json"),
		"--mock", example("document-digest", "mock.json"), "--name", "dd-1")

	st, err := store.OpenBolt(db, store.BoltOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	for _, def := range []string{example("document-digest", "workflow.json"), example("code-review", "workflow.json")} {
		text, err := os.ReadFile(def)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := st.RegisterWorkflow(context.Background(), "review", text, fmt.Sprintf("%x", sha256.Sum256(text)), store.VersionMeta{}); err != nil {
			t.Fatal(err)
		}
	}
	fb := &engine.Feedback{ID: "01a00000-0000-7000-8000-000000000001", Execution: "e1", Workflow: "digest", State: "Summarize", Step: "Summarize#1",
		By: "ada", Role: "approver", Type: "rating", Value: json.Number("4"), Comment: "clear", Output: "a summary", CreatedAt: time.Date(2026, 11, 28, 9, 0, 0, 0, time.UTC)}
	if err := st.AddFeedback(context.Background(), fb); err != nil {
		t.Fatal(err)
	}
	return db
}

// TestCopy copies a database of examples into PostgreSQL and reads every
// execution back from both; then decides the one left waiting on
// PostgreSQL.
func TestCopy(t *testing.T) {
	url := pgtest.Fresh(t)
	runExample(t, url, 0, "migrate")
	src := copySource(t)

	code, out, errOut := invoke(t, "", "copy", "--from", src, "--to", url)
	if code != 0 {
		t.Fatalf("copy: code %d, stdout %s, stderr %q", code, out, errOut)
	}
	for _, want := range []string{": 6 executions (", "checkpoints)", ", 1 feedback, ", "1 workflows (2 versions)", "every history and checkpoint verified"} {
		if !strings.Contains(out, want) {
			t.Errorf("copy printed %q, want %q in it", out, want)
		}
	}
	if strings.Contains(out, " 0 memory entries") || strings.Contains(out, "(0 events") || strings.Contains(out, " 0 checkpoints") {
		t.Errorf("copy printed %q: want memory entries, events and checkpoints copied", out)
	}

	ctx := context.Background()
	bolt, err := store.OpenBolt(src, store.BoltOptions{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer bolt.Close()
	pg, err := postgres.Open(ctx, url, postgres.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer pg.Close()
	compareStores(t, bolt, pg)
	for _, fs := range []engine.FeedbackStore{bolt, pg} {
		list, err := fs.ListFeedback(ctx, engine.FeedbackFilter{})
		if err != nil || len(list) != 1 || list[0].Value != json.Number("4") || list[0].Output != "a summary" || !list[0].CreatedAt.Equal(time.Date(2026, 11, 28, 9, 0, 0, 0, time.UTC)) {
			t.Errorf("%T feedback: %+v %v", fs, list, err)
		}
	}

	// The waiting review goes on on PostgreSQL.
	code, out, errOut = invoke(t, "", "approve", "pr-1", "--decision", "request_changes", "--by", "lena@example.com", "--comment", "use a parameterized query", "--db", url)
	if code != 0 {
		t.Fatalf("approve on PostgreSQL: code %d, stdout %s, stderr %q", code, out, errOut)
	}
	want, err := os.ReadFile(example("code-review", "output.json"))
	if err != nil {
		t.Fatal(err)
	}
	if !jsonEqual(t, out, string(want)) {
		t.Errorf("approve on PostgreSQL: output %s, want %s", out, want)
	}
	if err := pg.VerifyHistory(ctx, "pr-1"); err != nil {
		t.Errorf("pr-1 after its approval on PostgreSQL: %v", err)
	}
	before, err := bolt.History(ctx, "pr-1")
	if err != nil {
		t.Fatal(err)
	}
	after, err := pg.History(ctx, "pr-1")
	if err != nil {
		t.Fatal(err)
	}
	if len(after) <= len(before) || !reflect.DeepEqual(after[:len(before)], before) {
		t.Errorf("pr-1 on PostgreSQL: %d events, want the %d copied ones followed by its approval's", len(after), len(before))
	}

	// Copying again: every execution is there.
	code, _, errOut = invoke(t, "", "copy", "--from", src, "--to", url)
	if code != exitUsage || !strings.Contains(errOut, "already has execution dd-1, pr-1, pr-2, r-1, st-1, st-2: nothing was copied") {
		t.Errorf("copy again: code %d, stderr %q; want the executions there named", code, errOut)
	}
	code, out, errOut = invoke(t, "", "copy", "--from", src, "--to", url, "--skip-existing")
	if code != 0 || !strings.Contains(out, ": 0 executions (") || !strings.Contains(out, "skipped 6 executions") {
		t.Errorf("copy again, skipping: code %d, stdout %q, stderr %q", code, out, errOut)
	}
}

// compareStores checks that pg holds what bolt holds: the same listing,
// histories event for event, verified, the same checkpoints (loaded),
// agent memory and workflows.
func compareStores(t *testing.T, bolt *store.Bolt, pg *postgres.DB) {
	t.Helper()
	ctx := context.Background()
	list, err := bolt.List(ctx, store.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pgList, err := pg.List(ctx, store.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(pgList, list) {
		t.Errorf("List on PostgreSQL:\n%+v\nwant\n%+v", pgList, list)
	}
	statuses := map[engine.Status]int{}
	for _, s := range list {
		statuses[s.Status]++
		want, err := bolt.History(ctx, s.ID)
		if err != nil {
			t.Fatal(err)
		}
		got, err := pg.History(ctx, s.ID)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: history on PostgreSQL differs (%d events, want %d)", s.ID, len(got), len(want))
		}
		if err := pg.VerifyHistory(ctx, s.ID); err != nil {
			t.Errorf("%s: VerifyHistory on PostgreSQL: %v", s.ID, err)
		}
		cps, err := bolt.ListCheckpoints(ctx, s.ID)
		if err != nil {
			t.Fatal(err)
		}
		pgCps, err := pg.ListCheckpoints(ctx, s.ID)
		if err != nil {
			t.Fatal(err)
		}
		if len(pgCps) != len(cps) || len(cps) > 0 && !reflect.DeepEqual(pgCps, cps) {
			t.Errorf("%s: checkpoints on PostgreSQL %+v, want %+v", s.ID, pgCps, cps)
		}
		for _, cp := range cps {
			want, err := bolt.Checkpoint(ctx, s.ID, cp.Name)
			if err != nil {
				t.Fatal(err)
			}
			got, err := pg.Checkpoint(ctx, s.ID, cp.Name)
			if err != nil {
				t.Errorf("%s: checkpoint %q on PostgreSQL: %v", s.ID, cp.Name, err)
				continue
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("%s: checkpoint %q on PostgreSQL differs", s.ID, cp.Name)
			}
		}
		we, err := bolt.Load(ctx, s.ID)
		if err != nil {
			t.Fatal(err)
		}
		ge, err := pg.Load(ctx, s.ID)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(ge, we) {
			t.Errorf("%s: Load on PostgreSQL differs", s.ID)
		}
	}
	if statuses[engine.StatusWaiting] != 1 || statuses[engine.StatusSucceeded] != 5 {
		t.Errorf("statuses %v: want 1 WAITING and 5 SUCCEEDED", statuses)
	}
	now := time.Now()
	mem, err := bolt.ListMemory(ctx, "", now)
	if err != nil {
		t.Fatal(err)
	}
	pgMem, err := pg.ListMemory(ctx, "", now)
	if err != nil {
		t.Fatal(err)
	}
	if len(mem) == 0 || !reflect.DeepEqual(pgMem, mem) {
		t.Errorf("memory on PostgreSQL %+v, want %+v (not none)", pgMem, mem)
	}
	wfs, err := bolt.WorkflowVersions(ctx, "review")
	if err != nil {
		t.Fatal(err)
	}
	pgWfs, err := pg.WorkflowVersions(ctx, "review")
	if err != nil {
		t.Fatal(err)
	}
	for i := range wfs {
		// PostgreSQL keeps times to the microsecond.
		wfs[i].CreatedAt = wfs[i].CreatedAt.Truncate(time.Microsecond)
	}
	if len(wfs) != 2 || !reflect.DeepEqual(pgWfs, wfs) {
		t.Errorf("workflow versions on PostgreSQL %+v, want %+v", pgWfs, wfs)
	}
	for v := 1; v <= 2; v++ {
		want, err := bolt.Workflow(ctx, "review", v)
		if err != nil {
			t.Fatal(err)
		}
		got, err := pg.Workflow(ctx, "review", v)
		if err != nil {
			t.Fatal(err)
		}
		if string(got.Definition) != string(want.Definition) || got.Hash != want.Hash {
			t.Errorf("workflow review version %d on PostgreSQL differs", v)
		}
	}
}

// TestCopyRefuses: what copy refuses, before it writes anything.
func TestCopyRefuses(t *testing.T) {
	dir := t.TempDir()
	held := filepath.Join(dir, "held.db")
	st, err := store.OpenBolt(held, store.BoltOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	empty := filepath.Join(dir, "empty.db")
	if err := os.WriteFile(empty, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	const pgURL = "postgres://app:s3cret@127.0.0.1:1/aslrun?connect_timeout=2"
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"no source", []string{"copy", "--to", pgURL}, "copy: --from FILE is required"},
		{"no target", []string{"copy", "--from", held}, "copy: --to postgres://… is required"},
		{"a URL source", []string{"copy", "--from", pgURL, "--to", pgURL}, "copy: --from postgres://app:xxxxx@127.0.0.1:1/aslrun?connect_timeout=2: copy reads a bbolt database file"},
		{"a file target", []string{"copy", "--from", held, "--to", "other.db"}, "copy: --to other.db: copy writes into a PostgreSQL database"},
		{"an argument", []string{"copy", "--from", held, "--to", pgURL, "x"}, `copy: unexpected argument "x"`},
		{"a missing source", []string{"copy", "--from", filepath.Join(dir, "none.db"), "--to", pgURL}, "none.db"},
		{"an empty source", []string{"copy", "--from", empty, "--to", pgURL}, "the file is empty"},
		{"a held source", []string{"copy", "--from", held, "--to", pgURL}, "copy: database " + held + " is held by another process: stop it first"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, _, errOut := invoke(t, "", tt.args...)
			if code != exitUsage || !strings.Contains(errOut, tt.want) {
				t.Errorf("%v: code %d, stderr %q; want exit %d saying %q", tt.args, code, errOut, exitUsage, tt.want)
			}
			if strings.Contains(errOut, "s3cret") {
				t.Errorf("stderr %q shows the password", errOut)
			}
		})
	}
	if _, err := os.Stat(filepath.Join(dir, "none.db")); err == nil {
		t.Error("copy made the missing source database")
	}
}

// TestCopyNotMigrated: copy into a database without the schema says to
// run aslrun migrate, and into an unreachable one names it.
func TestCopyNotMigrated(t *testing.T) {
	url := pgtest.Fresh(t)
	src := filepath.Join(t.TempDir(), "src.db")
	runExample(t, src, 0, "run", example("document-digest", "workflow.json"), "--input", "@"+example("document-digest", "input.json"),
		"--mock", example("document-digest", "mock.json"), "--name", "dd-1")
	code, _, errOut := invoke(t, "", "copy", "--from", src, "--to", url)
	if code != exitUsage || !strings.Contains(errOut, "run `aslrun migrate --db") {
		t.Errorf("copy into an unmigrated database: code %d, stderr %q; want it to say to run aslrun migrate", code, errOut)
	}
	code, _, errOut = invoke(t, "", "copy", "--from", src, "--to", "postgres://app:s3cret@127.0.0.1:1/x?connect_timeout=2")
	if code != exitUsage || !strings.Contains(errOut, "postgres://app:xxxxx@127.0.0.1:1/x") || strings.Contains(errOut, "s3cret") {
		t.Errorf("copy into an unreachable database: code %d, stderr %q", code, errOut)
	}
}
