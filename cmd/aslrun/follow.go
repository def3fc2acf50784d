package main

// Following executions as they run: `aslrun run --follow` prints the text
// streaming states stream (a Task's Streaming block) as it comes, and
// `aslrun watch ID` prints an execution's history events one line each,
// with the streamed text inline, until it ends. Both print the progress
// states report (agents, milestones, Maps' item counts) as it comes.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"golang.org/x/term"

	"github.com/aslrun/aslrun/api"
	"github.com/aslrun/aslrun/engine"
)

const (
	// watchPoll is how often watch reads a database no process holds.
	watchPoll = 250 * time.Millisecond
	// watchBatch is how many history events watch reads at a time.
	watchBatch = 1000
	// sseMaxLine bounds a line of an event stream (an event's data line
	// holds a whole history event).
	sseMaxLine = 64 << 20
	// followRetries bounds the reconnections of an event stream that
	// dropped without its end; followBackoff is the first pause, doubled
	// up to followBackoffMax.
	followRetries    = 5
	followBackoff    = 100 * time.Millisecond
	followBackoffMax = 2 * time.Second
	// followSettle bounds how long run --follow waits, once the execution
	// has ended, for the server's stream to deliver its last chunks.
	followSettle = 5 * time.Second
)

// ANSI styles of a terminal's chunk output.
const (
	styleHeader = "\x1b[1;36m"
	styleNote   = "\x1b[33m"
	styleError  = "\x1b[1;31m"
	styleReset  = "\x1b[0m"
)

// chunkPrinter prints an execution's streamed chunks: a header line
// "── State (turn N)" when the state or turn changes, then the text as it
// comes. On a terminal (styled) the header and notes are coloured; else
// plain text only. Text goes through streamSafe: it cannot move the
// cursor or restyle the terminal. It is safe for concurrent use.
type chunkPrinter struct {
	mu     sync.Mutex
	w      io.Writer
	styled bool
	// state and turn are the last header's ("" none); midLine is set
	// when the last text did not end a line.
	state   string
	turn    int
	midLine bool
	// Progress reports (see progress): on a terminal, bar is the line
	// rewritten in place (shown while barShown), one part per state in
	// the order they first reported; else printed is when each state's
	// last line was printed, now the clock.
	bar      []progressPart
	barShown bool
	printed  map[string]time.Time
	now      func() time.Time
}

// progressPart is a state's part of the progress line.
type progressPart struct {
	state, text string
}

// progressEvery is the least time between two progress lines of one
// state when the output is not a terminal (milestones and final counts
// always print).
const progressEvery = time.Second

// newChunkPrinter prints to w, styled when w is a terminal and NO_COLOR
// is not set.
func newChunkPrinter(w io.Writer) *chunkPrinter {
	f, ok := w.(*os.File)
	styled := ok && term.IsTerminal(int(f.Fd())) && os.Getenv("NO_COLOR") == ""
	return &chunkPrinter{w: w, styled: styled, printed: map[string]time.Time{}, now: time.Now}
}

// line prints one line of its own (a header, a note), in style when
// styled.
func (p *chunkPrinter) line(style, text string) {
	p.clearBar()
	if p.midLine {
		fmt.Fprintln(p.w)
		p.midLine = false
	}
	if p.styled {
		fmt.Fprintf(p.w, "%s%s%s\n", style, text, styleReset)
		return
	}
	fmt.Fprintln(p.w, text)
}

