package store

import (
	"bytes"
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"strconv"
	"testing"
	"time"

	"go.etcd.io/bbolt"

	"github.com/aslrun/aslrun/engine"
)

// v1Values returns an execution's history as format 1 event values (JSON
// bodies holding their documents), hashes and flags as stored.
func v1Values(x *tx, id string, h *headRecord) ([][]byte, error) {
	records, err := x.historyRecords(id, h)
	if err != nil {
		return nil, err
	}
	events, err := readHistory(id, records)
	if err != nil {
		return nil, err
	}
	var checkpoints []string
	for _, r := range records {
		for _, v := range r.events {
			rec, err := parseEvent(v)
			if err != nil {
				return nil, err
			}
			checkpoints = append(checkpoints, rec.Checkpoint)
		}
	}
	values := make([][]byte, len(events))
	for i, e := range events {
		if values[i], err = storedEventV1(e, checkpoints[i]); err != nil {
			return nil, err
		}
	}
	return values, nil
}

// toFormat6 rewrites a database of the current format as format 6 kept
// it: every history record as one of format 1 (whose events hold their
// documents), every head as sealed JSON, and the format
// version 6.
func toFormat6(t *bbolt.Tx) error {
	x, err := bucketsOf(t)
	if err != nil {
		return err
	}
	ids, err := keysOf(x.heads)
	if err != nil {
		return err
	}
	for _, id := range ids {
		h, err := decodeSealedHead(id, x.heads.Get([]byte(id)))
		if err != nil {
			return err
		}
		values, err := v1Values(x, id, h)
		if err != nil {
			return err
		}
		records, err := x.historyRecords(id, h)
		if err != nil {
			return err
		}
		// Each record keeps its key, so that the checkpoints stay bound.
		for _, r := range records {
			n := len(r.events)
			rec := encodeHistoryRecord(id, r.prev, r.first, values[:n])
			values = values[n:]
			if err := x.events.Put(recordKey(r.key), rec); err != nil {
				return err
			}
		}
		if err := x.heads.Put([]byte(id), encodeSealedHeadV6(id, h)); err != nil {
			return err
		}
	}
	return t.Bucket(bucketMeta).Put(versionKey, []byte("6"))
}

// encodeHeadJSON writes a head as format 6 did, as JSON.
func encodeHeadJSON(h *headRecord) []byte {
	b, err := marshalRecord(h)
	if err != nil {
		panic(err)
	}
	return b
}

// encodeSealedHeadV6 writes the stored value of a head as format 6 did:
// sealed JSON.
func encodeSealedHeadV6(id string, h *headRecord) []byte {
	body := encodeHeadJSON(h)
	v := make([]byte, headSealLen, headSealLen+len(body))
	v[0] = headFormatV6
	sum := headSeal(id, body)
	copy(v[headSealAt:headSealLen], sum[:])
	return append(v, body...)
}

