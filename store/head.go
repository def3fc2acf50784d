package store

import (
	"encoding/binary"
	"fmt"
	"math"
	"time"

	"github.com/aslrun/aslrun/engine"
)

// A head is encoded in binary, without reflection: the commit loop and
// the memory store decode and encode one on every commit. It is a list of
// fields in increasing order of their tags, each a tag byte and a value,
// the fields at their zero value left out:
//
//	tag  field         value
//	 1   status        string (length, uvarint, and bytes)
//	 2   output        bytes (a document, jsonvalue.Marshal form)
//	 3   error         string
//	 4   cause         string
//	 5   stoppedAt     time (Unix seconds, varint, nanoseconds, uvarint)
//	 6   wakeAt        time
//	 7   waitingFor    string
//	 8   invocations   count (uvarint), then each agent (string, sorted) and calls (varint)
//	 9   usage         input, output and total tokens (varints), cost (float64, 8 bytes big-endian)
//	10   notices       count, then each string
//	11   lastEvent     varint
//	12   lastOwnEvent  varint
//	13   seq           varint
//	14   events        varint
//	15   lastHash      string
//	16   lastRecord    uvarint
//	17   unbound       count, then each checkpoint name (sorted) and hash (strings)
//	18   redriveCount  varint
//	19   redrivenAt    time
//	20   historyDropped varint 1 (engine.Commit.DropHistory dropped the history)
//
// A tag this program does not know, a field out of order or repeated, and
// a value cut short are errors: a head of a newer program is refused, not
// misread. The encoding of a head is unique, so that its seal is.
const (
	headStatus = iota + 1
	headOutput
	headError
	headCause
	headStoppedAt
	headWakeAt
	headWaitingFor
	headInvocations
	headUsage
	headNotices
	headLastEvent
	headLastOwnEvent
	headSeq
	headEvents
	headLastHash
	headLastRecord
	headUnbound
	headRedriveCount
	headRedrivenAt
	headHistoryDropped
)

// encodeHead writes a headRecord.
func encodeHead(h *headRecord) []byte {
	return appendHead(make([]byte, 0, 128+len(h.Output)), h)
}

// appendHead appends a headRecord's encoding to dst.
func appendHead(b []byte, h *headRecord) []byte {
	str := func(tag byte, s string) {
		if s != "" {
			b = appendStr(append(b, tag), s)
		}
	}
	num := func(tag byte, n int64) {
		if n != 0 {
			b = binary.AppendVarint(append(b, tag), n)
		}
	}
	tm := func(tag byte, t time.Time) {
		if !t.IsZero() {
			b = appendTime(append(b, tag), t.UTC())
		}
	}
	str(headStatus, string(h.Status))
	if len(h.Output) > 0 {
		b = appendBytes(append(b, headOutput), h.Output)
	}
	str(headError, h.Error)
	str(headCause, h.Cause)
	tm(headStoppedAt, h.StoppedAt)
	tm(headWakeAt, h.WakeAt)
	str(headWaitingFor, h.WaitingFor)
	if len(h.Invocations) > 0 {
		b = binary.AppendUvarint(append(b, headInvocations), uint64(len(h.Invocations)))
		var buf [16]string
		for _, agent := range sortedKeys(buf[:0], h.Invocations) {
			b = binary.AppendVarint(appendStr(b, agent), int64(h.Invocations[agent]))
		}
	}
	if u := h.Usage; u != (engine.Usage{}) {
		b = append(b, headUsage)
		b = binary.AppendVarint(b, u.InputTokens)
		b = binary.AppendVarint(b, u.OutputTokens)
		b = binary.AppendVarint(b, u.Tokens)
		b = binary.BigEndian.AppendUint64(b, math.Float64bits(u.Cost))
	}
	if len(h.Notices) > 0 {
		b = binary.AppendUvarint(append(b, headNotices), uint64(len(h.Notices)))
		for _, n := range h.Notices {
			b = appendStr(b, n)
		}
	}
	num(headLastEvent, h.LastEvent)
	num(headLastOwnEvent, h.LastOwnEvent)
	num(headSeq, h.Seq)
	num(headEvents, h.Events)
	str(headLastHash, h.LastHash)
	if h.LastRecord != 0 {
		b = binary.AppendUvarint(append(b, headLastRecord), h.LastRecord)
	}
	if len(h.Unbound) > 0 {
		b = binary.AppendUvarint(append(b, headUnbound), uint64(len(h.Unbound)))
		var buf [16]string
		for _, name := range sortedKeys(buf[:0], h.Unbound) {
			b = appendStr(appendStr(b, name), h.Unbound[name])
		}
	}
	num(headRedriveCount, int64(h.RedriveCount))
	tm(headRedrivenAt, h.RedrivenAt)
	if h.HistoryDropped {
		num(headHistoryDropped, 1)
	}
	return b
}

