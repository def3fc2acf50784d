package store

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"

	"github.com/aslrun/aslrun/engine"
)

// Reading a part of a history. HistoryRange reads an execution's history
// records backwards, from the newest one that holds an event of the page:
// the records of the page, then older ones only for the documents the
// page's events show (a document is stored once, whole or as a delta
// against an earlier one, docs.go), and only their document tables. It
// decodes the page's events and the documents they need, nothing else, so
// that a page costs the page and the records its documents rest on
// (maxDocReach and maxDeltaDepth bound how far back those are for what
// this process wrote), not the whole history. Bolt, which finds records
// only by following their links back from the newest, also reads the
// header of each record after the page.

// recordSpan reads the position of a history record's first event and its
// number of events from its header; ok is false when it has no header.
func recordSpan(v []byte) (first, count int64, ok bool) {
	if len(v) < historyHeaderLen || (v[0] != historyFormat && v[0] != historyFormatV1) {
		return 0, 0, false
	}
	return int64(binary.BigEndian.Uint64(v[historyFirstAt:])), int64(binary.BigEndian.Uint32(v[historyCountAt:])), true
}

// checkRange checks HistoryRange's arguments.
func checkRange(id string, after int64) error {
	if after < 0 {
		return fmt.Errorf("execution %s: history after event %d: want 0 or more", id, after)
	}
	return nil
}

// rangeEnd is the position of the last event of a page of limit events
// after position after (limit 0 or less: no limit), at most total.
func rangeEnd(after int64, limit int, total int64) int64 {
	if limit <= 0 || after+int64(limit) > total || after+int64(limit) < after {
		return total
	}
	return after + int64(limit)
}

