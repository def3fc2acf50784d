package store_test

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.etcd.io/bbolt"

	"github.com/aslrun/aslrun/engine"
	"github.com/aslrun/aslrun/store"
)

// faultDoc is the document of the commits of fillBolt; marker names the
// execution in it, so that a test can find the execution's records in the
// file.
func faultDoc(t *testing.T, marker string) any {
	return decode(t, `{"marker":"`+marker+`","text":"`+strings.Repeat("lorem ipsum ", 40)+`","n":[1,2,3]}`)
}

// fillBolt writes n executions (f0, f1, …) of five commits each, with
// documents in their history and a checkpoint, to a new database at path,
// and closes it.
func fillBolt(t *testing.T, path string, n int) []string {
	t.Helper()
	b, err := store.OpenBolt(path, store.BoltOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	ctx := t.Context()
	ids := make([]string, n)
	for i := range ids {
		ids[i] = fmt.Sprintf("f%d", i)
		if err := b.Create(ctx, &engine.Execution{ID: ids[i], StartedAt: time.Now()}); err != nil {
			t.Fatal(err)
		}
	}
	for seq := int64(1); seq <= 5; seq++ {
		for _, id := range ids {
			d := faultDoc(t, fmt.Sprintf("marker-%s-%d", id, seq))
			c := &engine.Commit{
				Execution: id, Seq: seq, Status: engine.StatusRunning,
				Scopes: map[string]*engine.Scope{"": {Next: "S", Doc: d}},
				Events: []engine.Event{
					{ID: 2*seq - 1, Type: "TaskStateExited", Timestamp: time.Now(), Output: d, Document: d},
					{ID: 2 * seq, Type: "TaskStateEntered", Timestamp: time.Now(), Input: d, Document: d},
				},
			}
			if seq == 3 {
				c.Checkpoint = &engine.Checkpoint{Name: "cp", Document: d, CreatedAt: time.Now()}
			}
			if err := b.Commit(ctx, c); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	return ids
}

// rootPage returns the file offset of the root page of a bucket in the
// closed database at path, and the page size.
func rootPage(t *testing.T, path, bucket string) (int64, int) {
	t.Helper()
	db, err := bbolt.Open(path, 0o600, &bbolt.Options{ReadOnly: true, Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var root uint64
	err = db.View(func(tx *bbolt.Tx) error {
		b := tx.Bucket([]byte(bucket))
		if b == nil {
			return fmt.Errorf("no bucket %s", bucket)
		}
		root = uint64(b.RootPage())
		return nil
	})
	if err != nil || root == 0 {
		t.Fatalf("root page of bucket %s: %d, %v", bucket, root, err)
	}
	size := db.Info().PageSize
	return int64(root) * int64(size), size
}

// overwrite writes data at off in the file at path.
func overwrite(t *testing.T, path string, off int64, data []byte) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteAt(data, off); err != nil {
		t.Fatal(err)
	}
}

// TestBoltCorruptPages damages the pages of a closed database in several
// ways, reopens it and reads everything: no call panics, the damage is
// reported as an error wrapping ErrDatabaseCorrupt that names the file (or
// as a history that does not verify), and what the damage did not touch
// still reads.
func TestBoltCorruptPages(t *testing.T) {
	const n = 40 // enough for the heads not to be inlined in their bucket
	tests := []struct {
		name string
		// damage damages the database at path and returns the execution
		// whose records it damaged ("" when it damaged structure).
		damage func(t *testing.T, path string) string
		// atOpen is set when OpenBolt must fail.
		atOpen bool
		// tampered is set when the damaged execution's history must fail
		// to verify (its records are damaged, not its head).
		tampered bool
	}{
		{"the middle third of the file", func(t *testing.T, path string) string {
			info, err := os.Stat(path)
			if err != nil {
				t.Fatal(err)
			}
			overwrite(t, path, info.Size()/3, bytes.Repeat([]byte{0xa5}, int(info.Size()/3)))
			return ""
		}, true, false},
		{"a branch page's header", func(t *testing.T, path string) string {
			off, _ := rootPage(t, path, "events")
			overwrite(t, path, off, bytes.Repeat([]byte{0xff}, 16))
			return ""
		}, true, false},
		{"a leaf page's elements", func(t *testing.T, path string) string {
			off, _ := rootPage(t, path, "scopes")
			overwrite(t, path, off+16, bytes.Repeat([]byte{0xff}, 64))
			return ""
		}, true, false},
		{"a value longer than the file", func(t *testing.T, path string) string {
			// The first element of the heads leaf: its value size
			// (little-endian, after flags, position and key size).
			off, _ := rootPage(t, path, "heads")
			overwrite(t, path, off+16+12, binary.LittleEndian.AppendUint32(nil, 64<<20))
			return "f0"
		}, false, false},
		{"bytes inside a history record", func(t *testing.T, path string) string {
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			// Every copy of the record, as freed pages may hold old ones.
			marker := []byte("marker-f7-2")
			found := 0
			for i := 0; ; found++ {
				j := bytes.Index(data[i:], marker)
				if j < 0 {
					break
				}
				overwrite(t, path, int64(i+j), []byte("\x00\x01garbage"))
				i += j + len(marker)
			}
			if found == 0 {
				t.Fatalf("marker %s is not in the file", marker)
			}
			return "f7"
		}, false, true},
	}
	// The database is filled once (240 synced commits) and each case
	// damages a copy of the file.
	filled := filepath.Join(t.TempDir(), "filled.db")
	ids := fillBolt(t, filled, n)
	pristine, err := os.ReadFile(filled)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "aslrun.db")
			if err := os.WriteFile(path, pristine, 0o600); err != nil {
				t.Fatal(err)
			}
			damaged := tt.damage(t, path)

			// corrupt checks an error that reports the damage.
			corrupt := func(call string, err error) {
				t.Helper()
				t.Logf("%s: %v", call, err)
				var de *store.DatabaseError
				if !errors.Is(err, store.ErrDatabaseCorrupt) {
					t.Errorf("%s = %v, want ErrDatabaseCorrupt", call, err)
				} else if !errors.As(err, &de) || de.Path != path || !de.Corrupt {
					t.Errorf("%s = %v, want a corrupt *DatabaseError naming %s", call, err, path)
				}
			}
			b, err := store.OpenBolt(path, store.BoltOptions{})
			if tt.atOpen {
				if err == nil {
					b.Close()
				}
				corrupt("OpenBolt", err)
				return
			}
			if err != nil {
				t.Fatalf("OpenBolt = %v, want the damaged database open", err)
			}
			defer b.Close()
			ctx := t.Context()
			if _, err := b.List(ctx, store.ListOptions{}); err != nil && damaged == "" {
				t.Errorf("List = %v", err)
			}
			b.Due(ctx, time.Now())
			b.Unfinished(ctx)
			for _, id := range ids {
				e, loadErr := b.Load(ctx, id)
				_, histErr := b.History(ctx, id)
				verifyErr := b.VerifyHistory(ctx, id)
				_, cpErr := b.Checkpoint(ctx, id, "cp")
				switch {
				case id != damaged:
					for call, err := range map[string]error{"Load": loadErr, "History": histErr, "VerifyHistory": verifyErr, "Checkpoint": cpErr} {
						if err != nil {
							t.Errorf("%s(%s), an execution the damage did not touch = %v", call, id, err)
						}
					}
					if e != nil && e.Seq != 5 {
						t.Errorf("Load(%s).Seq = %d, want 5", id, e.Seq)
					}
				case tt.tampered:
					if loadErr != nil {
						t.Errorf("Load(%s) = %v, want its head intact", id, loadErr)
					}
					if !errors.Is(verifyErr, store.ErrTampered) {
						t.Errorf("VerifyHistory(%s) = %v, want ErrTampered", id, verifyErr)
					}
				default:
					corrupt(fmt.Sprintf("Load(%s)", id), loadErr)
					corrupt(fmt.Sprintf("History(%s)", id), histErr)
				}
			}
			// Writing to the damaged file fails cleanly or works; a commit
			// to an execution whose head is damaged fails.
			err = b.Commit(ctx, &engine.Commit{Execution: damaged, Seq: 6, Status: engine.StatusRunning})
			if damaged != "" && !tt.tampered {
				corrupt(fmt.Sprintf("Commit(%s)", damaged), err)
			}
			b.GC(ctx, time.Now())
		})
	}
}

