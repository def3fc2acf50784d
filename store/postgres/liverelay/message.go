package liverelay

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/aslrun/aslrun/engine"
)

// Kinds of messages.
const (
	kindAsk   = "ask"
	kindData  = "data"
	kindFrag  = "frag"
	kindFence = "fence"
)

// message is one payload on the channel: T says which of the other
// fields it has.
type message struct {
	T  string `json:"t"`
	By string `json:"by"`
	// ask: the executions asked for.
	W []want `json:"w,omitempty"`
	// data and frag: the execution and the feed's epoch.
	X string `json:"x,omitempty"`
	E string `json:"e,omitempty"`
	// data: chunks, oldest first.
	C []engine.Chunk `json:"c,omitempty"`
	// frag: part I of N (from 0) of chunk S's JSON, base64.
	S int64  `json:"s,omitempty"`
	I int    `json:"i,omitempty"`
	N int    `json:"n,omitempty"`
	D string `json:"d,omitempty"`
	// fence: its nonce.
	Nonce string `json:"f,omitempty"`
}

// want is an execution asked for, from a place in its feed.
type want struct {
	X string `json:"x"`
	E string `json:"e,omitempty"`
	S int64  `json:"s,omitempty"`
}

// Bounds of what a message may hold.
const (
	maxName  = 64
	maxParts = MaxChunkBytes/1024 + 1
)

// chunkKinds are the chunk kinds relayed.
var chunkKinds = map[string]bool{engine.ChunkText: true, engine.ChunkStart: true, engine.ChunkRestart: true, engine.ChunkEnd: true, engine.ChunkProgress: true}

// parse reads and checks a payload: anyone who may NOTIFY on the
// database can send one, so nothing is taken on trust (an epoch goes
// into event ids, a chunk into a client's stream).
func parse(payload string) (*message, error) {
	var m message
	dec := json.NewDecoder(strings.NewReader(payload))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&m); err != nil {
		return nil, fmt.Errorf("not a relay message: %w", err)
	}
	if dec.More() {
		return nil, errors.New("not a relay message: more after the object")
	}
	if err := checkName("by", m.By); err != nil {
		return nil, err
	}
	switch m.T {
	case kindFence:
		return &m, checkName("fence", m.Nonce)
	case kindAsk:
		if len(m.W) == 0 {
			return nil, errors.New("ask: no execution asked for")
		}
		for i, w := range m.W {
			if err := checkExecution(w.X); err != nil {
				return nil, fmt.Errorf("ask %d: %w", i, err)
			}
			if w.E != "" {
				if err := checkName("epoch", w.E); err != nil {
					return nil, fmt.Errorf("ask %d: %w", i, err)
				}
			}
			if w.S < 0 {
				return nil, fmt.Errorf("ask %d: position %d is negative", i, w.S)
			}
		}
		return &m, nil
	case kindData, kindFrag:
		if err := checkExecution(m.X); err != nil {
			return nil, err
		}
		if err := checkName("epoch", m.E); err != nil {
			return nil, err
		}
		if m.T == kindFrag {
			switch {
			case m.S < 1:
				return nil, fmt.Errorf("frag: chunk %d is not a chunk number", m.S)
			case m.N < 2 || m.N > maxParts || m.I < 0 || m.I >= m.N:
				return nil, fmt.Errorf("frag: part %d of %d", m.I, m.N)
			}
			return &m, nil
		}
		if len(m.C) == 0 {
			return nil, errors.New("data: no chunk")
		}
		for i := range m.C {
			if err := checkChunk(&m.C[i]); err != nil {
				return nil, fmt.Errorf("data: chunk %d: %w", i, err)
			}
			if i > 0 && m.C[i].Seq <= m.C[i-1].Seq {
				return nil, fmt.Errorf("data: chunk %d: number %d after %d", i, m.C[i].Seq, m.C[i-1].Seq)
			}
		}
		return &m, nil
	}
	return nil, fmt.Errorf("message of kind %q", m.T)
}

// checkChunk checks a relayed chunk.
func checkChunk(c *engine.Chunk) error {
	switch {
	case c.Seq < 1:
		return fmt.Errorf("number %d", c.Seq)
	case !chunkKinds[c.Kind]:
		return fmt.Errorf("kind %q", c.Kind)
	case c.Kind == engine.ChunkProgress && c.Progress == nil:
		return errors.New("a progress chunk without its report")
	}
	return nil
}

// checkName checks a name (a server's, an epoch, a nonce): 1 to 64
// letters, digits, '-' or '_', as the event ids of an execution's stream
// allow an epoch to be.
func checkName(what, s string) error {
	if s == "" || len(s) > maxName || strings.ContainsFunc(s, func(c rune) bool {
		return !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_')
	}) {
		return fmt.Errorf("%s %q is not 1 to %d letters, digits, '-' or '_'", what, s, maxName)
	}
	return nil
}

// checkExecution checks an execution id.
func checkExecution(id string) error {
	if id == "" || len(id) > maxID {
		return fmt.Errorf("execution id of %d bytes", len(id))
	}
	return nil
}

