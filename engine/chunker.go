package engine

import (
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"
)

// streamShape is how a state's streamed text is cut into chunks (its
// Streaming block).
type streamShape struct {
	// mode is "token" (each write of the agent, a model's delta), "line"
	// (through each newline), "sentence" (through each ., ! or ? followed
	// by white space, or a newline) or "chunk" (size characters each).
	mode string
	size int
	// bufSize, when > 0, flushes the text held once it reaches that many
	// characters (in "token" mode it holds writes until then).
	bufSize int
	// flushEvery, when > 0, flushes the text held that long.
	flushEvery time.Duration
	// flushOnNewline cuts at each newline too.
	flushOnNewline bool
}

// chunker cuts an agent's streamed text into chunks as its shape says
// and hands them to emit, never splitting a UTF-8 character. It is safe
// for concurrent use; emit is called with its lock held, in order.
type chunker struct {
	mu      sync.Mutex
	shape   streamShape
	emit    func(turn int, text string)
	turn    int
	held    strings.Builder // text not yet emitted
	partial []byte          // the start of a character cut by a write
	timer   *time.Timer
	closed  bool
}

func newChunker(shape streamShape, emit func(turn int, text string)) *chunker {
	if shape.mode == "" {
		shape.mode = "token"
	}
	return &chunker{shape: shape, emit: emit}
}

// write takes text the agent streamed in turn.
func (c *chunker) write(turn int, text string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return
	}
	if turn != c.turn {
		// A new turn's text never joins the last turn's in a chunk.
		c.flushHeld()
		c.partial = nil
		c.turn = turn
	}
	data := append(c.partial, text...)
	c.partial = nil
	if i := lastRuneStart(data); i >= 0 && !utf8.FullRune(data[i:]) {
		// The write ends within a character: hold its start.
		c.partial = append([]byte(nil), data[i:]...)
		data = data[:i]
	}
	if !utf8.Valid(data) {
		data = []byte(strings.ToValidUTF8(string(data), "\uFFFD"))
	}
	if len(data) == 0 {
		return
	}
	if c.shape.mode == "token" && c.shape.bufSize == 0 && !c.shape.flushOnNewline && c.shape.flushEvery == 0 {
		c.emit(c.turn, string(data))
		return
	}
	c.held.Write(data)
	c.cut()
	if c.held.Len() > 0 && c.shape.flushEvery > 0 && c.timer == nil {
		c.timer = time.AfterFunc(c.shape.flushEvery, c.tick)
	}
}

// tick flushes what is held when FlushInterval passes.
func (c *chunker) tick() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.timer = nil
	if !c.closed {
		c.flushHeld()
	}
}

// close flushes everything held; later writes are dropped.
func (c *chunker) close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return
	}
	c.closed = true
	if c.timer != nil {
		c.timer.Stop()
		c.timer = nil
	}
	if len(c.partial) > 0 {
		c.held.WriteString(strings.ToValidUTF8(string(c.partial), "\uFFFD"))
		c.partial = nil
	}
	c.flushHeld()
}

// flushHeld emits all the text held, as one chunk (or chunks of size in
// "chunk" mode).
func (c *chunker) flushHeld() {
	if c.held.Len() == 0 {
		return
	}
	s := c.held.String()
	c.held.Reset()
	if c.timer != nil {
		c.timer.Stop()
		c.timer = nil
	}
	if c.shape.mode == "chunk" && c.shape.size > 0 {
		for s != "" {
			n := byteIndexOfRune(s, c.shape.size)
			c.emit(c.turn, s[:n])
			s = s[n:]
		}
		return
	}
	c.emit(c.turn, s)
}

// cut emits the complete pieces of the text held, keeping the rest.
func (c *chunker) cut() {
	s := c.held.String()
	emitted := 0
	emitTo := func(end int) {
		if end > emitted {
			c.emit(c.turn, s[emitted:end])
			emitted = end
		}
	}
	switch c.shape.mode {
	case "chunk":
		for utf8.RuneCountInString(s[emitted:]) >= c.shape.size && c.shape.size > 0 {
			emitTo(emitted + byteIndexOfRune(s[emitted:], c.shape.size))
		}
	case "line":
		for i := strings.IndexByte(s[emitted:], '\n'); i >= 0; i = strings.IndexByte(s[emitted:], '\n') {
			emitTo(emitted + i + 1)
		}
	case "sentence":
		for end := sentenceEnd(s[emitted:]); end > 0; end = sentenceEnd(s[emitted:]) {
			emitTo(emitted + end)
		}
	}
	if c.shape.flushOnNewline {
		if i := strings.LastIndexByte(s[emitted:], '\n'); i >= 0 {
			emitTo(emitted + i + 1)
		}
	}
	if c.shape.bufSize > 0 && utf8.RuneCountInString(s[emitted:]) >= c.shape.bufSize {
		emitTo(len(s))
	}
	if emitted > 0 {
		rest := s[emitted:]
		c.held.Reset()
		c.held.WriteString(rest)
		if rest == "" && c.timer != nil {
			c.timer.Stop()
			c.timer = nil
		}
	}
}

// sentenceEnd returns the end of the first sentence of s (through the
// white space after its ., ! or ?, or through a newline), or 0 when s
// holds no complete sentence yet.
func sentenceEnd(s string) int {
	for i, r := range s {
		if r == '\n' {
			return i + 1
		}
		if r != '.' && r != '!' && r != '?' {
			continue
		}
		j := i + 1
		for j < len(s) && (s[j] == '.' || s[j] == '!' || s[j] == '?') {
			j++
		}
		if j < len(s) {
			next, size := utf8.DecodeRuneInString(s[j:])
			if unicode.IsSpace(next) {
				return j + size
			}
		}
	}
	return 0
}

// lastRuneStart returns the index of the byte starting the last
// character of data, or -1.
func lastRuneStart(data []byte) int {
	for i := len(data) - 1; i >= 0 && i >= len(data)-utf8.UTFMax; i-- {
		if utf8.RuneStart(data[i]) {
			return i
		}
	}
	return -1
}

// byteIndexOfRune returns the byte offset of the n-th character of s
// (len(s) when s is shorter).
func byteIndexOfRune(s string, n int) int {
	for i := range s {
		if n == 0 {
			return i
		}
		n--
	}
	return len(s)
}
