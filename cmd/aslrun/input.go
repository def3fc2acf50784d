package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/aslrun/aslrun/engine"
	"github.com/aslrun/aslrun/jsonvalue"
	"github.com/aslrun/aslrun/server"
)

// inputLimit is the most bytes of compact JSON an execution input may
// have, read before the execution is started: -1 for no limit.
type inputLimit struct {
	bytes int
	// what names the limit in a refusal ("the payload limit").
	what string
}

// noInputLimit reads a document whole (approve --edit, task-success
// --output: their limit is the execution's, checked by the engine).
const noInputLimit = -1

// remoteInputLimit is the limit of an execution input sent to a server's
// API: the execution's own (own > 0), else the largest request body the
// API takes — the server applies its own --max-payload, which this
// process does not know, and refuses a larger body anyway.
func remoteInputLimit(own int) inputLimit {
	if own > 0 && own < server.DefaultMaxBody {
		return inputLimit{bytes: own, what: "the payload limit"}
	}
	return inputLimit{bytes: server.DefaultMaxBody, what: "the largest request the server's API takes"}
}

// payloadInputLimit is the limit of an execution input under
// --max-payload: own is the execution's own limit (ownPayload: 0 none,
// -1 no limit), flag the process's --max-payload (0: AWS's, -1: none).
func payloadInputLimit(own, flag int) inputLimit {
	limit := own
	if limit == 0 {
		limit = flag
		if limit == 0 {
			limit = engine.DefaultMaxPayloadSize
		}
	}
	if limit < 0 {
		return inputLimit{bytes: noInputLimit}
	}
	return inputLimit{bytes: limit, what: "the payload limit"}
}

// errTooLarge is what readBounded returns for a document past its limit.
var errTooLarge = errors.New("the document passes the limit")

// readBounded reads a JSON document from r, stopping as soon as it has
// more than limit bytes of compact JSON (its bytes but the spaces, tabs
// and line breaks between tokens): errTooLarge then, and the rest is not
// read. limit < 0 reads it whole. It returns the document's bytes; past
// a few times the limit, the whitespace between tokens is left out of
// them, so that a document padded with it does not fill memory either.
// It does not check that the document is JSON: the decoder does.
func readBounded(r io.Reader, limit int) ([]byte, error) {
	if limit < 0 {
		return io.ReadAll(r)
	}
	keepAll := 4*limit + 4096 // raw bytes kept as they are, for exact error offsets
	br := bufio.NewReaderSize(r, 64<<10)
	var (
		data               []byte
		n                  int // bytes of compact JSON so far
		inString, escaping bool
	)
	for {
		b, err := br.ReadByte()
		if err == io.EOF {
			return data, nil
		}
		if err != nil {
			return nil, err
		}
		significant := true
		switch {
		case inString && escaping:
			escaping = false
		case inString && b == '\\':
			escaping = true
		case inString && b == '"':
			inString = false
		case inString:
		case b == '"':
			inString = true
		case b == ' ' || b == '\t' || b == '\n' || b == '\r':
			significant = false
		}
		if significant {
			n++
			if n > limit {
				return nil, errTooLarge
			}
		}
		if significant || len(data) < keepAll {
			data = append(data, b)
		}
	}
}

// readInput reads a document flag (--input, --edit, --output): JSON text,
// @FILE, or - for standard input, reading no more of a file or of
// standard input than limit allows.
func (c *cmdContext) readInput(arg string, limit inputLimit) (any, error) {
	var (
		data []byte
		err  error
		from = "--input"
	)
	switch {
	case arg == "":
		return map[string]any{}, nil
	case arg == "-":
		from = "standard input"
		data, err = readBounded(c.stdin, limit.bytes)
	case strings.HasPrefix(arg, "@"):
		from = arg[1:]
		var f *os.File
		if f, err = os.Open(from); err == nil {
			data, err = readBounded(f, limit.bytes)
			f.Close()
		}
	default:
		data = []byte(arg) // in memory already: the engine measures it
	}
	if errors.Is(err, errTooLarge) {
		size := ""
		if fi, err := os.Stat(from); from != "standard input" && err == nil {
			size = fmt.Sprintf(" (%s is %d bytes)", from, fi.Size())
		}
		return nil, usageErrorf("input from %s: the execution input of more than %d bytes%s passes %s of %d bytes; raise the limit with --max-payload BYTES",
			from, limit.bytes, size, limit.what, limit.bytes)
	}
	if err != nil {
		return nil, usageErrorf("read input: %v", err)
	}
	// Large arrays are kept packed (an inline Map's items, held as their
	// JSON text and decoded one at a time).
	v, err := jsonvalue.DecodePacked(data, jsonvalue.PackFrom)
	if err != nil {
		return nil, usageErrorf("input from %s: %v", from, err)
	}
	return v, nil
}
