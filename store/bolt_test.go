package store_test

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.etcd.io/bbolt"

	"github.com/aslrun/aslrun/engine"
	"github.com/aslrun/aslrun/jsonvalue"
	"github.com/aslrun/aslrun/store"
	"github.com/aslrun/aslrun/store/storetest"
)

// openBolt opens a Bolt on path, closed at the end of the test.
func openBolt(t *testing.T, path string) *store.Bolt {
	t.Helper()
	b, err := store.OpenBolt(path, store.BoltOptions{})
	if err != nil {
		t.Fatalf("OpenBolt(%s) = %v", path, err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

func TestBolt(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store {
		return store.TamperBolt{Bolt: openBolt(t, filepath.Join(t.TempDir(), "aslrun.db"))}
	})
}

func TestBoltLockTimeout(t *testing.T) {
	path := filepath.Join(t.TempDir(), "aslrun.db")
	openBolt(t, path)
	for _, timeout := range []time.Duration{0, 50 * time.Millisecond} {
		start := time.Now()
		b, err := store.OpenBolt(path, store.BoltOptions{LockTimeout: timeout})
		if err == nil {
			b.Close()
		}
		elapsed := time.Since(start)
		if !errors.Is(err, store.ErrLocked) {
			t.Errorf("second OpenBolt (timeout %v) = %v, want ErrLocked", timeout, err)
		} else if !namesDatabase(err, path) {
			t.Errorf("second OpenBolt (timeout %v) = %v, want a *DatabaseError naming %s", timeout, err, path)
		}
		limit := timeout
		if limit == 0 {
			limit = time.Second // the default
		}
		// bbolt tries every 50ms and gives up when the next try would be late.
		if elapsed > limit+2*time.Second {
			t.Errorf("second OpenBolt (timeout %v) gave up after %v, want at most about %v", timeout, elapsed, limit)
		}
	}
}

// foreignBolt writes a bbolt database that is not aslrun's: fill gets its
// transaction.
func foreignBolt(t *testing.T, path string, fill func(tx *bbolt.Tx) error) {
	t.Helper()
	db, err := bbolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatalf("bbolt.Open(%s) = %v", path, err)
	}
	if err := db.Update(fill); err != nil {
		t.Fatalf("fill %s: %v", path, err)
	}
	if err := db.Close(); err != nil {
		t.Fatalf("close %s: %v", path, err)
	}
}

func TestBoltRejectsForeignFiles(t *testing.T) {
	tests := []struct {
		name  string
		write func(t *testing.T, path string)
	}{
		{"text file", func(t *testing.T, path string) {
			os.WriteFile(path, []byte("hello, I am not a database\n"), 0o600)
		}},
		{"large non-bbolt file", func(t *testing.T, path string) {
			os.WriteFile(path, bytes.Repeat([]byte("0123456789abcdef"), 4096), 0o600)
		}},
		{"bbolt file of another program", func(t *testing.T, path string) {
			foreignBolt(t, path, func(tx *bbolt.Tx) error {
				b, err := tx.CreateBucket([]byte("users"))
				if err != nil {
					return err
				}
				return b.Put([]byte("alice"), []byte("1"))
			})
		}},
		{"meta bucket of another program", func(t *testing.T, path string) {
			foreignBolt(t, path, func(tx *bbolt.Tx) error {
				b, err := tx.CreateBucket([]byte("meta"))
				if err != nil {
					return err
				}
				return b.Put([]byte("format"), []byte("other"))
			})
		}},
		{"newer aslrun format", func(t *testing.T, path string) {
			foreignBolt(t, path, func(tx *bbolt.Tx) error {
				b, err := tx.CreateBucket([]byte("meta"))
				if err != nil {
					return err
				}
				if err := b.Put([]byte("format"), []byte("aslrun")); err != nil {
					return err
				}
				return b.Put([]byte("version"), []byte("1000"))
			})
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "file.db")
			tt.write(t, path)
			before, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			info, _ := os.Stat(path)
			b, err := store.OpenBolt(path, store.BoltOptions{})
			if err == nil {
				b.Close()
			}
			if !errors.Is(err, store.ErrNotOurs) {
				t.Errorf("OpenBolt = %v, want ErrNotOurs", err)
			} else if !namesDatabase(err, path) {
				t.Errorf("OpenBolt = %v, want a *DatabaseError naming %s", err, path)
			}
			after, _ := os.ReadFile(path)
			if !bytes.Equal(after, before) {
				t.Errorf("OpenBolt changed the file (%d bytes before, %d after)", len(before), len(after))
			}
			if info2, _ := os.Stat(path); !info2.ModTime().Equal(info.ModTime()) {
				t.Errorf("OpenBolt changed the file's modification time")
			}
		})
	}
}

