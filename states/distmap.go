package states

import (
	"maps"
	"strings"

	"github.com/aslrun/aslrun/jsonata"
	"github.com/aslrun/aslrun/jsonpath"
	"github.com/aslrun/aslrun/jsonvalue"
)

// The resources a Distributed Map's ItemReader and ResultWriter accept
// (Amazon S3's, run on local stand-ins; see package itemio).
const (
	ResourceGetObject     = "arn:aws:states:::s3:getObject"
	ResourceListObjectsV2 = "arn:aws:states:::s3:listObjectsV2"
	ResourcePutObject     = "arn:aws:states:::s3:putObject"
)

// MaxItemsLimit is the largest ReaderConfig MaxItems (AWS's, 100,000,000).
const MaxItemsLimit = 100000000

// MaxBatchBytes is the largest ItemBatcher MaxInputBytesPerBatch (AWS's,
// 256 KiB).
const MaxBatchBytes = 262144

// ItemReader is a Distributed Map's ItemReader: where its items are read
// from instead of its input.
type ItemReader struct {
	// Resource is ResourceGetObject (items in one object) or
	// ResourceListObjectsV2 (the objects of a bucket, as items).
	Resource string
	// Parameters (JSONPath) or Arguments (JSONata) give the location:
	// Bucket and Key for getObject, Bucket and Prefix for listObjectsV2.
	Parameters *jsonpath.Template
	Arguments  *jsonata.Template
	// Bucket is the location's Bucket when it is written literally (""
	// when it is computed: "Bucket.$", a JSONata expression), at the JSON
	// Pointer BucketPointer.
	Bucket, BucketPointer string
	// InputType is JSON, JSONL or CSV for getObject ("" for a listing);
	// CSVHeaderLocation is FIRST_ROW or GIVEN with CSVHeaders; CSVDelimiter
	// is COMMA (""), PIPE, SEMICOLON, SPACE or TAB.
	InputType         string
	CSVHeaderLocation string
	CSVHeaders        []string
	CSVDelimiter      string
	// MaxItems caps the items read (0: all), or MaxItemsPath reads the cap
	// from the input, or MaxItemsExpr computes it (JSONata).
	MaxItems     int64
	MaxItemsPath *jsonpath.Path
	MaxItemsExpr *jsonata.Template
}

// ItemBatcher is a Distributed Map's ItemBatcher: items are handed to the
// children in batches, each child's input being {"BatchInput": …, "Items":
// [...]}.
type ItemBatcher struct {
	// MaxItemsPerBatch caps a batch's items and MaxInputBytesPerBatch its
	// input's size in bytes (0: no cap), literal, read from the input
	// (…Path) or computed (…Expr, JSONata). At least one is set.
	MaxItemsPerBatch          int64
	MaxItemsPerBatchPath      *jsonpath.Path
	MaxItemsPerBatchExpr      *jsonata.Template
	MaxInputBytesPerBatch     int64
	MaxInputBytesPerBatchPath *jsonpath.Path
	MaxInputBytesPerBatchExpr *jsonata.Template
	// BatchInput is the template of every batch's BatchInput, evaluated on
	// the Map's effective input; nil when absent.
	BatchInput        *jsonpath.Template
	BatchInputJSONata *jsonata.Template
}

// ResultWriter is a Distributed Map's ResultWriter: its children's
// results are written to a bucket, and the Map's result is where; or,
// with a WriterConfig alone, the Map's result is its children's results,
// transformed.
type ResultWriter struct {
	// Parameters (JSONPath) or Arguments (JSONata) give Bucket and Prefix;
	// both nil when the ResultWriter has only a WriterConfig.
	Parameters *jsonpath.Template
	Arguments  *jsonata.Template
	// Bucket is the location's Bucket when it is written literally, at
	// BucketPointer (as ItemReader's).
	Bucket, BucketPointer string
	// OutputType is JSON ("") or JSONL; Transformation is NONE (""),
	// COMPACT or FLATTEN (WriterConfig).
	OutputType     string
	Transformation string
}

