package store

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
)

// A commit's events are stored together, as one history record (Bolt
// keeps each record under a key of its own, doc.go says where):
//
//	[0]      format of the record (historyFormat)
//	[1:9]    key of the execution's previous history record (0 for its first)
//	[9:17]   position of the record's first event in the history (from 1)
//	[17:21]  number of events
//	[21:25]  length of the execution id, then the id
//	then     the Hash of the event before the record's first (32 zero
//	         bytes for the history's first event): the first event's
//	         PrevHash, each later event's being the Hash of the one before
//	then     the documents the record's events introduce (docs.go): their
//	         number (uvarint), then each document
//	then     each stored event value: its length (4 bytes), then the value
//
// Integers are big-endian. The committing goroutine writes the record with
// its link, position and hashes left zero; the store seals it
// (preparedHistory.seal) once it has the execution's head. Format 1, written
// before format 7 of the database, has neither the previous hash nor the
// documents (its events are of format 1, which carry both); it is still
// read.
const (
	historyFormat    = 2
	historyFormatV1  = 1
	historyPrevAt    = 1
	historyFirstAt   = historyPrevAt + 8
	historyCountAt   = historyFirstAt + 8
	historyIDLenAt   = historyCountAt + 4
	historyHeaderLen = historyIDLenAt + 4
)

// preparedHistory is the history record of a commit's events before it is
// sealed: the record, each event's stored value (a part of the record) and
// the start of each event's digest. Its zero value has no events.
type preparedHistory struct {
	record  []byte
	values  [][]byte
	digests [][]byte
	prevAt  int // where the previous hash goes
}

// newPreparedHistory writes the history record of events of execution id
// and the documents they introduce.
func newPreparedHistory(id string, events []preparedEvent, docs []byte, ndocs int) preparedHistory {
	if len(events) == 0 {
		return preparedHistory{}
	}
	size := historyHeaderLen + len(id) + sha256.Size + binary.MaxVarintLen64 + len(docs)
	for i := range events {
		size += 4 + len(events[i].value)
	}
	vd := make([][]byte, 2*len(events))
	p := preparedHistory{values: vd[:len(events):len(events)], digests: vd[len(events):]}
	rec := appendHistoryHeader(make([]byte, 0, size), historyFormat, id, 0, 0, len(events))
	p.prevAt = len(rec)
	rec = append(rec, make([]byte, sha256.Size)...)
	rec = binary.AppendUvarint(rec, uint64(ndocs))
	rec = append(rec, docs...)
	for i := range events {
		rec = binary.BigEndian.AppendUint32(rec, uint32(len(events[i].value)))
		// rec has its final capacity: it does not move as it grows.
		start := len(rec)
		rec = append(rec, events[i].value...)
		p.values[i] = rec[start:len(rec):len(rec)]
		p.digests[i] = events[i].digest
	}
	p.record = rec
	return p
}

// appendHistoryHeader appends the header of a history record of count
// events and its execution id.
func appendHistoryHeader(dst []byte, format byte, id string, prev uint64, first int64, count int) []byte {
	dst = append(dst, format)
	dst = binary.BigEndian.AppendUint64(dst, prev)
	dst = binary.BigEndian.AppendUint64(dst, uint64(first))
	dst = binary.BigEndian.AppendUint32(dst, uint32(count))
	dst = binary.BigEndian.AppendUint32(dst, uint32(len(id)))
	return append(dst, id...)
}

// encodeHistoryRecord writes a history record of format 1 (whose events
// are of format 1).
func encodeHistoryRecord(id string, prev uint64, first int64, values [][]byte) []byte {
	size := historyHeaderLen + len(id)
	for _, v := range values {
		size += 4 + len(v)
	}
	rec := appendHistoryHeader(make([]byte, 0, size), historyFormatV1, id, prev, first, len(values))
	for _, v := range values {
		rec = binary.BigEndian.AppendUint32(rec, uint32(len(v)))
		rec = append(rec, v...)
	}
	return rec
}