// chunk prints one chunk; kind is its kind (engine.ChunkText, …), which
// an event stream names by its event.
func (p *chunkPrinter) chunk(kind string, c engine.Chunk) {
	p.mu.Lock()
	defer p.mu.Unlock()
	name := termSafe(c.State)
	switch kind {
	case engine.ChunkText:
		if c.Text == "" {
			return
		}
		if p.state != c.State || p.turn != c.Turn {
			header := "── " + name
			if c.Turn > 0 {
				header += fmt.Sprintf(" (turn %d)", c.Turn)
			}
			p.line(styleHeader, header)
			p.state, p.turn = c.State, c.Turn
		}
		text := streamSafe(c.Text)
		if p.barShown {
			p.clearBar()
			p.line(styleHeader, "── "+name)
		}
		fmt.Fprint(p.w, text)
		p.midLine = !strings.HasSuffix(text, "\n")
	case engine.ChunkRestart:
		p.line(styleNote, fmt.Sprintf("── %s restarted (attempt %d): the text above is void", name, c.Attempt+1))
		p.state = ""
	case engine.ChunkProgress:
		p.progress(c)
	case engine.ChunkEnd:
		if c.Error != "" {
			p.line(styleError, fmt.Sprintf("── %s failed: %s", name, termSafe(c.Error)))
		} else if p.midLine {
			fmt.Fprintln(p.w)
			p.midLine = false
		}
		p.state = ""
	}
}

// missed tells that n chunks were lost (a reader the feed outran).
func (p *chunkPrinter) missed(n int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.line(styleNote, fmt.Sprintf("── %d streamed chunks missed", n))
	p.state = ""
}

// history prints a line of its own between chunks: the next text gets a
// header again.
func (p *chunkPrinter) history(text string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.line("", text)
	p.state = ""
}

// progress prints a progress report: a milestone on a line of its own;
// another report, on a terminal, in the progress line rewritten in place
// (\r), else on a line of its own, at most one a progressEvery per state
// but for the last of a Map's items.
func (p *chunkPrinter) progress(c engine.Chunk) {
	r := c.Progress
	if r == nil {
		return
	}
	name := termSafe(c.State)
	if r.Milestone != "" {
		p.line(styleNote, fmt.Sprintf("── %s reached milestone %s%s", name, termSafe(r.Milestone), percentText(r.Percentage)))
		p.state = ""
		return
	}
	text := progressText(r)
	if !p.styled {
		final := r.Total > 0 && r.Completed+r.Failed == r.Total
		now := p.now()
		if last, ok := p.printed[c.State]; ok && now.Sub(last) < progressEvery && !final {
			return
		}
		p.printed[c.State] = now
		p.line("", "── "+name+": "+text)
		p.state = ""
		return
	}
	i := slices.IndexFunc(p.bar, func(b progressPart) bool { return b.state == c.State })
	if i < 0 {
		p.bar = append(p.bar, progressPart{state: c.State})
		i = len(p.bar) - 1
	}
	p.bar[i].text = name + ": " + text
	if p.midLine {
		fmt.Fprintln(p.w)
		p.midLine = false
		p.state = ""
	}
	parts := make([]string, len(p.bar))
	for i, b := range p.bar {
		parts[i] = b.text
	}
	fmt.Fprintf(p.w, "\r\x1b[K%s%s%s", styleNote, clip(strings.Join(parts, "  ·  "), termWidth(p.w)-1), styleReset)
	p.barShown = true
}

// clearBar wipes the progress line from a terminal, before another line
// takes its place (the next report shows it again).
func (p *chunkPrinter) clearBar() {
	if p.barShown {
		fmt.Fprint(p.w, "\r\x1b[K")
		p.barShown = false
	}
}

// maxReportText bounds an agent's report on a progress line.
const maxReportText = 60

// progressText is a report as a progress line shows it: a Map's counts
// ("12/20 done, 1 failed, 3 running (65%)"), or an agent's percentage
// and report.
func progressText(r *engine.ProgressReport) string {
	if r.Total > 0 {
		text := fmt.Sprintf("%d/%d done", r.Completed, r.Total)
		if r.Failed > 0 {
			text += fmt.Sprintf(", %d failed", r.Failed)
		}
		if r.InProgress > 0 {
			text += fmt.Sprintf(", %d running", r.InProgress)
		}
		return text + percentText(r.Percentage)
	}
	var parts []string
	if r.Percentage != nil {
		parts = append(parts, strconv.FormatFloat(*r.Percentage, 'f', -1, 64)+"%")
	}
	if r.Report != nil {
		var report string
		if s, ok := r.Report.(string); ok {
			report = s
		} else if data, err := json.Marshal(r.Report); err == nil {
			report = string(data)
		}
		parts = append(parts, clip(termSafe(report), maxReportText))
	}
	if len(parts) == 0 {
		return "working"
	}
	return strings.Join(parts, " ")
}

