package store

import (
	"context"
	"encoding/binary"
	"encoding/hex"
	"time"

	"github.com/aslrun/aslrun/engine"
	"github.com/aslrun/aslrun/jsonvalue"
)

// TamperMemory is a Memory whose histories the acceptance suite may
// rewrite (storetest.Tamperer).
type TamperMemory struct{ *Memory }

// TamperHistory implements storetest.Tamperer.
func (m TamperMemory) TamperHistory(id string, change func([]engine.Event) []engine.Event) error {
	h, err := m.History(context.Background(), id)
	if err != nil {
		return err
	}
	var records [][]byte
	for i, e := range change(h) {
		rec, err := storedRecord1(id, 0, int64(i+1), e)
		if err != nil {
			return err
		}
		records = append(records, rec)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.execs[id].history = records
	return nil
}

// TamperBolt is a Bolt whose histories the acceptance suite may rewrite
// (storetest.Tamperer), by rewriting the history records in the database.
type TamperBolt struct{ *Bolt }

// TamperHistory implements storetest.Tamperer: the changed events replace
// the execution's history records, one record each, through the commit
// loop (which caches heads).
func (b TamperBolt) TamperHistory(id string, change func([]engine.Event) []engine.Event) error {
	events, err := b.History(context.Background(), id)
	if err != nil {
		return err
	}
	events = change(events)
	return b.write(context.Background(), func(x *tx) error {
		h, err := x.headForWrite(id)
		if err != nil {
			return err
		}
		records, err := x.historyRecords(id, h)
		if err != nil {
			return err
		}
		for _, r := range records {
			if err := x.events.Delete(recordKey(r.key)); err != nil {
				return err
			}
		}
		h.LastRecord = 0
		for i, e := range events {
			key, err := x.events.NextSequence()
			if err != nil {
				return err
			}
			rec, err := storedRecord1(id, h.LastRecord, int64(i+1), e)
			if err != nil {
				return err
			}
			if err := x.events.Put(recordKey(key), rec); err != nil {
				return err
			}
			h.LastRecord = key
		}
		return x.putHead(id, h)
	})
}

// storedRecord1 encodes e as a history record of one event, with the
// hashes and flag it carries, recomputing nothing; its input and output
// are stored whole, under their canonical hashes.
func storedRecord1(id string, prev uint64, first int64, e engine.Event) ([]byte, error) {
	r := eventRecord{
		ID: e.ID, Own: e.Own, Type: e.Type, time: e.Timestamp.UTC(),
		State: e.State, Scope: e.Scope, Error: e.Error, Cause: e.Cause, DocHash: e.DocHash,
	}
	var docs []byte
	ndocs := 0
	for _, f := range []struct {
		dst *string
		has *bool
		v   any
	}{{&r.InputHash, &r.hasInput, e.Input}, {&r.OutputHash, &r.hasOutput, e.Output}} {
		if f.v == nil {
			continue
		}
		raw, err := jsonvalue.Marshal(f.v)
		if err != nil {
			return nil, err
		}
		if *f.dst, err = jsonvalue.CanonicalHash(f.v); err != nil {
			return nil, err
		}
		*f.has = true
		var sum [32]byte
		hex.Decode(sum[:], []byte(*f.dst))
		docs = appendBytes(append(append(docs, sum[:]...), docFull), raw)
		ndocs++
	}
	if e.Detail != nil {
		var err error
		if r.Detail, err = jsonvalue.Marshal(e.Detail); err != nil {
			return nil, err
		}
	}
	v := appendEventValue(nil, &r)
	if e.Superseded {
		v[1] = eventSuperseded
	}
	hex.Decode(v[eventHashAt:eventHeaderLen], []byte(e.Hash))
	p := newPreparedHistory(id, []preparedEvent{{value: v}}, docs, ndocs)
	binary.BigEndian.PutUint64(p.record[historyPrevAt:], prev)
	binary.BigEndian.PutUint64(p.record[historyFirstAt:], uint64(first))
	hex.Decode(p.record[p.prevAt:p.prevAt+32], []byte(e.PrevHash))
	return p.record, nil
}

// storedEventV1 encodes e as a stored history event of format 1 (a JSON
// body), with the hashes and flag it carries and the hash of the
// checkpoint record it binds, recomputing nothing.
func storedEventV1(e engine.Event, checkpoint string) ([]byte, error) {
	r := eventRecord{
		ID: e.ID, Own: e.Own, Type: e.Type, Timestamp: e.Timestamp.UTC().Format(time.RFC3339Nano),
		State: e.State, Scope: e.Scope, Error: e.Error, Cause: e.Cause, DocHash: e.DocHash, Checkpoint: checkpoint,
	}
	var err error
	for _, f := range []struct {
		dst *[]byte
		v   any
	}{{(*[]byte)(&r.Input), e.Input}, {(*[]byte)(&r.Output), e.Output}, {(*[]byte)(&r.Detail), e.Detail}} {
		if f.v != nil {
			if *f.dst, err = jsonvalue.Marshal(f.v); err != nil {
				return nil, err
			}
		}
	}
	body, err := marshalRecord(&r)
	if err != nil {
		return nil, err
	}
	v := make([]byte, eventHeaderLenV1, eventHeaderLenV1+len(body))
	v[0] = eventFormatV1
	if e.Superseded {
		v[1] = eventSuperseded
	}
	hex.Decode(v[eventPrevAtV1:eventHashAtV1], []byte(e.PrevHash))
	hex.Decode(v[eventHashAtV1:eventHeaderLenV1], []byte(e.Hash))
	return append(v, body...), nil
}
