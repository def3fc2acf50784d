package states

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/aslrun/aslrun/jsonvalue"
)

// FeedbackConfig is a Task's Feedback block: what people may say of the
// state's output once it ran, and how a value they give is checked (see
// Check).
//
// It is immutable after Parse and safe for concurrent use.
type FeedbackConfig struct {
	// Collect is false for a block with "Collect": false (no feedback is
	// asked for); true otherwise.
	Collect bool
	// Type is FeedbackRating, FeedbackThumbs, FeedbackChoice, FeedbackText
	// or FeedbackStructured.
	Type string
	// Scale is a rating's [min, max], min < max; [1, 5] when not given.
	// It is the zero value for the other types.
	Scale [2]float64
	// Labels are a choice's options: 2 to 50 distinct non-empty strings.
	// Nil for the other types.
	Labels []string
	// Question is what people are asked (plain text, at most 1000
	// characters); empty when not given.
	Question string
	// Fields are a structured block's fields: 1 to 50, with distinct
	// names. Nil for the other types.
	Fields []FeedbackField
	// Optional names the Fields a person may leave out (besides those
	// whose own Optional is true). Nil for the other types.
	Optional []string
	// Wait is true when the execution waits for the feedback before it
	// goes on to the Task's Next (or ends), as it waits at an Approval.
	Wait bool
	// Timeout, with Wait, bounds the wait: once it passes the execution
	// goes on without feedback. 0 means wait for ever.
	Timeout time.Duration
}

// FeedbackField is one field of a structured Feedback block.
//
// It is immutable after Parse and safe for concurrent use.
type FeedbackField struct {
	// Name is the field's key in the value people give.
	Name string
	// Type is FeedbackRating, FeedbackThumbs, FeedbackChoice,
	// FeedbackText, FeedbackNumber or FeedbackBoolean.
	Type string
	// Label is what a page shows for the field; empty when not given.
	Label string
	// Scale is a rating field's [min, max]; [1, 5] when not given.
	Scale [2]float64
	// Labels are a choice field's options, as a block's Labels.
	Labels []string
	// Optional is true when a person may leave the field out.
	Optional bool
}

// The types of a Feedback block, and of its Fields (which add
// FeedbackNumber and FeedbackBoolean and cannot be FeedbackStructured).
const (
	FeedbackRating     = "rating"
	FeedbackThumbs     = "thumbs"
	FeedbackChoice     = "choice"
	FeedbackText       = "text"
	FeedbackStructured = "structured"
	FeedbackNumber     = "number"
	FeedbackBoolean    = "boolean"
)

// The bounds of a Feedback block and of the values people give.
const (
	maxFeedbackLabels   = 50
	maxFeedbackFields   = 50
	maxFeedbackQuestion = 1000  // characters
	maxFeedbackName     = 200   // characters of a field's Name or Label
	maxFeedbackText     = 10000 // characters of a text value
)

// defaultFeedbackScale is a rating's Scale when none is given.
var defaultFeedbackScale = [2]float64{1, 5}

var (
	feedbackTypes      = []string{FeedbackRating, FeedbackThumbs, FeedbackChoice, FeedbackText, FeedbackStructured}
	feedbackFieldTypes = []string{FeedbackRating, FeedbackThumbs, FeedbackChoice, FeedbackText, FeedbackNumber, FeedbackBoolean}
)