// namesDatabase reports whether err is a *DatabaseError about the file at
// path.
func namesDatabase(err error, path string) bool {
	var de *store.DatabaseError
	return errors.As(err, &de) && de.Path == path
}

// TestBoltRefusesEmptyFiles opens files that hold nothing, an empty file
// and a bbolt database without buckets: only a missing file makes a new
// database (written whole, so that a process killed while making it
// leaves neither), and these are not aslrun databases. The files are left
// as they were.
func TestBoltRefusesEmptyFiles(t *testing.T) {
	tests := []struct {
		name  string
		write func(t *testing.T, path string)
	}{
		{"empty file", func(t *testing.T, path string) {
			if err := os.WriteFile(path, nil, 0o600); err != nil {
				t.Fatal(err)
			}
		}},
		{"bbolt file without buckets", func(t *testing.T, path string) {
			foreignBolt(t, path, func(*bbolt.Tx) error { return nil })
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "empty.db")
			tt.write(t, path)
			before, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			b, err := store.OpenBolt(path, store.BoltOptions{})
			if err == nil {
				b.Close()
			}
			if !errors.Is(err, store.ErrNotOurs) || !namesDatabase(err, path) {
				t.Errorf("OpenBolt = %v, want ErrNotOurs in a *DatabaseError naming %s", err, path)
			}
			if after, _ := os.ReadFile(path); !bytes.Equal(after, before) {
				t.Errorf("OpenBolt changed the file (%d bytes before, %d after)", len(before), len(after))
			}
			if entries, _ := os.ReadDir(dir); len(entries) != 1 {
				t.Errorf("OpenBolt left %d files in the directory, want 1", len(entries))
			}
		})
	}
}

// decode decodes a document.
func decode(t *testing.T, s string) any {
	t.Helper()
	v, err := jsonvalue.Decode([]byte(s))
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func TestBoltReopen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "aslrun.db")
	b := openBolt(t, path)
	ctx := t.Context()
	wake := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	doc := decode(t, `{"n":12345678901234567890,"f":0.10}`)
	if err := b.Create(ctx, &engine.Execution{ID: "e1", MachineName: "m", Definition: []byte(`{"StartAt":"A"}`), Input: doc, StartedAt: wake}); err != nil {
		t.Fatal(err)
	}
	err := b.Commit(ctx, &engine.Commit{
		Execution: "e1", Seq: 1, Status: engine.StatusWaiting, WakeAt: wake, WaitingFor: "Wait",
		Scopes:     map[string]*engine.Scope{"": {Next: "W", Doc: doc}},
		Events:     []engine.Event{{ID: 1, Type: engine.EventExecutionStarted, Timestamp: wake, Input: doc, Document: doc}},
		Checkpoint: &engine.Checkpoint{Name: "cp", Document: doc, CreatedAt: wake},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Close(); err != nil {
		t.Fatalf("Close() = %v", err)
	}

	b = openBolt(t, path)
	e, err := b.Load(ctx, "e1")
	if err != nil {
		t.Fatalf("Load(e1) after reopening = %v", err)
	}
	if e.Status != engine.StatusWaiting || string(e.Definition) != `{"StartAt":"A"}` || !e.WakeAt.Equal(wake) ||
		string(mustMarshal(t, e.Progress.Scopes[""].Doc)) != `{"f":0.10,"n":12345678901234567890}` {
		t.Errorf("Load(e1) after reopening = %+v, want what was committed", e)
	}
	if err := b.VerifyHistory(ctx, "e1"); err != nil {
		t.Errorf("VerifyHistory(e1) after reopening = %v", err)
	}
	if cp, err := b.Checkpoint(ctx, "e1", "cp"); err != nil || string(mustMarshal(t, cp.Document)) != `{"f":0.10,"n":12345678901234567890}` {
		t.Errorf("Checkpoint(e1, cp) after reopening = %v, %v", cp, err)
	}
	if due, err := b.Due(ctx, wake); err != nil || len(due) != 1 {
		t.Errorf("Due() after reopening = %q, %v, want [e1]", due, err)
	}
}

func mustMarshal(t *testing.T, v any) []byte {
	t.Helper()
	b, err := jsonvalue.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestBoltCorruptSnapshot(t *testing.T) {
	tests := []struct {
		name   string
		damage func(v []byte) []byte // nil deletes the blob
	}{
		{"flipped byte", func(v []byte) []byte { v[len(v)/2] ^= 0x40; return v }},
		{"truncated", func(v []byte) []byte { return v[:len(v)-3] }},
		{"emptied", func([]byte) []byte { return []byte{} }},
		{"missing", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "aslrun.db")
			b := openBolt(t, path)
			ctx := t.Context()
			if err := b.Create(ctx, &engine.Execution{ID: "e1"}); err != nil {
				t.Fatal(err)
			}
			d := decode(t, `{"important":"state","n":[1,2,3]}`)
			if err := b.Commit(ctx, &engine.Commit{Execution: "e1", Seq: 1, Status: engine.StatusRunning, Checkpoint: &engine.Checkpoint{Name: "cp", Document: d}}); err != nil {
				t.Fatal(err)
			}
			b.Close()

			// Damage the only blob with raw bbolt access.
			db, err := bbolt.Open(path, 0o600, &bbolt.Options{Timeout: time.Second})
			if err != nil {
				t.Fatal(err)
			}
			err = db.Update(func(tx *bbolt.Tx) error {
				blobs := tx.Bucket([]byte("blobs"))
				k, v := blobs.Cursor().First()
				if k == nil {
					return fmt.Errorf("no blob stored")
				}
				k = bytes.Clone(k)
				if tt.damage == nil {
					return blobs.Delete(k)
				}
				return blobs.Put(k, tt.damage(bytes.Clone(v)))
			})
			db.Close()
			if err != nil {
				t.Fatal(err)
			}

			b = openBolt(t, path)
			cp, err := b.Checkpoint(ctx, "e1", "cp")
			if !errors.Is(err, store.ErrCorrupt) {
				t.Errorf("Checkpoint(e1, cp) = %+v, %v, want ErrCorrupt", cp, err)
			} else if !namesDatabase(err, path) {
				t.Errorf("Checkpoint(e1, cp) = %v, want a *DatabaseError naming %s", err, path)
			}
			if cps, err := b.ListCheckpoints(ctx, "e1"); err != nil || len(cps) != 1 {
				t.Errorf("ListCheckpoints(e1) = %v, %v, want the checkpoint listed", cps, err)
			}
		})
	}
}