// percentText is " (N%)", or "" without a percentage.
func percentText(pct *float64) string {
	if pct == nil {
		return ""
	}
	return " (" + strconv.FormatFloat(*pct, 'f', 0, 64) + "%)"
}

// clip cuts s to n runes, the last one "…" when cut.
func clip(s string, n int) string {
	if n < 1 || utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n-1]) + "…"
}

// termWidth is w's width when it is a terminal, else 80.
func termWidth(w io.Writer) int {
	if f, ok := w.(*os.File); ok {
		if cols, _, err := term.GetSize(int(f.Fd())); err == nil && cols > 1 {
			return cols
		}
	}
	return 80
}

// finish ends a line the text or the progress line left open.
func (p *chunkPrinter) finish() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.barShown {
		fmt.Fprintln(p.w)
		p.barShown = false
	}
	if p.midLine {
		fmt.Fprintln(p.w)
		p.midLine = false
	}
}

// streamSafe is text with what termSafe escapes escaped, but line breaks
// and tabs kept: streamed text is prose and code.
func streamSafe(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == '\n' || r == '\t':
			b.WriteRune(r)
		case needsEscape(r, n):
			b.WriteString(termSafe(s[i : i+n]))
		default:
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	return b.String()
}

// liveFollower prints the live feed of an execution an executor of this
// process runs.
type liveFollower struct {
	stop, done chan struct{}
	once       sync.Once
}

// followLive prints execution id's live feed of x to p until end is
// called.
func followLive(x *engine.Executor, id string, p *chunkPrinter) *liveFollower {
	f := &liveFollower{stop: make(chan struct{}), done: make(chan struct{})}
	// The feed exists from now on: what the run reports before the
	// goroutine first reads is kept for it (a feed nobody reads keeps
	// nothing).
	x.Live(id, "", 0)
	go func() {
		defer close(f.done)
		epoch, after := "", int64(0)
		read := func() <-chan struct{} {
			r := x.Live(id, epoch, after)
			if r.Missed > 0 {
				p.missed(r.Missed)
			}
			if epoch != "" && r.Epoch != epoch {
				after = 0
			}
			epoch = r.Epoch
			for _, c := range r.Chunks {
				p.chunk(c.Kind, c)
				after = c.Seq
			}
			return r.Changed
		}
		for {
			changed := read()
			select {
			case <-changed:
			case <-f.stop:
				read() // what came before the run returned
				return
			}
		}
	}()
	return f
}

// end prints what is left of the feed and stops; it may be called more
// than once.
func (f *liveFollower) end() {
	f.once.Do(func() { close(f.stop) })
	<-f.done
}

// followRun makes a local run of x with opts print its streamed text
// from the moment the execution exists (opts.Created); the function it
// returns prints what is left and stops (a no-op unless follow).
func followRun(c *cmdContext, x *engine.Executor, opts *engine.StartOptions, follow bool) func() {
	if !follow {
		return func() {}
	}
	p := newChunkPrinter(c.stdout)
	var mu sync.Mutex
	var f *liveFollower
	created := opts.Created
	opts.Created = func(id string) {
		if created != nil {
			created(id)
		}
		mu.Lock()
		defer mu.Unlock()
		if f == nil {
			f = followLive(x, id, p)
		}
	}
	return func() {
		mu.Lock()
		defer mu.Unlock()
		if f != nil {
			f.end()
		}
		p.finish()
	}
}

