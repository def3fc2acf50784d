package states

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aslrun/aslrun/jsonvalue"
)

// parseFeedback reads block (JSON text) as the Feedback block of a Task
// state T at /States/T, and returns what the parser made of it and the
// problems it reported.
func parseFeedback(t testing.TB, block string) (*FeedbackConfig, ErrorList) {
	t.Helper()
	v, err := jsonvalue.Decode([]byte(block))
	if err != nil {
		t.Fatalf("Decode(%q): %v", block, err)
	}
	p := &parser{}
	o := p.newObject(map[string]any{"Type": "Task", "Feedback": v}, "/States/T", "T", "a state")
	return p.feedback(o), p.errs
}

// mustFeedback is parseFeedback of a block that must parse.
func mustFeedback(t testing.TB, block string) *FeedbackConfig {
	t.Helper()
	c, errs := parseFeedback(t, block)
	if len(errs) > 0 || c == nil {
		t.Fatalf("feedback(%s) = %+v, errors:\n%v", block, c, errs)
	}
	return c
}

func TestFeedbackBlock(t *testing.T) {
	tests := []struct {
		name  string
		block string
		want  *FeedbackConfig
	}{
		{"rating default scale", `{"Type": "rating"}`,
			&FeedbackConfig{Collect: true, Type: FeedbackRating, Scale: [2]float64{1, 5}}},
		{"rating scale question", `{"Collect": true, "Type": "rating", "Scale": [0, 10.5], "Question": "How useful was this summary?"}`,
			&FeedbackConfig{Collect: true, Type: FeedbackRating, Scale: [2]float64{0, 10.5}, Question: "How useful was this summary?"}},
		{"negative scale", `{"Type": "rating", "Scale": [-2, 2]}`,
			&FeedbackConfig{Collect: true, Type: FeedbackRating, Scale: [2]float64{-2, 2}}},
		{"thumbs off", `{"Collect": false, "Type": "thumbs"}`,
			&FeedbackConfig{Type: FeedbackThumbs}},
		{"thumbs waits", `{"Type": "thumbs", "Wait": true}`,
			&FeedbackConfig{Collect: true, Type: FeedbackThumbs, Wait: true}},
		{"wait false without collecting", `{"Type": "thumbs", "Collect": false, "Wait": false}`,
			&FeedbackConfig{Type: FeedbackThumbs}},
		{"wait with a timeout", `{"Type": "rating", "Wait": true, "Timeout": "30m"}`,
			&FeedbackConfig{Collect: true, Type: FeedbackRating, Scale: [2]float64{1, 5}, Wait: true, Timeout: 30 * time.Minute}},
		{"wait with a timeout in bare seconds", `{"Type": "text", "Timeout": "90", "Wait": true}`,
			&FeedbackConfig{Collect: true, Type: FeedbackText, Wait: true, Timeout: 90 * time.Second}},
		{"wait with a timeout in days", `{"Type": "thumbs", "Wait": true, "Timeout": "7d"}`,
			&FeedbackConfig{Collect: true, Type: FeedbackThumbs, Wait: true, Timeout: 7 * 24 * time.Hour}},
		{"choice", `{"Type": "choice", "Labels": ["accurate", "partly", "wrong"]}`,
			&FeedbackConfig{Collect: true, Type: FeedbackChoice, Labels: []string{"accurate", "partly", "wrong"}}},
		{"text", `{"Type": "text", "Question": "What should change?"}`,
			&FeedbackConfig{Collect: true, Type: FeedbackText, Question: "What should change?"}},
		{"structured", `{"Type": "structured", "Fields": [
			{"Name": "accuracy", "Type": "rating", "Scale": [1, 10], "Label": "Accuracy"},
			{"Name": "tone", "Type": "choice", "Labels": ["formal", "casual"]},
			{"Name": "helpful", "Type": "thumbs"},
			{"Name": "notes", "Type": "text", "Optional": true},
			{"Name": "minutes saved", "Type": "number"},
			{"Name": "publish", "Type": "boolean"},
			{"Name": "stars", "Type": "rating"}
		], "Optional": ["minutes saved"]}`,
			&FeedbackConfig{Collect: true, Type: FeedbackStructured, Fields: []FeedbackField{
				{Name: "accuracy", Type: FeedbackRating, Scale: [2]float64{1, 10}, Label: "Accuracy"},
				{Name: "tone", Type: FeedbackChoice, Labels: []string{"formal", "casual"}},
				{Name: "helpful", Type: FeedbackThumbs},
				{Name: "notes", Type: FeedbackText, Optional: true},
				{Name: "minutes saved", Type: FeedbackNumber},
				{Name: "publish", Type: FeedbackBoolean},
				{Name: "stars", Type: FeedbackRating, Scale: [2]float64{1, 5}},
			}, Optional: []string{"minutes saved"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := mustFeedback(t, tt.block)
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("feedback(%s) =\n%+v\nwant\n%+v", tt.block, got, tt.want)
			}
		})
	}
}

