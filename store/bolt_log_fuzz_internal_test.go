package store

import (
	"encoding/binary"
	"path/filepath"
	"testing"

	"go.etcd.io/bbolt"
)

// FuzzReplayRecord: whatever bytes a log record that passed its checksum
// holds, replaying it applies them or fails with an error, never a panic,
// and a failed record changes nothing (its transaction is rolled back).
func FuzzReplayRecord(f *testing.F) {
	rec := func(parts ...[]byte) []byte {
		var b []byte
		for _, p := range parts {
			if len(p) == 1 && (p[0] == logPut || p[0] == logDelete || p[0] == logSeq) {
				b = append(b, p[0])
				continue
			}
			b = binary.AppendUvarint(b, uint64(len(p)))
			b = append(b, p...)
		}
		return b
	}
	f.Add(rec([]byte{logPut}, []byte("b"), []byte("k"), []byte("v")))
	f.Add(rec([]byte{logDelete}, []byte("b"), []byte("k")))
	f.Add(append(rec([]byte{logSeq}, []byte("b")), 1, 0, 0, 0, 0, 0, 0, 0))
	f.Add(rec([]byte{logPut}, []byte("missing"), []byte("k"), []byte("v")))
	f.Add([]byte{logPut, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01})
	f.Add([]byte{9})
	db, err := bbolt.Open(filepath.Join(f.TempDir(), "fuzz.db"), 0o600, nil)
	if err != nil {
		f.Fatal(err)
	}
	defer db.Close()
	if err := db.Update(func(t *bbolt.Tx) error { _, err := t.CreateBucket([]byte("b")); return err }); err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var failed bool
		err := db.Update(func(tx *bbolt.Tx) error {
			if err := replayRecord(tx, data); err != nil {
				failed = true
				return err
			}
			return nil
		})
		if failed != (err != nil) {
			t.Fatalf("replay failed %v, transaction error %v", failed, err)
		}
	})
}

// FuzzDecodeLogHeader: any bytes decode to a header or are refused, never
// a panic; a header decodes back to what it encodes.
func FuzzDecodeLogHeader(f *testing.F) {
	f.Add(make([]byte, logHeaderLen))
	f.Add([]byte("aslrun"))
	f.Add((&logHeader{gen: 3, id: [16]byte{1, 2}, txid: 7, pageSize: 16384}).encode())
	f.Fuzz(func(t *testing.T, data []byte) {
		h, ok := decodeLogHeader(data)
		if !ok {
			return
		}
		again, ok := decodeLogHeader(h.encode())
		if !ok || again != h {
			t.Fatalf("header %+v encodes to one that decodes to %+v (%v)", h, again, ok)
		}
	})
}