// feedback reads a Task's Feedback block; nil when it has none or it is
// not an object.
func (p *parser) feedback(o *object) *FeedbackConfig {
	const key = "Feedback"
	fo, _ := o.child(key, "Feedback")
	if fo == nil {
		return nil
	}
	defer fo.done("Feedback")
	c := &FeedbackConfig{Collect: true}
	if b, ok := fo.boolean("Collect"); ok {
		c.Collect = b
	}
	if b, ok := fo.boolean("Wait"); ok {
		c.Wait = b
		if b && !c.Collect {
			fo.errorf("Wait", "Wait true needs Collect true: nothing is asked for, so nothing would end the wait")
		}
	}
	if d, ok := fo.duration("Timeout"); ok && !c.Wait {
		fo.errorf("Timeout", "Timeout bounds the wait for feedback, so it needs Wait true")
	} else if ok {
		c.Timeout = d
	}
	if _, ok := fo.get("Source"); ok {
		fo.errorf("Source", "Source is not supported: feedback is given through the API and the execution's page")
	}
	if _, ok := fo.get("Store"); ok {
		fo.errorf("Store", "Store is not supported: the server keeps feedback in its own store")
	}
	if q, ok := fo.str("Question"); ok {
		switch n := utf8.RuneCountInString(q); {
		case q == "":
			fo.errorf("Question", "Question must not be empty")
		case n > maxFeedbackQuestion:
			fo.errorf("Question", "Question must be at most %d characters, not %d", maxFeedbackQuestion, n)
		default:
			c.Question = q
		}
	}
	if _, ok := fo.m["Type"]; !ok {
		fo.errorf("", "missing required field Type (%s)", orList(feedbackTypes))
	}
	c.Type, _ = fo.oneOf("Type", feedbackTypes...)
	c.Scale = feedbackScale(fo, c.Type)
	c.Labels = feedbackLabels(fo, c.Type)
	if feedbackOnly(fo, "Fields", c.Type, FeedbackStructured) {
		c.Fields = p.feedbackFields(fo)
	}
	if c.Type == FeedbackStructured && !fo.has("Fields") {
		fo.errorf("", "missing required field Fields: a structured Feedback block lists its fields")
	}
	if feedbackOnly(fo, "Optional", c.Type, FeedbackStructured) {
		c.Optional = feedbackOptional(fo, c.Fields)
	}
	return c
}

// feedbackOnly reports whether key is present and may be, the block or field
// being of type want; present elsewhere it reports the problem (and
// returns false). A typ that is "" (not known) refuses nothing: its own
// error is reported already.
func feedbackOnly(o *object, key, typ, want string) bool {
	if _, ok := o.m[key]; !ok {
		return false
	}
	if typ != want {
		o.used[key] = true
		if typ != "" {
			o.errorf(key, "%s is only for Type %q, not %q", key, want, typ)
		}
		return false
	}
	return true
}

// feedbackScale reads the Scale of a rating block or field.
func feedbackScale(o *object, typ string) [2]float64 {
	if typ == FeedbackRating {
		if s, ok := feedbackScaleOf(o); ok {
			return s
		}
		return defaultFeedbackScale
	}
	feedbackOnly(o, "Scale", typ, FeedbackRating)
	return [2]float64{}
}

// feedbackScaleOf reads Scale as [min, max]: two finite numbers, min < max.
func feedbackScaleOf(o *object) ([2]float64, bool) {
	v, ok := o.get("Scale")
	if !ok {
		return [2]float64{}, false
	}
	arr, isArr := v.([]any)
	if !isArr || len(arr) != 2 {
		o.errorf("Scale", "Scale must be an array of two numbers [min, max], not %s", describeValue(v))
		return [2]float64{}, false
	}
	var s [2]float64
	for i, e := range arr {
		f, ok := feedbackFloat(e)
		if !ok {
			o.p.errorf(fmt.Sprintf("%s/%d", o.at("Scale"), i), o.state, "Scale[%d] must be a number, not %s", i, describeValue(e))
			return [2]float64{}, false
		}
		s[i] = f
	}
	if s[0] >= s[1] {
		o.errorf("Scale", "Scale's min must be smaller than its max, not [%g, %g]", s[0], s[1])
		return [2]float64{}, false
	}
	return s, true
}

// feedbackLabels reads the Labels of a choice block or field: required
// there, refused elsewhere.
func feedbackLabels(o *object, typ string) []string {
	if !feedbackOnly(o, "Labels", typ, FeedbackChoice) {
		if typ == FeedbackChoice {
			o.errorf("", "missing required field Labels: a choice lists its options")
		}
		return nil
	}
	labels, ok := o.strings("Labels")
	if !ok {
		return nil
	}
	if len(labels) < 2 || len(labels) > maxFeedbackLabels {
		o.errorf("Labels", "Labels must list 2 to %d options, not %d", maxFeedbackLabels, len(labels))
		return nil
	}
	seen := make(map[string]bool, len(labels))
	for i, l := range labels {
		ptr := fmt.Sprintf("%s/%d", o.at("Labels"), i)
		switch {
		case l == "":
			o.p.errorf(ptr, o.state, "Labels[%d] must not be empty", i)
			return nil
		case seen[l]:
			o.p.errorf(ptr, o.state, "Labels[%d] %q is listed twice", i, l)
			return nil
		}
		seen[l] = true
	}
	return labels
}

