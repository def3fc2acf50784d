package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"sync"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	asl "github.com/aslrun/aslrun"
	"github.com/aslrun/aslrun/agents"
	"github.com/aslrun/aslrun/tools"
)

// Category is the Category of every Tool this package makes.
const Category = "mcp"

// DefaultTimeout is the time a call may take when ServerConfig.Timeout is 0.
const DefaultTimeout = 60 * time.Second

// The restart backoff: the first restart comes minBackoff after the
// server ended, each failed attempt doubles the wait up to maxBackoff. A
// server that ran for maxBackoff or longer before ending starts again from
// minBackoff.
const (
	minBackoff = 500 * time.Millisecond
	maxBackoff = 30 * time.Second
)

// terminateWait is how long Close waits for a stdio server to exit after
// its standard input is closed before it is sent SIGTERM (and, as long
// again later, SIGKILL).
const terminateWait = 2 * time.Second

// ServerConfig says how to reach one MCP server. Exactly one of Command and
// URL is set.
type ServerConfig struct {
	// Name is the server's name, made of letters, digits, '_' and '-'; its
	// tools are named "Name.tool".
	Name string
	// Command is the program and arguments of a stdio server.
	Command []string
	// Env is added to aslrun's environment for a stdio server; the values
	// are used as they are.
	Env map[string]string
	// Dir is a stdio server's working directory; empty means aslrun's.
	Dir string
	// URL is the endpoint of a streamable HTTP server.
	URL string
	// Header holds extra HTTP headers sent to an HTTP server with every
	// request; the values are used as they are.
	Header map[string]string
	// PathArgs maps a tool's name (as the server names it) to the names of
	// its arguments that are file paths, for the caller's FileSystem checks.
	// Every tool named must exist when the server starts.
	PathArgs map[string][]string
	// Timeout bounds each call; 0 means DefaultTimeout (60 s).
	Timeout time.Duration
}

var serverName = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)

func (c *ServerConfig) check() error {
	if !serverName.MatchString(c.Name) {
		return fmt.Errorf("mcp server %q: the name must be letters, digits, '_' and '-'", c.Name)
	}
	switch {
	case len(c.Command) == 0 && c.URL == "":
		return fmt.Errorf("mcp server %s: neither Command nor URL is set", c.Name)
	case len(c.Command) > 0 && c.URL != "":
		return fmt.Errorf("mcp server %s: both Command and URL are set", c.Name)
	case len(c.Command) > 0 && c.Command[0] == "":
		return fmt.Errorf("mcp server %s: Command[0] is empty", c.Name)
	case c.URL == "" && len(c.Header) > 0:
		return fmt.Errorf("mcp server %s: Header is set for a stdio server", c.Name)
	case c.URL != "" && (len(c.Env) > 0 || c.Dir != ""):
		return fmt.Errorf("mcp server %s: Env or Dir is set for an HTTP server", c.Name)
	case c.Timeout < 0:
		return fmt.Errorf("mcp server %s: Timeout %s is negative", c.Name, c.Timeout)
	}
	return nil
}

// Server is a connection to one MCP server, kept up while it is open. It is
// safe for concurrent use.
type Server struct {
	cfg    ServerConfig
	http   *http.Client
	log    *slog.Logger
	client *sdk.Client

	done     chan struct{}  // closed by Close
	wg       sync.WaitGroup // watchers, restarts and re-lists
	relistMu sync.Mutex     // one re-list at a time
	notifyMu sync.Mutex     // held from a new list's installing to OnChange's return

	mu       sync.Mutex
	cur      *conn // nil while the server is down
	down     error // why cur is nil
	tools    []tools.Tool
	onChange func([]tools.Tool)
	closed   bool
	delay    time.Duration               // the next restart's wait
	calls    map[*int]context.CancelFunc // calls in flight, cancelled by Close
	// early holds a session whose tool list changed before it was
	// installed (between its listing and its installing).
	early *sdk.ClientSession
}

// conn is one session with the server: one process of a stdio server.
type conn struct {
	sess    *sdk.ClientSession
	pid     int // the stdio server's process, 0 for HTTP
	started time.Time
	done    chan struct{} // closed when the session has ended
	err     error         // why it ended, set before done is closed
}

