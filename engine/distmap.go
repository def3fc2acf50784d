package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"

	asl "github.com/aslrun/aslrun"
	"github.com/aslrun/aslrun/itemio"
	"github.com/aslrun/aslrun/jsonata"
	"github.com/aslrun/aslrun/jsonpath"
	"github.com/aslrun/aslrun/jsonvalue"
	"github.com/aslrun/aslrun/states"
)

// The history events of a Distributed Map's map run (AWS's names).
const (
	EventMapRunStarted   = "MapRunStarted"
	EventMapRunSucceeded = "MapRunSucceeded"
	EventMapRunFailed    = "MapRunFailed"
	EventMapRunAborted   = "MapRunAborted"
)

// WaitingForMapRun is what an execution waits for when children of one
// of its Distributed Maps wait (a long Wait, an Approval).
const WaitingForMapRun = "MapRun"

// mapRunPrefix starts the scope keys of map run records (MapRunOf); no
// machine's scope key starts so.
const mapRunPrefix = "~maprun/"

// BucketAccess says what the Distributed Maps of an executor may read
// and write beyond the buckets of its agents registry (the agents file's
// Buckets, agents.Registry.RegisterBucket), and how much of an object
// they hold at once. Its zero value refuses "file://" buckets and has the
// default limits.
type BucketAccess struct {
	// AllowFileURLs lets a definition name a local folder as a Bucket,
	// "file://DIR": the local, single-user case (aslrun run
	// --allow-file-buckets). False, an ItemReader or ResultWriter naming
	// one fails with States.ItemReaderFailed or States.ResultWriterFailed;
	// a server refuses such a definition before it runs.
	AllowFileURLs bool
	// MaxItemBytes caps one item an ItemReader reads: a CSV row or a JSONL
	// line (its line ending counted) or an element of a JSON array; 0
	// means itemio.DefaultMaxItemBytes (1 MiB). A longer one fails the
	// state with States.ItemReaderFailed naming the bucket, key, line and
	// limit.
	MaxItemBytes int
	// MaxListedObjects caps the objects a listObjectsV2 ItemReader lists
	// (past its MaxItems); 0 means itemio.DefaultMaxListed (1,000,000). A
	// longer listing fails the state with States.ItemReaderFailed naming
	// the bucket, prefix and limit.
	MaxListedObjects int
}

// MapRunBucket is where a map run read its items or wrote its results: a
// bucket (its name, or "file://DIR") and a key or prefix in it.
type MapRunBucket struct {
	Bucket string
	Key    string
	Prefix string
}

// distributed is a Distributed Map being run: its map run and settings.
type distributed struct {
	s     *states.Map
	input any
	jsc   *jsonata.Scope
	// key names the map run in its execution (the Map's scope key, name,
	// visit and attempt), id is the map run's id (<execution>/<key>).
	key, id string
	// redrivenAt is set when this run of the Map redrives the map run key
	// (its execution was redriven): children that ended without
	// succeeding before then are redriven.
	redrivenAt time.Time
	cfg        mapConfig
	// batchItems and batchBytes cap a batch (0: no cap); batching is set
	// when there is an ItemBatcher, with batchInput its BatchInput.
	batching   bool
	batchItems int64
	batchBytes int64
	batchInput any
	hasBatchIn bool
	// bucket and prefix are where the ResultWriter writes (bucket nil:
	// there is none), bucketName the name it was given.
	bucket     itemio.Bucket
	bucketName string
	prefix     string
	// writer is the ResultWriter's WriterConfig; writerOnly is set when
	// it has nothing else: the Map's result is then its children's
	// results, transformed.
	writer     itemio.WriterConfig
	writerOnly bool
	// reads and writes are where the ItemReader reads and the
	// ResultWriter writes (zero: none), for the map run's record.
	reads, writes MapRunBucket
}

// ChildID returns the id of child index of the map run mapRun:
// "<map run id>:<index>".
func ChildID(mapRun string, index int) string { return mapRun + ":" + strconv.Itoa(index) }

// MapRunOf returns the map run that child execution id (whose Parent is
// parent) belongs to, when id is a Distributed Map's child of parent
// (ChildID); false for any other execution, a fork included.
func MapRunOf(id, parent string) (string, bool) {
	if parent == "" || !strings.HasPrefix(id, parent+"/") {
		return "", false
	}
	i := strings.LastIndexByte(id, ':')
	if i <= len(parent)+1 {
		return "", false
	}
	n, err := strconv.Atoi(id[i+1:])
	if err != nil || n < 0 || strconv.Itoa(n) != id[i+1:] || !strings.Contains(id[len(parent)+1:i], "#") {
		return "", false
	}
	return id[:i], true
}