// sseEvent is one event of a text/event-stream.
type sseEvent struct {
	ID, Event string
	Data      []byte
}

// readSSE reads an event stream, calling fn with each event (a comment
// or an event without data is none) until the stream ends, fn returns
// an error, or a line passes sseMaxLine. A stream that ends within an
// event drops it, as the format says.
func readSSE(r io.Reader, fn func(sseEvent) error) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), sseMaxLine)
	var ev sseEvent
	var data bytes.Buffer
	hasData := false
	for sc.Scan() {
		line := sc.Text()
		if line == "" {
			if hasData {
				ev.Data = bytes.TrimSuffix(data.Bytes(), []byte("\n"))
				if ev.Event == "" {
					ev.Event = "message"
				}
				if err := fn(ev); err != nil {
					return err
				}
			}
			ev, hasData = sseEvent{ID: ev.ID}, false
			data.Reset()
			continue
		}
		if strings.HasPrefix(line, ":") {
			continue
		}
		field, value, _ := strings.Cut(line, ":")
		value = strings.TrimPrefix(value, " ")
		switch field {
		case "id":
			if !strings.ContainsRune(value, 0) {
				ev.ID = value
			}
		case "event":
			ev.Event = value
		case "data":
			data.WriteString(value)
			data.WriteByte('\n')
			hasData = true
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("the event stream: %w", err)
	}
	return nil
}

// errStreamEnded is what a stream's handler returns at its `end` event.
var errStreamEnded = errors.New("the stream ended")

// streamError is an `error` event of the server's: the problem that ended
// the stream.
type streamError struct{ p api.Problem }

func (e *streamError) Error() string {
	if e.p.Detail != "" {
		return e.p.Detail
	}
	return e.p.Title
}

// followSocket reads execution id's event stream from the API on the
// unix socket sock, from after (a history event id, or the id of the last
// event seen: "N" or "N:EPOCH:SEQ"; "" from the start), calling fn with
// each event until fn returns errStreamEnded (then nil), another error,
// or ctx ends. A stream that drops is resumed with its last id, at most
// followRetries times in a row.
func followSocket(ctx context.Context, sock, id, after string, fn func(sseEvent) error) error {
	hc := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", sock)
	}}}
	defer hc.CloseIdleConnections()
	last, tries, pause := after, 0, followBackoff
	for {
		err := func() error {
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://aslrun/v1/executions/"+url.PathEscape(id)+"/events", nil)
			if err != nil {
				return err
			}
			req.Header.Set("Accept", "text/event-stream")
			if last != "" {
				req.Header.Set("Last-Event-ID", last)
			}
			resp, err := hc.Do(req)
			if err != nil {
				return err
			}
			defer resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				var p api.Problem
				data, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
				if json.Unmarshal(data, &p) != nil || p.Title == "" {
					p.Title, p.Detail = http.StatusText(resp.StatusCode), strings.TrimSpace(string(data))
				}
				p.Status = resp.StatusCode
				return &streamError{p: p}
			}
			return readSSE(resp.Body, func(ev sseEvent) error {
				tries, pause = 0, followBackoff
				if ev.Event == "error" {
					var p api.Problem
					if err := json.Unmarshal(ev.Data, &p); err != nil {
						return fmt.Errorf("the event stream's error event: %w", err)
					}
					return &streamError{p: p}
				}
				if err := fn(ev); err != nil {
					return err
				}
				if ev.ID != "" {
					last = ev.ID
				}
				return nil
			})
		}()
		var se *streamError
		switch {
		case errors.Is(err, errStreamEnded):
			return nil
		case ctx.Err() != nil:
			return ctx.Err()
		case errors.As(err, &se):
			return err
		case err != nil && !isDrop(err):
			return err
		}
		// The stream dropped (or ended without its end): resume it.
		if tries++; tries > followRetries {
			if err == nil {
				err = errors.New("the stream ended without its end event")
			}
			return fmt.Errorf("the event stream of execution %s at %s dropped %d times: %w", id, sock, followRetries+1, err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(pause):
		}
		pause = min(2*pause, followBackoffMax)
	}
}