// encode packs chunks of execution id's feed of epoch into payloads of
// at most max bytes: data messages, and frag messages for a chunk too
// large for one. A chunk larger than MaxChunkBytes is left out.
func (r *Relay) encode(id, epoch string, chunks []engine.Chunk, max int) ([]string, error) {
	var out []string
	head, err := json.Marshal(message{T: kindData, By: r.by, X: id, E: epoch})
	if err != nil {
		return nil, err
	}
	// Room for the chunks: the head less its closing brace, plus
	// `,"c":[` and `]}`.
	room := max - (len(head) - 1) - len(`,"c":[]}`)
	var batch []byte
	n := 0
	flush := func() {
		if n == 0 {
			return
		}
		out = append(out, string(head[:len(head)-1])+`,"c":[`+string(batch)+`]}`)
		batch, n = batch[:0], 0
	}
	for i := range chunks {
		data, err := json.Marshal(&chunks[i])
		if err != nil {
			return nil, err
		}
		if len(data) > MaxChunkBytes {
			continue
		}
		if len(data) > room {
			flush()
			frags, err := r.fragments(id, epoch, chunks[i].Seq, data, max)
			if err != nil {
				return nil, err
			}
			out = append(out, frags...)
			continue
		}
		if len(batch)+1+len(data) > room {
			flush()
		}
		if n > 0 {
			batch = append(batch, ',')
		}
		batch = append(batch, data...)
		n++
	}
	flush()
	return out, nil
}

// fragments splits a chunk's JSON into frag messages of at most max
// bytes.
func (r *Relay) fragments(id, epoch string, seq int64, data []byte, max int) ([]string, error) {
	probe, err := json.Marshal(message{T: kindFrag, By: r.by, X: id, E: epoch, S: seq, I: maxParts, N: maxParts, D: "x"})
	if err != nil {
		return nil, err
	}
	per := (max - len(probe)) / 4 * 3
	if per < 256 {
		return nil, fmt.Errorf("execution id of %d bytes leaves no room for a fragment", len(id))
	}
	parts := (len(data) + per - 1) / per
	out := make([]string, 0, parts)
	for i := range parts {
		part := data[i*per : min(len(data), (i+1)*per)]
		msg, err := json.Marshal(message{T: kindFrag, By: r.by, X: id, E: epoch, S: seq, I: i, N: parts, D: base64.StdEncoding.EncodeToString(part)})
		if err != nil {
			return nil, err
		}
		out = append(out, string(msg))
	}
	return out, nil
}

// reassembly is a chunk coming in fragments.
type reassembly struct {
	parts [][]byte
	have  int
	size  int
}

// fragment adds m's part to its chunk's reassembly, and returns the chunk
// once every part is in.
func (r *Relay) fragment(m *message) (engine.Chunk, bool, error) {
	part, err := base64.StdEncoding.DecodeString(m.D)
	if err != nil {
		return engine.Chunk{}, false, fmt.Errorf("frag: %w", err)
	}
	key := fmt.Sprintf("%s\x00%s\x00%d", m.X, m.E, m.S)
	r.mu.Lock()
	defer r.mu.Unlock()
	re := r.pending[key]
	if re == nil {
		for len(r.order) >= MaxPending {
			delete(r.pending, r.order[0])
			r.order = r.order[1:]
		}
		re = &reassembly{parts: make([][]byte, m.N)}
		r.pending[key] = re
		r.order = append(r.order, key)
	}
	if len(re.parts) != m.N {
		return engine.Chunk{}, false, fmt.Errorf("frag: chunk %d in %d parts, then in %d", m.S, len(re.parts), m.N)
	}
	if re.parts[m.I] != nil {
		return engine.Chunk{}, false, nil
	}
	if re.size+len(part) > MaxChunkBytes {
		r.forget(key)
		return engine.Chunk{}, false, fmt.Errorf("frag: chunk %d passes %d bytes", m.S, MaxChunkBytes)
	}
	re.parts[m.I], re.have, re.size = part, re.have+1, re.size+len(part)
	if re.have < m.N {
		return engine.Chunk{}, false, nil
	}
	r.forget(key)
	var c engine.Chunk
	if err := json.Unmarshal(joinParts(re.parts), &c); err != nil {
		return c, false, fmt.Errorf("frag: chunk %d: %w", m.S, err)
	}
	if err := checkChunk(&c); err != nil || c.Seq != m.S {
		return c, false, fmt.Errorf("frag: chunk %d: not the chunk announced (%v)", m.S, err)
	}
	return c, true, nil
}

// forget drops a reassembly; r.mu is held.
func (r *Relay) forget(key string) {
	delete(r.pending, key)
	for i, k := range r.order {
		if k == key {
			r.order = append(r.order[:i], r.order[i+1:]...)
			break
		}
	}
}

// joinParts concatenates parts.
func joinParts(parts [][]byte) []byte {
	n := 0
	for _, p := range parts {
		n += len(p)
	}
	out := make([]byte, 0, n)
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}
