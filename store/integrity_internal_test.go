package store

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"go.etcd.io/bbolt"

	"github.com/aslrun/aslrun/engine"
	"github.com/aslrun/aslrun/jsonvalue"
)

// toFormat4 rewrites the heads and checkpoints of a database as format 4
// and older kept them: bare JSON, without seal or binding.
func toFormat4(t *bbolt.Tx) error {
	if err := toFormat6(t); err != nil {
		return err
	}
	for _, name := range [][]byte{bucketHeads, bucketCheckpoints} {
		bkt := t.Bucket(name)
		var keys, values [][]byte
		if err := bkt.ForEach(func(k, v []byte) error {
			keys, values = append(keys, bytes.Clone(k)), append(values, bytes.Clone(v))
			return nil
		}); err != nil {
			return err
		}
		for i, k := range keys {
			old := values[i][checkpointPrefixLen:]
			if name[0] == bucketHeads[0] {
				h, err := decodeSealedHead(string(k), values[i])
				if err != nil {
					return err
				}
				h.Unbound = nil
				old = encodeHeadJSON(h)
			}
			if err := bkt.Put(k, old); err != nil {
				return err
			}
		}
	}
	return nil
}

// tamperDoc decodes a document.
func tamperDoc(t *testing.T, s string) any {
	t.Helper()
	v, err := jsonvalue.Decode([]byte(s))
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// fillTamper writes a database at path with three executions: "ended"
// (SUCCEEDED, with checkpoint "cp" saved by a CheckpointSaved event),
// "failed" (FAILED) and "running" (RUNNING, with checkpoint "free"
// committed without any event, which the head binds).
func fillTamper(t *testing.T, path string) {
	t.Helper()
	b, err := OpenBolt(path, BoltOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	ctx := t.Context()
	ts := time.Date(2025, 3, 14, 9, 0, 0, 0, time.UTC)
	in, out := tamperDoc(t, `{"n":1}`), tamperDoc(t, `{"n":2,"f":0.10}`)
	for _, id := range []string{"ended", "failed", "running"} {
		if err := b.Create(ctx, &engine.Execution{ID: id, Input: in, StartedAt: ts}); err != nil {
			t.Fatal(err)
		}
		err := b.Commit(ctx, &engine.Commit{
			Execution: id, Seq: 1, Status: engine.StatusRunning, LastEvent: 2, LastOwnEvent: 1,
			Scopes: map[string]*engine.Scope{"": {Next: "Work", Doc: out}},
			Events: []engine.Event{
				{ID: 1, Type: engine.EventExecutionStarted, Timestamp: ts, Input: in, Document: in},
				{ID: 2, Type: "CheckpointStateEntered", State: "Save", Timestamp: ts, Input: in, Document: in},
				{Own: 1, Type: engine.EventCheckpointSaved, State: "Save", Timestamp: ts, Document: out, Detail: map[string]any{"name": "cp"}},
			},
			Checkpoint: &engine.Checkpoint{
				Name: "cp", State: "Save", Next: "Work", Document: out, CreatedAt: ts,
				Context: tamperDoc(t, `{"State":{"Name":"Save"}}`),
			},
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	ends := map[string]*engine.Commit{
		"ended": {Status: engine.StatusSucceeded, Output: out, Events: []engine.Event{
			{ID: 3, Type: engine.EventExecutionSucceeded, Timestamp: ts, Output: out, Document: out},
		}},
		"failed": {Status: engine.StatusFailed, Error: "Boom", Cause: "it broke", Events: []engine.Event{
			{ID: 3, Type: engine.EventExecutionFailed, Timestamp: ts, Error: "Boom", Cause: "it broke", Document: out},
		}},
		"running": {Status: engine.StatusRunning, Checkpoint: &engine.Checkpoint{
			Name: "free", State: "Save", Next: "Work", Document: in, CreatedAt: ts,
			Context: tamperDoc(t, `{"State":{"Name":"Free"}}`),
		}},
	}
	for id, c := range ends {
		c.Execution, c.Seq, c.StoppedAt = id, 2, ts
		if err := b.Commit(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
}

// editBolt changes the database at path with bbolt itself.
func editBolt(t *testing.T, path string, change func(t *bbolt.Tx) error) {
	t.Helper()
	db, err := bbolt.Open(path, 0o600, &bbolt.Options{Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.Update(change); err != nil {
		t.Fatal(err)
	}
}

// editJSON changes the JSON fields of the stored value of key in bucket,
// after its prefix of skip bytes, as someone editing the file would:
// nothing else of the value changes.
func editJSON(bucket string, key []byte, skip int, change func(f map[string]json.RawMessage)) func(t *bbolt.Tx) error {
	return func(t *bbolt.Tx) error {
		bkt := t.Bucket([]byte(bucket))
		v := bkt.Get(key)
		if len(v) < skip {
			return fmt.Errorf("bucket %s: no value %q", bucket, key)
		}
		var f map[string]json.RawMessage
		if err := json.Unmarshal(v[skip:], &f); err != nil {
			return err
		}
		change(f)
		body, err := json.Marshal(f)
		if err != nil {
			return err
		}
		return bkt.Put(key, append(bytes.Clone(v[:skip]), body...))
	}
}

// editHead changes fields of an execution's head, named as in its JSON
// form, keeping its seal: nothing else of the stored value changes.
func editHead(id string, change func(f map[string]json.RawMessage)) func(t *bbolt.Tx) error {
	return func(t *bbolt.Tx) error {
		heads := t.Bucket(bucketHeads)
		v := heads.Get([]byte(id))
		if len(v) < headSealLen {
			return fmt.Errorf("no head %q", id)
		}
		h, err := decodeHead(id, v[headSealLen:])
		if err != nil {
			return err
		}
		var f map[string]json.RawMessage
		if err := json.Unmarshal(encodeHeadJSON(h), &f); err != nil {
			return err
		}
		change(f)
		body, err := json.Marshal(f)
		if err != nil {
			return err
		}
		var edited headRecord
		if err := json.Unmarshal(body, &edited); err != nil {
			return err
		}
		return heads.Put([]byte(id), appendHead(bytes.Clone(v[:headSealLen]), &edited))
	}
}

// editCheckpoint changes fields of a checkpoint's record, keeping its
// binding.
func editCheckpoint(id, name string, change func(f map[string]json.RawMessage)) func(t *bbolt.Tx) error {
	return editJSON("checkpoints", idKey(id, name), checkpointPrefixLen, change)
}

// set returns a change that sets field k to the JSON v.
func set(k, v string) func(f map[string]json.RawMessage) {
	return func(f map[string]json.RawMessage) { f[k] = json.RawMessage(v) }
}

// checkIntegrityError checks that err is an *IntegrityError about
// execution id's checkpoint cp ("" for its head) naming field.
func checkIntegrityError(t *testing.T, call string, err error, id, cp, field string) {
	t.Helper()
	var ie *IntegrityError
	switch {
	case !errors.As(err, &ie):
		t.Errorf("%s = %v, want an *IntegrityError", call, err)
	case !errors.Is(err, ErrTampered):
		t.Errorf("%s = %v, does not match ErrTampered", call, err)
	case ie.Execution != id || ie.Checkpoint != cp || ie.Field != field:
		t.Errorf("%s = %v: execution %q, checkpoint %q, field %q, want %q, %q, %q", call, err, ie.Execution, ie.Checkpoint, ie.Field, id, cp, field)
	}
}

// copyFile copies the file at src to a new file in a temporary directory.
func copyFile(t *testing.T, src string) string {
	t.Helper()
	data, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(t.TempDir(), "aslrun.db")
	if err := os.WriteFile(dst, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return dst
}

// TestBoltTamper edits heads and checkpoint records in the database file
// and checks that the loads that trust them and VerifyHistory name what
// was edited, while an untouched database verifies.
func TestBoltTamper(t *testing.T) {
	template := filepath.Join(t.TempDir(), "template.db")
	fillTamper(t, template)

	resealHead := func(id string) func(t *bbolt.Tx) error {
		return func(t *bbolt.Tx) error {
			heads := t.Bucket(bucketHeads)
			v := bytes.Clone(heads.Get([]byte(id)))
			sum := headSeal(id, v[headSealLen:])
			copy(v[headSealAt:], sum[:])
			return heads.Put([]byte(id), v)
		}
	}
	tests := []struct {
		name      string
		edits     []func(t *bbolt.Tx) error
		id, cp    string
		field     string
		wantLoads bool // Load and List fail (a head edit)
	}{
		{"head status", []func(*bbolt.Tx) error{editHead("ended", set("status", `"FAILED"`))}, "ended", "", "status", true},
		{"head status, seal recomputed", []func(*bbolt.Tx) error{editHead("ended", set("status", `"FAILED"`)), resealHead("ended")}, "ended", "", "status", true},
		{"head output", []func(*bbolt.Tx) error{editHead("ended", set("output", `{"n":3,"f":0.10}`))}, "ended", "", "output", true},
		{"head output, seal recomputed", []func(*bbolt.Tx) error{editHead("ended", set("output", `{"n":3}`)), resealHead("ended")}, "ended", "", "output", true},
		{"head error", []func(*bbolt.Tx) error{editHead("failed", set("error", `"Fine"`))}, "failed", "", "error", true},
		{"head cause", []func(*bbolt.Tx) error{editHead("failed", set("cause", `"nothing"`)), resealHead("failed")}, "failed", "", "cause", true},
		{"head lastHash", []func(*bbolt.Tx) error{editHead("ended", set("lastHash", strconv.Quote(fmt.Sprintf("%064x", 7))))}, "ended", "", "lastHash", true},
		{"head events", []func(*bbolt.Tx) error{editHead("ended", set("events", `2`)), resealHead("ended")}, "ended", "", "events", true},
		{"running head status", []func(*bbolt.Tx) error{editHead("running", set("status", `"ABORTED"`))}, "running", "", "seal", true},
		{"running head counters", []func(*bbolt.Tx) error{editHead("running", set("seq", `9`))}, "running", "", "seal", true},
		{"checkpoint docHash", []func(*bbolt.Tx) error{editCheckpoint("ended", "cp", set("docHash", strconv.Quote(fmt.Sprintf("%064x", 1))))}, "ended", "cp", "docHash", false},
		{"checkpoint context", []func(*bbolt.Tx) error{editCheckpoint("ended", "cp", set("context", `{"State":{"Name":"Forged"}}`))}, "ended", "cp", "record", false},
		{"checkpoint next state", []func(*bbolt.Tx) error{editCheckpoint("failed", "cp", set("next", `"Elsewhere"`))}, "failed", "cp", "record", false},
		{"checkpoint unbound", []func(*bbolt.Tx) error{func(t *bbolt.Tx) error {
			cps := t.Bucket(bucketCheckpoints)
			v := bytes.Clone(cps.Get(idKey("ended", "cp")))
			clear(v[checkpointKeyAt:checkpointPrefixLen])
			return cps.Put(idKey("ended", "cp"), v)
		}}, "ended", "cp", "record", false},
		{"checkpoint bound to the head", []func(*bbolt.Tx) error{editCheckpoint("running", "free", set("context", `{}`))}, "running", "free", "record", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := copyFile(t, template)
			for _, edit := range tt.edits {
				editBolt(t, path, edit)
			}
			b, err := OpenBolt(path, BoltOptions{})
			if err != nil {
				t.Fatal(err)
			}
			defer b.Close()
			ctx := t.Context()
			checkIntegrityError(t, "VerifyHistory", b.VerifyHistory(ctx, tt.id), tt.id, tt.cp, tt.field)
			_, loadErr := b.Load(ctx, tt.id)
			_, listErr := b.List(ctx, ListOptions{})
			if tt.wantLoads {
				checkIntegrityError(t, "Load", loadErr, tt.id, tt.cp, tt.field)
				checkIntegrityError(t, "List", listErr, tt.id, tt.cp, tt.field)
				return
			}
			if loadErr != nil || listErr != nil {
				t.Errorf("Load, List = %v, %v, want the head trusted", loadErr, listErr)
			}
			_, err = b.Checkpoint(ctx, tt.id, tt.cp)
			checkIntegrityError(t, "Checkpoint", err, tt.id, tt.cp, tt.field)
			_, err = b.ListCheckpoints(ctx, tt.id)
			checkIntegrityError(t, "ListCheckpoints", err, tt.id, tt.cp, tt.field)
		})
	}

	t.Run("untouched", func(t *testing.T) {
		b, err := OpenBolt(copyFile(t, template), BoltOptions{})
		if err != nil {
			t.Fatal(err)
		}
		defer b.Close()
		checkUntouched(t, b)
	})
}

// checkUntouched checks that the executions fillTamper wrote verify and
// load.
func checkUntouched(t *testing.T, b *Bolt) {
	t.Helper()
	ctx := t.Context()
	for id, cp := range map[string]string{"ended": "cp", "failed": "cp", "running": "free"} {
		if err := b.VerifyHistory(ctx, id); err != nil {
			t.Errorf("VerifyHistory(%s) = %v", id, err)
		}
		if _, err := b.Load(ctx, id); err != nil {
			t.Errorf("Load(%s) = %v", id, err)
		}
		if got, err := b.Checkpoint(ctx, id, cp); err != nil || got.Context == nil {
			t.Errorf("Checkpoint(%s, %s) = %+v, %v", id, cp, got, err)
		}
		if cps, err := b.ListCheckpoints(ctx, id); err != nil || len(cps) == 0 {
			t.Errorf("ListCheckpoints(%s) = %v, %v", id, cps, err)
		}
	}
	if got, err := b.List(ctx, ListOptions{}); err != nil || len(got) != 3 {
		t.Errorf("List = %v, %v, want 3 executions", got, err)
	}
}

// TestBoltMigratesFormat4 opens a database whose heads and checkpoints are
// as format 4 kept them: it is converted, everything verifies and loads,
// the checkpoints are bound to their heads (an edit is found), and new
// commits bind theirs to the history.
func TestBoltMigratesFormat4(t *testing.T) {
	path := filepath.Join(t.TempDir(), "aslrun.db")
	fillTamper(t, path)
	editBolt(t, path, func(t *bbolt.Tx) error {
		if err := toFormat4(t); err != nil {
			return err
		}
		return t.Bucket(bucketMeta).Put(versionKey, []byte("4"))
	})
	b, err := OpenBolt(path, BoltOptions{})
	if err != nil {
		t.Fatalf("OpenBolt(format 4) = %v", err)
	}
	checkUntouched(t, b)
	ctx := t.Context()
	doc := tamperDoc(t, `{"again":true}`)
	err = b.Commit(ctx, &engine.Commit{
		Execution: "running", Seq: 3, Status: engine.StatusRunning,
		Events:     []engine.Event{{Own: 2, Type: engine.EventCheckpointSaved, Timestamp: time.Now(), Document: doc, Detail: map[string]any{"name": "free"}}},
		Checkpoint: &engine.Checkpoint{Name: "free", Document: doc, CreatedAt: time.Now()},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := b.VerifyHistory(ctx, "running"); err != nil {
		t.Errorf("VerifyHistory(running) after a commit = %v", err)
	}
	b.Close()

	var version string
	editBolt(t, path, func(t *bbolt.Tx) error {
		version = string(t.Bucket(bucketMeta).Get(versionKey))
		if v := t.Bucket(bucketCheckpoints).Get(idKey("running", "free")); binaryKeyOf(v) == 0 {
			return fmt.Errorf("checkpoint free, written after the conversion, is not bound to the history")
		}
		return editCheckpoint("ended", "cp", set("context", `{}`))(t)
	})
	if version != strconv.Itoa(formatVersion) {
		t.Errorf("format version after conversion = %s, want %d", version, formatVersion)
	}
	b, err = OpenBolt(path, BoltOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	_, err = b.Checkpoint(ctx, "ended", "cp")
	checkIntegrityError(t, "Checkpoint(ended, cp) edited after the conversion", err, "ended", "cp", "record")
	checkIntegrityError(t, "VerifyHistory(ended)", b.VerifyHistory(ctx, "ended"), "ended", "cp", "record")
}

// binaryKeyOf returns the history record key a stored checkpoint value is
// bound to.
func binaryKeyOf(v []byte) uint64 {
	bd, _, err := splitCheckpointValue("", "", v)
	if err != nil {
		return 0
	}
	return bd.key
}