// diskEnv names the database a TestBoltDiskFullChild process writes to.
const diskEnv = "ASLRUN_STORE_DISK_FULL_DB"

// TestBoltDiskFull runs a child process whose files may not grow beyond
// 1 MiB (RLIMIT_FSIZE): it commits until a commit fails, lifts the limit
// (the disk has room again) and commits some more. Every commit that
// returned nil must be in the database, with histories that verify, and
// the failed commit must have said which database it could not write.
func TestBoltDiskFull(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a child process")
	}
	path := filepath.Join(t.TempDir(), "aslrun.db")
	cmd := exec.Command(os.Args[0], "-test.run=^TestBoltDiskFullChild$", "-test.v")
	cmd.Env = append(os.Environ(), diskEnv+"="+path)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	acked := make(map[string]int64)
	var failures []string
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		line := sc.Text()
		var id string
		var seq int64
		switch {
		case strings.HasPrefix(line, "ack "):
			if _, err := fmt.Sscanf(line, "ack %s %d", &id, &seq); err != nil {
				t.Fatalf("child said %q", line)
			}
			acked[id] = max(acked[id], seq)
		case strings.HasPrefix(line, "fail "):
			failures = append(failures, line)
		}
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("child: %v", err)
	}
	if len(failures) == 0 {
		t.Fatalf("no commit of the child failed (%d acknowledged)", len(acked))
	}
	for _, f := range failures {
		// "fail ID SEQ PATH ERROR": PATH is the *DatabaseError's.
		var id, named string
		var seq int64
		if _, err := fmt.Sscanf(f, "fail %s %d %s", &id, &seq, &named); err != nil || named != path {
			t.Errorf("child: %s, want a *DatabaseError naming database %s", f, path)
		}
	}

	b := openBolt(t, path)
	for id, seq := range acked {
		e, err := b.Load(t.Context(), id)
		if err != nil {
			t.Fatalf("Load(%s) = %v", id, err)
		}
		if e.Seq != seq {
			t.Errorf("execution %s has Seq %d, want %d (the last acknowledged commit)", id, e.Seq, seq)
		}
		if err := b.VerifyHistory(t.Context(), id); err != nil {
			t.Errorf("VerifyHistory(%s) = %v", id, err)
		}
		if h, err := b.History(t.Context(), id); err != nil || int64(len(h)) != 2*seq {
			t.Errorf("History(%s) has %d events (%v), want %d", id, len(h), err, 2*seq)
		}
	}
}

