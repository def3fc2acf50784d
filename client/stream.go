package client

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"iter"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/aslrun/aslrun/api"
)

// StreamOptions configures Client.Stream. The zero value streams from
// the start.
type StreamOptions struct {
	// After resumes after this event id (a StreamEvent's ID: "N" or
	// "N:EPOCH:SEQ"); empty starts from the execution's first event.
	After string
}

// StreamEvent is an event of an execution's stream
// (GET /v1/executions/{id}/events).
type StreamEvent struct {
	// ID resumes the stream after this event (StreamOptions.After);
	// empty on `end` and `error`.
	ID string
	// Event is a history event's type (ExecutionStarted, …, Data an
	// api.Event); a chunk event's name: stream-start, chunk, restart,
	// stream-end (Data a chunk: seq, kind, state, step, attempt, turn,
	// text, error, at) or chunks-missed (Data {"count": N}); or end
	// (Data an api.Execution), the last.
	Event string
	// Data is the event's data, JSON.
	Data json.RawMessage
}

// Bounds of Client.Stream.
const (
	// StreamRetries is how many times in a row Stream reconnects after
	// its connection dropped before it gives up; an event received
	// starts the count again.
	StreamRetries = 5
	// streamBackoff is the wait before the first reconnection, doubled
	// before each next up to streamBackoffMax.
	streamBackoff    = 100 * time.Millisecond
	streamBackoffMax = 5 * time.Second
	// streamIdle drops a connection that received nothing, not even a
	// keepalive (the server sends one every 15 s), for that long.
	streamIdle = 45 * time.Second
	// maxStreamEvent bounds an event's size.
	maxStreamEvent = 16 << 20
)

// Stream follows execution id's events: its history events as they are
// committed and the chunks its agents stream, then `end` once it has
// ended, the last event. When the connection drops (or stays silent for
// 45 s) it reconnects after the last event's id, so that no event is
// lost or repeated, up to StreamRetries times in a row with a backoff
// from 100 ms to 5 s. An error ends the sequence: a problem the server
// answered with (*Error: the stream's `error` event, or a refusal before
// it starts, which is not retried but for 429 and 5xx), the retries
// used up, or ctx's. Stream ignores the client's timeout: ctx bounds it.
func (c *Client) Stream(ctx context.Context, id string, opts StreamOptions) iter.Seq2[StreamEvent, error] {
	return func(yield func(StreamEvent, error) bool) {
		hc := *c.hc
		hc.Timeout = 0
		last := opts.After
		failures := 0
		for {
			got := false
			done, err := c.streamOnce(ctx, &hc, id, last, func(ev StreamEvent, err error) bool {
				got = true
				if ev.ID != "" {
					last = ev.ID
				}
				return yield(ev, err)
			})
			if done {
				return
			}
			if got {
				failures = 0
			}
			if ctx.Err() != nil {
				yield(StreamEvent{}, ctx.Err())
				return
			}
			if status := StatusOf(err); status >= 400 && status < 500 && status != http.StatusTooManyRequests {
				yield(StreamEvent{}, err)
				return
			}
			failures++
			if failures > StreamRetries {
				yield(StreamEvent{}, fmt.Errorf("stream of execution %s: gave up after %d reconnections: %w", id, StreamRetries, err))
				return
			}
			wait := time.NewTimer(min(streamBackoff<<(failures-1), streamBackoffMax))
			select {
			case <-ctx.Done():
				wait.Stop()
				yield(StreamEvent{}, ctx.Err())
				return
			case <-wait.C:
			}
		}
	}
}

// streamOnce reads one connection of the stream after event id last,
// passing each event to yield. done is set when the stream is over: its
// `end` or `error` event was read (the error is then yielded), or yield
// said to stop. Otherwise err says why the connection ended.
func (c *Client) streamOnce(ctx context.Context, hc *http.Client, id, last string, yield func(StreamEvent, error) bool) (done bool, err error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, "GET", c.base+"/v1/executions/"+url.PathEscape(id)+"/events", nil)
	if err != nil {
		return false, err
	}
	req.Header.Set("Accept", "text/event-stream")
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	if last != "" {
		req.Header.Set("Last-Event-ID", last)
	}
	idle := time.AfterFunc(streamIdle, cancel)
	defer idle.Stop()
	resp, err := hc.Do(req)
	if err != nil {
		return false, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		data, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		return false, problemError(resp.StatusCode, data)
	}
	rd := bufio.NewReader(resp.Body)
	for {
		ev, err := readEvent(rd, func() { idle.Reset(streamIdle) })
		if err != nil {
			if err == io.EOF {
				err = io.ErrUnexpectedEOF // the stream ends with `end`
			}
			return false, fmt.Errorf("stream of execution %s: %w", id, err)
		}
		switch ev.Event {
		case "error":
			e := problemError(http.StatusInternalServerError, ev.Data)
			if e.Problem.Status != 0 {
				e.Status = e.Problem.Status
			}
			yield(ev, e)
			return true, nil
		case "end":
			yield(ev, nil)
			return true, nil
		}
		if !yield(ev, nil) {
			return true, nil
		}
	}
}

// problemError is the *Error of a problem document answered with status.
func problemError(status int, data []byte) *Error {
	e := &Error{Status: status}
	if json.Unmarshal(data, &e.Problem) != nil || e.Problem.Title == "" {
		e.Problem = api.Problem{Title: http.StatusText(status), Detail: string(bytes.TrimSpace(data))}
	}
	return e
}

// readEvent reads the next event of a text/event-stream (skipping
// comments), calling alive at each line read. An event is its lines up
// to a blank line: `id:`, `event:` (default "message") and `data:`
// (several joined by newlines); others are ignored. It refuses an event
// larger than maxStreamEvent.
func readEvent(rd *bufio.Reader, alive func()) (StreamEvent, error) {
	var ev StreamEvent
	var data []byte
	size, fields := 0, 0
	for {
		line, err := rd.ReadSlice('\n')
		for err == bufio.ErrBufferFull {
			if size += len(line); size > maxStreamEvent {
				return ev, fmt.Errorf("an event larger than %d bytes", maxStreamEvent)
			}
			more := append([]byte(nil), line...)
			line, err = rd.ReadSlice('\n')
			line = append(more, line...)
		}
		if err != nil {
			if err == io.EOF && len(line) == 0 && fields == 0 {
				return ev, io.EOF
			}
			if err == io.EOF {
				return ev, io.ErrUnexpectedEOF
			}
			return ev, err
		}
		alive()
		if size += len(line); size > maxStreamEvent {
			return ev, fmt.Errorf("an event larger than %d bytes", maxStreamEvent)
		}
		text := strings.TrimSuffix(strings.TrimSuffix(string(line), "\n"), "\r")
		if text == "" {
			if fields == 0 {
				size = 0
				continue
			}
			if ev.Event == "" {
				ev.Event = "message"
			}
			ev.Data = data
			return ev, nil
		}
		if text[0] == ':' {
			continue // a comment
		}
		fields++
		name, value, _ := strings.Cut(text, ":")
		value = strings.TrimPrefix(value, " ")
		switch name {
		case "id":
			ev.ID = value
		case "event":
			ev.Event = value
		case "data":
			if data != nil {
				data = append(data, '\n')
			}
			data = append(data, value...)
		}
	}
}