// TestBoltCloseDrains closes the store while commits are under way: each
// commit either succeeds, and is then in the database, or fails with
// ErrClosed.
func TestBoltCloseDrains(t *testing.T) {
	path := filepath.Join(t.TempDir(), "aslrun.db")
	b := openBolt(t, path)
	ctx := t.Context()
	const n = 32
	for i := range n {
		if err := b.Create(ctx, &engine.Execution{ID: fmt.Sprint(i)}); err != nil {
			t.Fatal(err)
		}
	}
	var wg, started sync.WaitGroup
	committed := make([]int64, n)
	started.Add(n)
	for i := range n {
		wg.Go(func() {
			first := true
			defer func() {
				if first {
					started.Done() // it failed before its first commit
				}
			}()
			for seq := int64(1); ; seq++ {
				err := b.Commit(ctx, &engine.Commit{Execution: fmt.Sprint(i), Seq: seq, Status: engine.StatusRunning,
					Events: []engine.Event{{ID: seq, Type: "E", Timestamp: time.Now()}}})
				if errors.Is(err, store.ErrClosed) {
					return
				}
				if err != nil {
					t.Errorf("Commit(%d #%d) = %v", i, seq, err)
					return
				}
				atomic.StoreInt64(&committed[i], seq)
				if first {
					first = false
					started.Done()
				}
			}
		})
	}
	// Close once every goroutine has committed, while they go on.
	started.Wait()
	for i := range n {
		if atomic.LoadInt64(&committed[i]) == 0 {
			t.Fatalf("execution %d has no commit before Close", i)
		}
	}
	if err := b.Close(); err != nil {
		t.Fatalf("Close() = %v", err)
	}
	wg.Wait()

	b = openBolt(t, path)
	for i := range n {
		e, err := b.Load(ctx, fmt.Sprint(i))
		if err != nil {
			t.Fatalf("Load(%d) after reopening = %v", i, err)
		}
		if e.Seq != committed[i] {
			t.Errorf("execution %d after reopening: Seq %d, want %d, the last commit that returned nil", i, e.Seq, committed[i])
		}
		if err := b.VerifyHistory(ctx, fmt.Sprint(i)); err != nil {
			t.Errorf("VerifyHistory(%d) = %v", i, err)
		}
	}
}

