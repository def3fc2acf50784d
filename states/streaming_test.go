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

// streamingTask is a definition whose only state is a JSONPath Task with
// block as its Streaming block.
func streamingTask(block string) []byte {
	return fmt.Appendf(nil, `{"StartAt": "T", "States": {"T": {"Type": "Task", "Agent": "A", "Streaming": %s, "End": true}}}`, block)
}

// streamingJSONataTask is streamingTask for a JSONata Task.
func streamingJSONataTask(block string) []byte {
	return fmt.Appendf(nil, `{"QueryLanguage": "JSONata", "StartAt": "T", "States": {"T": {"Type": "Task", "Agent": "A", "Streaming": %s, "End": true}}}`, block)
}

func showStreaming(s *StreamingConfig) string {
	if s == nil {
		return "<nil>"
	}
	out := fmt.Sprintf("%+v", *s)
	if s.Buffer != nil {
		out += fmt.Sprintf(" Buffer %+v", *s.Buffer)
	}
	return out
}

func TestStreamingAccepted(t *testing.T) {
	token := StreamingConfig{Enabled: true, Mode: StreamToken}
	with := func(f func(*StreamingConfig)) *StreamingConfig {
		s := token
		f(&s)
		return &s
	}
	tests := []struct {
		name, block string
		want        *StreamingConfig
	}{
		{"empty block streams tokens", `{}`, &token},
		{"enabled", `{"Enabled": true}`, &token},
		{"disabled", `{"Enabled": false}`, with(func(s *StreamingConfig) { s.Enabled = false })},
		{"disabled keeps the rest", `{"Enabled": false, "Mode": "line", "Callbacks": {"OnChunk": "Relay"}}`,
			with(func(s *StreamingConfig) { s.Enabled, s.Mode, s.OnChunk = false, StreamLine, "Relay" })},
		{"token", `{"Mode": "token"}`, &token},
		{"line", `{"Mode": "line"}`, with(func(s *StreamingConfig) { s.Mode = StreamLine })},
		{"sentence", `{"Mode": "sentence"}`, with(func(s *StreamingConfig) { s.Mode = StreamSentence })},
		{"chunk", `{"Mode": "chunk", "ChunkSize": 200}`, with(func(s *StreamingConfig) { s.Mode, s.ChunkSize = StreamChunk, 200 })},
		{"chunk of 1", `{"Mode": "chunk", "ChunkSize": 1}`, with(func(s *StreamingConfig) { s.Mode, s.ChunkSize = StreamChunk, 1 })},
		{"chunk of 65536", `{"Mode": "chunk", "ChunkSize": 65536}`, with(func(s *StreamingConfig) { s.Mode, s.ChunkSize = StreamChunk, MaxStreamChunkSize })},
		{"chunk written 1e2", `{"Mode": "chunk", "ChunkSize": 1e2}`, with(func(s *StreamingConfig) { s.Mode, s.ChunkSize = StreamChunk, 100 })},
		{"all callbacks", `{"Callbacks": {"OnChunk": "Relay", "OnComplete": "Done", "OnError": "Alert"}}`,
			with(func(s *StreamingConfig) { s.OnChunk, s.OnComplete, s.OnError = "Relay", "Done", "Alert" })},
		{"one callback", `{"Callbacks": {"OnError": "Alert"}}`, with(func(s *StreamingConfig) { s.OnError = "Alert" })},
		{"buffer full", `{"Buffer": {"Size": 1024, "FlushInterval": "100ms", "FlushOnNewline": true}}`,
			with(func(s *StreamingConfig) {
				s.Buffer = &StreamBuffer{Size: 1024, FlushInterval: 100 * time.Millisecond, FlushOnNewline: true}
			})},
		{"buffer size only", `{"Buffer": {"Size": 1}}`, with(func(s *StreamingConfig) { s.Buffer = &StreamBuffer{Size: 1} })},
		{"buffer largest", `{"Buffer": {"Size": 1048576, "FlushOnNewline": false}}`,
			with(func(s *StreamingConfig) { s.Buffer = &StreamBuffer{Size: MaxStreamBufferSize} })},
		{"buffer interval bare seconds", `{"Buffer": {"Size": 10, "FlushInterval": "2"}}`,
			with(func(s *StreamingConfig) { s.Buffer = &StreamBuffer{Size: 10, FlushInterval: 2 * time.Second} })},
		{"buffer interval 1s", `{"Buffer": {"Size": 10, "FlushInterval": "1s"}}`,
			with(func(s *StreamingConfig) { s.Buffer = &StreamBuffer{Size: 10, FlushInterval: time.Second} })},
		{"the spec's full example", `{"Enabled": true, "Mode": "chunk", "ChunkSize": 100,
			"Callbacks": {"OnChunk": "StreamHandler", "OnComplete": "StreamComplete", "OnError": "StreamError"},
			"Buffer": {"Size": 1024, "FlushInterval": "100ms", "FlushOnNewline": true}}`,
			&StreamingConfig{Enabled: true, Mode: StreamChunk, ChunkSize: 100,
				OnChunk: "StreamHandler", OnComplete: "StreamComplete", OnError: "StreamError",
				Buffer: &StreamBuffer{Size: 1024, FlushInterval: 100 * time.Millisecond, FlushOnNewline: true}}},
	}
	for _, tt := range tests {
		for _, lang := range []struct {
			name string
			def  func(string) []byte
		}{{"JSONPath", streamingTask}, {"JSONata", streamingJSONataTask}} {
			t.Run(tt.name+"/"+lang.name, func(t *testing.T) {
				m, err := Parse(lang.def(tt.block))
				if err != nil {
					t.Fatalf("Parse(%s) = %v", tt.block, err)
				}
				got := state[*Task](t, m, "T").Streaming
				if !reflect.DeepEqual(got, tt.want) {
					t.Errorf("Parse(%s) Streaming = %s, want %s", tt.block, showStreaming(got), showStreaming(tt.want))
				}
			})
		}
	}
}