// readHistoryRange decodes the events after position after up to end
// (positions from 1) of execution id, reading its records from next,
// which starts with the newest record that holds an event at or before
// end, or any newer one (those after the page are checked by their
// headers and skipped). A record that does not belong where it is read,
// or a document an event needs that no record holds, is an error
// wrapping ErrTampered.
func readHistoryRange(id string, after, end int64, next OlderRecords) ([]engine.Event, error) {
	if end <= after {
		return nil, nil
	}
	var page []historyRecord // the records of the page, newest first
	want := int64(0)         // the position the next record must end before (0: any)
	// read returns the next record; one after the page (first > end)
	// is checked by its header alone, and returned unparsed (skip).
	read := func() (r historyRecord, ok, skip bool, err error) {
		v, err := next()
		if err != nil || v == nil {
			return r, false, false, err
		}
		if first, count, ok := recordSpan(v); ok && first > end && count > 0 {
			idLen := uint64(binary.BigEndian.Uint32(v[historyIDLenAt:]))
			if idLen > uint64(len(v)-historyHeaderLen) || string(v[historyHeaderLen:historyHeaderLen+int(idLen)]) != id {
				return r, false, false, fmt.Errorf("execution %s: history record at event %d belongs to another execution: %w", id, first, ErrTampered)
			}
			if want != 0 && first+count != want {
				return r, false, false, fmt.Errorf("execution %s: history record at event %d: its events end before event %d, want %d: %w", id, first, first+count, want, ErrTampered)
			}
			want = first
			return r, true, true, nil
		}
		r, err = parseHistoryRecord(v)
		if err != nil {
			return r, false, false, fmt.Errorf("execution %s: %w", id, err)
		}
		last := r.first + int64(len(r.events))
		switch {
		case string(r.id) != id:
			return r, false, false, fmt.Errorf("execution %s: history record at event %d belongs to execution %q: %w", id, r.first, r.id, ErrTampered)
		case want != 0 && last != want:
			return r, false, false, fmt.Errorf("execution %s: history record at event %d: its events end before event %d, want %d: %w", id, r.first, last, want, ErrTampered)
		}
		want = r.first
		return r, true, false, nil
	}
	for {
		r, ok, skip, err := read()
		if err != nil {
			return nil, err
		}
		if !ok {
			if len(page) == 0 || page[len(page)-1].first > after+1 {
				return nil, fmt.Errorf("execution %s: history has no record of event %d: %w", id, after+1, ErrTampered)
			}
			break
		}
		if skip {
			continue
		}
		page = append(page, r)
		if r.first <= after+1 {
			break
		}
	}

	// The documents the page's events show, and those they rest on.
	need := make(map[[sha256.Size]byte]bool) // true once found
	found := make(map[[sha256.Size]byte]storedDoc)
	var missing int
	want1 := func(h [sha256.Size]byte) {
		if _, ok := need[h]; !ok {
			need[h] = false
			missing++
		}
	}
	parsed := make([]eventRecord, end-after) // the page's events, parsed
	for i := range page {
		r := &page[i]
		for j, v := range r.events {
			pos := r.first + int64(j)
			if pos <= after || pos > end {
				continue
			}
			e, err := parseEvent(v)
			if err != nil {
				return nil, fmt.Errorf("execution %s: history event %d: %w", id, pos, err)
			}
			parsed[pos-after-1] = e
			if r.format != historyFormat {
				continue
			}
			for _, ref := range []struct {
				h  string
				ok bool
			}{{e.InputHash, e.hasInput}, {e.OutputHash, e.hasOutput}} {
				if !ref.ok {
					continue
				}
				var sum [sha256.Size]byte
				if n, err := hex.Decode(sum[:], []byte(ref.h)); err != nil || n != sha256.Size {
					return nil, fmt.Errorf("execution %s: history event %d: document %q is not a SHA-256: %w", id, pos, ref.h, ErrTampered)
				}
				want1(sum)
			}
		}
	}
	// look takes the documents of a record that are needed, and adds the
	// bases of the deltas among them.
	look := func(r *historyRecord) {
		// Last first: a delta's base may come before it in its record.
		for i := len(r.docs) - 1; i >= 0; i-- {
			d := r.docs[i]
			if got, ok := need[d.hash]; !ok || got {
				continue
			}
			need[d.hash] = true
			missing--
			found[d.hash] = d
			if d.kind == docDelta {
				want1(d.base)
			}
		}
	}
	for i := range page {
		look(&page[i])
	}
	for missing > 0 {
		r, ok, _, err := read()
		if err != nil {
			return nil, err
		}
		if !ok {
			break // hr.doc names the document that is missing
		}
		look(&r)
	}

	// Decode the documents found, each base before what rests on it.
	hr := newHistoryReader(id, false)
	var chain [][sha256.Size]byte
	for h := range found {
		chain = chain[:0]
		for cur := h; ; {
			if _, done := hr.docs[cur]; done {
				break
			}
			d, ok := found[cur]
			if !ok {
				break // a delta whose base is missing: value says so
			}
			chain = append(chain, cur)
			if d.kind != docDelta {
				break
			}
			cur = d.base
		}
		for i := len(chain) - 1; i >= 0; i-- {
			d := found[chain[i]]
			v, err := d.value(hr.docs)
			if err != nil {
				return nil, fmt.Errorf("execution %s: history document %x: %v: %w", id, d.hash, err, ErrTampered)
			}
			hr.docs[d.hash] = v
		}
	}

	out := make([]engine.Event, 0, end-after)
	for i := len(page) - 1; i >= 0; i-- {
		r := &page[i]
		hr.n = r.first - 1
		if r.format == historyFormat {
			hr.prev = hexOrEmpty(r.prevHash)
		}
		for _, v := range r.events {
			hr.n++
			if hr.n > end {
				break
			}
			if hr.n <= after {
				hr.prev = hex.EncodeToString(eventHash(v))
				continue
			}
			e, _, err := hr.parsed(v, parsed[hr.n-after-1])
			if err != nil {
				return nil, fmt.Errorf("execution %s: history event %d: %w", id, hr.n, err)
			}
			hr.prev = e.Hash
			out = append(out, e)
		}
	}
	return out, nil
}