// distributedMap runs one attempt of a Distributed Map: each item (or
// batch) runs as a child execution of the processor, stored as an
// execution of its own whose Parent is this execution. Items are read
// one at a time as children can take them; a child that finished (in
// this run or one before a crash) is never run again.
func (h *stateRun) distributedMap(ctx context.Context, s *states.Map, raw any) (stepResult, error) {
	d := &distributed{s: s}
	var err error
	if s.JSONata() {
		d.input, d.jsc = raw, h.jsonataScope(raw)
		d.cfg, err = h.jsonataMapConfig(ctx, s, d.jsc)
	} else {
		if d.input, err = h.inputPath(raw); err != nil {
			return stepResult{}, err
		}
		d.cfg, err = h.mapConfig(s, d.input)
	}
	if err != nil {
		return stepResult{}, err
	}
	d.key = h.sc.key + h.name() + "#" + itoa(h.visit) + "." + itoa(h.env.retry)
	if k, at := h.r.redrivenMapRun(d.key); k != "" {
		d.key, d.redrivenAt = k, at
	}
	d.id = h.r.exec.ID + "/" + d.key
	items, closeItems, err := h.distItems(ctx, d)
	if err != nil {
		return stepResult{}, err
	}
	defer closeItems()
	if err := h.batcher(ctx, d); err != nil {
		return stepResult{}, err
	}
	if err := h.writerLocation(ctx, d); err != nil {
		return stepResult{}, err
	}
	r := h.r
	r.event(Event{Type: EventMapStateStarted, State: h.name(), Scope: h.sc.prefix, Document: h.raw})
	started := EventMapRunStarted
	if !d.redrivenAt.IsZero() {
		started = EventMapRunRedriven
	}
	r.event(Event{Type: started, State: h.name(), Scope: h.sc.prefix, Detail: map[string]any{"mapRunArn": mapRunARN(r.exec, d)}})
	if err := h.recordMapRun(ctx, d, nil, false); err != nil {
		return stepResult{}, err
	}
	run, err := h.runChildren(ctx, d, items)
	var stop *stopRequest
	if err != nil && errors.As(context.Cause(ctx), &stop) && r.x.durable {
		// The execution is being stopped: the map run ends ABORTED with
		// it, its record written by the commit that ends the execution.
		h.keepMapRun(d, run, StatusAborted)
		r.event(Event{Type: EventMapRunAborted, State: h.name(), Scope: h.sc.prefix})
		return stepResult{}, err
	}
	if errors.Is(err, errParked) {
		return stepResult{}, h.park(ctx, WaitingForMapRun, run.wake, &StepProgress{Visit: h.visit, Attempt: h.env.retry, Retries: h.retries})
	}
	var ae *asl.Error
	if err != nil && !errors.As(err, &ae) {
		return stepResult{}, err
	}
	if err == nil && (d.bucket != nil || d.writerOnly) {
		var result any
		if d.writerOnly {
			result, err = h.transformedResults(ctx, d, run)
		} else {
			result, err = h.writeResults(ctx, d, run)
		}
		if err == nil {
			run.written = result
		}
	}
	if rerr := h.recordMapRun(ctx, d, run, err != nil); rerr != nil {
		return stepResult{}, rerr
	}
	if err != nil {
		errors.As(err, &ae)
		r.event(Event{Type: EventMapRunFailed, State: h.name(), Scope: h.sc.prefix, Error: string(ae.Name), Cause: ae.Cause})
		return h.collected(ctx, raw, nil, err, EventMapStateSucceeded, EventMapStateFailed, s.ResultSelector, s.ResultPath)
	}
	r.event(Event{Type: EventMapRunSucceeded, State: h.name(), Scope: h.sc.prefix})
	if run.written != nil {
		return h.writtenResult(ctx, raw, run.written)
	}
	if run.counted != nil {
		return h.countedResults(raw, run.counted, s.ResultPath)
	}
	return h.collected(ctx, raw, run.outputs, nil, EventMapStateSucceeded, EventMapStateFailed, s.ResultSelector, s.ResultPath)
}

// mapRunARN is the map run's ARN as AWS spells one:
// arn:aws:states:local:000000000000:mapRun:<machine>/<label>:<map run id>.
func mapRunARN(e *Execution, d *distributed) string {
	label := d.s.Label
	if label == "" {
		label = d.s.Name
	}
	return "arn:aws:states:local:000000000000:mapRun:" + e.MachineName + "/" + label + ":" + d.id
}

// writtenResult ends a Map whose ResultWriter wrote its results: its
// result is {"MapRunArn", "ResultWriterDetails": {"Bucket", "Key"}}.
func (h *stateRun) writtenResult(ctx context.Context, raw, result any) (stepResult, error) {
	r := h.r
	r.event(Event{Type: EventMapStateSucceeded, State: h.name(), Scope: h.sc.prefix, Document: raw})
	if h.st.Base().JSONata() {
		size, err := h.fits(result, unknownSize)
		if err != nil {
			return stepResult{}, err
		}
		sc := h.jsonataScope(raw)
		sc.Result, sc.HasResult = result, true
		return h.jsonataFinish(ctx, sc, result, size)
	}
	s := h.st.(*states.Map)
	size, err := h.fits(result, unknownSize)
	if err != nil {
		return stepResult{}, err
	}
	if s.ResultSelector != nil {
		if result, size, err = h.template(s.ResultSelector, result, size); err != nil {
			return stepResult{}, err
		}
	}
	return h.finish(raw, result, size, s.ResultPath)
}

// distItems opens the items of a Distributed Map: its ItemReader's, else
// the array of its input (ItemsPath or Items). close releases the reader.
func (h *stateRun) distItems(ctx context.Context, d *distributed) (itemio.Items, func(), error) {
	nop := func() {}
	s := d.s
	if s.ItemReader == nil {
		var arr []any
		if s.JSONata() {
			a, _, err := h.jsonataItems(ctx, s, d.jsc, d.input)
			if err != nil {
				return nil, nop, err
			}
			arr = a
		} else {
			items := d.input
			if s.ItemsPath != nil {
				v, err := s.ItemsPath.Eval(d.input, h.env)
				if err != nil {
					return nil, nop, h.pathError(err)
				}
				items = v
			}
			if p, ok := items.(*jsonvalue.Packed); ok {
				return &packedItems{p: p}, nop, nil
			}
			a, ok := items.([]any)
			if !ok {
				return nil, nop, h.runtimeError(fmt.Sprintf("Items of the Map state must be an array, not %s", jsonvalue.TypeName(items)))
			}
			arr = a
		}
		return itemio.Slice(arr), nop, nil
	}
	ir := s.ItemReader
	loc, err := h.location(ctx, ir.Parameters, ir.Arguments, d, "ItemReader")
	if err != nil {
		return nil, nop, err
	}
	max := ir.MaxItems
	switch {
	case ir.MaxItemsPath != nil:
		v, err := h.get(ir.MaxItemsPath, d.input)
		if err != nil {
			return nil, nop, err
		}
		n, ok := intValue(v)
		if !ok || n < 0 {
			return nil, nop, h.runtimeError(fmt.Sprintf("The MaxItemsPath field refers to value \"%s\" which is not a valid integer: %s", plain(v), ir.MaxItemsPath))
		}
		max = n
	case ir.MaxItemsExpr != nil:
		v, err := h.evalJSONata(ctx, ir.MaxItemsExpr, d.jsc, "MaxItems")
		if err != nil {
			return nil, nop, err
		}
		n, ok := jsonataInteger(v)
		if !ok || n < 0 {
			return nil, nop, h.queryError(fmt.Sprintf("The MaxItems field must be a non-negative integer, but was %s", compactJSON(v)))
		}
		max = n
	}
	b, name, err := h.bucketOf(loc, "ItemReader")
	if err != nil {
		return nil, nop, err
	}
	access := h.r.x.buckets
	if ir.Resource == states.ResourceListObjectsV2 {
		prefix, _ := loc["Prefix"].(string)
		d.reads = MapRunBucket{Bucket: name, Prefix: prefix}
		items, err := itemio.List(ctx, b, prefix, max, access.MaxListedObjects)
		if err != nil {
			return nil, nop, asl.Errorf(asl.ErrItemReaderFailed, "The ItemReader of the state '%s' could not list bucket %q: %v", h.name(), name, err)
		}
		return items, nop, nil
	}
	key, ok := loc["Key"].(string)
	if !ok || key == "" {
		return nil, nop, h.runtimeError(fmt.Sprintf("The ItemReader's Key must be a non-empty string, not %s", jsonvalue.TypeName(loc["Key"])))
	}
	d.reads = MapRunBucket{Bucket: name, Key: key}
	failed := func(err error) error {
		return asl.Errorf(asl.ErrItemReaderFailed, "The ItemReader of the state '%s' could not read key %q of bucket %q: %v", h.name(), key, name, err)
	}
	rc, err := b.Open(ctx, key)
	if err != nil {
		return nil, nop, failed(err)
	}
	f := itemio.Format{InputType: ir.InputType, CSVHeaderLocation: ir.CSVHeaderLocation, CSVHeaders: ir.CSVHeaders, CSVDelimiter: delimiter(ir.CSVDelimiter), MaxItemBytes: access.MaxItemBytes}
	items, err := itemio.Decode(rc, f)
	if err != nil {
		rc.Close()
		return nil, nop, failed(err)
	}
	return &readerItems{items: itemio.Limit(items, max), fail: failed}, func() { rc.Close() }, nil
}

