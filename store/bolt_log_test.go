package store_test

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/aslrun/aslrun/store"
	"github.com/aslrun/aslrun/store/storetest"
)

// openLogged opens a Bolt with the log on, closed at the end of the test.
func openLogged(t *testing.T, path string) *store.Bolt {
	t.Helper()
	b, err := store.OpenBolt(path, store.BoltOptions{Log: true})
	if err != nil {
		t.Fatalf("OpenBolt(%s, Log) = %v", path, err)
	}
	t.Cleanup(func() {
		if err := b.Close(); err != nil {
			t.Errorf("Close = %v", err)
		}
	})
	return b
}

// TestBoltLogRecovery runs the acceptance suite on a Bolt with the log on
// and a checkpoint every 16 records (and those the store makes for writes
// the log does not hold), then ends each store as a crash would and checks
// that opening it again gives the same database, key for key. "crash" leaves the file as
// the process left it (everything it wrote reached the file); "power"
// makes each page of the file either as it was at the last checkpoint or
// as the process left it, at random (a power loss: any part of what was
// written since the last sync may be lost), which only recovers if no
// page the checkpoint's state reaches was written since. "crash" runs
// with ASLRUN_LONG=1 only: every page as the process left it is one of
// the files "power" may make, and TestBoltLogSurvivesKill kills a real
// process.
func TestBoltLogRecovery(t *testing.T) {
	for _, mode := range []string{"crash", "power"} {
		t.Run(mode, func(t *testing.T) {
			if mode == "crash" && os.Getenv("ASLRUN_LONG") != "1" {
				t.Skip("ASLRUN_LONG=1 runs it")
			}
			var replayed atomic.Int64
			storetest.Run(t, func(t *testing.T) store.Store {
				path := filepath.Join(t.TempDir(), "aslrun.db")
				var snap []byte // the file at the last checkpoint
				b, err := store.OpenBolt(path, store.LogOptions(16, func() {
					data, err := os.ReadFile(path)
					if err != nil {
						t.Error(err)
					}
					snap = data
				}))
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() {
					want, err := store.DumpBolt(b)
					if !store.AbandonBolt(b) {
						return // the test closed it
					}
					if err != nil {
						t.Fatal(err)
					}
					if mode == "power" {
						powerLoss(t, path, snap)
					}
					b2, err := store.OpenBolt(path, store.BoltOptions{Log: true})
					if err != nil {
						t.Fatalf("OpenBolt after the crash = %v", err)
					}
					defer b2.Close()
					replayed.Add(int64(b2.LogReport().Replayed))
					got, err := store.DumpBolt(b2)
					if err != nil {
						t.Fatal(err)
					}
					diffDumps(t, got, want)
				})
				return store.TamperBolt{Bolt: b}
			})
			if replayed.Load() == 0 {
				t.Errorf("no log record was replayed in any test")
			}
		})
	}
}

// powerLoss makes each 16 KiB page of the file at path either the page of
// snap or the page as it is, at random.
func powerLoss(t *testing.T, path string, snap []byte) {
	t.Helper()
	cur, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	const page = 16 << 10
	r := rand.New(rand.NewPCG(uint64(len(cur)), uint64(len(snap))))
	for off := 0; off < len(snap) && off < len(cur); off += page {
		if r.IntN(2) == 0 {
			copy(cur[off:min(off+page, len(cur))], snap[off:min(off+page, len(snap))])
		}
	}
	if err := os.WriteFile(path, cur, 0o600); err != nil {
		t.Fatal(err)
	}
}

// diffDumps reports the keys whose values differ between two DumpBolt.
func diffDumps(t *testing.T, got, want map[string]string) {
	t.Helper()
	n := 0
	for k, w := range want {
		if g, ok := got[k]; !ok || g != w {
			if n++; n <= 5 {
				t.Errorf("after recovery %q = %q (present %v), want %q", k, trunc(g), ok, trunc(w))
			}
		}
	}
	for k, g := range got {
		if _, ok := want[k]; !ok {
			if n++; n <= 5 {
				t.Errorf("after recovery %q = %q, want no such key", k, trunc(g))
			}
		}
	}
	if n > 5 {
		t.Errorf("… %d differences in all", n)
	}
}

func trunc(s string) string {
	if len(s) > 40 {
		return fmt.Sprintf("%.40q…", s)
	}
	return s
}
