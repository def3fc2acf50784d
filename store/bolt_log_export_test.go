package store

import (
	"bytes"
	"fmt"

	"go.etcd.io/bbolt"
)

// LogOptions are the options of a Bolt with the log on, checkpointing
// after maxRecords records (0: the default), calling checkpointed after
// each checkpoint (may be nil).
func LogOptions(maxRecords int, checkpointed func()) BoltOptions {
	return BoltOptions{Log: true, logMaxRecords: maxRecords, logCheckpointed: checkpointed}
}

// AbandonBolt ends b as a crash would: the commit loop is stopped and the
// files closed with no checkpoint, the log left as it is. It reports
// whether b was still open.
func AbandonBolt(b *Bolt) bool {
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return false
	}
	b.closed = true
	close(b.queue)
	b.mu.Unlock()
	<-b.loopDone
	if b.log != nil {
		if b.log.pin != nil {
			b.log.pin.Rollback()
		}
		b.log.close()
	}
	b.db.Close()
	return true
}

// DumpBolt lists every bucket, key, value and bucket sequence of b's
// database, as "bucket/…/key" → value.
func DumpBolt(b *Bolt) (map[string]string, error) {
	out := make(map[string]string)
	var walk func(prefix string, bkt *bbolt.Bucket) error
	walk = func(prefix string, bkt *bbolt.Bucket) error {
		out[prefix+"#seq"] = fmt.Sprint(bkt.Sequence())
		return bkt.ForEach(func(k, v []byte) error {
			if v == nil {
				if inner := bkt.Bucket(k); inner != nil {
					return walk(prefix+string(k)+"/", inner)
				}
			}
			out[prefix+string(k)] = string(v)
			return nil
		})
	}
	err := b.db.View(func(t *bbolt.Tx) error {
		return t.ForEach(func(name []byte, bkt *bbolt.Bucket) error {
			if bytes.Equal(name, bucketMeta) {
				return nil
			}
			return walk(string(name)+"/", bkt)
		})
	})
	return out, err
}

// LogSyncs is how many fdatasyncs the log has made (log records and
// checkpoints), -1 without a log.
func LogSyncs(b *Bolt) int64 {
	if b.log == nil {
		return -1
	}
	return b.log.syncs.Load()
}