// decodeHead reads a head written by encodeHead; its error is a
// recordError.
func decodeHead(id string, data []byte) (*headRecord, error) {
	h, err := parseHead(data)
	if err != nil {
		return nil, &recordError{fmt.Errorf("execution %s: head record: %w", id, err)}
	}
	return h, nil
}

// parseHead reads a head written by encodeHead.
func parseHead(data []byte) (*headRecord, error) {
	h := &headRecord{}
	r := reader{b: data}
	last := byte(0)
	// count reads a number of entries, each at least min bytes long.
	count := func(min int) int {
		n := r.uvarint()
		if n == 0 || n > uint64(len(r.b)/min) {
			r.fail(fmt.Errorf("%d entries in %d bytes", n, len(r.b)))
			return 0
		}
		return int(n)
	}
	for len(r.b) > 0 && r.err == nil {
		tag := r.byte()
		if tag <= last {
			return nil, fmt.Errorf("field %d after field %d", tag, last)
		}
		last = tag
		switch tag {
		case headStatus:
			h.Status = engine.Status(r.str())
		case headOutput:
			h.Output = append([]byte(nil), r.bytes()...)
		case headError:
			h.Error = r.str()
		case headCause:
			h.Cause = r.str()
		case headStoppedAt:
			h.StoppedAt = r.time()
		case headWakeAt:
			h.WakeAt = r.time()
		case headWaitingFor:
			h.WaitingFor = r.str()
		case headInvocations:
			n := count(2)
			h.Invocations = make(map[string]int, n)
			for range n {
				agent := r.str()
				calls := r.varint()
				if calls < math.MinInt32 || calls > math.MaxInt32 {
					r.fail(fmt.Errorf("agent %q: %d calls", agent, calls))
				}
				h.Invocations[agent] = int(calls)
			}
			if len(h.Invocations) != n && r.err == nil {
				r.fail(fmt.Errorf("an agent is counted twice"))
			}
		case headUsage:
			h.Usage = engine.Usage{InputTokens: r.varint(), OutputTokens: r.varint(), Tokens: r.varint(), Cost: r.float()}
			if math.IsNaN(h.Usage.Cost) || math.IsInf(h.Usage.Cost, 0) {
				r.fail(fmt.Errorf("cost %v is not a number", h.Usage.Cost))
			}
		case headNotices:
			n := count(1)
			h.Notices = make([]string, n)
			for i := range h.Notices {
				h.Notices[i] = r.str()
			}
		case headLastEvent:
			h.LastEvent = r.varint()
		case headLastOwnEvent:
			h.LastOwnEvent = r.varint()
		case headSeq:
			h.Seq = r.varint()
		case headEvents:
			h.Events = r.varint()
		case headLastHash:
			h.LastHash = r.str()
		case headLastRecord:
			h.LastRecord = r.uvarint()
		case headUnbound:
			n := count(2)
			h.Unbound = make(map[string]string, n)
			for range n {
				name := r.str()
				h.Unbound[name] = r.str()
			}
			if len(h.Unbound) != n && r.err == nil {
				r.fail(fmt.Errorf("a checkpoint is listed twice"))
			}
		case headRedriveCount:
			n := r.varint()
			if n < 0 || n > math.MaxInt32 {
				r.fail(fmt.Errorf("redrive count %d", n))
			}
			h.RedriveCount = int(n)
		case headRedrivenAt:
			h.RedrivenAt = r.time()
		case headHistoryDropped:
			if v := r.varint(); v != 1 && r.err == nil {
				r.fail(fmt.Errorf("history dropped %d", v))
			}
			h.HistoryDropped = true
		default:
			return nil, fmt.Errorf("unknown field %d (written by a newer aslrun?)", tag)
		}
	}
	if r.err != nil {
		return nil, fmt.Errorf("field %d: %w", last, r.err)
	}
	return h, nil
}
