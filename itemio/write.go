package itemio

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strconv"

	"github.com/aslrun/aslrun/jsonvalue"
)

// The result files of a ResultWriter, by the status of the child
// executions they list (AWS's names).
const (
	Succeeded = "SUCCEEDED"
	Failed    = "FAILED"
	Pending   = "PENDING"
)

// Results writes a map run's results as AWS's ResultWriter lays them out
// under dir (<Prefix>/<map run id>): SUCCEEDED_0.json, FAILED_0.json and
// PENDING_0.json, each a JSON array of child execution records, and
// manifest.json listing them. Entries are streamed to their file as they
// are added: only the one being written is held. A file is written only
// when it has entries. Results is not safe for concurrent use.
type Results struct {
	b      Bucket
	bucket string
	dir    string
	files  map[string]*resultFile
	order  []string
}

type resultFile struct {
	key  string
	w    io.WriteCloser
	size int64
	n    int
}

// NewResults returns a writer of the result files of a map run under dir
// in b, which is called bucket in the manifest.
func NewResults(b Bucket, bucket, dir string) *Results {
	return &Results{b: b, bucket: bucket, dir: dir, files: make(map[string]*resultFile)}
}

// Add appends entry (a JSON value) to the file of status (Succeeded,
// Failed or Pending).
func (r *Results) Add(ctx context.Context, status string, entry any) error {
	f := r.files[status]
	if f == nil {
		key := r.dir + "/" + status + "_0.json"
		w, err := r.b.Create(ctx, key)
		if err != nil {
			return fmt.Errorf("write %s: %w", key, err)
		}
		f = &resultFile{key: key, w: w}
		r.files[status] = f
		r.order = append(r.order, status)
	}
	text, err := jsonvalue.Marshal(entry)
	if err != nil {
		return fmt.Errorf("write %s: %w", f.key, err)
	}
	sep := ","
	if f.n == 0 {
		sep = "["
	}
	n, err := io.WriteString(f.w, sep+string(text))
	f.size += int64(n)
	f.n++
	if err != nil {
		return fmt.Errorf("write %s: %w", f.key, err)
	}
	return nil
}

// Close ends the result files and writes the manifest, which names the
// map run mapRunARN; it returns the manifest's key.
func (r *Results) Close(ctx context.Context, mapRunARN string) (string, error) {
	files := map[string]any{Succeeded: []any{}, Failed: []any{}, Pending: []any{}}
	var first error
	for _, status := range r.order {
		f := r.files[status]
		n, err := io.WriteString(f.w, "]")
		f.size += int64(n)
		if cerr := f.w.Close(); err == nil {
			err = cerr
		}
		if err != nil && first == nil {
			first = fmt.Errorf("write %s: %w", f.key, err)
		}
		files[status] = []any{map[string]any{"Key": f.key, "Size": json.Number(strconv.FormatInt(f.size, 10))}}
	}
	if first != nil {
		return "", first
	}
	manifest := map[string]any{"DestinationBucket": r.bucket, "MapRunArn": mapRunARN, "ResultFiles": files}
	key := r.dir + "/manifest.json"
	text, err := jsonvalue.Marshal(manifest)
	if err != nil {
		return "", err
	}
	w, err := r.b.Create(ctx, key)
	if err != nil {
		return "", fmt.Errorf("write %s: %w", key, err)
	}
	_, err = w.Write(text)
	if cerr := w.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return "", fmt.Errorf("write %s: %w", key, err)
	}
	return key, nil
}

// Abort gives up the files written so far, without a manifest (a map run
// that failed to write its results): a writer with an Abort method (Dir's)
// discards its file, any other is closed.
func (r *Results) Abort() {
	for _, status := range r.order {
		w := r.files[status].w
		if a, ok := w.(interface{ Abort() }); ok {
			a.Abort()
		} else {
			w.Close()
		}
	}
}