// labelForbidden are the characters AWS refuses in a Map's Label (and ':'
// and '/', which separate the parts of a map run's id here).
const labelForbidden = " \t\n\r<>{}[]?*\"#%\\^|~`$&,;:/"

// distributed reads the Distributed Map fields of s (ItemReader,
// ItemBatcher, ResultWriter, Label) once its processor's Mode is known.
func (p *parser) distributed(o *object, s *Map) {
	if s.Label != "" {
		switch {
		case len(s.Label) > 40:
			o.errorf("Label", "Label must be at most 40 characters")
		case strings.ContainsAny(s.Label, labelForbidden):
			o.errorf("Label", "Label must not contain whitespace, brackets, wildcards or any of the characters < > { } [ ] ? * \" # %% \\ ^ | ~ ` $ & , ; : /")
		default:
			for _, r := range s.Label {
				if r < 0x20 || r == 0x7f {
					o.errorf("Label", "Label must not contain control characters")
					break
				}
			}
		}
	}
	dist := s.Mode == "DISTRIBUTED"
	for _, k := range []string{"ItemReader", "ItemBatcher", "ResultWriter"} {
		if o.has(k) && !dist {
			o.errorf(k, "%s is only valid in a Distributed Map: set the ItemProcessor's ProcessorConfig Mode to DISTRIBUTED", k)
		}
	}
	if !dist {
		return
	}
	if ro, ok := o.child("ItemReader", "ItemReader"); ro != nil {
		s.ItemReader = p.itemReader(ro, s.JSONata())
	} else if ok {
		return
	}
	if s.ItemReader != nil {
		if o.has("ItemsPath") || o.has("ItemsPath.$") {
			o.errorf("ItemsPath", "ItemsPath cannot be used with ItemReader: the items come from the reader")
		}
		if o.has("Items") {
			o.errorf("Items", "Items cannot be used with ItemReader: the items come from the reader")
		}
	}
	if bo, _ := o.child("ItemBatcher", "ItemBatcher"); bo != nil {
		s.ItemBatcher = p.itemBatcher(bo, s.JSONata())
	}
	if wo, _ := o.child("ResultWriter", "ResultWriter"); wo != nil {
		s.ResultWriter = p.resultWriter(wo, s.JSONata())
	}
}

// location reads the Parameters (JSONPath) or Arguments (JSONata) of an
// ItemReader or ResultWriter, and checks that a literal block names the
// fields required (each given literally or, in JSONPath, as "K.$"). It
// returns the Bucket when it is literal, with its pointer.
func (p *parser) location(o *object, jsonataQL bool, required ...string) (params *jsonpath.Template, args *jsonata.Template, bucket, bucketPtr string) {
	key, other := "Parameters", "Arguments"
	if jsonataQL {
		key, other = other, key
	}
	if o.has(other) {
		if jsonataQL {
			o.errorf(other, "Parameters is a JSONPath field: a JSONata state uses Arguments")
		} else {
			o.errorf(other, "Arguments is a JSONata field: a JSONPath state uses Parameters")
		}
	}
	v, ok := o.m[key]
	if !ok {
		o.errorf("", "missing required field %s (with %s)", key, strings.Join(required, " and "))
		return nil, nil, "", ""
	}
	if m, isObj := v.(map[string]any); isObj {
		if b, lit := m["Bucket"].(string); lit && !(jsonataQL && jsonata.IsExpression(b)) {
			bucket, bucketPtr = b, o.at(key)+"/Bucket"
		}
		for _, r := range required {
			_, lit := m[r]
			_, dyn := m[r+".$"]
			if !lit && !(dyn && !jsonataQL) {
				o.errorf(key, "%s must give %s", key, r)
			}
		}
	} else if s, isStr := v.(string); !(jsonataQL && isStr && jsonata.IsExpression(s)) {
		o.used[key] = true
		o.errorf(key, "%s must be an object, not %s", key, jsonvalue.TypeName(v))
		return nil, nil, "", ""
	}
	if jsonataQL {
		return nil, p.jsonataTemplate(o, key), bucket, bucketPtr
	}
	return p.template(o, key), nil, bucket, bucketPtr
}

