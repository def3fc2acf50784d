package store

import (
	"go.etcd.io/bbolt"
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
// it: every history as records of format 1 (one per event, whose events
// hold their documents), every head as sealed JSON, and the format
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
			if err := x.events.Put(recordKey(key), encodeHistoryRecord(id, h.LastRecord, int64(i+1), [][]byte{v})); err != nil {
				return err
			}
			h.LastRecord = key
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