// Start connects to the server cfg describes (for a stdio server, starts
// its process), initializes the session and lists its tools. An HTTP server
// is reached through client (nil means http.DefaultClient); log receives
// the server's standard error and the restarts (nil discards). Errors name
// the server and what failed. Close the Server when done with it.
func Start(ctx context.Context, cfg ServerConfig, client *http.Client, log *slog.Logger) (*Server, error) {
	if err := cfg.check(); err != nil {
		return nil, err
	}
	cfg.Command = slices.Clone(cfg.Command)
	cfg.Env, cfg.Header, cfg.PathArgs = maps.Clone(cfg.Env), maps.Clone(cfg.Header), maps.Clone(cfg.PathArgs)
	if client == nil {
		client = http.DefaultClient
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	s := &Server{
		cfg:   cfg,
		http:  client,
		log:   log.With("mcp_server", cfg.Name),
		done:  make(chan struct{}),
		delay: minBackoff,
		calls: map[*int]context.CancelFunc{},
	}
	s.client = sdk.NewClient(&sdk.Implementation{Name: "aslrun"}, &sdk.ClientOptions{
		Capabilities:           &sdk.ClientCapabilities{},
		ToolListChangedHandler: s.listChanged,
	})
	c, ts, err := s.connect(ctx)
	if err != nil {
		return nil, err
	}
	for _, name := range slices.Sorted(maps.Keys(cfg.PathArgs)) {
		if !slices.ContainsFunc(ts, func(t tools.Tool) bool { return t.Name == cfg.Name+"."+name }) {
			_ = c.sess.Close()
			return nil, fmt.Errorf("mcp server %s: PathArgs names tool %q, which the server does not have", cfg.Name, name)
		}
	}
	s.install(c, ts, false)
	return s, nil
}

// connect opens a session and lists its tools.
func (s *Server) connect(ctx context.Context) (*conn, []tools.Tool, error) {
	c := &conn{started: time.Now(), done: make(chan struct{})}
	var (
		t   sdk.Transport
		cmd *exec.Cmd
	)
	if s.cfg.URL != "" {
		t = &sdk.StreamableClientTransport{Endpoint: s.cfg.URL, HTTPClient: s.httpClient()}
	} else {
		cmd = exec.Command(s.cfg.Command[0], s.cfg.Command[1:]...)
		cmd.Dir = s.cfg.Dir
		if len(s.cfg.Env) > 0 {
			cmd.Env = os.Environ()
			for _, k := range slices.Sorted(maps.Keys(s.cfg.Env)) {
				cmd.Env = append(cmd.Env, k+"="+s.cfg.Env[k])
			}
		}
		cmd.Stderr = &lineLog{log: s.log}
		// A child that keeps standard error open does not hold up Wait.
		cmd.WaitDelay = time.Second
		t = &sdk.CommandTransport{Command: cmd, TerminateDuration: terminateWait}
	}
	sess, err := s.client.Connect(ctx, t, nil)
	if err != nil {
		return nil, nil, fmt.Errorf("mcp server %s: connect: %w", s.cfg.Name, err)
	}
	c.sess = sess
	if cmd != nil {
		c.pid = cmd.Process.Pid
	}
	ts, err := s.list(ctx, sess)
	if err != nil {
		_ = sess.Close()
		return nil, nil, err
	}
	return c, ts, nil
}

// httpClient returns the caller's client, with a transport that adds
// cfg.Header when there is one.
func (s *Server) httpClient() *http.Client {
	if len(s.cfg.Header) == 0 {
		return s.http
	}
	hc := *s.http
	base := hc.Transport
	if base == nil {
		base = http.DefaultTransport
	}
	h := make(http.Header, len(s.cfg.Header))
	for k, v := range s.cfg.Header {
		h.Set(k, v)
	}
	hc.Transport = headerTransport{base: base, header: h}
	return &hc
}

type headerTransport struct {
	base   http.RoundTripper
	header http.Header
}

func (t headerTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	for k, v := range t.header {
		req.Header[k] = v
	}
	return t.base.RoundTrip(req)
}

// list lists the session's tools, every page of them.
func (s *Server) list(ctx context.Context, sess *sdk.ClientSession) ([]tools.Tool, error) {
	var ts []tools.Tool
	for t, err := range sess.Tools(ctx, nil) {
		if err != nil {
			return nil, fmt.Errorf("mcp server %s: list tools: %w", s.cfg.Name, err)
		}
		tool, err := s.tool(t)
		if err == nil {
			err = tool.Check()
		}
		if err != nil {
			// One unusable tool does not take the others with it.
			s.log.Warn("mcp tool skipped", "tool", t.Name, "error", err.Error())
			continue
		}
		ts = append(ts, tool)
	}
	return ts, nil
}

// tool makes the server's tool t a tools.Tool.
func (s *Server) tool(t *sdk.Tool) (tools.Tool, error) {
	input := json.RawMessage(`{"type":"object"}`)
	if t.InputSchema != nil {
		b, err := json.Marshal(t.InputSchema)
		if err != nil {
			return tools.Tool{}, fmt.Errorf("mcp server %s: tool %s: input schema: %w", s.cfg.Name, t.Name, err)
		}
		input = b
	}
	var output json.RawMessage
	if t.OutputSchema != nil {
		b, err := json.Marshal(t.OutputSchema)
		if err != nil {
			return tools.Tool{}, fmt.Errorf("mcp server %s: tool %s: output schema: %w", s.cfg.Name, t.Name, err)
		}
		output = b
	}
	name := t.Name
	return tools.Tool{
		Name:        s.cfg.Name + "." + name,
		Description: t.Description,
		Category:    Category,
		Input:       input,
		Output:      output,
		Call: func(ctx context.Context, _ *agents.Request, input map[string]any) (any, error) {
			return s.call(ctx, name, input)
		},
	}, nil
}

// install makes c the current session with tools, watches it and tells
// OnChange when notify is set. It closes c instead when s is closed.
func (s *Server) install(c *conn, ts []tools.Tool, notify bool) {
	s.notifyMu.Lock()
	defer s.notifyMu.Unlock()
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		_ = c.sess.Close()
		return
	}
	s.cur, s.down, s.tools = c, nil, ts
	f := s.onChange
	s.wg.Add(1)
	go s.watch(c)
	if s.early == c.sess {
		s.wg.Add(1)
		go s.relist(c)
	}
	s.early = nil
	s.mu.Unlock()
	if notify && f != nil {
		f(slices.Clone(ts))
	}
}

