package store

import (
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"go.etcd.io/bbolt"

	"github.com/aslrun/aslrun/engine"
)

// listIDs lists with opts, failing the test on error.
func listIDs(t *testing.T, s Store, opts ListOptions) []string {
	t.Helper()
	got, err := s.List(t.Context(), opts)
	if err != nil {
		t.Fatalf("List(%+v) = %v", opts, err)
	}
	var ids []string
	for _, x := range got {
		ids = append(ids, x.ID)
	}
	return ids
}

// TestBoltListAgreesWithMemory lists, pages and filters more executions
// of one status than fewStatus (Bolt scans the start-time indexes for it)
// and fewer of another (Bolt reads them from the status index), with
// starts before 1970, in a Bolt and in a Memory: they list the same.
func TestBoltListAgreesWithMemory(t *testing.T) {
	b, err := OpenBolt(filepath.Join(t.TempDir(), "aslrun.db"), BoltOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	m := NewMemory()
	var cs []*created
	start := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range 2*fewStatus + 40 {
		e := &engine.Execution{
			ID: fmt.Sprintf("e%04d", (i*37)%(2*fewStatus+40)), MachineName: fmt.Sprintf("m%d", i%3),
			Status: engine.StatusSucceeded, StartedAt: start.Add(time.Duration(i/3) * time.Second),
		}
		switch {
		case i%10 == 0:
			e.Status = engine.StatusFailed
		case i < 6:
			e.StartedAt = time.Unix(-int64(i), 0) // before 1970: all count as 1970
		}
		if err := m.Create(t.Context(), e); err != nil {
			t.Fatal(err)
		}
		c, err := newExecution(e)
		if err != nil {
			t.Fatal(err)
		}
		cs = append(cs, c)
	}
	err = b.write(t.Context(), func(x *tx) error {
		for _, c := range cs {
			if err := x.create(c); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	var cases []ListOptions
	for _, status := range []engine.Status{"", engine.StatusSucceeded, engine.StatusFailed} {
		for _, machine := range []string{"", "m1"} {
			cases = append(cases,
				ListOptions{Status: status, MachineName: machine},
				ListOptions{Status: status, MachineName: machine, StartedAfter: start.Add(time.Minute), StartedBefore: start.Add(2 * time.Minute), Limit: 30},
				ListOptions{Status: status, MachineName: machine, StartedBefore: start.Add(10 * time.Second)},
				ListOptions{Status: status, MachineName: machine, StartedAfter: time.Unix(-100, 0)},
			)
		}
	}
	for _, opts := range cases {
		want := listIDs(t, m, opts)
		if got := listIDs(t, b, opts); !slices.Equal(got, want) {
			t.Errorf("Bolt List(%+v) = %q, want Memory's %q", opts, got, want)
		}
		if len(want) == 0 {
			t.Errorf("List(%+v) is empty: the case tests nothing", opts)
		}
		// Page by 9 from the cursor.
		page := opts
		page.Limit = 9
		var got []string
		for {
			ids := listIDs(t, b, page)
			got = append(got, ids...)
			if len(ids) < page.Limit {
				break
			}
			page.After = ids[len(ids)-1]
		}
		if opts.Limit > 0 && len(got) > opts.Limit {
			got = got[:opts.Limit]
		}
		if !slices.Equal(got, want) {
			t.Errorf("Bolt List(%+v) by pages of 9 = %q, want %q", opts, got, want)
		}
	}
}

// TestBoltMigratesFormat5 opens a database of format 5, which had no
// workflow registry and no machines index: both are added, the
// executions are indexed, and workflows can be registered.
func TestBoltMigratesFormat5(t *testing.T) {
	path := filepath.Join(t.TempDir(), "aslrun.db")
	b, err := OpenBolt(path, BoltOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	for i, machine := range []string{"a", "b", "a"} {
		e := &engine.Execution{ID: fmt.Sprint("e", i), MachineName: machine, StartedAt: time.Unix(int64(i), 0)}
		if err := b.Create(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	d := map[string]any{"k": "v"}
	err = b.Commit(ctx, &engine.Commit{Execution: "e0", Seq: 1, Status: engine.StatusRunning,
		Checkpoint: &engine.Checkpoint{Name: "cp", State: "S", Document: d, CreatedAt: time.Unix(5, 0)},
		Events:     []engine.Event{{Own: 1, Type: engine.EventCheckpointSaved, State: "S", Timestamp: time.Unix(5, 0), Document: d}},
	})
	if err != nil {
		t.Fatal(err)
	}
	b.Close()
	db, err := bbolt.Open(path, 0o600, boltOptions(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	err = db.Update(func(t *bbolt.Tx) error {
		for _, name := range [][]byte{bucketWorkflows, bucketMachines} {
			if err := t.DeleteBucket(name); err != nil {
				return err
			}
		}
		return t.Bucket(bucketMeta).Put(versionKey, []byte("5"))
	})
	db.Close()
	if err != nil {
		t.Fatal(err)
	}
	b, err = OpenBolt(path, BoltOptions{})
	if err != nil {
		t.Fatalf("OpenBolt(format 5) = %v", err)
	}
	defer b.Close()
	if got, want := listIDs(t, b, ListOptions{MachineName: "a"}), []string{"e2", "e0"}; !slices.Equal(got, want) {
		t.Errorf("List(machine a) after conversion = %q, want %q", got, want)
	}
	// Checkpoint records are not converted again.
	if err := b.VerifyHistory(ctx, "e0"); err != nil {
		t.Errorf("VerifyHistory(e0) after conversion = %v", err)
	}
	if cp, err := b.Checkpoint(ctx, "e0", "cp"); err != nil || cp.State != "S" {
		t.Errorf("Checkpoint(e0, cp) after conversion = %+v, %v", cp, err)
	}
	if w, err := b.RegisterWorkflow(ctx, "wf", []byte(`{}`), "h", VersionMeta{}); err != nil || w.Version != 1 {
		t.Errorf("RegisterWorkflow after conversion = %+v, %v, want version 1", w, err)
	}
	err = b.view(func(x *tx) error {
		if v := string(x.heads.Tx().Bucket(bucketMeta).Get(versionKey)); v != strconv.Itoa(formatVersion) {
			return fmt.Errorf("format version %s", v)
		}
		return nil
	})
	if err != nil {
		t.Errorf("after conversion: %v, want format %d", err, formatVersion)
	}
}
