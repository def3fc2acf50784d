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
}

// Items yields items one at a time. It is not safe for concurrent use.
type Items interface {
	// Next returns the next item, or io.EOF after the last. Any other
	// error is final and says where the problem is (item or line number).
	Next() (any, error)
}

// maxLine bounds one JSONL line or CSV row, in bytes.
const maxLine = 16 << 20

// Decode reads r in format f. Only the item being decoded is held, with
// the decoder's buffer.
func Decode(r io.Reader, f Format) (Items, error) {
	switch f.InputType {
	case JSON, "":
		return &jsonItems{dec: json.NewDecoder(r)}, nil
	case JSONL:
		sc := bufio.NewScanner(r)
		sc.Buffer(make([]byte, 0, 64<<10), maxLine)
		return &jsonlItems{sc: sc}, nil
	case CSV:
		return newCSV(r, f)
	}
	return nil, fmt.Errorf("unknown InputType %q (want JSON, JSONL or CSV)", f.InputType)
}

// jsonItems streams the elements of a JSON array.
type jsonItems struct {
	dec   *json.Decoder
	n     int
	begun bool
	done  bool
}

func (j *jsonItems) Next() (any, error) {
	if j.done {
		return nil, io.EOF
	}
	if !j.begun {
		j.begun = true
		tok, err := j.dec.Token()
		if err == io.EOF {
			return nil, errors.New("the JSON object is empty: want an array of items")
		}
		if err != nil {
			return nil, fmt.Errorf("the JSON object is not valid JSON: %w", err)
		}
		if d, ok := tok.(json.Delim); !ok || d != '[' {
			return nil, fmt.Errorf("the JSON object must be an array of items, not %s", tokenKind(tok))
		}
	}
	if !j.dec.More() {
		if _, err := j.dec.Token(); err != nil {
			return nil, fmt.Errorf("the JSON array is not valid JSON after item %d: %w", j.n, err)
		}
		if _, err := j.dec.Token(); err != io.EOF {
			return nil, fmt.Errorf("the JSON object has content after its array")
		}
		j.done = true
		return nil, io.EOF
	}
	var raw json.RawMessage
	if err := j.dec.Decode(&raw); err != nil {
		return nil, fmt.Errorf("item %d of the JSON array is not valid JSON: %w", j.n, err)
	}
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
	sc   *bufio.Scanner
	line int
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
	if err := j.sc.Err(); err != nil {
		return nil, fmt.Errorf("line %d of the JSONL object: %w", j.line+1, err)
	}
	return nil, io.EOF
}

// csvItems reads CSV rows as objects of strings, keyed by the header.
type csvItems struct {
	r      *csv.Reader
	header []string
	first  bool
}

func newCSV(r io.Reader, f Format) (*csvItems, error) {
	cr := csv.NewReader(r)
	cr.ReuseRecord = true
	cr.FieldsPerRecord = -1
	if f.CSVDelimiter != 0 {
		cr.Comma = f.CSVDelimiter
	}
	c := &csvItems{r: cr}
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

// List returns the listObjectsV2 items (ListItem) of the objects of b
// whose key starts with prefix, in key order. It holds the listing (the
// keys and sizes, not the contents).
func List(ctx context.Context, b Bucket, prefix string) (Items, error) {
	var objs []any
	err := b.List(ctx, prefix, func(o Object) error {
		objs = append(objs, ListItem(o))
		return nil
	})
	if err != nil {
		return nil, err
	}
	return Slice(objs), nil
}