func TestFeedbackBlockAbsent(t *testing.T) {
	p := &parser{}
	o := p.newObject(map[string]any{"Type": "Task"}, "/States/T", "T", "a state")
	if c := p.feedback(o); c != nil || len(p.errs) > 0 {
		t.Errorf("feedback of a Task without the block = %+v, %v; want nil, no errors", c, p.errs)
	}
}

func TestFeedbackBlockRefused(t *testing.T) {
	const at = "/States/T/Feedback"
	tests := []struct {
		name  string
		block string
		want  []string // every problem, in order
	}{
		{"not an object", `"rating"`,
			[]string{`/States/T/Feedback (T): Feedback must be an object, not string`}},
		{"no type", `{"Question": "How was it?"}`,
			[]string{at + ` (T): missing required field Type ("rating", "thumbs", "choice", "text" or "structured")`}},
		{"unknown type", `{"Type": "stars"}`,
			[]string{at + `/Type (T): Type must be one of "rating", "thumbs", "choice", "text" or "structured", not "stars"`}},
		{"type not a string", `{"Type": 5}`,
			[]string{at + `/Type (T): Type must be a string, not number`}},
		{"collect not a boolean", `{"Type": "thumbs", "Collect": "yes"}`,
			[]string{at + `/Collect (T): Collect must be a boolean, not string`}},
		{"wait without collect", `{"Type": "thumbs", "Collect": false, "Wait": true}`,
			[]string{at + `/Wait (T): Wait true needs Collect true: nothing is asked for, so nothing would end the wait`}},
		{"wait not a boolean", `{"Type": "thumbs", "Wait": "yes"}`,
			[]string{at + `/Wait (T): Wait must be a boolean, not string`}},
		{"timeout without wait", `{"Type": "thumbs", "Timeout": "1h"}`,
			[]string{at + `/Timeout (T): Timeout bounds the wait for feedback, so it needs Wait true`}},
		{"timeout with wait false", `{"Type": "thumbs", "Wait": false, "Timeout": "1h"}`,
			[]string{at + `/Timeout (T): Timeout bounds the wait for feedback, so it needs Wait true`}},
		{"timeout zero", `{"Type": "thumbs", "Wait": true, "Timeout": "0s"}`,
			[]string{at + `/Timeout (T): Timeout must be greater than zero, not "0s"`}},
		{"timeout not a duration", `{"Type": "thumbs", "Wait": true, "Timeout": "1h30m"}`,
			[]string{at + `/Timeout (T): Timeout must be a duration (bare seconds, or a whole number followed by ms, s, m, h, d or w, like "30m" or "7d"), not "1h30m"`}},
		{"timeout a number", `{"Type": "thumbs", "Wait": true, "Timeout": 60}`,
			[]string{at + `/Timeout (T): Timeout must be a duration string (bare seconds, or a whole number followed by ms, s, m, h, d or w, like "30m" or "7d"), not number`}},
		{"source", `{"Type": "thumbs", "Source": "slack"}`,
			[]string{at + `/Source (T): Source is not supported: feedback is given through the API and the execution's page`}},
		{"store", `{"Type": "thumbs", "Store": "feedback-db"}`,
			[]string{at + `/Store (T): Store is not supported: the server keeps feedback in its own store`}},
		{"unknown field", `{"Type": "thumbs", "Channel": "x"}`,
			[]string{at + `/Channel (T): unknown field "Channel" in Feedback`}},
		{"empty question", `{"Type": "thumbs", "Question": ""}`,
			[]string{at + `/Question (T): Question must not be empty`}},
		{"long question", `{"Type": "thumbs", "Question": "` + strings.Repeat("é", 1001) + `"}`,
			[]string{at + `/Question (T): Question must be at most 1000 characters, not 1001`}},
		{"scale on thumbs", `{"Type": "thumbs", "Scale": [1, 5]}`,
			[]string{at + `/Scale (T): Scale is only for Type "rating", not "thumbs"`}},
		{"scale one number", `{"Type": "rating", "Scale": [5]}`,
			[]string{at + `/Scale (T): Scale must be an array of two numbers [min, max], not [5]`}},
		{"scale not numbers", `{"Type": "rating", "Scale": [1, "10"]}`,
			[]string{at + `/Scale/1 (T): Scale[1] must be a number, not "10"`}},
		{"scale too big", `{"Type": "rating", "Scale": [1, 1e400]}`,
			[]string{at + `/Scale/1 (T): Scale[1] must be a number, not 1e400`}},
		{"scale reversed", `{"Type": "rating", "Scale": [5, 1]}`,
			[]string{at + `/Scale (T): Scale's min must be smaller than its max, not [5, 1]`}},
		{"scale empty range", `{"Type": "rating", "Scale": [3, 3]}`,
			[]string{at + `/Scale (T): Scale's min must be smaller than its max, not [3, 3]`}},
		{"choice without labels", `{"Type": "choice"}`,
			[]string{at + ` (T): missing required field Labels: a choice lists its options`}},
		{"one label", `{"Type": "choice", "Labels": ["only"]}`,
			[]string{at + `/Labels (T): Labels must list 2 to 50 options, not 1`}},
		{"empty label", `{"Type": "choice", "Labels": ["a", ""]}`,
			[]string{at + `/Labels/1 (T): Labels[1] must not be empty`}},
		{"label twice", `{"Type": "choice", "Labels": ["a", "b", "a"]}`,
			[]string{at + `/Labels/2 (T): Labels[2] "a" is listed twice`}},
		{"label not a string", `{"Type": "choice", "Labels": ["a", 2]}`,
			[]string{at + `/Labels/1 (T): Labels[1] must be a string, not number`}},
		{"too many labels", `{"Type": "choice", "Labels": [` + labelList(51) + `]}`,
			[]string{at + `/Labels (T): Labels must list 2 to 50 options, not 51`}},
		{"labels on rating", `{"Type": "rating", "Labels": ["a", "b"]}`,
			[]string{at + `/Labels (T): Labels is only for Type "choice", not "rating"`}},
		{"fields on text", `{"Type": "text", "Fields": [{"Name": "a", "Type": "text"}]}`,
			[]string{at + `/Fields (T): Fields is only for Type "structured", not "text"`}},
		{"optional on rating", `{"Type": "rating", "Optional": ["a"]}`,
			[]string{at + `/Optional (T): Optional is only for Type "structured", not "rating"`}},
		{"structured without fields", `{"Type": "structured"}`,
			[]string{at + ` (T): missing required field Fields: a structured Feedback block lists its fields`}},
		{"no fields", `{"Type": "structured", "Fields": []}`,
			[]string{at + `/Fields (T): Fields must list 1 to 50 fields, not 0`}},
		{"fields not an array", `{"Type": "structured", "Fields": {"a": "text"}}`,
			[]string{at + `/Fields (T): Fields must be an array of objects, not object`}},
		{"field not an object", `{"Type": "structured", "Fields": ["a"]}`,
			[]string{at + `/Fields/0 (T): Fields[0] must be an object, not string`}},
		{"field without name", `{"Type": "structured", "Fields": [{"Type": "text"}]}`,
			[]string{at + `/Fields/0 (T): missing required field Name`}},
		{"field without type", `{"Type": "structured", "Fields": [{"Name": "a"}]}`,
			[]string{at + `/Fields/0 (T): missing required field Type ("rating", "thumbs", "choice", "text", "number" or "boolean")`}},
		{"field structured", `{"Type": "structured", "Fields": [{"Name": "a", "Type": "structured"}]}`,
			[]string{at + `/Fields/0/Type (T): Type must be one of "rating", "thumbs", "choice", "text", "number" or "boolean", not "structured"`}},
		{"field names twice", `{"Type": "structured", "Fields": [{"Name": "a", "Type": "text"}, {"Name": "b", "Type": "text"}, {"Name": "a", "Type": "number"}]}`,
			[]string{at + `/Fields/2/Name (T): Fields[2] has the Name "a" of Fields[0]`}},
		{"field choice without labels", `{"Type": "structured", "Fields": [{"Name": "a", "Type": "choice"}]}`,
			[]string{at + `/Fields/0 (T): missing required field Labels: a choice lists its options`}},
		{"field scale on number", `{"Type": "structured", "Fields": [{"Name": "a", "Type": "number", "Scale": [0, 1]}]}`,
			[]string{at + `/Fields/0/Scale (T): Scale is only for Type "rating", not "number"`}},
		{"field bad scale", `{"Type": "structured", "Fields": [{"Name": "a", "Type": "rating", "Scale": [2, 1]}]}`,
			[]string{at + `/Fields/0/Scale (T): Scale's min must be smaller than its max, not [2, 1]`}},
		{"field unknown key", `{"Type": "structured", "Fields": [{"Name": "a", "Type": "text", "Required": true}]}`,
			[]string{at + `/Fields/0/Required (T): unknown field "Required" in a Feedback field`}},
		{"field optional not boolean", `{"Type": "structured", "Fields": [{"Name": "a", "Type": "text", "Optional": "yes"}]}`,
			[]string{at + `/Fields/0/Optional (T): Optional must be a boolean, not string`}},
		{"field long name", `{"Type": "structured", "Fields": [{"Name": "` + strings.Repeat("n", 201) + `", "Type": "text"}]}`,
			[]string{at + `/Fields/0/Name (T): Name must be at most 200 characters, not 201`}},
		{"optional names no field", `{"Type": "structured", "Fields": [{"Name": "a", "Type": "text"}], "Optional": ["b"]}`,
			[]string{at + `/Optional/0 (T): Optional[0] "b" is not the Name of one of the Fields`}},
		{"optional twice", `{"Type": "structured", "Fields": [{"Name": "a", "Type": "text"}], "Optional": ["a", "a"]}`,
			[]string{at + `/Optional/1 (T): Optional[1] "a" is listed twice`}},
		{"every problem", `{"Type": "structured", "Collect": 1, "Source": "x", "Fields": [{"Name": "", "Type": "text"}, {"Name": "b", "Type": "rating", "Labels": ["x", "y"]}], "Extra": 1}`,
			[]string{
				at + `/Collect (T): Collect must be a boolean, not number`,
				at + `/Source (T): Source is not supported: feedback is given through the API and the execution's page`,
				at + `/Fields/0/Name (T): Name must not be empty`,
				at + `/Fields/1/Labels (T): Labels is only for Type "choice", not "rating"`,
				at + `/Extra (T): unknown field "Extra" in Feedback`,
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, errs := parseFeedback(t, tt.block)
			got := make([]string, len(errs))
			for i, e := range errs {
				got[i] = e.Error()
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("feedback(%s) problems:\n%s\nwant:\n%s", clip(tt.block), strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}
		})
	}
}

// labelList writes n distinct quoted labels, comma-separated.
func labelList(n int) string {
	q := make([]string, n)
	for i := range q {
		q[i] = fmt.Sprintf(`"l%d"`, i)
	}
	return strings.Join(q, ", ")
}

// feedbackBlocks are the blocks the Check tests and FuzzFeedbackCheck use.
var feedbackBlocks = map[string]string{
	"rating":     `{"Type": "rating", "Scale": [1, 5]}`,
	"thumbs":     `{"Type": "thumbs"}`,
	"choice":     `{"Type": "choice", "Labels": ["accurate", "partly", "wrong"]}`,
	"text":       `{"Type": "text"}`,
	"structured": `{"Type": "structured", "Fields": [{"Name": "accuracy", "Type": "rating", "Scale": [0, 10]}, {"Name": "tone", "Type": "choice", "Labels": ["formal", "casual"]}, {"Name": "helpful", "Type": "thumbs"}, {"Name": "notes", "Type": "text", "Optional": true}, {"Name": "minutes saved", "Type": "number"}, {"Name": "publish", "Type": "boolean"}], "Optional": ["minutes saved"]}`,
}

func TestFeedbackCheck(t *testing.T) {
	tests := []struct {
		block string // a key of feedbackBlocks
		value string // JSON
		want  string // the normalised value as JSON, when accepted
		path  string // the FeedbackError's Path, when refused
	}{
		{"rating", `4`, `4`, ""},
		{"rating", `1`, `1`, ""},
		{"rating", `5.0`, `5`, ""},
		{"rating", `2.5`, `2.5`, ""},
		{"rating", `0.99`, "", "$"},
		{"rating", `6`, "", "$"},
		{"rating", `1e400`, "", "$"},
		{"rating", `"4"`, "", "$"},
		{"rating", `null`, "", "$"},
		{"thumbs", `"up"`, `"up"`, ""},
		{"thumbs", `"down"`, `"down"`, ""},
		{"thumbs", `true`, `"up"`, ""},
		{"thumbs", `false`, `"down"`, ""},
		{"thumbs", `"Up"`, "", "$"},
		{"thumbs", `1`, "", "$"},
		{"choice", `"partly"`, `"partly"`, ""},
		{"choice", `"Partly"`, "", "$"},
		{"choice", `""`, "", "$"},
		{"choice", `["partly"]`, "", "$"},
		{"text", `"too long by half"`, `"too long by half"`, ""},
		{"text", `" "`, `" "`, ""},
		{"text", `"` + strings.Repeat("é", 10000) + `"`, `"` + strings.Repeat("é", 10000) + `"`, ""},
		{"text", `"` + strings.Repeat("é", 10001) + `"`, "", "$"},
		{"text", `""`, "", "$"},
		{"text", `"a\u0000b"`, "", "$"},
		{"text", `3`, "", "$"},
		{"structured", `{"accuracy": 7, "tone": "formal", "helpful": true, "notes": "fine", "minutes saved": -1.5, "publish": false}`,
			`{"accuracy":7,"helpful":"up","minutes saved":-1.5,"notes":"fine","publish":false,"tone":"formal"}`, ""},
		{"structured", `{"accuracy": 0, "tone": "casual", "helpful": "down", "publish": true}`,
			`{"accuracy":0,"helpful":"down","publish":true,"tone":"casual"}`, ""},
		{"structured", `{"accuracy": 0, "tone": "casual", "helpful": "down", "publish": true, "notes": null, "minutes saved": null}`,
			`{"accuracy":0,"helpful":"down","publish":true,"tone":"casual"}`, ""},
		{"structured", `{"tone": "casual", "helpful": "down", "publish": true}`, "", "$.accuracy"},
		{"structured", `{"accuracy": null, "tone": "casual", "helpful": "down", "publish": true}`, "", "$.accuracy"},
		{"structured", `{"accuracy": 11, "tone": "casual", "helpful": "down", "publish": true}`, "", "$.accuracy"},
		{"structured", `{"accuracy": 1, "tone": "rude", "helpful": "down", "publish": true}`, "", "$.tone"},
		{"structured", `{"accuracy": 1, "tone": "casual", "helpful": "down", "publish": "yes"}`, "", "$.publish"},
		{"structured", `{"accuracy": 1, "tone": "casual", "helpful": "down", "publish": true, "minutes saved": "5"}`, "", "$['minutes saved']"},
		{"structured", `{"accuracy": 1, "tone": "casual", "helpful": "down", "publish": true, "notes": ""}`, "", "$.notes"},
		{"structured", `{"accuracy": 1, "tone": "casual", "helpful": "down", "publish": true, "extra": 1}`, "", "$.extra"},
		{"structured", `[1, 2]`, "", "$"},
		{"structured", `"good"`, "", "$"},
	}
	configs := make(map[string]*FeedbackConfig, len(feedbackBlocks))
	for name, block := range feedbackBlocks {
		configs[name] = mustFeedback(t, block)
	}
	for _, tt := range tests {
		t.Run(tt.block+"/"+clip(tt.value), func(t *testing.T) {
			v, err := jsonvalue.Decode([]byte(tt.value))
			if err != nil {
				t.Fatal(err)
			}
			got, err := configs[tt.block].Check(v)
			if tt.path != "" {
				var fe *FeedbackError
				if !errors.As(err, &fe) || fe.Path != tt.path || fe.Msg == "" {
					t.Errorf("Check(%s) = %v, %v; want a FeedbackError at %s", clip(tt.value), got, err, tt.path)
				}
				return
			}
			if err != nil {
				t.Fatalf("Check(%s): %v", clip(tt.value), err)
			}
			js, err := jsonvalue.Marshal(got)
			if err != nil {
				t.Fatalf("Marshal(%#v): %v", got, err)
			}
			if string(js) != tt.want {
				t.Errorf("Check(%s) = %s, want %s", clip(tt.value), clip(string(js)), clip(tt.want))
			}
		})
	}
}

func TestFeedbackCheckGoValues(t *testing.T) {
	c := mustFeedback(t, feedbackBlocks["rating"])
	if got, err := c.Check(3.5); err != nil || got != jsonvalue.FloatNumber(3.5) {
		t.Errorf("Check(3.5) = %#v, %v; want json.Number 3.5", got, err)
	}
	var nilConfig *FeedbackConfig
	var fe *FeedbackError
	if _, err := nilConfig.Check("up"); !errors.As(err, &fe) || fe.Path != "$" {
		t.Errorf("Check on a nil FeedbackConfig = %v, want a FeedbackError at $", err)
	}
	// A value that is not valid UTF-8 cannot come from JSON, but a caller
	// may pass one.
	if _, err := mustFeedback(t, feedbackBlocks["text"]).Check("a\xffb"); !errors.As(err, &fe) || fe.Path != "$" {
		t.Errorf("Check of invalid UTF-8 = %v, want a FeedbackError at $", err)
	}
	// Check does not change the value it is given.
	s := mustFeedback(t, feedbackBlocks["structured"])
	in := map[string]any{"accuracy": 1.0, "tone": "formal", "helpful": true, "publish": true, "notes": nil}
	if _, err := s.Check(in); err != nil {
		t.Fatal(err)
	}
	if in["helpful"] != true || in["accuracy"] != 1.0 || len(in) != 5 {
		t.Errorf("Check changed its input to %v", in)
	}
}

// FuzzFeedbackCheck checks that Check never panics, that what it refuses
// is a FeedbackError with a path, and that what it accepts is accepted
// again, unchanged.
func FuzzFeedbackCheck(f *testing.F) {
	names := make([]string, 0, len(feedbackBlocks))
	for name := range feedbackBlocks {
		names = append(names, name)
	}
	slices.Sort(names)
	configs := make([]*FeedbackConfig, len(names))
	for i, name := range names {
		configs[i] = mustFeedback(f, feedbackBlocks[name])
	}
	for i := range names {
		for _, seed := range []string{`4`, `"up"`, `true`, `"partly"`, `"text"`, `null`, `{}`, `[]`, `1e400`, `-0`, `"a\u0000"`,
			`{"accuracy": 7, "tone": "formal", "helpful": true, "publish": false}`,
			`{"accuracy": 7, "tone": "formal", "helpful": true, "publish": false, "notes": null, "minutes saved": 1e-9}`} {
			f.Add(uint8(i), seed)
		}
	}
	f.Fuzz(func(t *testing.T, which uint8, value string) {
		c := configs[int(which)%len(configs)]
		v, err := jsonvalue.Decode([]byte(value))
		if err != nil {
			return
		}
		got, err := c.Check(v)
		if err != nil {
			var fe *FeedbackError
			if !errors.As(err, &fe) || !strings.HasPrefix(fe.Path, "$") || fe.Msg == "" {
				t.Fatalf("Check(%q) error = %T %v, want a FeedbackError with a path", value, err, err)
			}
			return
		}
		js, err := jsonvalue.Marshal(got)
		if err != nil {
			t.Fatalf("Check(%q) = %#v, which does not marshal: %v", value, got, err)
		}
		again, err := c.Check(got)
		if err != nil {
			t.Fatalf("Check(%q) = %s, refused when checked again: %v", value, js, err)
		}
		js2, err := jsonvalue.Marshal(again)
		if err != nil || string(js2) != string(js) {
			t.Fatalf("Check(%q) = %s, then %s, %v when checked again", value, js, js2, err)
		}
	})
}

// FuzzFeedbackBlock checks that any JSON as a Feedback block either
// parses into a block within the documented bounds or is refused with
// problems under the block, and never panics.
func FuzzFeedbackBlock(f *testing.F) {
	for _, seed := range feedbackBlocks {
		f.Add(seed)
	}
	for _, seed := range []string{`{}`, `[]`, `"x"`, `{"Type": "rating", "Scale": [5, 1]}`, `{"Type": "choice", "Labels": ["a", "a"]}`,
		`{"Type": "structured", "Fields": [{"Name": "a", "Type": "choice", "Labels": ["x", 1]}], "Optional": ["a", "b"]}`,
		`{"Type": "thumbs", "Collect": false, "Wait": true, "Store": "s"}`, `{"Type": "thumbs", "Wait": true, "Timeout": "1h"}`, `{"Type": "text", "Timeout": "5m"}`} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, block string) {
		if _, err := jsonvalue.Decode([]byte(block)); err != nil {
			return
		}
		c, errs := parseFeedback(t, block)
		if len(errs) > 0 {
			for _, e := range errs {
				if e.Msg == "" || e.State != "T" || !strings.HasPrefix(e.Pointer, "/States/T/Feedback") {
					t.Fatalf("feedback(%q) problem %q at %q in %q, want a message under /States/T/Feedback", block, e.Msg, e.Pointer, e.State)
				}
			}
			return
		}
		if c == nil || !slices.Contains(feedbackTypes, c.Type) || (c.Wait && !c.Collect) || (c.Timeout != 0 && !c.Wait) || c.Timeout < 0 {
			t.Fatalf("feedback(%q) = %+v without problems", block, c)
		}
		if c.Type == FeedbackRating && c.Scale[0] >= c.Scale[1] {
			t.Fatalf("feedback(%q) Scale = %v", block, c.Scale)
		}
		if (c.Type == FeedbackChoice) != (len(c.Labels) >= 2) || (c.Type == FeedbackStructured) != (len(c.Fields) >= 1) {
			t.Fatalf("feedback(%q) = %+v: Labels or Fields do not fit the Type", block, c)
		}
		for _, fld := range c.Fields {
			if fld.Name == "" || !slices.Contains(feedbackFieldTypes, fld.Type) || (fld.Type == FeedbackChoice) != (len(fld.Labels) >= 2) {
				t.Fatalf("feedback(%q) field %+v", block, fld)
			}
		}
	})
}

