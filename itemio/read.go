package itemio

import (
	"bufio"
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"

	"github.com/aslrun/aslrun/jsonvalue"
)

// The input types of a ReaderConfig (AWS's InputType).
const (
	JSON  = "JSON"
	JSONL = "JSONL"
	CSV   = "CSV"
)

// The header locations of a CSV ReaderConfig (AWS's CSVHeaderLocation).
const (
	FirstRow = "FIRST_ROW"
	Given    = "GIVEN"
)

// Format says how an object's content is read as items: AWS's
// ReaderConfig, less MaxItems (which the caller applies).
type Format struct {
	// InputType is JSON, JSONL or CSV; "" means JSON.
	InputType string
	// CSVHeaderLocation is FIRST_ROW ("" too) or GIVEN, with the column
	// names in CSVHeaders.
	CSVHeaderLocation string
	CSVHeaders        []string
	// CSVDelimiter separates CSV fields; 0 means ','.
	CSVDelimiter rune
	// MaxItemBytes caps what is held of one item: a CSV row or a JSONL
	// line, its line ending counted, or an element of a JSON array; 0
	// means DefaultMaxItemBytes. A longer one fails the read with an
	// error wrapping ErrItemTooLarge that says where it is and the limit.
	MaxItemBytes int
}

// DefaultMaxItemBytes is the default Format.MaxItemBytes: 1 MiB.
const DefaultMaxItemBytes = 1 << 20

// ErrItemTooLarge reports an item longer than Format.MaxItemBytes.
var ErrItemTooLarge = errors.New("item too large")

// errRead is what a bounded reader returns once an item has run past
// its room; Items report it as ErrItemTooLarge with where it is.
var errRead = errors.New("read past the item size limit")

// Items yields items one at a time. It is not safe for concurrent use.
type Items interface {
	// Next returns the next item, or io.EOF after the last. Any other
	// error is final and says where the problem is (item or line number).
	Next() (any, error)
}

// slack is how far past an item's limit a decoder may read ahead (its
// buffer): reading stops there, so that what is held stays within the
// limit and the slack, whatever the object.
const slack = 4096

// Decode reads r in format f. Only the item being decoded is held, with
// the decoder's buffer: at most f.MaxItemBytes and a few KiB, however
// long the object or its lines.
func Decode(r io.Reader, f Format) (Items, error) {
	limit := f.MaxItemBytes
	if limit <= 0 {
		limit = DefaultMaxItemBytes
	}
	switch f.InputType {
	case JSON, "":
		br := &bounded{r: r, room: int64(limit) + slack}
		return &jsonItems{dec: json.NewDecoder(br), br: br, limit: limit}, nil
	case JSONL:
		sc := bufio.NewScanner(r)
		sc.Buffer(make([]byte, 0, min(64<<10, limit)), limit)
		return &jsonlItems{sc: sc, limit: limit}, nil
	case CSV:
		return newCSV(r, f, limit)
	}
	return nil, fmt.Errorf("unknown InputType %q (want JSON, JSONL or CSV)", f.InputType)
}

// bounded reads r for a decoder, never more than room bytes past base
// (where the item being decoded starts): past that it fails with
// errRead, so that a decoder's buffer cannot grow beyond room. It
// counts the newlines it read.
type bounded struct {
	r     io.Reader
	n     int64 // bytes read
	lines int64 // newlines among them
	base  int64
	room  int64
}

func (b *bounded) Read(p []byte) (int, error) {
	left := b.base + b.room - b.n
	if left <= 0 {
		return 0, errRead
	}
	if int64(len(p)) > left {
		p = p[:left]
	}
	n, err := b.r.Read(p)
	b.n += int64(n)
	b.lines += int64(bytes.Count(p[:n], []byte{'\n'}))
	return n, err
}

// jsonItems streams the elements of a JSON array.
type jsonItems struct {
	dec   *json.Decoder
	br    *bounded
	limit int
	n     int
	begun bool
	done  bool
}

// tooLarge is the error of item n of a JSON array (or of the value
// before it) being longer than the limit.
func (j *jsonItems) tooLarge() error {
	if j.br.base == 0 {
		return fmt.Errorf("the JSON object's first value is longer than the limit of %d bytes: %w", j.limit, ErrItemTooLarge)
	}
	return fmt.Errorf("item %d of the JSON array (at byte %d) is longer than the limit of %d bytes: %w", j.n, j.br.base, j.limit, ErrItemTooLarge)
}