// feedbackFields reads a structured block's Fields.
func (p *parser) feedbackFields(fo *object) []FeedbackField {
	v, _ := fo.get("Fields")
	arr, ok := v.([]any)
	if !ok {
		fo.errorf("Fields", "Fields must be an array of objects, not %s", jsonvalue.TypeName(v))
		return nil
	}
	if len(arr) < 1 || len(arr) > maxFeedbackFields {
		fo.errorf("Fields", "Fields must list 1 to %d fields, not %d", maxFeedbackFields, len(arr))
		return nil
	}
	fields := make([]FeedbackField, 0, len(arr))
	seen := make(map[string]int, len(arr))
	good := true
	for i, e := range arr {
		ptr := fmt.Sprintf("%s/%d", fo.at("Fields"), i)
		f, ok := p.feedbackField(e, ptr, fo.state, i)
		if !ok {
			good = false
			continue
		}
		if j, dup := seen[f.Name]; dup {
			p.errorf(ptr+"/Name", fo.state, "Fields[%d] has the Name %q of Fields[%d]", i, f.Name, j)
			good = false
			continue
		}
		seen[f.Name] = i
		fields = append(fields, f)
	}
	if !good {
		return nil
	}
	return fields
}

// feedbackField reads Fields[i]; ok is false when it has a problem.
func (p *parser) feedbackField(v any, ptr, state string, i int) (FeedbackField, bool) {
	before := len(p.errs)
	o := p.newObject(v, ptr, state, fmt.Sprintf("Fields[%d]", i))
	if o == nil {
		return FeedbackField{}, false
	}
	defer o.done("a Feedback field")
	var f FeedbackField
	if name, ok := o.requiredStr("Name"); ok {
		if n := utf8.RuneCountInString(name); n > maxFeedbackName {
			o.errorf("Name", "Name must be at most %d characters, not %d", maxFeedbackName, n)
		}
		f.Name = name
	}
	if _, ok := o.m["Type"]; !ok {
		o.errorf("", "missing required field Type (%s)", orList(feedbackFieldTypes))
	}
	f.Type, _ = o.oneOf("Type", feedbackFieldTypes...)
	if label, ok := o.str("Label"); ok {
		if n := utf8.RuneCountInString(label); n > maxFeedbackName {
			o.errorf("Label", "Label must be at most %d characters, not %d", maxFeedbackName, n)
		}
		f.Label = label
	}
	f.Scale = feedbackScale(o, f.Type)
	f.Labels = feedbackLabels(o, f.Type)
	f.Optional, _ = o.boolean("Optional")
	return f, len(p.errs) == before
}

// feedbackOptional reads a structured block's Optional: distinct names of
// its fields.
func feedbackOptional(fo *object, fields []FeedbackField) []string {
	names, ok := fo.strings("Optional")
	if !ok {
		return nil
	}
	known := make(map[string]bool, len(fields))
	for _, f := range fields {
		known[f.Name] = true
	}
	seen := make(map[string]bool, len(names))
	for i, n := range names {
		ptr := fmt.Sprintf("%s/%d", fo.at("Optional"), i)
		switch {
		case seen[n]:
			fo.p.errorf(ptr, fo.state, "Optional[%d] %q is listed twice", i, n)
			return nil
		case fields != nil && !known[n]:
			fo.p.errorf(ptr, fo.state, "Optional[%d] %q is not the Name of one of the Fields", i, n)
			return nil
		}
		seen[n] = true
	}
	return names
}

// describeValue writes v for an error: its JSON, clipped, or its type.
func describeValue(v any) string {
	js, err := jsonvalue.Marshal(v)
	if err != nil {
		return jsonvalue.TypeName(v)
	}
	return clip(string(js))
}

// FeedbackError is a value given as feedback that its block refuses.
type FeedbackError struct {
	// Path is the written JSON path of the wrong part of the value: $ for
	// the value itself, $.name for a structured field.
	Path string
	// Msg says what is wrong.
	Msg string
}

// Error returns "Path: Msg".
func (e *FeedbackError) Error() string { return e.Path + ": " + e.Msg }