// watch waits for c's session to end; unless s is closing, it marks the
// server down and starts restarting it.
func (s *Server) watch(c *conn) {
	defer s.wg.Done()
	err := c.sess.Wait()
	// Closing the ended session releases what it still holds (its
	// subscription to notifications).
	_ = c.sess.Close()
	what := "the connection closed"
	if c.pid != 0 {
		what = "the process exited"
	}
	if err != nil {
		c.err = asl.Errorf(asl.ErrAgentToolError, "mcp server %s: %s: %v", s.cfg.Name, what, err)
	} else {
		c.err = asl.Errorf(asl.ErrAgentToolError, "mcp server %s: %s", s.cfg.Name, what)
	}
	close(c.done)

	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed || s.cur != c {
		return
	}
	s.cur, s.down = nil, c.err
	if time.Since(c.started) >= maxBackoff {
		s.delay = minBackoff
	}
	s.log.Warn("mcp server ended, restarting", "error", c.err.Error(), "after", s.delay)
	s.wg.Add(1)
	go s.restart(s.delay)
	s.delay = nextBackoff(s.delay)
}

// nextBackoff doubles d up to maxBackoff.
func nextBackoff(d time.Duration) time.Duration {
	return min(2*d, maxBackoff)
}

// restart connects again after delay, and keeps trying with a growing
// delay until it succeeds or s is closed.
func (s *Server) restart(delay time.Duration) {
	defer s.wg.Done()
	for {
		t := time.NewTimer(delay)
		select {
		case <-s.done:
			t.Stop()
			return
		case <-t.C:
		}
		ctx, cancel := s.track(context.Background())
		c, ts, err := s.connect(ctx)
		cancel()
		if err == nil {
			s.log.Info("mcp server restarted", "tools", len(ts))
			s.install(c, ts, true)
			return
		}
		select {
		case <-s.done:
			return
		default:
		}
		s.mu.Lock()
		delay = s.delay
		s.delay = nextBackoff(s.delay)
		s.mu.Unlock()
		s.log.Warn("mcp server restart failed", "error", err.Error(), "retry_after", delay)
	}
}

// track returns a context derived from ctx that Close cancels.
func (s *Server) track(ctx context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(ctx)
	key := new(int)
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		cancel()
		return ctx, cancel
	}
	s.calls[key] = cancel
	s.mu.Unlock()
	return ctx, func() {
		s.mu.Lock()
		delete(s.calls, key)
		s.mu.Unlock()
		cancel()
	}
}

// listChanged handles notifications/tools/list_changed: the current
// session is listed again in the background.
func (s *Server) listChanged(_ context.Context, req *sdk.ToolListChangedRequest) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.cur
	if s.closed {
		return
	}
	if c == nil || c.sess != req.Session {
		s.early = req.Session
		return
	}
	s.wg.Add(1)
	go s.relist(c)
}

func (s *Server) relist(c *conn) {
	defer s.wg.Done()
	s.relistMu.Lock()
	defer s.relistMu.Unlock()
	ctx, cancel := s.track(context.Background())
	defer cancel()
	ctx, cancelTimeout := context.WithTimeout(ctx, s.timeout())
	defer cancelTimeout()
	ts, err := s.list(ctx, c.sess)
	if err != nil {
		s.log.Warn("mcp tool list not updated", "error", err.Error())
		return
	}
	s.notifyMu.Lock()
	defer s.notifyMu.Unlock()
	s.mu.Lock()
	if s.closed || s.cur != c {
		s.mu.Unlock()
		return
	}
	s.tools = ts
	f := s.onChange
	s.mu.Unlock()
	if f != nil {
		f(slices.Clone(ts))
	}
}