// packedItems reads a packed array (an execution input's large array)
// item by item.
type packedItems struct {
	p *jsonvalue.Packed
	i int
}

func (it *packedItems) Next() (any, error) {
	if it.i >= it.p.Len() {
		return nil, io.EOF
	}
	v, err := it.p.At(it.i)
	if err != nil {
		return nil, fmt.Errorf("item %d: %w", it.i, err)
	}
	it.i++
	return v, nil
}

// readerItems raises a reader's errors as States.ItemReaderFailed.
type readerItems struct {
	items itemio.Items
	fail  func(error) error
}

func (r *readerItems) Next() (any, error) {
	v, err := r.items.Next()
	if err != nil && err != io.EOF {
		return nil, r.fail(err)
	}
	return v, err
}

func delimiter(name string) rune {
	switch name {
	case "PIPE":
		return '|'
	case "SEMICOLON":
		return ';'
	case "SPACE":
		return ' '
	case "TAB":
		return '\t'
	}
	return ','
}

// location evaluates the Parameters or Arguments of an ItemReader or
// ResultWriter: an object with Bucket and Key or Prefix.
func (h *stateRun) location(ctx context.Context, params *jsonpath.Template, args *jsonata.Template, d *distributed, field string) (map[string]any, error) {
	var v any
	var err error
	switch {
	case params != nil:
		v, err = params.Eval(d.input, h.env)
		if err != nil {
			return nil, h.pathError(err)
		}
	case args != nil:
		if v, err = h.evalJSONata(ctx, args, d.jsc, "Arguments"); err != nil {
			return nil, err
		}
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, h.runtimeError(fmt.Sprintf("The %s's parameters must be an object, not %s", field, jsonvalue.TypeName(v)))
	}
	return m, nil
}

// bucketOf resolves the Bucket of a location: a name (also written
// "s3://name" or "arn:aws:s3:::name") is the bucket registered under it
// (agents file Buckets, or agents.Registry.RegisterBucket); "file://DIR"
// is the local folder DIR, when the executor allows it
// (BucketAccess.AllowFileURLs).
func (h *stateRun) bucketOf(loc map[string]any, field string) (itemio.Bucket, string, error) {
	name, ok := loc["Bucket"].(string)
	if !ok || name == "" {
		return nil, "", h.runtimeError(fmt.Sprintf("The %s's Bucket must be a non-empty string, not %s", field, jsonvalue.TypeName(loc["Bucket"])))
	}
	errName := asl.ErrItemReaderFailed
	if field == "ResultWriter" {
		errName = asl.ErrResultWriterFailed
	}
	if dir, ok := strings.CutPrefix(name, states.FileBucketScheme); ok {
		if !h.r.x.buckets.AllowFileURLs {
			return nil, "", asl.Errorf(errName, "The %s of the state '%s' names the local folder %q as its Bucket, which this executor does not allow: name a bucket mapped to a folder in the agents file's Buckets (or registered with agents.Registry.RegisterBucket); a local run allows file:// with aslrun run --allow-file-buckets", field, h.name(), name)
		}
		if dir == "" {
			return nil, "", h.runtimeError(fmt.Sprintf("The %s's Bucket %q names no folder", field, name))
		}
		return itemio.Dir(dir), name, nil
	}
	bare := strings.TrimPrefix(strings.TrimPrefix(name, "s3://"), "arn:aws:s3:::")
	bare = strings.TrimSuffix(bare, "/")
	if b, ok := h.r.agents.Bucket(bare); ok {
		return b, bare, nil
	}
	return nil, "", asl.Errorf(errName, "The %s of the state '%s' names bucket %q, which is not configured: map it to a folder in the agents file's Buckets or register it with agents.Registry.RegisterBucket", field, h.name(), bare)
}