// isDrop tells a connection that dropped from an answer to give up on.
func isDrop(err error) bool {
	var ne net.Error
	return errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) || errors.As(err, &ne) || errors.Is(err, net.ErrClosed)
}

// chunkEvents maps the stream's chunk events to their chunks' kinds.
var chunkEvents = map[string]string{
	"chunk": engine.ChunkText, "stream-start": engine.ChunkStart, "restart": engine.ChunkRestart, "stream-end": engine.ChunkEnd,
	"progress": engine.ChunkProgress,
}

// streamChunk prints ev when it is one of the stream's chunk events; ok
// is false for any other event.
func streamChunk(p *chunkPrinter, ev sseEvent) (ok bool, err error) {
	if ev.Event == "chunks-missed" {
		var m struct {
			Count int64 `json:"count"`
		}
		if err := json.Unmarshal(ev.Data, &m); err != nil {
			return true, fmt.Errorf("event chunks-missed %s: %w", ev.ID, err)
		}
		p.missed(m.Count)
		return true, nil
	}
	kind, ok := chunkEvents[ev.Event]
	if !ok {
		return false, nil
	}
	var c engine.Chunk
	if err := json.Unmarshal(ev.Data, &c); err != nil {
		return true, fmt.Errorf("event %s %s: %w", ev.Event, ev.ID, err)
	}
	p.chunk(kind, c)
	return true, nil
}

// runFollowRemote waits, as waitAndPrint does, for an execution a server
// runs, printing its streamed text from the server's event stream
// meanwhile: once it has ended, after the stream's last chunks (at most
// followSettle more).
func runFollowRemote(ctx context.Context, c *cmdContext, h *handle, id string, noPrompt bool) error {
	p := newChunkPrinter(c.stdout)
	fctx, cancel := context.WithCancel(ctx)
	defer cancel()
	followed := make(chan error, 1)
	go func() {
		followed <- followSocket(fctx, h.sock, id, "", func(ev sseEvent) error {
			if ev.Event == "end" {
				return errStreamEnded
			}
			_, err := streamChunk(p, ev)
			return err
		})
	}()
	res, err := h.wait(ctx, id)
	if err == nil && res.Status.Ended() {
		select {
		case ferr := <-followed:
			if ferr != nil && ctx.Err() == nil {
				printf(c.stderr, "aslrun: the streamed text of %s: %v\n", id, ferr)
			}
		case <-time.After(followSettle):
		}
	}
	cancel()
	p.finish()
	return decideAndPrint(ctx, c, h, id, res, err, noPrompt)
}

// eventLine is a history event as watch prints it: its number, time,
// type, state and error.
func eventLine(seq int64, at time.Time, typ, state, errName, cause string) string {
	line := fmt.Sprintf("%4d  %s  %s", seq, at.UTC().Format("15:04:05.000"), termSafe(typ))
	if state != "" {
		line += "  " + termSafe(state)
	}
	if errName != "" {
		line += "  " + termSafe(errName)
		if cause != "" {
			line += ": " + termSafe(cause)
		}
	}
	return line
}

// watchEnd prints how the execution ended and returns its exit: 0 when
// it succeeded, exitFailed otherwise.
func watchEnd(p *chunkPrinter, id string, status engine.Status, errName, cause string) error {
	line := fmt.Sprintf("execution %s %s", termSafe(id), status)
	if errName != "" {
		line += ": " + termSafe(errName)
		if cause != "" {
			line += ": " + termSafe(cause)
		}
	}
	p.history(line)
	if status != engine.StatusSucceeded {
		return &exitError{code: exitFailed}
	}
	return nil
}