// Check checks a value a person gave as feedback against the block and
// returns it normalised: a rating is a json.Number within Scale; thumbs is
// "up" or "down" (true and false are taken for them); a choice is one of
// Labels; a text is a string of 1 to 10000 characters of valid UTF-8
// without NUL; a structured value is a new object with the Fields' values
// normalised by their types (a number field: a json.Number, a boolean
// field: a bool), an optional field left out or null missing from it.
// Anything else is a *FeedbackError naming where in the value the problem
// is. Numbers are json.Number (as jsonvalue.Decode gives them) or float64.
func (c *FeedbackConfig) Check(value any) (any, error) {
	if c == nil {
		return nil, &FeedbackError{Path: "$", Msg: "the state asks for no feedback"}
	}
	if c.Type != FeedbackStructured {
		return checkFeedback("$", c.Type, c.Scale, c.Labels, value)
	}
	m, ok := value.(map[string]any)
	if !ok {
		return nil, &FeedbackError{Path: "$", Msg: "must be an object of the fields " + fieldNames(c.Fields) + ", not " + jsonvalue.TypeName(value)}
	}
	known := make(map[string]bool, len(c.Fields))
	for _, f := range c.Fields {
		known[f.Name] = true
	}
	for _, k := range sortedKeys(m) {
		if !known[k] {
			return nil, &FeedbackError{Path: fieldPath(clip(k)), Msg: "is not one of the fields " + fieldNames(c.Fields)}
		}
	}
	out := make(map[string]any, len(m))
	for _, f := range c.Fields {
		path := fieldPath(f.Name)
		v, present := m[f.Name]
		if !present || v == nil {
			if f.Optional || slices.Contains(c.Optional, f.Name) {
				continue
			}
			if !present {
				return nil, &FeedbackError{Path: path, Msg: "is missing: the field is not optional"}
			}
		}
		n, err := checkFeedback(path, f.Type, f.Scale, f.Labels, v)
		if err != nil {
			return nil, err
		}
		out[f.Name] = n
	}
	return out, nil
}

// checkFeedback checks v, at path, as a value of type typ.
func checkFeedback(path, typ string, scale [2]float64, labels []string, v any) (any, error) {
	bad := func(format string, args ...any) (any, error) {
		return nil, &FeedbackError{Path: path, Msg: fmt.Sprintf(format, args...)}
	}
	switch typ {
	case FeedbackRating, FeedbackNumber:
		f, ok := feedbackFloat(v)
		if !ok {
			return bad("must be a number, not %s", describeValue(v))
		}
		if typ == FeedbackRating && (f < scale[0] || f > scale[1]) {
			return bad("must be a rating between %g and %g, not %s", scale[0], scale[1], describeValue(v))
		}
		return jsonvalue.FloatNumber(f), nil
	case FeedbackThumbs:
		switch v {
		case "up", true:
			return "up", nil
		case "down", false:
			return "down", nil
		}
		return bad(`must be "up" or "down" (or true or false), not %s`, describeValue(v))
	case FeedbackChoice:
		if s, ok := v.(string); ok && slices.Contains(labels, s) {
			return s, nil
		}
		return bad("must be one of %s, not %s", orList(labels), describeValue(v))
	case FeedbackText:
		s, ok := v.(string)
		switch {
		case !ok:
			return bad("must be a string, not %s", jsonvalue.TypeName(v))
		case s == "":
			return bad("must not be empty")
		case !utf8.ValidString(s):
			return bad("must be valid UTF-8")
		case strings.IndexByte(s, 0) >= 0:
			return bad("must not contain NUL characters")
		}
		if n := utf8.RuneCountInString(s); n > maxFeedbackText {
			return bad("must be at most %d characters, not %d", maxFeedbackText, n)
		}
		return s, nil
	case FeedbackBoolean:
		if b, ok := v.(bool); ok {
			return b, nil
		}
		return bad("must be true or false, not %s", describeValue(v))
	}
	return bad("cannot be checked: the feedback type %q is not known", typ)
}

// feedbackFloat returns v as a finite float64 when it is a JSON number.
func feedbackFloat(v any) (float64, bool) {
	var f float64
	switch n := v.(type) {
	case json.Number:
		var ok bool
		if f, ok = jsonvalue.Float64(n); !ok {
			return 0, false
		}
	case float64:
		f = n
	default:
		return 0, false
	}
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, false
	}
	return f, true
}

// fieldPath is the written path of a structured value's field.
func fieldPath(name string) string {
	return string(jsonvalue.AppendMember([]byte{'$'}, name))
}

// fieldNames lists the fields' names for an error, quoted.
func fieldNames(fields []FeedbackField) string {
	names := make([]string, len(fields))
	for i, f := range fields {
		names[i] = f.Name
	}
	return quoteList(names)
}