// batcher resolves a Distributed Map's ItemBatcher.
func (h *stateRun) batcher(ctx context.Context, d *distributed) error {
	b := d.s.ItemBatcher
	if b == nil {
		return nil
	}
	d.batching = true
	d.batchItems, d.batchBytes = b.MaxItemsPerBatch, b.MaxInputBytesPerBatch
	for _, f := range []struct {
		path  *jsonpath.Path
		expr  *jsonata.Template
		field string
		max   int64
		to    *int64
	}{
		{b.MaxItemsPerBatchPath, b.MaxItemsPerBatchExpr, "MaxItemsPerBatch", 1<<31 - 1, &d.batchItems},
		{b.MaxInputBytesPerBatchPath, b.MaxInputBytesPerBatchExpr, "MaxInputBytesPerBatch", states.MaxBatchBytes, &d.batchBytes},
	} {
		switch {
		case f.path != nil:
			v, err := h.get(f.path, d.input)
			if err != nil {
				return err
			}
			n, ok := intValue(v)
			if !ok || n < 1 || n > f.max {
				return h.runtimeError(fmt.Sprintf("The %sPath field refers to value \"%s\" which is not a valid integer between 1 and %d: %s", f.field, plain(v), f.max, f.path))
			}
			*f.to = n
		case f.expr != nil:
			v, err := h.evalJSONata(ctx, f.expr, d.jsc, f.field)
			if err != nil {
				return err
			}
			n, ok := jsonataInteger(v)
			if !ok || n < 1 || n > f.max {
				return h.queryError(fmt.Sprintf("The %s field must be an integer between 1 and %d, but was %s", f.field, f.max, compactJSON(v)))
			}
			*f.to = n
		}
	}
	switch {
	case b.BatchInput != nil:
		v, err := b.BatchInput.Eval(d.input, h.env)
		if err != nil {
			return h.pathError(err)
		}
		d.batchInput, d.hasBatchIn = v, true
	case b.BatchInputJSONata != nil:
		v, err := h.evalJSONata(ctx, b.BatchInputJSONata, d.jsc, "BatchInput")
		if err != nil {
			return err
		}
		d.batchInput, d.hasBatchIn = v, true
	}
	return nil
}

// writerLocation resolves a Distributed Map's ResultWriter location.
func (h *stateRun) writerLocation(ctx context.Context, d *distributed) error {
	w := d.s.ResultWriter
	if w == nil {
		return nil
	}
	d.writer = itemio.WriterConfig{OutputType: w.OutputType, Transformation: w.Transformation}
	if w.Parameters == nil && w.Arguments == nil {
		d.writerOnly = true
		return nil
	}
	loc, err := h.location(ctx, w.Parameters, w.Arguments, d, "ResultWriter")
	if err != nil {
		return err
	}
	b, name, err := h.bucketOf(loc, "ResultWriter")
	if err != nil {
		return err
	}
	prefix, ok := loc["Prefix"].(string)
	if !ok {
		return h.runtimeError(fmt.Sprintf("The ResultWriter's Prefix must be a string, not %s", jsonvalue.TypeName(loc["Prefix"])))
	}
	// A folder's keys may not leave it: a Prefix that would is refused
	// before any child runs.
	if _, local := b.(itemio.Dir); local && prefix != "" {
		if err := itemio.CheckKey(strings.TrimSuffix(prefix, "/") + "/" + itemio.Succeeded); err != nil {
			return asl.Errorf(asl.ErrResultWriterFailed, "The ResultWriter of the state '%s' cannot write to bucket %q under the Prefix %q: %v", h.name(), name, prefix, err)
		}
	}
	d.bucket, d.bucketName, d.prefix = b, name, strings.TrimSuffix(prefix, "/")
	d.writes = MapRunBucket{Bucket: name, Prefix: d.prefix}
	return nil
}

// mapRunOutcome is what a map run's children came to.
type mapRunOutcome struct {
	// total counts the children; succeeded, failed, aborted and pending
	// how they stand (aborted: stopped when the map run failed or its
	// execution was stopped; pending: not run, or waiting).
	total, succeeded, failed, aborted, pending int
	// outputs are the children's outputs in order (nil when the Map keeps
	// none: a ResultWriter, or ResultPath null).
	outputs []any
	// counted stands for the outputs of a Map that throws them away under
	// a payload limit (nil otherwise).
	counted *resultCount
	// records are the children as ended, for a ResultWriter of an
	// executor without a store (a durable one reads them back instead).
	records []*Execution
	// wake is the earliest time a waiting child is due (zero: none is).
	wake time.Time
	// written is the ResultWriter's result.
	written any
}

