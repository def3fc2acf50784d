package states

import (
	"fmt"
	"time"
)

// This file holds a Task's Streaming block: how the text its agent
// generates as it goes (a model's tokens) is shaped into chunks and
// passed on beside the result, and which agents hear of it. Streamed
// text is not history: only the agent's result is committed. Every type
// here is immutable after Parse and safe for concurrent use.

// Streaming modes: how streamed text is cut into chunks.
const (
	// StreamToken passes each piece of text on as the agent produces it
	// (a model's token or delta). It is the default Mode.
	StreamToken = "token"
	// StreamLine passes text on a whole line at a time.
	StreamLine = "line"
	// StreamChunk passes text on in chunks of ChunkSize characters.
	StreamChunk = "chunk"
	// StreamSentence passes text on a whole sentence at a time.
	StreamSentence = "sentence"
)

// MaxStreamChunkSize is the largest Streaming ChunkSize accepted, in
// characters.
const MaxStreamChunkSize = 65536

// MaxStreamBufferSize is the largest Streaming Buffer Size accepted, in
// characters.
const MaxStreamBufferSize = 1 << 20

// StreamingConfig is the Streaming block of a Task (JSONPath or JSONata
// alike), as in
//
//	"Streaming": {"Enabled": true, "Mode": "chunk", "ChunkSize": 200,
//	  "Callbacks": {"OnChunk": "Relay", "OnComplete": "Done", "OnError": "Alert"},
//	  "Buffer": {"Size": 1024, "FlushInterval": "100ms", "FlushOnNewline": true}}
//
// It is immutable after Parse and safe for concurrent use.
type StreamingConfig struct {
	// Enabled turns streaming on. When the field is absent it is true: a
	// Streaming block streams unless it says "Enabled": false (which
	// keeps the rest of the block, validated, for later).
	Enabled bool
	// Mode is how text is cut into chunks: StreamToken (the default),
	// StreamLine, StreamChunk or StreamSentence.
	Mode string
	// ChunkSize is the number of characters per chunk with Mode
	// StreamChunk, where it is required (1 to MaxStreamChunkSize); it is
	// refused with any other Mode, so it is 0 there.
	ChunkSize int
	// Buffer holds text back before it is passed on; nil when absent
	// (each chunk is passed on as soon as it is complete).
	Buffer *StreamBuffer
	// OnChunk, OnComplete and OnError name the agents of the block's
	// Callbacks, called with each chunk, once the stream has ended, and
	// when it fails; "" when absent. Machine.AgentRefs lists them
	// (Fields "Streaming.Callbacks.OnChunk" and so on), whether or not
	// Enabled, so that a definition names only agents that exist.
	OnChunk, OnComplete, OnError string
}

// StreamBuffer is a Streaming block's Buffer: text is held back and
// passed on in one piece when Size characters are held, when
// FlushInterval has passed since the first character held, or at a
// newline with FlushOnNewline, whichever comes first.
type StreamBuffer struct {
	// Size is the most characters held before a flush, 1 to
	// MaxStreamBufferSize; always set.
	Size int
	// FlushInterval is the longest time text is held, in the duration
	// grammar of ParseDuration ("100ms", "1s", "2"); 0 when absent (no
	// flush by time).
	FlushInterval time.Duration
	// FlushOnNewline flushes the buffer at every newline.
	FlushOnNewline bool
}

// streamingModes are the Modes of a Streaming block.
var streamingModes = []string{StreamToken, StreamLine, StreamChunk, StreamSentence}

// streamingCallbacks are the fields of a Streaming block's Callbacks.
var streamingCallbacks = []string{"OnChunk", "OnComplete", "OnError"}

// streaming reads a Task's Streaming block; nil when absent.
func (p *parser) streaming(o *object) *StreamingConfig {
	const key = "Streaming"
	so, _ := o.child(key, key)
	if so == nil {
		return nil
	}
	defer so.done(key)
	s := &StreamingConfig{Enabled: true, Mode: StreamToken}
	if enabled, ok := so.boolean("Enabled"); ok {
		s.Enabled = enabled
	}
	modeOK := true
	if _, present := so.m["Mode"]; present {
		s.Mode, modeOK = so.enum("Mode", streamingModes, nil)
	}
	_, hasChunkSize := so.m["ChunkSize"]
	switch {
	case !modeOK:
		// A bad Mode is reported; ChunkSize is judged only by its own
		// range.
		so.integer("ChunkSize", 1, MaxStreamChunkSize)
	case s.Mode == StreamChunk && !hasChunkSize:
		so.errorf("", `Mode "chunk" needs ChunkSize, the number of characters per chunk (1 to %d)`, MaxStreamChunkSize)
	case s.Mode == StreamChunk:
		n, _ := so.integer("ChunkSize", 1, MaxStreamChunkSize)
		s.ChunkSize = int(n)
	case hasChunkSize:
		so.used["ChunkSize"] = true
		mode := fmt.Sprintf("Mode %q", s.Mode)
		if _, present := so.m["Mode"]; !present {
			mode = fmt.Sprintf("the default Mode %q", s.Mode)
		}
		so.errorf("ChunkSize", `ChunkSize is only used with Mode "chunk", not with %s, which cuts text by itself`, mode)
	}
	s.Buffer = p.streamBuffer(so)
	if co, _ := so.child("Callbacks", "Callbacks"); co != nil {
		s.OnChunk, _ = co.name("OnChunk", false)
		s.OnComplete, _ = co.name("OnComplete", false)
		s.OnError, _ = co.name("OnError", false)
		empty := true
		for _, k := range streamingCallbacks {
			if _, ok := co.m[k]; ok {
				empty = false
			}
		}
		if empty {
			co.errorf("", "Callbacks needs at least one of OnChunk, OnComplete or OnError (each an agent's name)")
		}
		co.done("Callbacks")
	}
	return s
}

// streamBuffer reads a Streaming block's Buffer; nil when absent or not
// an object.
func (p *parser) streamBuffer(so *object) *StreamBuffer {
	bo, _ := so.child("Buffer", "Buffer")
	if bo == nil {
		return nil
	}
	defer bo.done("Buffer")
	b := &StreamBuffer{}
	if _, ok := bo.m["Size"]; !ok {
		bo.errorf("", "Buffer needs Size, the most characters held before a flush (1 to %d)", MaxStreamBufferSize)
	} else if n, ok := bo.integer("Size", 1, MaxStreamBufferSize); ok {
		b.Size = int(n)
	}
	b.FlushInterval, _ = bo.duration("FlushInterval")
	b.FlushOnNewline, _ = bo.boolean("FlushOnNewline")
	return b
}