func TestStreamingAbsent(t *testing.T) {
	m, err := Parse([]byte(`{"StartAt": "T", "States": {"T": {"Type": "Task", "Agent": "A", "End": true}}}`))
	if err != nil {
		t.Fatal(err)
	}
	if got := state[*Task](t, m, "T").Streaming; got != nil {
		t.Errorf("Streaming without a block = %s, want nil", showStreaming(got))
	}
}

func TestStreamingRefused(t *testing.T) {
	const at = "/States/T/Streaming"
	tests := []struct {
		name, block string
		want        []string // "pointer: message", in order
	}{
		{"not an object", `true`, []string{at + `: Streaming must be an object, not boolean`}},
		{"array", `[]`, []string{at + `: Streaming must be an object, not array`}},
		{"null", `null`, []string{at + `: Streaming must be an object, not null`}},
		{"unknown field", `{"Enabled": true, "Format": "sse"}`, []string{at + `/Format: unknown field "Format" in Streaming`}},
		{"enabled string", `{"Enabled": "yes"}`, []string{at + `/Enabled: Enabled must be a boolean, not string`}},
		{"unknown mode", `{"Mode": "word"}`, []string{at + `/Mode: Mode must be "token", "line", "chunk" or "sentence", not "word"`}},
		{"mode case", `{"Mode": "Token"}`, []string{at + `/Mode: Mode must be "token", "line", "chunk" or "sentence", not "Token"`}},
		{"mode number", `{"Mode": 1}`, []string{at + `/Mode: Mode must be a string, not number`}},
		{"chunk without size", `{"Mode": "chunk"}`, []string{at + `: Mode "chunk" needs ChunkSize, the number of characters per chunk (1 to 65536)`}},
		{"chunk size zero", `{"Mode": "chunk", "ChunkSize": 0}`, []string{at + `/ChunkSize: ChunkSize must be between 1 and 65536, not 0`}},
		{"chunk size negative", `{"Mode": "chunk", "ChunkSize": -5}`, []string{at + `/ChunkSize: ChunkSize must be between 1 and 65536, not -5`}},
		{"chunk size too big", `{"Mode": "chunk", "ChunkSize": 65537}`, []string{at + `/ChunkSize: ChunkSize must be between 1 and 65536, not 65537`}},
		{"chunk size fraction", `{"Mode": "chunk", "ChunkSize": 1.5}`, []string{at + `/ChunkSize: ChunkSize must be an integer, not 1.5`}},
		{"chunk size string", `{"Mode": "chunk", "ChunkSize": "100"}`, []string{at + `/ChunkSize: ChunkSize must be an integer, not string`}},
		{"chunk size with sentence", `{"Mode": "sentence", "ChunkSize": 100}`,
			[]string{at + `/ChunkSize: ChunkSize is only used with Mode "chunk", not with Mode "sentence", which cuts text by itself`}},
		{"chunk size with line", `{"Mode": "line", "ChunkSize": 100}`,
			[]string{at + `/ChunkSize: ChunkSize is only used with Mode "chunk", not with Mode "line", which cuts text by itself`}},
		{"chunk size with default mode", `{"ChunkSize": 100}`,
			[]string{at + `/ChunkSize: ChunkSize is only used with Mode "chunk", not with the default Mode "token", which cuts text by itself`}},
		{"chunk size with bad mode", `{"Mode": "words", "ChunkSize": 0}`, []string{
			at + `/Mode: Mode must be "token", "line", "chunk" or "sentence", not "words"`,
			at + `/ChunkSize: ChunkSize must be between 1 and 65536, not 0`}},

		{"callbacks not object", `{"Callbacks": "Relay"}`, []string{at + `/Callbacks: Callbacks must be an object, not string`}},
		{"callbacks empty", `{"Callbacks": {}}`, []string{at + `/Callbacks: Callbacks needs at least one of OnChunk, OnComplete or OnError (each an agent's name)`}},
		{"callbacks unknown only", `{"Callbacks": {"OnStart": "A"}}`, []string{
			at + `/Callbacks: Callbacks needs at least one of OnChunk, OnComplete or OnError (each an agent's name)`,
			at + `/Callbacks/OnStart: unknown field "OnStart" in Callbacks`}},
		{"callback empty name", `{"Callbacks": {"OnChunk": ""}}`, []string{at + `/Callbacks/OnChunk: OnChunk must not be empty`}},
		{"callback not string", `{"Callbacks": {"OnComplete": {"Agent": "A"}}}`, []string{at + `/Callbacks/OnComplete: OnComplete must be a string, not object`}},
		{"callback null", `{"Callbacks": {"OnError": null}}`, []string{at + `/Callbacks/OnError: OnError must be a string, not null`}},

		{"buffer not object", `{"Buffer": 1024}`, []string{at + `/Buffer: Buffer must be an object, not number`}},
		{"buffer empty", `{"Buffer": {}}`, []string{at + `/Buffer: Buffer needs Size, the most characters held before a flush (1 to 1048576)`}},
		{"buffer without size", `{"Buffer": {"FlushOnNewline": true}}`, []string{at + `/Buffer: Buffer needs Size, the most characters held before a flush (1 to 1048576)`}},
		{"buffer size zero", `{"Buffer": {"Size": 0}}`, []string{at + `/Buffer/Size: Size must be between 1 and 1048576, not 0`}},
		{"buffer size too big", `{"Buffer": {"Size": 1048577}}`, []string{at + `/Buffer/Size: Size must be between 1 and 1048576, not 1048577`}},
		{"buffer size string", `{"Buffer": {"Size": "1K"}}`, []string{at + `/Buffer/Size: Size must be an integer, not string`}},
		{"buffer interval zero", `{"Buffer": {"Size": 1, "FlushInterval": "0ms"}}`, []string{at + `/Buffer/FlushInterval: FlushInterval must be greater than zero, not "0ms"`}},
		{"buffer interval words", `{"Buffer": {"Size": 1, "FlushInterval": "soon"}}`,
			[]string{at + `/Buffer/FlushInterval: FlushInterval must be a duration (bare seconds, or a whole number followed by ms, s, m, h, d or w, like "30m" or "7d"), not "soon"`}},
		{"buffer interval combined", `{"Buffer": {"Size": 1, "FlushInterval": "1s500ms"}}`,
			[]string{at + `/Buffer/FlushInterval: FlushInterval must be a duration (bare seconds, or a whole number followed by ms, s, m, h, d or w, like "30m" or "7d"), not "1s500ms"`}},
		{"buffer interval number", `{"Buffer": {"Size": 1, "FlushInterval": 0.1}}`,
			[]string{at + `/Buffer/FlushInterval: FlushInterval must be a duration string (bare seconds, or a whole number followed by ms, s, m, h, d or w, like "30m" or "7d"), not number`}},
		{"buffer newline string", `{"Buffer": {"Size": 1, "FlushOnNewline": "yes"}}`, []string{at + `/Buffer/FlushOnNewline: FlushOnNewline must be a boolean, not string`}},
		{"buffer unknown field", `{"Buffer": {"Size": 1, "MaxAge": "1s"}}`, []string{at + `/Buffer/MaxAge: unknown field "MaxAge" in Buffer`}},

		{"every problem at once", `{"Enabled": 1, "Mode": "chunk", "Buffer": {"Size": -1}, "Callbacks": {"OnChunk": ""}, "Extra": 1}`, []string{
			at + `/Enabled: Enabled must be a boolean, not number`,
			at + `: Mode "chunk" needs ChunkSize, the number of characters per chunk (1 to 65536)`,
			at + `/Buffer/Size: Size must be between 1 and 1048576, not -1`,
			at + `/Callbacks/OnChunk: OnChunk must not be empty`,
			at + `/Extra: unknown field "Extra" in Streaming`}},
	}
	for _, tt := range tests {
		for _, lang := range []struct {
			name string
			def  func(string) []byte
		}{{"JSONPath", streamingTask}, {"JSONata", streamingJSONataTask}} {
			t.Run(tt.name+"/"+lang.name, func(t *testing.T) {
				m, err := Parse(lang.def(tt.block))
				var list ErrorList
				if !errors.As(err, &list) {
					t.Fatalf("Parse(%s) = %v, %v; want an ErrorList", tt.block, m, err)
				}
				var got []string
				for _, e := range list {
					if e.State != "T" {
						t.Errorf("error %v names state %q, want T", e, e.State)
					}
					got = append(got, e.Pointer+": "+e.Msg)
				}
				if strings.Join(got, "\n") != strings.Join(tt.want, "\n") {
					t.Errorf("Parse(%s) errors:\n%s\nwant:\n%s", tt.block, strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
				}
			})
		}
	}
}

// TestStreamingOnlyOnTasks: every other state type refuses a Streaming
// block, naming its type, in JSONPath and JSONata alike.
func TestStreamingOnlyOnTasks(t *testing.T) {
	const succeed = `{"StartAt": "S", "States": {"S": {"Type": "Succeed"}}}`
	tests := []struct {
		name, def, want string
	}{
		{"Pass", `{"StartAt": "X", "States": {"X": {"Type": "Pass", "Streaming": {}, "End": true}}}`,
			`/States/X/Streaming (X): Streaming is not supported on a Pass state: only a Task streams its agent's output`},
		{"Wait", `{"StartAt": "X", "States": {"X": {"Type": "Wait", "Seconds": 1, "Streaming": {}, "End": true}}}`,
			`/States/X/Streaming (X): Streaming is not supported on a Wait state: only a Task streams its agent's output`},
		{"Choice", `{"StartAt": "X", "States": {"X": {"Type": "Choice", "Streaming": {}, "Choices": [{"Variable": "$.a", "IsPresent": true, "Next": "S"}]}, "S": {"Type": "Succeed"}}}`,
			`/States/X/Streaming (X): Streaming is not supported on a Choice state: only a Task streams its agent's output`},
		{"Succeed", `{"StartAt": "X", "States": {"X": {"Type": "Succeed", "Streaming": {}}}}`,
			`/States/X/Streaming (X): Streaming is not supported on a Succeed state: only a Task streams its agent's output`},
		{"Fail", `{"StartAt": "X", "States": {"X": {"Type": "Fail", "Streaming": {}}}}`,
			`/States/X/Streaming (X): Streaming is not supported on a Fail state: only a Task streams its agent's output`},
		{"Map", `{"StartAt": "X", "States": {"X": {"Type": "Map", "Streaming": {}, "ItemProcessor": ` + succeed + `, "End": true}}}`,
			`/States/X/Streaming (X): Streaming is not supported on a Map state: only a Task streams its agent's output`},
		{"Parallel", `{"StartAt": "X", "States": {"X": {"Type": "Parallel", "Streaming": {}, "Branches": [` + succeed + `], "End": true}}}`,
			`/States/X/Streaming (X): Streaming is not supported on a Parallel state: only a Task streams its agent's output`},
		{"Approval", `{"StartAt": "X", "States": {"X": {"Type": "Approval", "Prompt": "ok?", "Streaming": {}, "End": true}}}`,
			`/States/X/Streaming (X): Streaming is not supported on an Approval state: only a Task streams its agent's output`},
		{"Debate", `{"StartAt": "X", "States": {"X": {"Type": "Debate", "Agents": ["A", "B"], "Topic": "t", "Streaming": {}, "End": true}}}`,
			`/States/X/Streaming (X): Streaming is not supported on a Debate state: only a Task streams its agent's output`},
		{"Checkpoint", `{"StartAt": "X", "States": {"X": {"Type": "Checkpoint", "Name": "c", "Streaming": {}, "End": true}}}`,
			`/States/X/Streaming (X): Streaming is not supported on a Checkpoint state: only a Task streams its agent's output`},
		{"JSONata Pass", `{"QueryLanguage": "JSONata", "StartAt": "X", "States": {"X": {"Type": "Pass", "Streaming": {}, "End": true}}}`,
			`/States/X/Streaming (X): Streaming is not supported on a Pass state: only a Task streams its agent's output`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := Parse([]byte(tt.def))
			var list ErrorList
			if !errors.As(err, &list) {
				t.Fatalf("Parse = %v, %v; want an ErrorList", m, err)
			}
			if got := list.Error(); got != tt.want {
				t.Errorf("Parse errors:\n%s\nwant:\n%s", got, tt.want)
			}
		})
	}
}