// runChildren runs the children of map run d over items, at most
// MaxConcurrency at a time. It holds the batch being filled, the inputs
// of the children in flight and, unless the Map keeps none, the outputs.
func (h *stateRun) runChildren(ctx context.Context, d *distributed, items itemio.Items) (*mapRunOutcome, error) {
	r := h.r
	s := d.s
	limit := d.cfg.concurrency
	if limit <= 0 {
		limit = defaultMaxConcurrency
	}
	out := &mapRunOutcome{}
	// Without a ResultWriter the outputs are the Map's result: kept, or
	// counted when the Map throws them away under a payload limit.
	keep := d.bucket == nil && !d.writerOnly && !discardsResults(s)
	if d.bucket == nil && !d.writerOnly && !keep && r.maxPayload >= 0 {
		out.counted = newResultCount(r.maxPayload)
	}
	keepRecords := (d.bucket != nil || d.writerOnly) && !r.x.durable
	// The items run on turns of their own (fair.go): this one waits.
	defer pauseTurn(ctx).resume()
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(limit)
	// The children's progress, as an inline Map's items' (by count: a
	// child's own agents report in its own execution).
	progress := h.newCounts(0, nil)
	var (
		mu       sync.Mutex
		exceeded bool
		waiting  bool
		// inFlight aborts each child running, by id.
		inFlight = map[string]func(){}
	)
	exceeds := func() bool {
		if d.cfg.maxFailed < 0 && d.cfg.maxPercent < 0 {
			return out.failed > 0
		}
		return d.cfg.maxFailed >= 0 && int64(out.failed) > d.cfg.maxFailed
	}
	launch := func(index int, input any) {
		id := ChildID(d.id, index)
		mu.Lock()
		if keep {
			out.outputs = append(out.outputs, nil)
		}
		if keepRecords {
			out.records = append(out.records, nil)
		}
		out.total++
		mu.Unlock()
		progress.grow()
		g.Go(func() error {
			cctx, abort, release := childContext(gctx)
			defer release()
			mu.Lock()
			stop := exceeded || gctx.Err() != nil
			if !stop {
				inFlight[id] = abort
			}
			mu.Unlock()
			if stop {
				mu.Lock()
				out.pending++
				mu.Unlock()
				return nil
			}
			progress.start()
			ended := false
			defer func() {
				if !ended {
					progress.abandon() // waiting, aborted or stopped
				}
			}()
			turn, terr := r.x.fair.acquire(cctx, r.exec.ID)
			tctx := cctx
			if terr == nil {
				tctx = withTurn(cctx, turn)
			}
			res, e, err := h.child(tctx, d, id, input)
			if terr == nil {
				r.x.fair.release(turn)
			}
			mu.Lock()
			defer mu.Unlock()
			delete(inFlight, id)
			if err != nil && (exceeded || gctx.Err() != nil) {
				// Stopped as it started, once the map run had failed or
				// its execution was stopped.
				out.pending++
				return nil
			}
			if err != nil {
				return err
			}
			if keepRecords {
				out.records[index] = e
			}
			switch res.Status {
			case StatusSucceeded:
				out.succeeded++
				ended = true
				progress.end(index, false)
				if keep {
					out.outputs[index] = res.Output
				} else if out.counted != nil {
					out.counted.add(res.Output)
				}
			case StatusWaiting:
				waiting = true
				out.pending++
				if !res.WakeAt.IsZero() && (out.wake.IsZero() || res.WakeAt.Before(out.wake)) {
					out.wake = res.WakeAt
				}
			case StatusAborted:
				if exceeded || gctx.Err() != nil {
					// Stopped below when the threshold was passed, or with
					// its execution.
					out.aborted++
					break
				}
				fallthrough
			default:
				out.failed++
				ended = true
				progress.end(index, true)
				if keep {
					out.outputs[index] = errorOutput(&asl.Error{Name: asl.ErrorName(res.Error), Cause: res.Cause})
				} else if out.counted != nil {
					out.counted.add(errorOutput(&asl.Error{Name: asl.ErrorName(res.Error), Cause: res.Cause}))
				}
				if !exceeded && exceeds() {
					// The map run fails: its children still running are
					// aborted, as AWS aborts them.
					exceeded = true
					for _, abort := range inFlight {
						abort()
					}
				}
			}
			return nil
		})
	}
	index := 0
	var batch []any
	batchSize := 0
	base := 0
	if d.batching {
		envelope := map[string]any{"Items": []any{}}
		if d.hasBatchIn {
			envelope["BatchInput"] = d.batchInput
		}
		base = jsonvalue.Size(envelope)
	}
	flush := func() {
		if len(batch) == 0 {
			return
		}
		in := map[string]any{"Items": batch}
		if d.hasBatchIn {
			in["BatchInput"] = d.batchInput
		}
		launch(index, in)
		index++
		batch, batchSize = nil, 0
	}
	var readErr error
	for i := 0; ; i++ {
		mu.Lock()
		stop := exceeded
		mu.Unlock()
		if stop || gctx.Err() != nil {
			break
		}
		item, err := items.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			readErr = err
			break
		}
		input, err := h.selectItem(ctx, d, &mapItem{index: i, value: item})
		if err != nil {
			readErr = err
			break
		}
		if !d.batching {
			launch(index, input)
			index++
			continue
		}
		n := jsonvalue.Size(input) + 1
		if len(batch) > 0 && (d.batchItems > 0 && int64(len(batch)) >= d.batchItems || d.batchBytes > 0 && int64(base+batchSize+n) > d.batchBytes) {
			flush()
		}
		batch = append(batch, input)
		batchSize += n
	}
	if readErr == nil && d.batching {
		flush()
	}
	err := g.Wait()
	if err != nil {
		return out, err
	}
	if readErr != nil {
		return out, readErr
	}
	if err := ctx.Err(); err != nil {
		return out, ctxError(ctx)
	}
	if exceeded {
		return out, asl.Errorf(asl.ErrExceedToleratedFailureThreshold, "The specified tolerated failure threshold was exceeded")
	}
	if waiting {
		return out, errParked
	}
	if out.failed > 0 && d.cfg.maxPercent >= 0 && float64(out.failed)*100 > d.cfg.maxPercent*float64(out.total) {
		if d.cfg.maxFailed < 0 || int64(out.failed) > d.cfg.maxFailed {
			return out, asl.Errorf(asl.ErrExceedToleratedFailureThreshold, "The specified tolerated failure threshold was exceeded")
		}
	}
	return out, nil
}

// childContext is the context a child execution runs in: cancelled with
// ctx, the Map's, and with its cause, except that a Stop of the parent
// reaches the child as a Stop of its own (so that it ends ABORTED, and
// its result is not taken for the parent's). abort stops the child (it
// ends ABORTED, or never starts); release frees the context once the
// child has returned.
func childContext(ctx context.Context) (cctx context.Context, abort, release func()) {
	cctx, cancel := context.WithCancelCause(context.WithoutCancel(ctx))
	stopAfter := context.AfterFunc(ctx, func() {
		cause := context.Cause(ctx)
		var stop *stopRequest
		if errors.As(cause, &stop) {
			cause = &stopRequest{errName: stop.errName, cause: stop.cause}
		}
		cancel(cause)
	})
	abort = func() { cancel(&stopRequest{}) }
	return cctx, abort, func() {
		stopAfter()
		cancel(nil)
	}
}

// selectItem is the input of item mi: ItemSelector's, else the item.
func (h *stateRun) selectItem(ctx context.Context, d *distributed, mi *mapItem) (any, error) {
	s := d.s
	switch {
	case s.ItemSelector != nil:
		e := &env{r: h.r, sc: h.sc, state: h.name(), entered: h.env.entered, retry: h.env.retry, item: mi}
		v, err := s.ItemSelector.Eval(d.input, e)
		if err != nil {
			return nil, h.pathError(err)
		}
		return v, nil
	case s.ItemSelectorJSONata != nil:
		v, _, err := h.jsonataItem(ctx, s, d.input, mi)
		return v, err
	}
	return mi.value, nil
}

// child runs (or, after a crash, resumes or reads) the child execution id
// on input and returns where it stands; e is its record when the
// executor has no store (for a ResultWriter). An EXPRESS child keeps no
// history, unless the executor keeps children's histories (dropsHistory).
func (h *stateRun) child(ctx context.Context, d *distributed, id string, input any) (*Result, *Execution, error) {
	r := h.r
	x := r.x
	s := h.st.(*states.Map)
	started := time.Now().UTC()
	res, err := x.Run(ctx, s.Processor, input, StartOptions{
		ID: id, MachineName: r.exec.MachineName, Agents: r.agents, AgentsFile: r.exec.Agents, AgentsKind: r.exec.AgentsKind,
		MaxPayloadSize: r.exec.MaxPayload, Durability: r.exec.Durability, Registry: r.exec.Registry, parent: r.exec.ID,
		express: s.ExecutionType == "EXPRESS" && x.durable && !x.keepChildHistory,
	})
	if errors.Is(err, ErrExists) && x.durable {
		res, err = h.existingChild(ctx, d, id)
	}
	if err != nil {
		return nil, nil, err
	}
	var e *Execution
	if !x.durable {
		e = &Execution{ID: id, Input: input, Status: res.Status, Output: res.Output, Error: res.Error, Cause: res.Cause, StartedAt: started, StoppedAt: time.Now().UTC()}
	}
	return res, e, nil
}