// HistoryRange returns the events of an execution's history after
// position after (positions from 1; 0: from the start), at most limit of
// them (0 or less: all), and the number of events in the whole history.
func (b *Bolt) HistoryRange(ctx context.Context, id string, after int64, limit int) ([]engine.Event, int64, error) {
	if err := checkRange(id, after); err != nil {
		return nil, 0, err
	}
	var out []engine.Event
	var total int64
	err := b.view(func(x *tx) error {
		// As History, the events are shown even when the head was changed.
		h, err := x.unsealedHead(id)
		if h == nil {
			return err
		}
		if h.LastRecord == 0 {
			return nil
		}
		v := x.events.Get(recordKey(h.LastRecord))
		first, count, ok := recordSpan(v)
		if !ok {
			return fmt.Errorf("execution %s: history record %d: missing or malformed: %w", id, h.LastRecord, ErrTampered)
		}
		total = first + count - 1
		end := rangeEnd(after, limit, total)
		key := h.LastRecord
		next := func() ([]byte, error) {
			if key == 0 {
				return nil, nil
			}
			v := x.events.Get(recordKey(key))
			if v == nil {
				return nil, fmt.Errorf("execution %s: history record %d: missing: %w", id, key, ErrTampered)
			}
			if len(v) < historyHeaderLen {
				return nil, fmt.Errorf("execution %s: history record %d: malformed history record: no header: %w", id, key, ErrTampered)
			}
			prev := binary.BigEndian.Uint64(v[historyPrevAt:])
			if prev >= key {
				// Links go to smaller keys, so that following them ends.
				return nil, fmt.Errorf("execution %s: history record %d: its previous record is %d: %w", id, key, prev, ErrTampered)
			}
			key = prev
			return v, nil
		}
		out, err = readHistoryRange(id, after, end, next)
		return err
	})
	return out, total, err
}

// HistoryRange returns the events of an execution's history after
// position after, at most limit of them (0 or less: all), and the number
// of events in the whole history (Bolt.HistoryRange).
func (m *Memory) HistoryRange(ctx context.Context, id string, after int64, limit int) ([]engine.Event, int64, error) {
	if err := checkRange(id, after); err != nil {
		return nil, 0, err
	}
	m.mu.RLock()
	defer m.mu.RUnlock()
	x, err := m.lookup(id)
	if err != nil {
		return nil, 0, err
	}
	out, total, err := ReadHistoryRange(id, after, limit, x.history)
	return out, total, err
}

// ReadHistoryRange decodes the events after position after of an
// execution's history records (in order, as History reads them), at most
// limit of them (0 or less: all), and returns them with the number of
// events in the whole history. It decodes only those events and the
// documents they show.
func ReadHistoryRange(id string, after int64, limit int, records [][]byte) ([]engine.Event, int64, error) {
	if err := checkRange(id, after); err != nil {
		return nil, 0, err
	}
	if len(records) == 0 {
		return nil, 0, nil
	}
	first, count, ok := recordSpan(records[len(records)-1])
	if !ok {
		return nil, 0, fmt.Errorf("execution %s: malformed history record: no header: %w", id, ErrTampered)
	}
	total := first + count - 1
	i := len(records)
	next := func() ([]byte, error) {
		if i == 0 {
			return nil, nil
		}
		i--
		return records[i], nil
	}
	out, err := readHistoryRange(id, after, rangeEnd(after, limit, total), next)
	return out, total, err
}

// OlderRecords returns an execution's history records one at a time,
// newest first, starting with the newest that holds an event at or
// before a position; nil (with a nil error) once there are no more.
type OlderRecords func() ([]byte, error)

// ReadHistoryTail decodes the events after position after up to end of
// an execution's history, reading its records from next, newest first,
// starting with the newest that holds an event at or before end (a
// backend that finds records by position, as the PostgreSQL store,
// starts there and reads older ones in batches).
func ReadHistoryTail(id string, after, end int64, next OlderRecords) ([]engine.Event, error) {
	if err := checkRange(id, after); err != nil {
		return nil, err
	}
	return readHistoryRange(id, after, end, next)
}

// RangeEnd is the position of the last event of a page of limit events
// after position after (0 or less: no limit), in a history of total
// events.
func RangeEnd(after int64, limit int, total int64) int64 { return rangeEnd(after, limit, total) }

// HistoryLength returns the number of events of an execution's history
// as its head records it.
func HistoryLength(id string, head []byte) (int64, error) {
	h, err := decodeHead(id, head)
	if err != nil {
		return 0, err
	}
	return h.Events, nil
}