func TestStreamingAgentRefs(t *testing.T) {
	m, err := Parse([]byte(`{"StartAt": "T", "States": {
	  "T": {"Type": "Task", "Agent": "Writer", "Next": "Off",
	    "Guardrails": {"Input": {"Validator": "InCheck"}},
	    "Streaming": {"Callbacks": {"OnChunk": "Relay", "OnComplete": "Done", "OnError": "Alert"}}},
	  "Off": {"Type": "Task", "Agent": "Quiet", "Next": "M",
	    "Streaming": {"Enabled": false, "Callbacks": {"OnError": "Pager"}}},
	  "M": {"Type": "Map", "End": true, "ItemProcessor": {"StartAt": "Each", "States": {
	    "Each": {"Type": "Task", "Agent": "Worker", "End": true, "Streaming": {"Callbacks": {"OnComplete": "Tally"}}}}}}}}`))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range m.AgentRefs() {
		got = append(got, r.State+" "+r.Field+" "+r.Agent)
	}
	want := []string{
		"M/Each Agent Worker", "M/Each Streaming.Callbacks.OnComplete Tally",
		"Off Agent Quiet", "Off Streaming.Callbacks.OnError Pager",
		"T Agent Writer", "T Guardrails.Input.Validator InCheck",
		"T Streaming.Callbacks.OnChunk Relay", "T Streaming.Callbacks.OnComplete Done", "T Streaming.Callbacks.OnError Alert",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("AgentRefs() =\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// FuzzStreamingBlock checks that any text as a Task's Streaming block
// either parses or is refused with well-formed problems under the Task,
// never panics, and that what parses keeps to the documented ranges.
func FuzzStreamingBlock(f *testing.F) {
	for _, seed := range []string{
		`{}`, `{"Enabled": false}`, `{"Mode": "chunk", "ChunkSize": 64}`, `{"Mode": "sentence", "ChunkSize": 100}`,
		`{"Callbacks": {"OnChunk": "A", "OnComplete": "B", "OnError": "C"}}`, `{"Callbacks": {}}`,
		`{"Buffer": {"Size": 1024, "FlushInterval": "100ms", "FlushOnNewline": true}}`, `{"Buffer": {"Size": 0}}`,
		`{"Mode": "chunk", "ChunkSize": 1e400}`, `[1,2]`, `"token"`, `{"Buffer": {"Size": 1, "FlushInterval": "99999999999999w"}}`,
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, block string) {
		v, err := jsonvalue.Decode([]byte(block))
		if err != nil {
			// Not one JSON value: no Streaming block to judge.
			return
		}
		m, err := ParseValue(map[string]any{"StartAt": "T", "States": map[string]any{
			"T": map[string]any{"Type": "Task", "Agent": "A", "Streaming": v, "End": true}}})
		if err != nil {
			var list ErrorList
			if !errors.As(err, &list) || len(list) == 0 {
				t.Fatalf("Parse(%q) error = %T %v, want a non-empty ErrorList", block, err, err)
			}
			for _, e := range list {
				if e.Msg == "" || !strings.HasPrefix(e.Pointer, "/States/T") {
					t.Fatalf("Parse(%q) problem %q at %q, want a message under /States/T", block, e.Msg, e.Pointer)
				}
			}
			return
		}
		s := state[*Task](t, m, "T").Streaming
		if s == nil {
			t.Fatalf("Parse(%q) accepted without a Streaming block", block)
		}
		switch {
		case !slices.Contains(streamingModes, s.Mode):
			t.Errorf("Parse(%q) Mode = %q", block, s.Mode)
		case (s.Mode == StreamChunk) != (s.ChunkSize != 0):
			t.Errorf("Parse(%q) Mode %q with ChunkSize %d", block, s.Mode, s.ChunkSize)
		case s.ChunkSize < 0 || s.ChunkSize > MaxStreamChunkSize:
			t.Errorf("Parse(%q) ChunkSize = %d", block, s.ChunkSize)
		case s.Buffer != nil && (s.Buffer.Size < 1 || s.Buffer.Size > MaxStreamBufferSize || s.Buffer.FlushInterval < 0):
			t.Errorf("Parse(%q) Buffer = %+v", block, *s.Buffer)
		}
	})
}

func ExampleStreamingConfig() {
	m, err := Parse([]byte(`{
	  "StartAt": "Draft",
	  "States": {
	    "Draft": {
	      "Type": "Task",
	      "Agent": "Writer",
	      "Streaming": {
	        "Mode": "chunk",
	        "ChunkSize": 200,
	        "Callbacks": {"OnChunk": "Relay", "OnError": "Alert"},
	        "Buffer": {"Size": 1024, "FlushInterval": "100ms", "FlushOnNewline": true}
	      },
	      "End": true
	    }
	  }
	}`))
	if err != nil {
		fmt.Println(err)
		return
	}
	s := m.States["Draft"].(*Task).Streaming
	fmt.Println(s.Enabled, s.Mode, s.ChunkSize, s.Buffer.Size, s.Buffer.FlushInterval, s.Buffer.FlushOnNewline)
	for _, r := range m.AgentRefs() {
		fmt.Println(r.Field, r.Agent)
	}

	_, err = Parse([]byte(`{
	  "StartAt": "Draft",
	  "States": {
	    "Draft": {"Type": "Task", "Agent": "Writer", "Streaming": {"Mode": "sentence", "ChunkSize": 100}, "End": true}
	  }
	}`))
	fmt.Println(err)
	// Output:
	// true chunk 200 1024 100ms true
	// Agent Writer
	// Streaming.Callbacks.OnChunk Relay
	// Streaming.Callbacks.OnError Alert
	// /States/Draft/Streaming/ChunkSize (Draft): ChunkSize is only used with Mode "chunk", not with Mode "sentence", which cuts text by itself
}