// existingChild continues child id, which exists: an ended child is read
// (it is never run again, unless the map run is redriven and it did not
// succeed), an unfinished one resumed.
func (h *stateRun) existingChild(ctx context.Context, d *distributed, id string) (*Result, error) {
	x := h.r.x
	for {
		e, err := x.store.Load(ctx, id)
		if err != nil {
			return nil, err
		}
		if e.Status.Ended() {
			res, err := x.redriveChild(ctx, e, d.redrivenAt, h.r.agents)
			if errors.Is(err, ErrNotRedrivable) {
				// Ended otherwise in between (redriven elsewhere): read it again.
				continue
			}
			if res != nil || err != nil {
				return res, err
			}
			return &Result{ID: id, Status: e.Status, Output: e.Output, Error: e.Error, Cause: e.Cause}, nil
		}
		res, err := x.Resume(ctx, id, ResumeOptions{Agents: h.r.agents})
		switch {
		case errors.Is(err, ErrEnded):
			continue
		case errors.Is(err, ErrBusy):
			// Another run of it (Serve recovering it) holds it: wait for it.
			select {
			case <-ctx.Done():
				return nil, ctxError(ctx)
			case <-time.After(50 * time.Millisecond):
			}
			continue
		}
		return res, err
	}
}

// MapRun is a Distributed Map's map run, as MapRuns lists it.
type MapRun struct {
	// ID is the map run's id, "<execution>/<state>#<visit>.<attempt>"
	// (the state's scope inside Map items and Parallel branches
	// included); its children are ChildID(ID, 0), ChildID(ID, 1), …
	ID string
	// ARN is its ARN as AWS spells it (MapRunArn).
	ARN string
	// Execution is the parent execution, State the Map state and Label its
	// Label ("" when it has none).
	Execution string
	State     string
	Label     string
	// Status is RUNNING, SUCCEEDED, FAILED or ABORTED (its execution was
	// stopped).
	Status string
	// Total, Succeeded, Failed, Aborted and Pending count the children
	// (Total is what was started so far while it runs). Aborted children
	// were stopped when the map run failed or its execution was stopped;
	// pending ones have not ended (or never started).
	Total, Succeeded, Failed, Aborted, Pending int
	// ResultWriterDetails is where a ResultWriter wrote the manifest
	// ({"Bucket", "Key"}); nil when it has none.
	ResultWriterDetails any
	// Reads is where its ItemReader read the items (a Key, or a Prefix
	// listed), Writes where its ResultWriter writes the results (under
	// Prefix); zero when it has none.
	Reads, Writes MapRunBucket
	// StartedAt and StoppedAt (zero while it runs).
	StartedAt, StoppedAt time.Time
	// RedriveCount counts the times the map run was redriven with its
	// execution, the last at RedrivenAt (zero when never).
	RedriveCount int
	RedrivenAt   time.Time
}

// MapRunChild is one child execution of a map run.
type MapRunChild struct {
	Index  int
	ID     string
	Status Status
	Error  string
	Cause  string
}

// recordMapRun commits the record of map run d in its execution: when it
// starts (run nil) and when it ends, failed or not.
func (h *stateRun) recordMapRun(ctx context.Context, d *distributed, run *mapRunOutcome, failed bool) error {
	if !h.r.x.durable {
		return nil
	}
	status := StatusRunning
	switch {
	case run == nil:
	case failed:
		status = StatusFailed
	default:
		status = StatusSucceeded
	}
	key, sc := h.keepMapRun(d, run, status)
	return h.r.commit(ctx, nil, &Commit{Scopes: map[string]*Scope{key: sc}})
}

// keepMapRun sets the record of map run d, with status and the counts of
// run (when not nil), among the execution's map runs (run.mapRuns), which
// the commit ending the execution keeps; it returns its scope key and
// scope.
func (h *stateRun) keepMapRun(d *distributed, run *mapRunOutcome, status Status) (string, *Scope) {
	r := h.r
	now := time.Now().UTC()
	rec := map[string]any{
		"id": d.id, "arn": mapRunARN(r.exec, d), "state": h.name(), "label": d.s.Label, "status": string(status),
		"concurrency": jsonvalue.IntNumber(int64(max(d.cfg.concurrency, 0))), "startedAt": now.Format(time.RFC3339Nano),
	}
	for k, b := range map[string]MapRunBucket{"reads": d.reads, "writes": d.writes} {
		if b.Bucket != "" {
			rec[k] = map[string]any{"bucket": b.Bucket, "key": b.Key, "prefix": b.Prefix}
		}
	}
	key := mapRunPrefix + d.key
	if prev := r.loaded[key]; prev != nil {
		if old, ok := prev.Output.(map[string]any); ok {
			for _, k := range []string{"startedAt", recRedriveAs, recRedriveCount, recRedrivenAt} {
				if v, ok := old[k]; ok {
					rec[k] = v
				}
			}
		}
	}
	if run != nil {
		setCounts(rec, run.total, run.succeeded, run.failed, run.aborted, run.pending)
		rec["stoppedAt"] = now.Format(time.RFC3339Nano)
		if w, ok := run.written.(map[string]any); ok {
			rec["resultWriterDetails"] = w["ResultWriterDetails"]
		}
	}
	sc := &Scope{Done: true, Output: rec}
	r.mu.Lock()
	if r.mapRuns == nil {
		r.mapRuns = make(map[string]*Scope)
	}
	r.mapRuns[key] = sc
	r.mu.Unlock()
	return key, sc
}

// setCounts writes the counts of a map run's children in its record.
func setCounts(rec map[string]any, total, succeeded, failed, aborted, pending int) {
	for k, n := range map[string]int{"total": total, "succeeded": succeeded, "failed": failed, "aborted": aborted, "pending": pending} {
		rec[k] = jsonvalue.IntNumber(int64(n))
	}
}