func (j *jsonItems) Next() (any, error) {
	if j.done {
		return nil, io.EOF
	}
	if !j.begun {
		j.begun = true
		tok, err := j.dec.Token()
		if errors.Is(err, errRead) {
			return nil, j.tooLarge()
		}
		if err == io.EOF {
			return nil, errors.New("the JSON object is empty: want an array of items")
		}
		if err != nil {
			return nil, fmt.Errorf("the JSON object is not valid JSON: %w", err)
		}
		if d, ok := tok.(json.Delim); !ok || d != '[' {
			return nil, fmt.Errorf("the JSON object must be an array of items, not %s", tokenKind(tok))
		}
		j.br.base = j.dec.InputOffset()
	}
	if !j.dec.More() {
		if _, err := j.dec.Token(); errors.Is(err, errRead) {
			return nil, j.tooLarge()
		} else if err != nil {
			return nil, fmt.Errorf("the JSON array is not valid JSON after item %d: %w", j.n, err)
		}
		if _, err := j.dec.Token(); err != io.EOF {
			return nil, fmt.Errorf("the JSON object has content after its array")
		}
		j.done = true
		return nil, io.EOF
	}
	var raw json.RawMessage
	err := j.dec.Decode(&raw)
	if errors.Is(err, errRead) || err == nil && len(raw) > j.limit {
		return nil, j.tooLarge()
	}
	if err != nil {
		return nil, fmt.Errorf("item %d of the JSON array is not valid JSON: %w", j.n, err)
	}
	j.br.base = j.dec.InputOffset()
	v, err := jsonvalue.Decode(raw)
	if err != nil {
		return nil, fmt.Errorf("item %d of the JSON array: %w", j.n, err)
	}
	j.n++
	return v, nil
}

func tokenKind(tok json.Token) string {
	switch t := tok.(type) {
	case json.Delim:
		if t == '{' {
			return "an object"
		}
		return "an array"
	case string:
		return "a string"
	case float64, json.Number:
		return "a number"
	case bool:
		return "a boolean"
	}
	return "null"
}

// jsonlItems reads one JSON value a line; blank lines are skipped.
type jsonlItems struct {
	sc    *bufio.Scanner
	limit int
	line  int
}

func (j *jsonlItems) Next() (any, error) {
	for j.sc.Scan() {
		j.line++
		b := bytes.TrimSpace(j.sc.Bytes())
		if len(b) == 0 {
			continue
		}
		v, err := jsonvalue.Decode(b)
		if err != nil {
			return nil, fmt.Errorf("line %d of the JSONL object: %w", j.line, err)
		}
		return v, nil
	}
	if err := j.sc.Err(); errors.Is(err, bufio.ErrTooLong) {
		return nil, fmt.Errorf("line %d of the JSONL object is longer than the limit of %d bytes: %w", j.line+1, j.limit, ErrItemTooLarge)
	} else if err != nil {
		return nil, fmt.Errorf("line %d of the JSONL object: %w", j.line+1, err)
	}
	return nil, io.EOF
}

// csvItems reads CSV rows as objects of strings, keyed by the header.
// A row may span lines (a quoted field holding newlines); it is bounded
// as a whole: the csv.Reader reads through buf, whose reader stops slack
// bytes past the limit from the row's start.
type csvItems struct {
	r      *csv.Reader
	buf    *bufio.Reader
	br     *bounded
	limit  int
	line   int64 // where the next row starts
	header []string
	first  bool
}

func newCSV(r io.Reader, f Format, limit int) (*csvItems, error) {
	br := &bounded{r: r, room: int64(limit) + slack}
	// csv.NewReader reads through a *bufio.Reader of 4,096 bytes or more
	// as it is, so that buf.Buffered() is all it read ahead.
	buf := bufio.NewReaderSize(br, slack)
	cr := csv.NewReader(buf)
	cr.ReuseRecord = true
	cr.FieldsPerRecord = -1
	if f.CSVDelimiter != 0 {
		cr.Comma = f.CSVDelimiter
	}
	c := &csvItems{r: cr, buf: buf, br: br, limit: limit, line: 1}
	switch f.CSVHeaderLocation {
	case FirstRow, "":
		c.first = true
	case Given:
		if len(f.CSVHeaders) == 0 {
			return nil, errors.New("CSVHeaders must name the columns when CSVHeaderLocation is GIVEN")
		}
		if err := checkHeader(f.CSVHeaders); err != nil {
			return nil, err
		}
		c.header = slices.Clone(f.CSVHeaders)
	default:
		return nil, fmt.Errorf("unknown CSVHeaderLocation %q (want FIRST_ROW or GIVEN)", f.CSVHeaderLocation)
	}
	return c, nil
}

func checkHeader(h []string) error {
	seen := make(map[string]bool, len(h))
	for i, name := range h {
		if seen[name] {
			return fmt.Errorf("CSV header column %d repeats the name %q", i+1, name)
		}
		seen[name] = true
	}
	return nil
}

