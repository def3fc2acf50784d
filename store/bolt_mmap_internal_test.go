package store

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"go.etcd.io/bbolt"
)

// TestWriteDoesNotWaitForReaders: a database growing by megabytes while a
// read transaction is open commits at once. (bbolt maps the file anew when
// it outgrows its map, and a new map waits for every open read; new reads
// then wait behind it. Bolt maps initialMmap of address space from the
// start, so a growing database is not mapped anew.)
func TestWriteDoesNotWaitForReaders(t *testing.T) {
	b, err := OpenBolt(filepath.Join(t.TempDir(), "grow.db"), BoltOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	reading := make(chan struct{})
	release := make(chan struct{})
	readDone := make(chan error, 1)
	go func() {
		readDone <- b.db.View(func(*bbolt.Tx) error {
			close(reading)
			<-release
			return nil
		})
	}()
	<-reading
	// 64 MiB in 16 commits: far past any map a fresh database starts with.
	committed := make(chan error, 1)
	go func() {
		value := make([]byte, 4<<20)
		for i := range 16 {
			value[0] = byte(i)
			err := b.write(context.Background(), func(x *tx) error {
				return x.definitions.Put([]byte{'g', byte(i)}, value)
			})
			if err != nil {
				committed <- err
				return
			}
		}
		committed <- nil
	}()
	// Without the large first map the writes wait for the reader, which
	// lets go after a minute only to end the test.
	select {
	case err := <-committed:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(time.Minute):
		close(release)
		<-readDone
		t.Fatal("the writes waited for the open read transaction")
	}
	close(release)
	if err := <-readDone; err != nil {
		t.Fatal(err)
	}
}