// keepMapRuns adds the records of the execution's map runs to c, the
// commit that ends it (and drops every other scope), so that they stay
// listed (MapRuns).
func (r *run) keepMapRuns(c *Commit) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for k, s := range r.loaded {
		if strings.HasPrefix(k, mapRunPrefix) && r.mapRuns[k] == nil {
			c.Scopes[k] = s
		}
	}
	for k, s := range r.mapRuns {
		c.Scopes[k] = s
	}
}

// MapRuns lists the map runs of execution id's Distributed Maps, in the
// order of their ids. Counts of a map run still running are read from its
// children.
func (x *Executor) MapRuns(ctx context.Context, id string) ([]MapRun, error) {
	if !x.durable {
		return nil, fmt.Errorf("execution %s: %w", id, ErrNotDurable)
	}
	e, err := x.store.Load(ctx, id)
	if err != nil {
		return nil, err
	}
	var runs []MapRun
	for key, sc := range e.Progress.Scopes {
		if !strings.HasPrefix(key, mapRunPrefix) || sc == nil {
			continue
		}
		rec, _ := sc.Output.(map[string]any)
		mr := MapRun{Execution: id}
		mr.ID, _ = rec["id"].(string)
		mr.ARN, _ = rec["arn"].(string)
		mr.State, _ = rec["state"].(string)
		mr.Label, _ = rec["label"].(string)
		mr.Status, _ = rec["status"].(string)
		mr.ResultWriterDetails = rec["resultWriterDetails"]
		mr.Reads, mr.Writes = recBucket(rec["reads"]), recBucket(rec["writes"])
		mr.StartedAt = parseTime(rec["startedAt"])
		mr.StoppedAt = parseTime(rec["stoppedAt"])
		mr.RedriveCount, mr.RedrivenAt = recInt(rec[recRedriveCount]), parseTime(rec[recRedrivenAt])
		if mr.Status == string(StatusRunning) || e.Status == StatusRunning && mr.StoppedAt.IsZero() {
			children, err := x.MapRunChildren(ctx, mr.ID)
			if err != nil {
				return nil, err
			}
			mr.Total = len(children)
			for _, c := range children {
				switch {
				case c.Status == StatusSucceeded:
					mr.Succeeded++
				case c.Status == StatusAborted:
					mr.Aborted++
				case c.Status.Ended():
					mr.Failed++
				default:
					mr.Pending++
				}
			}
		} else {
			mr.Total, mr.Succeeded, mr.Failed, mr.Aborted, mr.Pending = recInt(rec["total"]), recInt(rec["succeeded"]), recInt(rec["failed"]), recInt(rec["aborted"]), recInt(rec["pending"])
		}
		runs = append(runs, mr)
	}
	sortMapRuns(runs)
	return runs, nil
}

// MapRunChildren lists the child executions of map run mapRun that exist,
// by index (MapRunChildrenPage with no limit).
func (x *Executor) MapRunChildren(ctx context.Context, mapRun string) ([]MapRunChild, error) {
	return x.MapRunChildrenPage(ctx, mapRun, ChildrenPage{})
}

// ChildrenPage selects a page of a map run's children; its zero value
// selects them all.
type ChildrenPage struct {
	// From is the first index read (0: from the first child).
	From int
	// Limit caps the children listed (0: no cap).
	Limit int
	// Status, when set, lists only the children in that status.
	Status Status
}

// MapRunChildrenPage lists the child executions of map run mapRun that
// exist and that p selects, by index. Children are started in index
// order, at most the map's MaxConcurrency (or 256) at a time, so the
// listing reads them in order until that many indexes in a row have no
// child; once the map run has ended, its total says how far to read.
func (x *Executor) MapRunChildrenPage(ctx context.Context, mapRun string, p ChildrenPage) ([]MapRunChild, error) {
	if !x.durable {
		return nil, fmt.Errorf("map run %s: %w", mapRun, ErrNotDurable)
	}
	window, total := defaultMaxConcurrency, -1
	if parent, key, ok := strings.Cut(mapRun, "/"); ok {
		if e, err := x.store.Load(ctx, parent); err == nil {
			if sc := e.Progress.Scopes[mapRunPrefix+key]; sc != nil {
				rec, _ := sc.Output.(map[string]any)
				if n := recInt(rec["concurrency"]); n > 0 {
					window = n
				}
				if rec["stoppedAt"] != nil {
					total = recInt(rec["total"])
				}
			}
		}
	}
	more := func(i, misses int) bool {
		if total >= 0 {
			return i < total
		}
		return misses < window
	}
	var out []MapRunChild
	misses := 0
	for i := max(p.From, 0); more(i, misses) && (p.Limit <= 0 || len(out) < p.Limit); i++ {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		id := ChildID(mapRun, i)
		e, err := x.store.Load(ctx, id)
		if errors.Is(err, ErrNotFound) {
			misses++
			continue
		}
		if err != nil {
			return nil, err
		}
		misses = 0
		if p.Status != "" && e.Status != p.Status {
			continue
		}
		out = append(out, MapRunChild{Index: i, ID: id, Status: e.Status, Error: e.Error, Cause: e.Cause})
	}
	return out, nil
}

// recBucket reads a MapRunBucket of a map run's record.
func recBucket(v any) MapRunBucket {
	m, _ := v.(map[string]any)
	var b MapRunBucket
	b.Bucket, _ = m["bucket"].(string)
	b.Key, _ = m["key"].(string)
	b.Prefix, _ = m["prefix"].(string)
	return b
}

func recInt(v any) int {
	n, ok := v.(json.Number)
	if !ok {
		return 0
	}
	i, err := n.Int64()
	if err != nil {
		return 0
	}
	return int(i)
}

func parseTime(v any) time.Time {
	s, _ := v.(string)
	t, _ := time.Parse(time.RFC3339Nano, s)
	return t
}

func sortMapRuns(runs []MapRun) {
	for i := 1; i < len(runs); i++ {
		for j := i; j > 0 && runs[j].ID < runs[j-1].ID; j-- {
			runs[j], runs[j-1] = runs[j-1], runs[j]
		}
	}
}