// seal chains the record's events after the history of head h, links the
// record to the execution's previous one (h.LastRecord) and advances h's
// event count and last hash. The caller stores the record and sets
// h.LastRecord to its key. Sealing again after h is restored gives the
// same record.
func (p *preparedHistory) seal(h *headRecord) error {
	if len(p.values) == 0 {
		return nil
	}
	var prev [sha256.Size]byte
	if h.LastHash != "" {
		if n, err := hex.Decode(prev[:], []byte(h.LastHash)); err != nil || n != sha256.Size {
			return fmt.Errorf("history event %d: hash %q is not a SHA-256", h.Events, h.LastHash)
		}
	}
	binary.BigEndian.PutUint64(p.record[historyPrevAt:], h.LastRecord)
	binary.BigEndian.PutUint64(p.record[historyFirstAt:], uint64(h.Events+1))
	copy(p.record[p.prevAt:], prev[:])
	scratch := make([]byte, 0, 512)
	var prevBuf [2 * sha256.Size]byte
	prevHex := append(prevBuf[:0], h.LastHash...)
	for i, v := range p.values {
		sum := chainHash(&scratch, p.digests[i], prevHex)
		copy(v[eventHashAt:eventHeaderLen], sum[:])
		prevHex = hex.AppendEncode(prevHex[:0], sum[:])
	}
	h.Events += int64(len(p.values))
	h.LastHash = string(prevHex)
	return nil
}

// historyRecord is a history record read back. Its events and documents
// are parts of the value it was read from.
type historyRecord struct {
	format   byte
	prev     uint64
	first    int64
	id       []byte
	prevHash []byte // format 2
	docs     []storedDoc
	events   [][]byte
}

// parseHistoryRecord reads a history record; one that is malformed is an
// error wrapping ErrTampered.
func parseHistoryRecord(v []byte) (historyRecord, error) {
	malformed := func(format string, args ...any) (historyRecord, error) {
		return historyRecord{}, fmt.Errorf("malformed history record: %s: %w", fmt.Sprintf(format, args...), ErrTampered)
	}
	if len(v) < historyHeaderLen || (v[0] != historyFormat && v[0] != historyFormatV1) {
		return malformed("no header")
	}
	r := historyRecord{
		format: v[0],
		prev:   binary.BigEndian.Uint64(v[historyPrevAt:]),
		first:  int64(binary.BigEndian.Uint64(v[historyFirstAt:])),
	}
	count := binary.BigEndian.Uint32(v[historyCountAt:])
	rest := v[historyHeaderLen:]
	// part cuts the next n bytes off rest.
	part := func(n uint32) ([]byte, bool) {
		if uint64(n) > uint64(len(rest)) {
			return nil, false
		}
		b := rest[:n:n]
		rest = rest[n:]
		return b, true
	}
	var ok bool
	if r.id, ok = part(binary.BigEndian.Uint32(v[historyIDLenAt:])); !ok {
		return malformed("execution id longer than the record")
	}
	if r.format == historyFormat {
		if r.prevHash, ok = part(sha256.Size); !ok {
			return malformed("no previous hash")
		}
		rd := reader{b: rest}
		if r.docs = readDocs(&rd); rd.err != nil {
			return malformed("documents: %v", rd.err)
		}
		rest = rd.b
	}
	if r.first < 1 || count == 0 || uint64(count) > uint64(len(rest)/4) {
		return malformed("first event %d, %d events", r.first, count)
	}
	r.events = make([][]byte, count)
	for i := range r.events {
		var n []byte
		if n, ok = part(4); ok {
			r.events[i], ok = part(binary.BigEndian.Uint32(n))
		}
		if !ok {
			return malformed("event %d of %d is cut short", i+1, count)
		}
	}
	if len(rest) != 0 {
		return malformed("%d bytes after its events", len(rest))
	}
	return r, nil
}
