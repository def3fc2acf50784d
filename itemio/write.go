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

// The transformations of a ResultWriter's WriterConfig (AWS's names). Its
// OutputType is JSON (the default: a file is a JSON array) or JSONL (one
// JSON value a line), as the input types of a ReaderConfig.
const (
	// NONE (the default) writes each child's full record; COMPACT only
	// the outputs of the children that succeeded; FLATTEN those outputs
	// too, an output that is an array written as its elements. A child
	// that did not succeed is written as its full record whatever the
	// transformation.
	None    = "NONE"
	Compact = "COMPACT"
	Flatten = "FLATTEN"
)

// WriterConfig is a ResultWriter's WriterConfig; its zero value is
// OutputType JSON and Transformation NONE.
type WriterConfig struct {
	OutputType     string
	Transformation string
}

// Entries returns what transformation makes of a child execution that
// ended as status (Succeeded, Failed or Pending): record is its full
// record (what NONE writes), output its output when it succeeded.
func Entries(transformation, status string, record map[string]any, output any) []any {
	if status != Succeeded || transformation == "" || transformation == None {
		return []any{record}
	}
	if arr, ok := output.([]any); ok && transformation == Flatten {
		return arr
	}
	return []any{output}
}

// Results writes a map run's results as AWS's ResultWriter lays them out
// under dir (<Prefix>/<map run id>): SUCCEEDED_0.json, FAILED_0.json and
// PENDING_0.json (.jsonl for OutputType JSONL), each the entries of the
// child executions that ended so, and manifest.json listing them. Entries
// are streamed to their file as they are added: only the one being
// written is held. A file is written only when it has entries. Results is
// not safe for concurrent use.
type Results struct {
	b      Bucket
	bucket string
	dir    string
	cfg    WriterConfig
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
// in b, which is called bucket in the manifest, as cfg says.
func NewResults(b Bucket, bucket, dir string, cfg WriterConfig) *Results {
	return &Results{b: b, bucket: bucket, dir: dir, cfg: cfg, files: make(map[string]*resultFile)}
}

// Add adds a child execution that ended as status (Succeeded, Failed or
// Pending) to its file, transformed (Entries): record is its full record,
// output its output when it succeeded.
func (r *Results) Add(ctx context.Context, status string, record map[string]any, output any) error {
	for _, e := range Entries(r.cfg.Transformation, status, record, output) {
		if err := r.add(ctx, status, e); err != nil {
			return err
		}
	}
	return nil
}

// add appends entry (a JSON value) to the file of status.
func (r *Results) add(ctx context.Context, status string, entry any) error {
	f := r.files[status]
	if f == nil {
		ext := ".json"
		if r.cfg.OutputType == JSONL {
			ext = ".jsonl"
		}
		key := r.dir + "/" + status + "_0" + ext
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
	var n int
	if r.cfg.OutputType == JSONL {
		n, err = io.WriteString(f.w, string(text)+"\n")
	} else {
		sep := ","
		if f.n == 0 {
			sep = "["
		}
		n, err = io.WriteString(f.w, sep+string(text))
	}
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
		var err error
		if r.cfg.OutputType != JSONL {
			var n int
			n, err = io.WriteString(f.w, "]")
			f.size += int64(n)
		}
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