func (s *Server) timeout() time.Duration {
	if s.cfg.Timeout > 0 {
		return s.cfg.Timeout
	}
	return DefaultTimeout
}

// Tools returns the server's tools as last listed. While the server is
// down and being restarted, it returns the list it had; calls fail until
// the restart.
func (s *Server) Tools() []tools.Tool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.tools)
}

// OnChange sets f to be called with the new list whenever the tools are
// listed again: when the server announces a change, and after a restart.
// Calls of f come one at a time, in the order the lists were taken, from
// the goroutine that listed; f must not call Close.
func (s *Server) OnChange(f func([]tools.Tool)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.onChange = f
}

// Close ends the session (for a stdio server: closes its standard input,
// waits for it to exit, then signals it), cancels the calls in flight and
// stops restarting. When it returns, no goroutine of s is left and the
// server's process has been waited for. Close is idempotent.
func (s *Server) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	close(s.done)
	c := s.cur
	s.cur, s.down = nil, fmt.Errorf("mcp server %s: closed", s.cfg.Name)
	for _, cancel := range s.calls {
		cancel()
	}
	s.mu.Unlock()
	var err error
	if c != nil {
		err = c.sess.Close()
	}
	s.wg.Wait()
	var exited *exec.ExitError
	switch {
	case errors.As(err, &exited):
		// The process ended with a status of its own — a crash Close came
		// just after, before watch had seen it — and it was waited for:
		// the server is closed, which is what Close is asked.
		s.log.Warn("mcp server had exited when closed", "error", err.Error())
	case err != nil && !errors.Is(err, io.EOF):
		return fmt.Errorf("mcp server %s: close: %w", s.cfg.Name, err)
	}
	return nil
}

// current returns the live session, or the error of a server that is down
// or closed.
func (s *Server) current() (*conn, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cur == nil {
		return nil, s.down
	}
	return s.cur, nil
}

// pid returns the process of the current session of a stdio server, or 0.
func (s *Server) pid() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cur == nil {
		return 0
	}
	return s.cur.pid
}

// call calls the server's tool name with args.
func (s *Server) call(ctx context.Context, name string, args map[string]any) (any, error) {
	c, err := s.current()
	if err != nil {
		return nil, err
	}
	cctx, cancel := s.track(ctx)
	defer cancel()
	cctx, cancelTimeout := context.WithTimeout(cctx, s.timeout())
	defer cancelTimeout()
	res, err := c.sess.CallTool(cctx, &sdk.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		return nil, s.callError(ctx, cctx, c, name, err)
	}
	return result(s.cfg.Name, name, res)
}

// callError explains why a call failed: the caller's context, the call's
// timeout, the server having ended or closed, or the server's answer.
func (s *Server) callError(ctx, cctx context.Context, c *conn, name string, err error) error {
	if ctx.Err() != nil {
		return fmt.Errorf("mcp server %s: tool %s: %w", s.cfg.Name, name, ctx.Err())
	}
	select {
	case <-s.done:
		return asl.Errorf(asl.ErrAgentToolError, "mcp server %s: closed", s.cfg.Name)
	default:
	}
	if cctx.Err() != nil {
		return asl.Errorf(asl.ErrAgentToolError, "mcp server %s: tool %s: no result within %s", s.cfg.Name, name, s.timeout())
	}
	if errors.Is(err, sdk.ErrConnectionClosed) || errors.Is(err, sdk.ErrSessionMissing) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		// The session is ending: wait for the watcher to say why.
		select {
		case <-c.done:
		case <-ctx.Done():
			return fmt.Errorf("mcp server %s: tool %s: %w", s.cfg.Name, name, ctx.Err())
		}
	}
	select {
	case <-c.done:
		return c.err
	default:
	}
	return &asl.Error{Name: asl.ErrAgentToolError, Cause: fmt.Sprintf("mcp server %s: tool %s: %v", s.cfg.Name, name, err), Err: err}
}

// lineLog logs what a stdio server writes to its standard error, a line at
// a time (cut at maxLine bytes).
type lineLog struct {
	log *slog.Logger
	buf []byte
}

const maxLine = 4096

func (w *lineLog) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			w.buf = append(w.buf, p...)
			if len(w.buf) >= maxLine {
				w.flush()
			}
			break
		}
		w.buf = append(w.buf, p[:i]...)
		w.flush()
		p = p[i+1:]
	}
	return n, nil
}

func (w *lineLog) flush() {
	line := w.buf
	if len(line) > maxLine {
		line = line[:maxLine]
	}
	w.log.Info("mcp server stderr", "line", string(bytes.TrimRight(line, "\r")))
	w.buf = w.buf[:0]
}