func ExampleFeedbackConfig_Check() {
	c := &FeedbackConfig{Collect: true, Type: FeedbackStructured, Fields: []FeedbackField{
		{Name: "accuracy", Type: FeedbackRating, Scale: [2]float64{1, 5}},
		{Name: "helpful", Type: FeedbackThumbs},
		{Name: "notes", Type: FeedbackText, Optional: true},
	}}
	v, _ := jsonvalue.Decode([]byte(`{"accuracy": 4.0, "helpful": true}`))
	got, err := c.Check(v)
	js, _ := jsonvalue.Marshal(got)
	fmt.Println(string(js), err)

	v, _ = jsonvalue.Decode([]byte(`{"accuracy": 9, "helpful": true}`))
	_, err = c.Check(v)
	fmt.Println(err)
	// Output:
	// {"accuracy":4,"helpful":"up"} <nil>
	// $.accuracy: must be a rating between 1 and 5, not 9
}

// TestFeedbackWaitParses checks that Parse takes Wait and Timeout on a
// Task's Feedback block, in both query languages, and refuses a Timeout
// without Wait naming the field.
func TestFeedbackWaitParses(t *testing.T) {
	for _, lang := range []string{"JSONPath", "JSONata"} {
		t.Run(lang, func(t *testing.T) {
			def := `{"QueryLanguage": "` + lang + `", "StartAt": "Answer", "States": {"Answer": {"Type": "Task", "Agent": "Writer",
				"Feedback": {"Type": "rating", "Wait": true, "Timeout": "2h"}, "End": true}}}`
			m, err := Parse([]byte(def))
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			fb := m.States["Answer"].(*Task).Feedback
			if !fb.Wait || fb.Timeout != 2*time.Hour {
				t.Errorf("Feedback = %+v, want Wait true and Timeout 2h", fb)
			}
			bad := strings.Replace(def, `"Wait": true, `, "", 1)
			_, err = Parse([]byte(bad))
			var list ErrorList
			if !errors.As(err, &list) || len(list) != 1 || list[0].Pointer != "/States/Answer/Feedback/Timeout" {
				t.Errorf("Parse(Timeout without Wait) = %v, want one problem at /States/Answer/Feedback/Timeout", err)
			}
		})
	}
}
