package store

import (
	"context"
	"encoding/hex"
	"time"

	"github.com/aslrun/aslrun/engine"
	"github.com/aslrun/aslrun/jsonpath"
)

// TamperMemory is a Memory whose histories the acceptance suite may
// rewrite (storetest.Tamperer).
type TamperMemory struct{ *Memory }

// TamperHistory implements storetest.Tamperer.
func (m TamperMemory) TamperHistory(id string, change func([]engine.Event) []engine.Event) error {
	values, err := tamperedValues(m, id, change)
	if err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.execs[id].history = values
	return nil
}

// TamperBolt is a Bolt whose histories the acceptance suite may rewrite
// (storetest.Tamperer), by rewriting the history records in the database.
type TamperBolt struct{ *Bolt }

// TamperHistory implements storetest.Tamperer: the changed events replace
// the execution's history records, one record each, through the commit
// loop (which caches heads).
func (b TamperBolt) TamperHistory(id string, change func([]engine.Event) []engine.Event) error {
	values, err := tamperedValues(b, id, change)
	if err != nil {
		return err
	}
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
		for i, v := range values {
			key, err := x.events.NextSequence()
			if err != nil {
				return err
			}
			rec := encodeHistoryRecord(id, h.LastRecord, int64(i+1), [][]byte{v})
			if err := x.events.Put(recordKey(key), rec); err != nil {
				return err
			}
			h.LastRecord = key
		}
		return x.putHead(id, h)
	})
}

// tamperedValues returns the stored values of an execution's history after
// change.
func tamperedValues(s Store, id string, change func([]engine.Event) []engine.Event) ([][]byte, error) {
	h, err := s.History(context.Background(), id)
	if err != nil {
		return nil, err
	}
	var values [][]byte
	for _, e := range change(h) {
		v, err := storedEvent(e)
		if err != nil {
			return nil, err
		}
		values = append(values, v)
	}
	return values, nil
}

// storedEvent encodes e as a stored history event with the hashes and flag
// it carries, recomputing nothing.
func storedEvent(e engine.Event) ([]byte, error) {
	r := eventRecord{
		ID: e.ID, Own: e.Own, Type: e.Type, Timestamp: e.Timestamp.UTC().Format(time.RFC3339Nano),
		State: e.State, Scope: e.Scope, Error: e.Error, Cause: e.Cause, DocHash: e.DocHash,
	}
	var err error
	for _, f := range []struct {
		dst *[]byte
		v   any
	}{{(*[]byte)(&r.Input), e.Input}, {(*[]byte)(&r.Output), e.Output}, {(*[]byte)(&r.Detail), e.Detail}} {
		if f.v != nil {
			if *f.dst, err = jsonpath.Marshal(f.v); err != nil {
				return nil, err
			}
		}
	}
	body, err := marshalRecord(&r)
	if err != nil {
		return nil, err
	}
	v := make([]byte, eventHeaderLen, eventHeaderLen+len(body))
	v[0] = eventFormat
	if e.Superseded {
		v[1] = eventSuperseded
	}
	hex.Decode(v[eventPrevAt:eventHashAt], []byte(e.PrevHash))
	hex.Decode(v[eventHashAt:eventHeaderLen], []byte(e.Hash))
	return append(v, body...), nil
}
