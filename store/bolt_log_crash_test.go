package store_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/aslrun/aslrun/engine"
	"github.com/aslrun/aslrun/store"
)

// logCommits creates execution id and makes n commits of it on a Bolt with
// the log on and no checkpoint, then abandons the Bolt as a crash would:
// the log holds n+1 records (the create and each commit).
func logCommits(t *testing.T, path, id string, n int) {
	t.Helper()
	b, err := store.OpenBolt(path, store.LogOptions(1<<30, nil))
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	if err := b.Create(ctx, &engine.Execution{ID: id, StartedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	for seq := int64(1); seq <= int64(n); seq++ {
		if err := b.Commit(ctx, killCommit(id, seq)); err != nil {
			t.Fatal(err)
		}
	}
	store.AbandonBolt(b)
}

// logRecords returns the offsets of the log's records and the offset of
// its end.
func logRecords(t *testing.T, data []byte) []int {
	t.Helper()
	var offs []int
	for off := 1024; off+8 <= len(data); {
		n := int(binary.LittleEndian.Uint32(data[off:]))
		if off+8+n > len(data) {
			break
		}
		offs = append(offs, off)
		off += 8 + n
	}
	return offs
}

// TestBoltLogDamagedTail damages the log of a crashed Bolt and checks that
// opening it applies the records before the damage and none after, and
// says what it cut.
func TestBoltLogDamagedTail(t *testing.T) {
	const n = 6 // commits: records 0 (create) to 6
	for _, tc := range []struct {
		name   string
		damage func(data []byte, offs []int) []byte
		seq    int64 // the execution's Seq after recovery
	}{
		{"torn last record", func(d []byte, offs []int) []byte { return d[:len(d)-5] }, n - 1},
		{"length cut short", func(d []byte, offs []int) []byte { return append(d, 0x10, 0, 0) }, n},
		{"only a length", func(d []byte, offs []int) []byte { return d[:offs[n]+4] }, n - 1},
		{"corrupt last record", func(d []byte, offs []int) []byte { d[len(d)-3] ^= 0x40; return d }, n - 1},
		{"corrupt middle record", func(d []byte, offs []int) []byte { d[offs[3]+12] ^= 1; return d }, 2},
		{"corrupt length", func(d []byte, offs []int) []byte { d[offs[4]] ^= 0x80; return d }, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "aslrun.db")
			logCommits(t, path, "x", n)
			lp := path + "-log"
			data, err := os.ReadFile(lp)
			if err != nil {
				t.Fatal(err)
			}
			offs := logRecords(t, data)
			if len(offs) != n+1 {
				t.Fatalf("the log has %d records, want %d", len(offs), n+1)
			}
			if err := os.WriteFile(lp, tc.damage(data, offs), 0o600); err != nil {
				t.Fatal(err)
			}
			b := openLogged(t, path)
			rep := b.LogReport()
			t.Logf("LogReport = %+v", rep)
			if rep.Cut == 0 || rep.CutReason == "" {
				t.Errorf("LogReport = %+v, want a cut with its reason", rep)
			}
			if !rep.Restored {
				t.Errorf("LogReport.Restored = false, want true (the file went past the checkpoint)")
			}
			if want := int(tc.seq) + 1; rep.Replayed != want {
				t.Errorf("LogReport.Replayed = %d, want %d", rep.Replayed, want)
			}
			e, err := b.Load(t.Context(), "x")
			if err != nil {
				t.Fatal(err)
			}
			if e.Seq != tc.seq {
				t.Errorf("Seq after recovery = %d, want %d", e.Seq, tc.seq)
			}
			if err := b.VerifyHistory(t.Context(), "x"); err != nil {
				t.Errorf("VerifyHistory = %v", err)
			}
			// The database goes on from there.
			if err := b.Commit(t.Context(), killCommit("x", tc.seq+1)); err != nil {
				t.Errorf("Commit after recovery = %v", err)
			}
		})
	}
}