// TestBoltDiskFullChild is the child process of TestBoltDiskFull: it
// commits to 8 executions from 8 goroutines with its file size limited,
// printing "ack ID SEQ" for each commit that returned nil and "fail ID
// SEQ PATH ERROR" for each that failed (PATH: the database its
// *DatabaseError names, "-" without one), until every goroutine saw a failure;
// then it lifts the limit and commits 5 more times to each.
func TestBoltDiskFullChild(t *testing.T) {
	path := os.Getenv(diskEnv)
	if path == "" {
		t.Skip("run by TestBoltDiskFull")
	}
	// Without this, writing beyond the limit kills the process (SIGXFSZ);
	// ignored, the write fails with EFBIG.
	signal.Ignore(syscall.SIGXFSZ)
	var limit syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_FSIZE, &limit); err != nil {
		t.Fatal(err)
	}
	small := limit
	small.Cur = 1 << 20
	if err := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &small); err != nil {
		t.Fatal(err)
	}
	b, err := store.OpenBolt(path, store.BoltOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	ctx := t.Context()
	d := faultDoc(t, "disk full")
	commit := func(id string, seq int64) error {
		err := b.Commit(ctx, &engine.Commit{
			Execution: id, Seq: seq, Status: engine.StatusRunning,
			Scopes: map[string]*engine.Scope{"": {Next: "S", Doc: d}},
			Events: []engine.Event{
				{ID: 2*seq - 1, Type: "TaskStateExited", Timestamp: time.Now(), Output: d, Document: d},
				{ID: 2 * seq, Type: "TaskStateEntered", Timestamp: time.Now(), Input: d, Document: d},
			},
		})
		if err != nil {
			named := "-"
			if de := (*store.DatabaseError)(nil); errors.As(err, &de) {
				named = de.Path
			}
			fmt.Printf("fail %s %d %s %v\n", id, seq, named, err)
			return err
		}
		fmt.Printf("ack %s %d\n", id, seq)
		return nil
	}
	ids := make([]string, 8)
	next := make([]int64, len(ids)) // the next Seq of each execution
	for i := range ids {
		ids[i] = fmt.Sprintf("d%d", i)
		if err := b.Create(ctx, &engine.Execution{ID: ids[i]}); err != nil {
			t.Fatal(err)
		}
		next[i] = 1
	}
	done := make(chan struct{})
	for i, id := range ids {
		go func() {
			defer func() { done <- struct{}{} }()
			for ; next[i] < 100000; next[i]++ {
				if commit(id, next[i]) != nil {
					return
				}
			}
		}()
	}
	for range ids {
		<-done
	}
	if err := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &limit); err != nil {
		t.Fatal(err)
	}
	// The failed commits are made again, and more after them.
	for i, id := range ids {
		for seq := next[i]; seq < next[i]+5; seq++ {
			if err := commit(id, seq); err != nil {
				t.Fatalf("commit after the limit was lifted: %v", err)
			}
		}
	}
}
