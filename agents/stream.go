package agents

import "io"

// Streaming: an agent whose state streams (a Task's Streaming block)
// sends the text it generates as it goes, beside its result: a model
// loop the deltas of its turns, a Go agent what it writes to Stream().
// Streamed text is not history: only the agent's result is committed;
// the engine passes the text to the execution's subscribers (the
// server's event stream, the page, `aslrun watch`), shaped into chunks as
// the state's Streaming says.

// Streaming reports whether the state streams: an agent that can produce
// its text bit by bit (a model's tokens) does so only then.
func (r *Request) Streaming() bool { return r.OnStream != nil }

// Stream returns the writer the agent streams text to: each Write is
// passed on as it comes (chunked by the state's Streaming Mode), as part
// of the call's turn 0. Without streaming, writes are discarded. Writes
// never fail; the writer is safe for concurrent use only as far as the
// agent serializes its writes.
func (r *Request) Stream() io.Writer { return turnWriter{r: r} }

// StreamText passes text the agent generated in its turn (a model loop's
// turn number, 0 for an agent without turns) to the state's stream; a
// no-op without streaming.
func (r *Request) StreamText(turn int, text string) {
	if r.OnStream != nil && text != "" {
		r.OnStream(turn, text)
	}
}

// turnWriter is Stream's writer.
type turnWriter struct{ r *Request }

func (w turnWriter) Write(p []byte) (int, error) {
	w.r.StreamText(0, string(p))
	return len(p), nil
}

// ReportProgress tells the engine how far the agent is: a number is its
// percentage (0 to 100); any other JSON value is a report whose
// percentage the state's Progress Path selects ("$.percentage" by
// default), the whole report shown to whoever follows the execution.
// The engine passes it to the execution's live feed (not history),
// records the state's Progress Milestones it reaches, and counts it as a
// heartbeat when the state's Progress says HeartbeatOnUpdate. A no-op
// when the state does not follow progress.
func (r *Request) ReportProgress(report any) {
	if r.OnProgress != nil {
		r.OnProgress(report)
	}
}