// TestBoltLogForeign puts the log of one crashed database beside another
// and checks that the other refuses it, its file untouched.
func TestBoltLogForeign(t *testing.T) {
	dir := t.TempDir()
	a, other := filepath.Join(dir, "a.db"), filepath.Join(dir, "b.db")
	logCommits(t, a, "x", 3)
	logCommits(t, other, "y", 5)
	if err := os.Rename(a+"-log", other+"-log"); err != nil {
		t.Fatal(err)
	}
	before, err := os.ReadFile(other)
	if err != nil {
		t.Fatal(err)
	}
	for _, opts := range []store.BoltOptions{{Log: true}, {}, {ReadOnly: true}} {
		b, err := store.OpenBolt(other, opts)
		if err == nil {
			b.Close()
			t.Fatalf("OpenBolt(%+v) with another database's log = nil error", opts)
		}
		if opts.ReadOnly {
			continue // refused: it has records to replay
		}
		if !errors.Is(err, store.ErrNotOurs) {
			t.Errorf("OpenBolt(%+v) with another database's log = %v, want ErrNotOurs", opts, err)
		}
	}
	after, err := os.ReadFile(other)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(before, after) {
		t.Errorf("the database was changed by opens that refused its log")
	}
}

// TestBoltLogWithoutLog opens a crashed logged database without the log:
// it is recovered, and its log removed.
func TestBoltLogWithoutLog(t *testing.T) {
	path := filepath.Join(t.TempDir(), "aslrun.db")
	logCommits(t, path, "x", 4)
	b := openBolt(t, path)
	if got := b.LogReport().Replayed; got != 5 {
		t.Errorf("LogReport.Replayed = %d, want 5", got)
	}
	if _, err := os.Stat(path + "-log"); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Stat(log) = %v, want it removed", err)
	}
	e, err := b.Load(t.Context(), "x")
	if err != nil || e.Seq != 4 {
		t.Fatalf("Load = %v, %v, want Seq 4", e, err)
	}
}

// logKillEnv names the database a TestBoltLogKillChild process writes to.
const logKillEnv = "ASLRUN_STORE_LOG_KILL_DB"

// TestBoltLogSurvivesKill is TestBoltSurvivesKill with the log on and a
// checkpoint every 64 records: a child commits from 8 goroutines, is
// killed with SIGKILL after some acknowledged commits, and every commit
// it acknowledged must be there, its history verified.
func TestBoltLogSurvivesKill(t *testing.T) {
	if testing.Short() {
		t.Skip("starts child processes")
	}
	survivesKill(t, "TestBoltLogKillChild", logKillEnv, 4, func(round int) int { return 150 + 97*round }, store.BoltOptions{Log: true})
}

// TestBoltLogKillChild is the child of TestBoltLogSurvivesKill: it commits
// through the log, with a checkpoint every 64 records.
func TestBoltLogKillChild(t *testing.T) {
	path := os.Getenv(logKillEnv)
	if path == "" {
		t.Skip("run by TestBoltLogSurvivesKill")
	}
	opts := store.LogOptions(64, nil)
	opts.LockTimeout = 5 * time.Second
	killChild(t, path, opts)
}

// TestBoltLogOwner checks that a database open with the log cannot be
// opened again, with or without the log, and that once it is closed it
// opens read-only with every commit there.
func TestBoltLogOwner(t *testing.T) {
	path := filepath.Join(t.TempDir(), "aslrun.db")
	b, err := store.OpenBolt(path, store.BoltOptions{Log: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Create(t.Context(), &engine.Execution{ID: "x"}); err != nil {
		t.Fatal(err)
	}
	for seq := int64(1); seq <= 3; seq++ {
		if err := b.Commit(t.Context(), killCommit("x", seq)); err != nil {
			t.Fatal(err)
		}
	}
	for _, opts := range []store.BoltOptions{{Log: true}, {}, {ReadOnly: true}} {
		opts.LockTimeout = 50 * time.Millisecond
		if b2, err := store.OpenBolt(path, opts); !errors.Is(err, store.ErrLocked) {
			if err == nil {
				b2.Close()
			}
			t.Errorf("OpenBolt(%+v) while open = %v, want ErrLocked", opts, err)
		}
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	r, err := store.OpenBolt(path, store.BoltOptions{ReadOnly: true})
	if err != nil {
		t.Fatalf("OpenBolt(ReadOnly) after Close = %v", err)
	}
	defer r.Close()
	if e, err := r.Load(t.Context(), "x"); err != nil || e.Seq != 3 {
		t.Errorf("Load = %v, %v, want Seq 3", e, err)
	}
}