// killEnv names the database a TestBoltKillChild process writes to.
const killEnv = "ASLRUN_STORE_KILL_DB"

// TestBoltSurvivesKill runs a child process that commits as fast as it can
// and reports each commit that returned nil, kills it with SIGKILL, and
// checks that every reported commit is in the database, several times
// over.
func TestBoltSurvivesKill(t *testing.T) {
	if testing.Short() {
		t.Skip("starts child processes")
	}
	survivesKill(t, "TestBoltKillChild", killEnv, 3, func(round int) int { return 200 + 100*round }, store.BoltOptions{})
}

// TestBoltKillChild is the child process of TestBoltSurvivesKill.
func TestBoltKillChild(t *testing.T) {
	path := os.Getenv(killEnv)
	if path == "" {
		t.Skip("run by TestBoltSurvivesKill")
	}
	killChild(t, path, store.BoltOptions{LockTimeout: 5 * time.Second})
}

// survivesKill runs child (a test of this binary calling killChild on the
// database its env variable names) rounds times on one database, kills it
// with SIGKILL once it has acknowledged killAt(round) commits, reopens the
// database with opts and checks that every commit it acknowledged is
// there, its history verified.
func survivesKill(t *testing.T, child, env string, rounds int, killAt func(round int) int, opts store.BoltOptions) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "aslrun.db")
	acked := make(map[string]int64)
	for round := range rounds {
		cmd := exec.Command(os.Args[0], "-test.run=^"+child+"$")
		cmd.Env = append(os.Environ(), env+"="+path)
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(out)
		lines, kill := 0, killAt(round)
		for sc.Scan() {
			var id string
			var seq int64
			if _, err := fmt.Sscanf(sc.Text(), "ack %s %d", &id, &seq); err != nil {
				continue
			}
			acked[id] = max(acked[id], seq)
			if lines++; lines == kill {
				cmd.Process.Kill() // SIGKILL, in the middle of commits
			}
		}
		err = cmd.Wait()
		if lines < kill {
			t.Fatalf("round %d: the child acknowledged %d commits before ending (%v), want it killed after %d", round, lines, err, kill)
		}
		b, err := store.OpenBolt(path, opts)
		if err != nil {
			t.Fatalf("round %d: OpenBolt after SIGKILL = %v", round, err)
		}
		t.Logf("round %d: %d acknowledged, LogReport %+v", round, lines, b.LogReport())
		for id, seq := range acked {
			e, err := b.Load(t.Context(), id)
			if err != nil {
				t.Fatalf("round %d: Load(%s) after SIGKILL = %v", round, id, err)
			}
			if e.Seq < seq {
				t.Errorf("round %d: execution %s has Seq %d after SIGKILL, want at least %d (acknowledged)", round, id, e.Seq, seq)
			}
			if err := b.VerifyHistory(t.Context(), id); err != nil {
				t.Errorf("round %d: VerifyHistory(%s) after SIGKILL = %v", round, id, err)
			}
		}
		if err := b.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// killChild opens the database at path with opts, commits to 8
// executions from 8 goroutines and prints "ack ID SEQ" for every commit
// that returned nil, until it is killed (or 30 seconds pass).
func killChild(t *testing.T, path string, opts store.BoltOptions) {
	b, err := store.OpenBolt(path, opts)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var wg sync.WaitGroup
	deadline := time.Now().Add(30 * time.Second)
	for i := range 8 {
		id := fmt.Sprintf("k%d", i)
		wg.Go(func() {
			e, err := b.Load(t.Context(), id)
			if errors.Is(err, engine.ErrNotFound) {
				err = b.Create(t.Context(), &engine.Execution{ID: id})
				e = &engine.Execution{}
			}
			if err != nil {
				t.Error(err)
				return
			}
			for seq := e.Seq + 1; time.Now().Before(deadline); seq++ {
				if err := b.Commit(t.Context(), killCommit(id, seq)); err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				fmt.Fprintf(os.Stdout, "ack %s %d\n", id, seq)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	b.Close()
}

// killCommit is commit seq of execution id in the kill tests.
func killCommit(id string, seq int64) *engine.Commit {
	return &engine.Commit{Execution: id, Seq: seq, Status: engine.StatusRunning,
		Scopes: map[string]*engine.Scope{"": {Next: "S", Doc: map[string]any{"seq": seq}}},
		Events: []engine.Event{{ID: seq, Type: "E", Timestamp: time.Now(), Document: map[string]any{"seq": seq}}}}
}
