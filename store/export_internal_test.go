package store

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"testing"
	"time"

	"go.etcd.io/bbolt"

	"github.com/aslrun/aslrun/engine"
)

// exportAll collects what Export yields.
func exportAll(t *testing.T, b *Bolt) ([]ExportItem, error) {
	t.Helper()
	var items []ExportItem
	err := b.Export(t.Context(), func(it ExportItem) error {
		items = append(items, it)
		return nil
	})
	return items, err
}

// TestExport: what Export yields is the records of every backend, which
// verify and read back as Bolt's own, without Bolt's links.
func TestExport(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.db")
	fillTamper(t, path)
	b, err := OpenBolt(path, BoltOptions{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	ctx := t.Context()
	if _, err := b.RegisterWorkflow(ctx, "wf", []byte(`{}`), "h", VersionMeta{}); err == nil {
		t.Error("RegisterWorkflow on a read-only Bolt succeeded")
	}
	items, err := exportAll(t, b)
	if err != nil {
		t.Fatal(err)
	}
	events := map[string]int64{"ended": 4, "failed": 4, "running": 3}
	wantCps := map[string]map[string]int64{"ended": {"cp": 3}, "failed": {"cp": 3}, "running": {"cp": 3, "free": 0}}
	var got []string
	for _, it := range items {
		e := it.Execution
		if e == nil {
			continue
		}
		got = append(got, e.ID)
		h, err := decodeHead(e.ID, e.Head)
		if err != nil {
			t.Fatal(err)
		}
		if h.LastRecord != 0 || h.Unbound != nil || h.Events != events[e.ID] || e.Events != h.Events || e.LastHash != h.LastHash {
			t.Errorf("%s: head has last record %d, unbound %v, %d events (%d, %q), want no links and %d events", e.ID, h.LastRecord, h.Unbound, h.Events, e.Events, e.LastHash, events[e.ID])
		}
		if err := VerifyHistory(e.ID, e.Head, e.History); err != nil {
			t.Errorf("%s: the exported history does not verify: %v", e.ID, err)
		}
		for i, rec := range e.History {
			r, err := parseHistoryRecord(rec)
			if err != nil || r.prev != 0 || r.first != e.FirstEvents[i] {
				t.Errorf("%s: record %d: prev %d, first %d (want %d), %v", e.ID, i, r.prev, r.first, e.FirstEvents[i], err)
			}
		}
		read, err := ReadHistory(e.ID, e.History)
		if err != nil {
			t.Fatal(err)
		}
		want, err := b.History(ctx, e.ID)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(read, want) {
			t.Errorf("%s: the exported history reads as\n%+v\nwant\n%+v", e.ID, read, want)
		}
		s, err := ExecutionSummary(e.ID, e.Spec, e.Head)
		if err != nil || s != e.Summary {
			t.Errorf("%s: summary %+v (%v), want %+v", e.ID, s, err, e.Summary)
		}
		cps := map[string]int64{}
		var rec Records
		for _, cp := range e.Checkpoints {
			cps[cp.Name] = cp.Event
			got, err := rec.LoadCheckpoint(e.ID, cp.Name, cp.Record, cp.Snapshot, true)
			if err != nil {
				t.Errorf("%s: checkpoint %q does not load: %v", e.ID, cp.Name, err)
				continue
			}
			want, err := b.Checkpoint(ctx, e.ID, cp.Name)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("%s: checkpoint %q loads as %+v, want %+v", e.ID, cp.Name, got, want)
			}
		}
		if !reflect.DeepEqual(cps, wantCps[e.ID]) {
			t.Errorf("%s: checkpoints at events %v, want %v", e.ID, cps, wantCps[e.ID])
		}
	}
	if !reflect.DeepEqual(got, []string{"ended", "failed", "running"}) {
		t.Errorf("exported executions %v", got)
	}
}

// TestExportRefusesTampered: Export stops at a record that does not
// verify, naming it.
func TestExportRefusesTampered(t *testing.T) {
	template := filepath.Join(t.TempDir(), "template.db")
	fillTamper(t, template)
	tests := []struct {
		name     string
		edit     func(t *bbolt.Tx) error
		id, cp   string
		field    string
		wantWrap error
	}{
		{"head status", editHead("ended", set("status", `"FAILED"`)), "ended", "", "status", nil},
		{"checkpoint docHash", editCheckpoint("ended", "cp", set("docHash", strconv.Quote(fmt.Sprintf("%064x", 1)))), "ended", "cp", "docHash", nil},
		{"a missing snapshot", func(t *bbolt.Tx) error {
			c := t.Bucket(bucketBlobs).Cursor()
			k, _ := c.First()
			return t.Bucket(bucketBlobs).Delete(bytes.Clone(k))
		}, "", "", "", ErrCorrupt},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := copyFile(t, template)
			editBolt(t, path, tt.edit)
			b, err := OpenBolt(path, BoltOptions{ReadOnly: true})
			if err != nil {
				t.Fatal(err)
			}
			defer b.Close()
			_, err = exportAll(t, b)
			if tt.wantWrap != nil {
				if !errors.Is(err, tt.wantWrap) {
					t.Errorf("Export = %v, want an error wrapping %v", err, tt.wantWrap)
				}
				return
			}
			checkIntegrityError(t, "Export", err, tt.id, tt.cp, tt.field)
		})
	}
	t.Run("f's error", func(t *testing.T) {
		b, err := OpenBolt(copyFile(t, template), BoltOptions{ReadOnly: true})
		if err != nil {
			t.Fatal(err)
		}
		defer b.Close()
		stop := errors.New("stop")
		n := 0
		err = b.Export(t.Context(), func(ExportItem) error { n++; return stop })
		if err != stop || n != 1 {
			t.Errorf("Export = %v after %d items, want f's error after one", err, n)
		}
	})
}

// TestBoltReadOnly: a read-only Bolt shares its lock with readers only,
// and never makes a database.
func TestBoltReadOnly(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "none.db")
	if _, err := OpenBolt(missing, BoltOptions{ReadOnly: true}); err == nil {
		t.Error("OpenBolt read-only of a missing file succeeded")
	}
	if _, err := os.Stat(missing); err == nil {
		t.Error("OpenBolt read-only made the missing database")
	}
	path := filepath.Join(dir, "x.db")
	fillTamper(t, path)
	w, err := OpenBolt(path, BoltOptions{LockTimeout: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := OpenBolt(path, BoltOptions{ReadOnly: true, LockTimeout: 50 * time.Millisecond}); !errors.Is(err, ErrLocked) {
		t.Errorf("OpenBolt read-only of a database held for writing = %v, want ErrLocked", err)
	}
	w.Close()
	r1, err := OpenBolt(path, BoltOptions{ReadOnly: true, LockTimeout: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer r1.Close()
	r2, err := OpenBolt(path, BoltOptions{ReadOnly: true, LockTimeout: 50 * time.Millisecond})
	if err != nil {
		t.Fatalf("a second read-only OpenBolt: %v", err)
	}
	defer r2.Close()
	if _, err := OpenBolt(path, BoltOptions{LockTimeout: 50 * time.Millisecond}); !errors.Is(err, ErrLocked) {
		t.Errorf("OpenBolt for writing of a database open read-only = %v, want ErrLocked", err)
	}
	if err := r1.Create(t.Context(), &engine.Execution{ID: "new", StartedAt: time.Now()}); err == nil {
		t.Error("Create on a read-only Bolt succeeded")
	}
}