// writeResults writes the ResultWriter's files, as its WriterConfig
// says: each child as AWS records it, read back from the store one at a
// time (an executor without a store kept them), then the manifest; the
// Map's result says where.
func (h *stateRun) writeResults(ctx context.Context, d *distributed, run *mapRunOutcome) (any, error) {
	r := h.r
	arn := mapRunARN(r.exec, d)
	runID := d.id[strings.LastIndexByte(d.id, '/')+1:]
	dir := runID
	if d.prefix != "" {
		dir = d.prefix + "/" + runID
	}
	w := itemio.NewResults(d.bucket, d.bucketName, dir, d.writer)
	failed := func(err error) error {
		w.Abort()
		return asl.Errorf(asl.ErrResultWriterFailed, "The ResultWriter of the state '%s' could not write to bucket %q: %v", h.name(), d.bucketName, err)
	}
	var werr error
	err := h.eachChild(ctx, d, run, func(status string, rec map[string]any, output any) error {
		werr = w.Add(ctx, status, rec, output)
		return werr
	})
	if werr != nil {
		return nil, failed(werr)
	}
	if err != nil {
		w.Abort()
		return nil, err
	}
	key, err := w.Close(ctx, arn)
	if err != nil {
		return nil, failed(err)
	}
	return map[string]any{"MapRunArn": arn, "ResultWriterDetails": map[string]any{"Bucket": d.bucketName, "Key": key}}, nil
}

// transformedResults is the result of a Map whose ResultWriter has only a
// WriterConfig: its children, in item order, as the transformation makes
// them (itemio.Entries).
func (h *stateRun) transformedResults(ctx context.Context, d *distributed, run *mapRunOutcome) (any, error) {
	out := []any{}
	err := h.eachChild(ctx, d, run, func(status string, rec map[string]any, output any) error {
		out = append(out, itemio.Entries(d.writer.Transformation, status, rec, output)...)
		return nil
	})
	return out, err
}

// eachChild calls fn with each child of map run d in item order: the file
// it goes in (its status), its record as AWS's ResultWriter writes it,
// and its output when it succeeded. Children are read back from the store
// one at a time (an executor without a store kept them).
func (h *stateRun) eachChild(ctx context.Context, d *distributed, run *mapRunOutcome, fn func(status string, rec map[string]any, output any) error) error {
	r := h.r
	for i := range run.total {
		var e *Execution
		if run.records != nil {
			e = run.records[i]
		} else {
			var err error
			if e, err = r.x.store.Load(ctx, ChildID(d.id, i)); err != nil && !errors.Is(err, ErrNotFound) {
				return err
			}
		}
		status, rec := childEntry(r.exec, ChildID(d.id, i), e)
		var output any
		if e != nil && status == itemio.Succeeded {
			output = e.Output
		}
		if err := fn(status, rec, output); err != nil {
			return err
		}
	}
	return nil
}

// childEntry is a child execution as AWS's ResultWriter records it, with
// the file it goes in; e nil is a child that never started (PENDING).
func childEntry(parent *Execution, id string, e *Execution) (string, map[string]any) {
	arn := "arn:aws:states:local:000000000000:execution:" + parent.MachineName + ":" + id
	entry := map[string]any{"ExecutionArn": arn, "Name": id, "StateMachineArn": "arn:aws:states:local:000000000000:stateMachine:" + parent.MachineName}
	if e == nil {
		entry["Status"] = "PENDING"
		return itemio.Pending, entry
	}
	entry["Status"] = string(e.Status)
	entry["RedriveCount"] = jsonvalue.IntNumber(int64(e.RedriveCount))
	entry["StartDate"] = e.StartedAt.Format(time.RFC3339Nano)
	if in, err := jsonvalue.Marshal(e.Input); err == nil {
		entry["Input"] = string(in)
		entry["InputDetails"] = map[string]any{"Included": true}
	}
	if !e.StoppedAt.IsZero() {
		entry["StopDate"] = e.StoppedAt.Format(time.RFC3339Nano)
	}
	switch {
	case e.Status == StatusSucceeded:
		if out, err := jsonvalue.Marshal(e.Output); err == nil {
			entry["Output"] = string(out)
			entry["OutputDetails"] = map[string]any{"Included": true}
		}
		return itemio.Succeeded, entry
	case e.Status.Ended():
		if e.Error != "" {
			entry["Error"] = e.Error
		}
		if e.Cause != "" {
			entry["Cause"] = e.Cause
		}
		return itemio.Failed, entry
	}
	return itemio.Pending, entry
}

// abortMapRuns stops the children that have not ended of the map runs of
// e, an execution being stopped that no run of this executor holds (it
// waits, or the process running it died), and adds the records of its
// map runs to c, the commit that ends it: those that were running end
// ABORTED, with their children's counts (r records MapRunAborted).
func (x *Executor) abortMapRuns(ctx context.Context, r *run, e *Execution, c *Commit) error {
	for _, k := range slices.Sorted(maps.Keys(e.Progress.Scopes)) {
		sc := e.Progress.Scopes[k]
		if !strings.HasPrefix(k, mapRunPrefix) || sc == nil {
			continue
		}
		rec, _ := sc.Output.(map[string]any)
		if rec["status"] != string(StatusRunning) {
			c.Scopes[k] = sc
			continue
		}
		id, _ := rec["id"].(string)
		children, err := x.MapRunChildren(ctx, id)
		if err != nil {
			return fmt.Errorf("execution %s: map run %s: %w", e.ID, id, err)
		}
		var succeeded, failed, aborted, pending int
		for _, ch := range children {
			status := ch.Status
			if !status.Ended() {
				res, err := x.Stop(ctx, ch.ID, "", "")
				switch {
				case err == nil:
					status = res.Status
				case errors.Is(err, ErrEnded):
					ce, lerr := x.store.Load(ctx, ch.ID)
					if lerr != nil {
						return lerr
					}
					status = ce.Status
				default:
					return fmt.Errorf("execution %s: stop child %s: %w", e.ID, ch.ID, err)
				}
			}
			switch {
			case status == StatusSucceeded:
				succeeded++
			case status == StatusAborted:
				aborted++
			case status.Ended():
				failed++
			default:
				pending++
			}
		}
		rec = maps.Clone(rec)
		rec["status"] = string(StatusAborted)
		rec["stoppedAt"] = time.Now().UTC().Format(time.RFC3339Nano)
		setCounts(rec, len(children), succeeded, failed, aborted, pending)
		c.Scopes[k] = &Scope{Done: true, Output: rec}
		state, _ := rec["state"].(string)
		r.event(Event{Type: EventMapRunAborted, State: state})
	}
	return nil
}