func (p *parser) itemReader(o *object, jsonataQL bool) *ItemReader {
	r := &ItemReader{}
	res, ok := o.requiredStr("Resource")
	if !ok {
		o.done("ItemReader")
		return nil
	}
	list := false
	switch res {
	case ResourceGetObject:
	case ResourceListObjectsV2:
		list = true
	default:
		o.errorf("Resource", "the ItemReader Resource %q is not supported: want %s or %s", res, ResourceGetObject, ResourceListObjectsV2)
		o.skipRest()
		o.done("ItemReader")
		return nil
	}
	r.Resource = res
	if list {
		r.Parameters, r.Arguments, r.Bucket, r.BucketPointer = p.location(o, jsonataQL, "Bucket")
	} else {
		r.Parameters, r.Arguments, r.Bucket, r.BucketPointer = p.location(o, jsonataQL, "Bucket", "Key")
	}
	co, present := o.child("ReaderConfig", "ReaderConfig")
	switch {
	case co != nil:
		p.readerConfig(co, r, list, jsonataQL)
	case !present && !list:
		o.errorf("", "missing required field ReaderConfig (with InputType JSON, JSONL or CSV) for %s", ResourceGetObject)
	}
	o.done("ItemReader")
	return r
}

func (p *parser) readerConfig(o *object, r *ItemReader, list, jsonataQL bool) {
	if list {
		if o.has("InputType") {
			o.errorf("InputType", "InputType is not valid with %s: the items are the objects listed", ResourceListObjectsV2)
		}
	} else if it, ok := o.str("InputType"); ok {
		switch it {
		case "JSON", "JSONL", "CSV":
			r.InputType = it
		case "MANIFEST":
			o.errorf("InputType", "InputType MANIFEST (an S3 inventory) is not supported: want JSON, JSONL or CSV")
		default:
			o.errorf("InputType", "InputType must be one of JSON, JSONL or CSV, not %q", it)
		}
	} else if !o.has("InputType") {
		o.errorf("", "missing required field InputType (JSON, JSONL or CSV)")
	}
	csvFields := []string{"CSVHeaderLocation", "CSVHeaders", "CSVDelimiter"}
	if r.InputType != "CSV" {
		for _, k := range csvFields {
			if o.has(k) {
				o.errorf(k, "%s is only valid when InputType is CSV", k)
			}
		}
	} else {
		r.CSVHeaderLocation = "FIRST_ROW"
		if loc, ok := o.oneOf("CSVHeaderLocation", "FIRST_ROW", "GIVEN"); ok {
			r.CSVHeaderLocation = loc
		}
		if h, ok := o.strings("CSVHeaders"); ok {
			r.CSVHeaders = h
			seen := map[string]bool{}
			for _, name := range h {
				if seen[name] {
					o.errorf("CSVHeaders", "CSVHeaders names the column %q twice", name)
				}
				seen[name] = true
			}
		}
		switch {
		case r.CSVHeaderLocation == "GIVEN" && len(r.CSVHeaders) == 0 && !o.has("CSVHeaders"):
			o.errorf("", "CSVHeaders is required when CSVHeaderLocation is GIVEN")
		case r.CSVHeaderLocation == "GIVEN" && len(r.CSVHeaders) == 0:
			o.errorf("CSVHeaders", "CSVHeaders must name at least one column")
		case r.CSVHeaderLocation == "FIRST_ROW" && o.has("CSVHeaders"):
			o.errorf("CSVHeaders", "CSVHeaders is only valid when CSVHeaderLocation is GIVEN")
		}
		if d, ok := o.oneOf("CSVDelimiter", "COMMA", "PIPE", "SEMICOLON", "SPACE", "TAB"); ok {
			r.CSVDelimiter = d
		}
	}
	if jsonataQL {
		r.MaxItems, _, r.MaxItemsExpr = p.jsonataInteger(o, "MaxItems", 1, MaxItemsLimit)
	} else {
		o.exclusive("MaxItems", "MaxItemsPath")
		r.MaxItems, _ = o.integer("MaxItems", 1, MaxItemsLimit)
		r.MaxItemsPath = p.optPath(o, "MaxItemsPath")
	}
	o.done("ReaderConfig")
}

