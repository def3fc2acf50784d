package postgres

import (
	"bytes"
	"context"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/aslrun/aslrun/engine"
	"github.com/aslrun/aslrun/store"
)

// TestRecordCodec: pack gives a Zstandard frame that unpack turns back
// into the record; a record as the store encodes it (format byte 1 or 2)
// unpacks as it is; a frame cut short is ErrTampered.
func TestRecordCodec(t *testing.T) {
	var c recordCodec
	rec := append([]byte{2}, bytes.Repeat([]byte("TaskStateEntered"), 64)...)
	packed, err := c.pack("e", rec)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(packed, zstdMagic) || len(packed) >= len(rec) {
		t.Fatalf("pack of %d bytes = %d bytes starting %x, want a smaller Zstandard frame", len(rec), len(packed), packed[:4])
	}
	tests := []struct {
		name    string
		stored  []byte
		want    []byte
		tampers bool
	}{
		{"packed", packed, rec, false},
		{"format 2, stored before migration 13", rec, rec, false},
		{"format 1", []byte{1, 0, 0}, []byte{1, 0, 0}, false},
		{"frame cut short", packed[:len(packed)/2], nil, true},
		{"magic alone", zstdMagic, nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := c.unpack("e", tt.stored)
			if tt.tampers {
				if !errors.Is(err, store.ErrTampered) {
					t.Errorf("unpack = %d bytes, %v; want ErrTampered", len(got), err)
				}
				return
			}
			if err != nil || !bytes.Equal(got, tt.want) {
				t.Errorf("unpack = %d bytes, %v; want the %d bytes given", len(got), err, len(tt.want))
			}
		})
	}
	if got, err := c.pack("e", nil); got != nil || err != nil {
		t.Errorf("pack(nil) = %x, %v; want nil, nil", got, err)
	}
	// A record that compression would not make smaller is stored as it is.
	small := []byte{2, 0, 1, 9, 7}
	if got, err := c.pack("e", small); err != nil || !bytes.Equal(got, small) {
		t.Errorf("pack(%x) = %x, %v; want it as it is", small, got, err)
	}
}

// TestRecordsStoredBefore: an execution whose history records were stored
// as the store encodes them (before migration 13) reads back the same,
// verifies, and takes more commits, whose records are compressed.
func TestRecordsStoredBefore(t *testing.T) {
	ctx := context.Background()
	db := openTest(t, Options{})
	if err := db.Create(ctx, &engine.Execution{ID: "e", MachineName: "m", StartedAt: time.Unix(1_700_000_000, 0), Input: map[string]any{}}); err != nil {
		t.Fatal(err)
	}
	for seq := int64(1); seq <= 2; seq++ {
		if err := db.Commit(ctx, benchStoreCommit("e", seq)); err != nil {
			t.Fatal(err)
		}
	}
	want, err := db.History(ctx, "e")
	if err != nil {
		t.Fatal(err)
	}
	rows, err := db.pool.Query(ctx, `SELECT first_event, body FROM history_records WHERE execution = 'e'`)
	if err != nil {
		t.Fatal(err)
	}
	raw := map[int64][]byte{}
	for rows.Next() {
		var first int64
		var body []byte
		if err := rows.Scan(&first, &body); err != nil {
			t.Fatal(err)
		}
		if !bytes.HasPrefix(body, zstdMagic) {
			t.Fatalf("record at event %d stored uncompressed", first)
		}
		if raw[first], err = db.hist.unpack("e", body); err != nil {
			t.Fatal(err)
		}
	}
	if err := rows.Err(); err != nil || len(raw) != 2 {
		t.Fatalf("%d records, %v; want 2", len(raw), err)
	}
	for first, body := range raw {
		if _, err := db.pool.Exec(ctx, `UPDATE history_records SET body = $2 WHERE execution = 'e' AND first_event = $1`, first, body); err != nil {
			t.Fatal(err)
		}
	}
	if got, err := db.History(ctx, "e"); err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("History of the records stored uncompressed = %d events, %v; want the %d events read before", len(got), err, len(want))
	}
	if page, total, err := db.HistoryRange(ctx, "e", 2, 2); err != nil || total != 6 || !reflect.DeepEqual(page, want[2:4]) {
		t.Errorf("HistoryRange(e, 2, 2) = %d events of %d, %v; want events 3 and 4 of 6", len(page), total, err)
	}
	if err := db.Commit(ctx, benchStoreCommit("e", 3)); err != nil {
		t.Fatal(err)
	}
	if err := db.VerifyHistory(ctx, "e"); err != nil {
		t.Errorf("VerifyHistory after a commit on records stored uncompressed = %v", err)
	}
	if got, err := db.History(ctx, "e"); err != nil || len(got) != 9 {
		t.Errorf("History after the third commit = %d events, %v; want 9", len(got), err)
	}
}