func cmdWatch(ctx context.Context, c *cmdContext, args []string) error {
	fs := flag.NewFlagSet("watch", flag.ContinueOnError)
	db := dbFlag(fs)
	pos, err := parseFlags(fs, "watch", args, c.stdout)
	if done, err := handleHelp(err); done || err != nil {
		return err
	}
	if len(pos) != 1 {
		return usageErrorf("watch: want exactly one execution ID, got %d (see \"aslrun watch --help\")", len(pos))
	}
	id := pos[0]
	p := newChunkPrinter(c.stdout)
	var after int64
	told := false
	for {
		h, err := c.open(ctx, *db, accessRead, holderInfo{})
		if err != nil {
			return err
		}
		if h.api != nil {
			h.close()
			var gone bool
			if after, gone, err = watchRemote(ctx, h, p, id, after); !gone {
				return err
			}
			// The holder went away (a run that ended): read the
			// database again.
			continue
		}
		e, err := h.st.Load(ctx, id)
		var events []engine.Event
		if err == nil {
			// Loaded first: once it has ended, the history read after
			// holds every event.
			events, _, err = h.st.HistoryRange(ctx, id, after, watchBatch)
		}
		h.close()
		if err != nil {
			return engineError(err)
		}
		if !told && !e.Status.Ended() {
			told = true
			printf(c.stderr, "aslrun: no process holds %s: watching the history only, without streamed text (it is shown through the API of the process running the execution: `aslrun serve`, or an `aslrun run`)\n", *db)
		}
		for _, ev := range events {
			after++
			p.history(eventLine(after, ev.Timestamp, ev.Type, ev.Scope+ev.State, ev.Error, ev.Cause))
		}
		switch {
		case len(events) == watchBatch:
			continue
		case e.Status.Ended():
			return watchEnd(p, id, e.Status, e.Error, e.Cause)
		}
		select {
		case <-ctx.Done():
			if err := interrupted(ctx, ""); err != nil {
				return err
			}
			return ctx.Err()
		case <-time.After(watchPoll):
		}
	}
}

// watchRemote follows execution id through the API of the process
// holding the database, from after its history event after. It returns
// the last history event seen and, when the process went away before the
// execution ended (its socket no longer answers), gone.
func watchRemote(ctx context.Context, h *handle, p *chunkPrinter, id string, after int64) (last int64, gone bool, err error) {
	var end error
	from := ""
	if after > 0 {
		from = fmt.Sprint(after)
	}
	err = followSocket(ctx, h.sock, id, from, func(ev sseEvent) error {
		if ok, err := streamChunk(p, ev); ok || err != nil {
			return err
		}
		switch ev.Event {
		case "end":
			var e api.Execution
			if err := json.Unmarshal(ev.Data, &e); err != nil {
				return fmt.Errorf("the end event: %w", err)
			}
			end = watchEnd(p, id, engine.Status(e.Status), e.Error, e.Cause)
			return errStreamEnded
		case "message":
			return nil
		}
		var e api.Event
		if err := json.Unmarshal(ev.Data, &e); err != nil {
			return fmt.Errorf("event %s %s: %w", ev.Event, ev.ID, err)
		}
		if e.Seq > after {
			p.history(eventLine(e.Seq, e.Timestamp, e.Type, e.Scope+e.State, e.Error, e.Cause))
			after = e.Seq
		}
		return nil
	})
	p.finish()
	if err != nil {
		if err := remoteInterrupted(ctx, id); err != nil {
			return after, false, err
		}
		var se *streamError
		if errors.As(err, &se) {
			if se.p.Status == http.StatusNotFound {
				return after, false, &exitError{code: exitUsage, msg: fmt.Sprintf("watch: %s", se.Error())}
			}
			return after, false, fmt.Errorf("watch %s: the API at %s: %w", id, h.sock, err)
		}
		if !answers(ctx, h.sock) {
			return after, true, nil
		}
		return after, false, fmt.Errorf("watch %s: %w", id, err)
	}
	return after, false, end
}