func (p *parser) itemBatcher(o *object, jsonataQL bool) *ItemBatcher {
	b := &ItemBatcher{}
	if jsonataQL {
		b.MaxItemsPerBatch, _, b.MaxItemsPerBatchExpr = p.jsonataInteger(o, "MaxItemsPerBatch", 1, 1<<31-1)
		b.MaxInputBytesPerBatch, _, b.MaxInputBytesPerBatchExpr = p.jsonataInteger(o, "MaxInputBytesPerBatch", 1, MaxBatchBytes)
		b.BatchInputJSONata = p.jsonataTemplate(o, "BatchInput")
	} else {
		o.exclusive("MaxItemsPerBatch", "MaxItemsPerBatchPath")
		o.exclusive("MaxInputBytesPerBatch", "MaxInputBytesPerBatchPath")
		b.MaxItemsPerBatch, _ = o.integer("MaxItemsPerBatch", 1, 1<<31-1)
		b.MaxItemsPerBatchPath = p.optPath(o, "MaxItemsPerBatchPath")
		b.MaxInputBytesPerBatch, _ = o.integer("MaxInputBytesPerBatch", 1, MaxBatchBytes)
		b.MaxInputBytesPerBatchPath = p.optPath(o, "MaxInputBytesPerBatchPath")
		if v, ok := o.get("BatchInput"); ok {
			if _, isObj := v.(map[string]any); !isObj {
				o.errorf("BatchInput", "BatchInput must be an object, not %s", jsonvalue.TypeName(v))
			} else {
				b.BatchInput = p.template(o, "BatchInput")
			}
		}
	}
	set := false
	for _, k := range []string{"MaxItemsPerBatch", "MaxItemsPerBatchPath", "MaxInputBytesPerBatch", "MaxInputBytesPerBatchPath"} {
		set = set || o.has(k)
	}
	if !set {
		o.errorf("", "an ItemBatcher must set MaxItemsPerBatch or MaxInputBytesPerBatch (or their Path forms)")
	}
	o.done("ItemBatcher")
	return b
}

func (p *parser) resultWriter(o *object, jsonataQL bool) *ResultWriter {
	w := &ResultWriter{}
	located := o.has("Resource") || o.has("Parameters") || o.has("Arguments")
	switch {
	case !located && !o.has("WriterConfig"):
		o.errorf("", "a ResultWriter must give Resource (%s) and its location, WriterConfig, or all three", ResourcePutObject)
	case !located:
		// WriterConfig alone: the results are the state's, transformed.
	default:
		if res, ok := o.str("Resource"); ok && res != ResourcePutObject {
			o.errorf("Resource", "the ResultWriter Resource %q is not supported: want %s", res, ResourcePutObject)
		} else if !o.has("Resource") {
			o.errorf("", "missing required field Resource (%s)", ResourcePutObject)
		}
		w.Parameters, w.Arguments, w.Bucket, w.BucketPointer = p.location(o, jsonataQL, "Bucket", "Prefix")
	}
	if co, _ := o.child("WriterConfig", "WriterConfig"); co != nil {
		if t, ok := co.oneOf("OutputType", "JSON", "JSONL"); ok {
			w.OutputType = t
		}
		if t, ok := co.oneOf("Transformation", "NONE", "COMPACT", "FLATTEN"); ok {
			w.Transformation = t
		}
		co.done("WriterConfig")
	}
	o.done("ResultWriter")
	return w
}

// processorDefinition is the definition a Distributed Map's children run:
// its ItemProcessor without ProcessorConfig, with the processor's query
// language made explicit, so that it parses on its own (a child
// execution stores it, and is resumed from it).
func processorDefinition(v any, ql string) any {
	m, ok := v.(map[string]any)
	if !ok {
		return nil
	}
	d := maps.Clone(m)
	delete(d, "ProcessorConfig")
	if ql == JSONata {
		d["QueryLanguage"] = JSONata
	}
	return d
}