// TestBoltMigratesFormat6 opens a database as format 6 kept it (history
// records of format 1, heads as sealed JSON): it is converted to the
// current format, reads and verifies as it did, an edit of a converted
// head is still found, and new commits append records of the current
// format after the old ones.
func TestBoltMigratesFormat6(t *testing.T) {
	path := filepath.Join(t.TempDir(), "aslrun.db")
	fillTamper(t, path)
	ids := []string{"ended", "failed", "running"}
	b, err := OpenBolt(path, BoltOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	want := make(map[string][]engine.Event)
	for _, id := range ids {
		if want[id], err = b.History(ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	b.Close()
	editBolt(t, path, toFormat6)

	b, err = OpenBolt(path, BoltOptions{})
	if err != nil {
		t.Fatalf("OpenBolt(format 6) = %v", err)
	}
	checkUntouched(t, b)
	for _, id := range ids {
		got, err := b.History(ctx, id)
		if err != nil || !reflect.DeepEqual(got, want[id]) {
			t.Errorf("History(%s) after conversion = %+v, %v, want %+v", id, got, err, want[id])
		}
	}
	doc := tamperDoc(t, `{"again":true}`)
	err = b.Commit(ctx, &engine.Commit{
		Execution: "running", Seq: 3, Status: engine.StatusRunning,
		Events: []engine.Event{{ID: 9, Type: "PassStateEntered", Timestamp: time.Now(), Input: doc, Document: doc}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := b.VerifyHistory(ctx, "running"); err != nil {
		t.Errorf("VerifyHistory(running) after a commit = %v", err)
	}
	if h, err := b.History(ctx, "running"); err != nil || len(h) != len(want["running"])+1 || !reflect.DeepEqual(h[len(h)-1].Input, doc) {
		t.Errorf("History(running) after a commit = %+v, %v", h, err)
	}
	b.Close()

	var version string
	var formats []byte
	editBolt(t, path, func(t *bbolt.Tx) error {
		version = string(t.Bucket(bucketMeta).Get(versionKey))
		formats = append(formats, t.Bucket(bucketHeads).Get([]byte("ended"))[0])
		return editHead("ended", set("status", `"FAILED"`))(t)
	})
	if version != strconv.Itoa(formatVersion) || formats[0] != headFormat {
		t.Errorf("after conversion: format version %s, head format %d; want %d, %d", version, formats[0], formatVersion, headFormat)
	}
	b, err = OpenBolt(path, BoltOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	checkIntegrityError(t, "VerifyHistory(ended) with its converted head edited", b.VerifyHistory(ctx, "ended"), "ended", "", "status")
}

// TestBoltTamperDocument edits the documents of a history record in the
// database file: a document's bytes, and a delta's base. VerifyHistory
// finds both, though every event is as it was.
func TestBoltTamperDocument(t *testing.T) {
	template := filepath.Join(t.TempDir(), "template.db")
	b, err := OpenBolt(template, BoltOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	if err := b.Create(ctx, &engine.Execution{ID: "e"}); err != nil {
		t.Fatal(err)
	}
	l := newStateLoop(t, "e")
	for range 2 {
		if err := b.Commit(ctx, l.next()); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.VerifyHistory(ctx, "e"); err != nil {
		t.Fatalf("VerifyHistory before any edit = %v", err)
	}
	b.Close()

	// editDoc changes the first document of kind of the execution's last
	// history record.
	editDoc := func(kind byte, change func(rec []byte, d storedDoc, at int)) func(t *bbolt.Tx) error {
		return func(t *bbolt.Tx) error {
			h, err := decodeSealedHead("e", t.Bucket(bucketHeads).Get([]byte("e")))
			if err != nil {
				return err
			}
			events := t.Bucket(bucketEvents)
			rec := bytes.Clone(events.Get(recordKey(h.LastRecord)))
			r, err := parseHistoryRecord(rec)
			if err != nil {
				return err
			}
			for _, d := range r.docs {
				if d.kind == kind {
					change(rec, d, bytes.Index(rec, d.data))
					return events.Put(recordKey(h.LastRecord), rec)
				}
			}
			return fmt.Errorf("no document of kind %d", kind)
		}
	}
	tests := []struct {
		name string
		edit func(t *bbolt.Tx) error
	}{
		{"delta changed", editDoc(docDelta, func(rec []byte, d storedDoc, at int) { rec[at+len(d.data)-1] ^= 1 })},
		{"delta base changed", editDoc(docDelta, func(rec []byte, d storedDoc, at int) {
			base := bytes.Index(rec, d.base[:])
			rec[base] ^= 1
		})},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := copyFile(t, template)
			editBolt(t, path, tt.edit)
			b, err := OpenBolt(path, BoltOptions{})
			if err != nil {
				t.Fatal(err)
			}
			defer b.Close()
			err = b.VerifyHistory(t.Context(), "e")
			if !errors.Is(err, ErrTampered) {
				t.Errorf("VerifyHistory = %v, want ErrTampered", err)
			}
			t.Log(err)
		})
	}
}