func (c *csvItems) Next() (any, error) {
	for {
		rec, err := c.r.Read()
		if errors.Is(err, errRead) {
			return nil, c.tooLarge()
		}
		if err == nil {
			if err := c.advance(); err != nil {
				return nil, err
			}
		}
		if err == io.EOF {
			if c.first {
				return nil, errors.New("the CSV object is empty: its first row should be the header")
			}
			return nil, io.EOF
		}
		if err != nil {
			return nil, fmt.Errorf("the CSV object: %w", err)
		}
		line, _ := c.r.FieldPos(0)
		if c.first {
			c.first = false
			c.header = slices.Clone(rec)
			if err := checkHeader(c.header); err != nil {
				return nil, fmt.Errorf("line %d of the CSV object: %w", line, err)
			}
			continue
		}
		if len(rec) > len(c.header) {
			return nil, fmt.Errorf("line %d of the CSV object has %d fields, more than the %d columns of the header", line, len(rec), len(c.header))
		}
		// AWS gives every value as a string; a short row leaves the
		// missing columns empty.
		item := make(map[string]any, len(c.header))
		for i, name := range c.header {
			v := ""
			if i < len(rec) {
				v = rec[i]
			}
			item[name] = v
		}
		return item, nil
	}
}

// advance moves the start of the next row past the row just read, which
// must fit the limit.
func (c *csvItems) advance() error {
	off := c.r.InputOffset()
	if off-c.br.base > int64(c.limit) {
		return c.tooLarge()
	}
	ahead, _ := c.buf.Peek(c.buf.Buffered())
	c.line = c.br.lines - int64(bytes.Count(ahead, []byte{'\n'})) + 1
	c.br.base = off
	return nil
}

// tooLarge is the error of the row starting at c.line (blank lines
// before it included) being longer than the limit.
func (c *csvItems) tooLarge() error {
	return fmt.Errorf("line %d of the CSV object: the row is longer than the limit of %d bytes: %w", c.line, c.limit, ErrItemTooLarge)
}

// ListItem is the item AWS gives for one object of a listObjectsV2
// ItemReader: {"Etag", "Key", "LastModified" (Unix seconds), "Size",
// "StorageClass"}.
func ListItem(o Object) map[string]any {
	item := map[string]any{
		"Key":          o.Key,
		"Size":         json.Number(strconv.FormatInt(o.Size, 10)),
		"LastModified": json.Number(strconv.FormatInt(o.LastModified.Unix(), 10)),
		"StorageClass": "STANDARD",
	}
	if o.ETag != "" {
		item["Etag"] = `"` + o.ETag + `"`
	}
	return item
}

// Limit returns items cut after max items; max <= 0 means no limit.
func Limit(items Items, max int64) Items {
	if max <= 0 {
		return items
	}
	return &limited{items: items, left: max}
}

type limited struct {
	items Items
	left  int64
}

func (l *limited) Next() (any, error) {
	if l.left <= 0 {
		return nil, io.EOF
	}
	l.left--
	return l.items.Next()
}

// Slice returns items yielding the elements of a.
func Slice(a []any) Items { return &sliceItems{a: a} }

type sliceItems struct {
	a []any
	i int
}

func (s *sliceItems) Next() (any, error) {
	if s.i >= len(s.a) {
		return nil, io.EOF
	}
	v := s.a[s.i]
	s.i++
	return v, nil
}

// DefaultMaxListed is the default limit of List: 1,000,000 objects.
const DefaultMaxListed = 1000000

// ErrTooManyObjects reports a listing longer than List's limit.
var ErrTooManyObjects = errors.New("too many objects")

// errEnough stops a listing that has all the items it needs.
var errEnough = errors.New("enough objects")

// List returns the listObjectsV2 items (ListItem) of the first maxItems
// objects of b (all when maxItems <= 0) whose key starts with prefix, in
// key order. It holds the listing (the keys and sizes, not the
// contents), so it holds at most maxListed objects (0 means
// DefaultMaxListed): a listing of more fails with an error wrapping
// ErrTooManyObjects that names the prefix and the limit.
func List(ctx context.Context, b Bucket, prefix string, maxItems int64, maxListed int) (Items, error) {
	if maxListed <= 0 {
		maxListed = DefaultMaxListed
	}
	var objs []any
	err := b.List(ctx, prefix, func(o Object) error {
		if maxItems > 0 && int64(len(objs)) >= maxItems {
			return errEnough
		}
		if len(objs) >= maxListed {
			return fmt.Errorf("the listing of prefix %q has more than %d objects, the limit: %w", prefix, maxListed, ErrTooManyObjects)
		}
		objs = append(objs, ListItem(o))
		return nil
	})
	if err != nil && err != errEnough {
		return nil, err
	}
	return Slice(objs), nil
}
