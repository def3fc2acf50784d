package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/aslrun/aslrun/api"
	"github.com/aslrun/aslrun/client"
	"github.com/aslrun/aslrun/engine"
	"github.com/aslrun/aslrun/server"
	"github.com/aslrun/aslrun/store"
	"github.com/aslrun/aslrun/store/postgres"
)

// How commands share a database. bbolt lets one process open it at a
// time. The process holding it records itself in DB.holder (holderInfo)
// and, when it serves the API, says on which socket: `aslrun serve`
// serves all of it; a run, resume or approve serves reads and approval
// decisions while it runs (readsOnly). Another command that finds the
// database held either talks to that API (access) or waits its turn.

// access is what a command needs of its database.
type access int

const (
	// accessRead (list, status, history, map-runs, checkpoints, memory)
	// reads: through any API.
	accessRead access = iota
	// accessDecide (approve) decides: through any API.
	accessDecide
	// accessRun (run, activity-poll) runs executions: through serve's
	// API, or it waits for the lock while another run holds it.
	accessRun
	// accessContinue (resume, task-success, task-failure,
	// task-heartbeat) is accessRun on an execution that exists: a
	// database that does not is refused, not made.
	accessContinue
	// accessLocal (gc) needs the store itself: it waits for a run, and
	// is refused by a server.
	accessLocal
	// accessServe (serve) needs the store, and refuses to be a second
	// server.
	accessServe
)

// API scopes a holder serves.
const (
	apiAll   = "all"   // aslrun serve
	apiReads = "reads" // a run, resume or approve: reads and decisions
)

// holderInfo is the content of DB.holder.
type holderInfo struct {
	PID     int    `json:"pid"`
	Command string `json:"command"`
	// API is apiAll, apiReads or "" (no API), and Socket where it
	// answers.
	API    string `json:"api,omitempty"`
	Socket string `json:"socket,omitempty"`
}

func holderFile(db string) string { return db + ".holder" }

// readHolder reads DB.holder; false when there is none, it is unreadable,
// or its process is gone (a crash left it).
func readHolder(db string) (holderInfo, bool) {
	data, err := os.ReadFile(holderFile(db))
	if err != nil {
		return holderInfo{}, false
	}
	var h holderInfo
	if json.Unmarshal(data, &h) != nil || h.PID <= 0 {
		return holderInfo{}, false
	}
	if err := syscall.Kill(h.PID, 0); errors.Is(err, syscall.ESRCH) {
		return holderInfo{}, false
	}
	return h, true
}

// writeHolder records h in DB.holder (atomically: readers never see half
// of it) and returns the function that removes it, to call before the
// lock is released.
func writeHolder(db string, h holderInfo) func() {
	data, _ := json.Marshal(h)
	tmp := fmt.Sprintf("%s.%d.tmp", holderFile(db), os.Getpid())
	if os.WriteFile(tmp, data, 0o600) != nil || os.Rename(tmp, holderFile(db)) != nil {
		os.Remove(tmp)
		return func() {} // only a nicer message is lost
	}
	return func() {
		if cur, err := os.ReadFile(holderFile(db)); err == nil && string(cur) == string(data) {
			os.Remove(holderFile(db))
		}
	}
}

// handle is a command's database: open in this process (st), or held by a
// process whose API answers on sock (api).
type handle struct {
	st     store.Store
	api    *client.Client
	sock   string
	holder holderInfo
	close  func()
}

// shared reports whether other processes may write h's database while
// this one has it open (PostgreSQL: every process opens it; bbolt: h
// holds it, or asks its holder's API).
func (h *handle) shared() bool {
	_, ok := h.st.(*postgres.DB)
	return ok
}

// commandLine is how this process names itself in DB.holder.
func commandLine() string {
	args := os.Args[1:]
	if len(args) > 4 {
		args = append(args[:4:4], "…")
	}
	return strings.TrimSpace("aslrun " + strings.Join(args, " "))
}

// Waiting for the lock: the first pause, the longest, and how long to wait
// before saying so when no holder is recorded.
const (
	firstBackoff = 20 * time.Millisecond
	maxBackoff   = 500 * time.Millisecond
	quietWait    = 2 * time.Second
)

// open opens the database at db for a command that needs what, or finds
// the API of the process holding it, or waits until it may open it
// (bounded by ctx: a signal stops the wait with its exit code). me is what
// this process records in DB.holder while it holds the database.
func (c *cmdContext) open(ctx context.Context, db string, what access, me holderInfo) (*handle, error) {
	codec, err := store.ParseCodec(os.Getenv("ASLRUN_SNAPSHOT_CODEC"))
	if err != nil {
		return nil, usageErrorf("ASLRUN_SNAPSHOT_CODEC: %v", err)
	}
	if postgres.IsURL(db) {
		// Every process opens the database itself: PostgreSQL has no
		// holder to wait for or to ask.
		ttl, err := leaseTTLEnv()
		if err != nil {
			return nil, err
		}
		pg, err := postgres.Open(ctx, db, postgres.Options{Codec: codec, LeaseTTL: ttl, Logger: c.log})
		if err != nil {
			return nil, &exitError{code: exitUsage, msg: err.Error()}
		}
		return &handle{st: pg, close: func() { pg.Close() }}, nil
	}
	if err := checkDBPath(db, what); err != nil {
		return nil, err
	}
	me.PID = os.Getpid()
	if me.Socket != "" {
		// Other commands may run in other directories.
		if abs, err := filepath.Abs(me.Socket); err == nil {
			me.Socket = abs
		}
	}
	if me.Command == "" {
		me.Command = commandLine()
	}
	backoff, began, told := firstBackoff, time.Now(), false
	for {
		st, err := store.OpenBolt(db, store.BoltOptions{LockTimeout: lockTimeout, Codec: codec})
		if err == nil {
			release := writeHolder(db, me)
			return &handle{st: st, close: func() { release(); st.Close() }}, nil
		}
		if !errors.Is(err, store.ErrLocked) {
			return nil, &exitError{code: exitUsage, msg: err.Error()}
		}
		h, known := readHolder(db)
		if known && h.API == apiAll {
			switch what {
			case accessServe:
				return nil, usageErrorf("serve: a server is already running on this database (%s, pid %d)", h.Command, h.PID)
			case accessLocal:
				return nil, usageErrorf("database %s is held by `aslrun serve` (pid %d), whose API answers at %s; the API has no route for this command (see docs/api.md): stop the server to run it", db, h.PID, h.Socket)
			}
		}
		if known && h.Socket != "" && (h.API == apiAll || what == accessRead || what == accessDecide) {
			if err := server.CheckSocketOwner(h.Socket); errors.Is(err, server.ErrSocketOwner) {
				return nil, usageErrorf("database %s is held by pid %d, but its socket %s is not yours: %v; refusing to send it anything", db, h.PID, h.Socket, err)
			}
			if answers(ctx, h.Socket) {
				return &handle{api: client.NewUnix(h.Socket), sock: h.Socket, holder: h, close: func() {}}, nil
			}
			// Not listening yet (or any more): try again.
		}
		if !told && (known || time.Since(began) > quietWait) {
			told = true
			who := "another process (none recorded in " + holderFile(db) + ")"
			if known {
				who = fmt.Sprintf("pid %d (%s)", h.PID, h.Command)
			}
			fmt.Fprintf(c.stderr, "aslrun: database %s is held by %s; waiting for it (Ctrl-C stops waiting)\n", db, who)
		}
		select {
		case <-ctx.Done():
			if err := interrupted(ctx, ""); err != nil {
				return nil, err
			}
			return nil, ctx.Err()
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, maxBackoff)
	}
}

// checkDBPath refuses a bbolt --db that is a directory and, for a command
// that reads or needs an execution to exist (every access but accessRun
// and accessServe), one that does not exist: opening it would make an
// empty database, in which nothing can be found.
func checkDBPath(db string, what access) error {
	fi, err := os.Stat(db)
	switch {
	case err == nil && fi.IsDir():
		return usageErrorf("database %s is a directory: --db names a bbolt database file (as %s) or a postgres:// URL", db, defaultDB)
	case errors.Is(err, fs.ErrNotExist) && what != accessRun && what != accessServe:
		return usageErrorf("database %s does not exist: no execution was run with this --db (check the path, the directory it is relative to, or %s)", db, envDB)
	}
	return nil
}

// answers reports whether a process accepts connections on sock.
func answers(ctx context.Context, sock string) bool {
	conn, err := (&net.Dialer{Timeout: time.Second}).DialContext(ctx, "unix", sock)
	if err != nil {
		return false
	}
	conn.Close()
	return true
}

// readsServer serves, while a run, resume or approve holds the database,
// the API's reads and approval decisions on the database's socket. It
// never starts an execution: a decision's continuation it runs is waited
// for before the command exits.
type readsServer struct {
	st   store.Store
	srv  *server.Server
	hs   *http.Server
	done chan struct{}

	mu      sync.Mutex
	decided map[string]bool // executions a decision continued here
}

// startReads starts the reads server on sock; nil (with a note on stderr)
// when it cannot listen, which does not stop the command.
func (c *cmdContext) startReads(st store.Store, x *engine.Executor, sock string) *readsServer {
	if !c.serveReads || sock == "" {
		return nil
	}
	srv, err := server.New(server.Config{Store: st, Executor: x, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		return nil
	}
	ln, err := server.ListenUnix(sock)
	if err != nil {
		fmt.Fprintf(c.stderr, "aslrun: other commands cannot read this database while it runs: %v\n", err)
		return nil
	}
	r := &readsServer{st: st, srv: srv, done: make(chan struct{}), decided: map[string]bool{}}
	r.hs = &http.Server{Handler: r.restricted(srv.Handler()), ConnContext: server.ConnContext,
		ReadHeaderTimeout: readHeaderTimeout, ReadTimeout: readTimeout, WriteTimeout: writeTimeout, IdleTimeout: idleTimeout}
	// Shutdown does not end event streams itself (a watcher's would hold
	// the process until the grace ran out).
	r.hs.RegisterOnShutdown(srv.StopStreams)
	go func() {
		defer close(r.done)
		r.hs.Serve(ln)
	}()
	return r
}

// allowedReads reports whether a request is one the reads server answers:
// any GET, a decision, a dry run of one, a validation.
func allowedReads(r *http.Request) bool {
	p := r.URL.Path
	switch {
	case r.Method == http.MethodGet || r.Method == http.MethodHead:
		return true
	case r.Method != http.MethodPost:
		return false
	case p == "/v1/workflows/validate":
		return true
	}
	return strings.HasPrefix(p, "/v1/approvals/") && (strings.HasSuffix(p, "/decision") || strings.HasSuffix(p, "/check"))
}

// restricted refuses, with 403, every route but allowedReads's, and notes
// the executions decisions continue.
func (r *readsServer) restricted(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if !allowedReads(req) {
			w.Header().Set("Content-Type", "application/problem+json")
			w.WriteHeader(http.StatusForbidden)
			json.NewEncoder(w).Encode(api.Problem{Type: api.ProblemType + "forbidden", Title: "forbidden", Status: http.StatusForbidden,
				Detail: fmt.Sprintf("%s %s: this socket is served by %s (pid %d) while it holds the database, for reads and approval decisions only; run `aslrun serve` to start or resume executions through the API", req.Method, req.URL.Path, commandLine(), os.Getpid())})
			return
		}
		if !strings.HasSuffix(req.URL.Path, "/decision") {
			next.ServeHTTP(w, req)
			return
		}
		rec := &capture{ResponseWriter: w}
		next.ServeHTTP(rec, req)
		var e api.Execution
		if rec.status == http.StatusAccepted && json.Unmarshal(rec.body, &e) == nil && e.ID != "" {
			r.mu.Lock()
			r.decided[e.ID] = true
			r.mu.Unlock()
		}
	})
}

// capture keeps a response's status and body as it passes them on.
type capture struct {
	http.ResponseWriter
	status int
	body   []byte
}

func (c *capture) WriteHeader(code int) {
	c.status = code
	c.ResponseWriter.WriteHeader(code)
}

func (c *capture) Write(b []byte) (int, error) {
	if c.status == 0 {
		c.status = http.StatusOK
	}
	c.body = append(c.body, b...)
	return c.ResponseWriter.Write(b)
}

// stop stops serving and waits until the executions decisions continued
// here are no longer RUNNING (or ctx ends: they then stop at their last
// commit, and `aslrun resume` or serve continues them).
func (r *readsServer) stop(ctx context.Context) {
	if r == nil {
		return
	}
	shutdownCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), shutdownGrace)
	if r.hs.Shutdown(shutdownCtx) != nil {
		r.hs.Close()
	}
	cancel()
	<-r.done
	r.mu.Lock()
	ids := r.decided
	r.mu.Unlock()
	for id := range ids {
		for ctx.Err() == nil {
			e, err := r.st.Load(ctx, id)
			if err != nil || e.Status != engine.StatusRunning {
				break
			}
			select {
			case <-ctx.Done():
			case <-time.After(20 * time.Millisecond):
			}
		}
	}
	r.srv.Close()
}

// envLeaseTTL names the environment variable that sets the time-to-live
// of the leases a process takes on PostgreSQL (a Go duration, "5s"): how
// soon other servers take a crashed one's executions over. It is for
// tests and for operators who need takeovers sooner than the default.
const envLeaseTTL = "ASLRUN_LEASE_TTL"

// leaseTTLEnv reads ASLRUN_LEASE_TTL: 0 (the store's default) when unset.
func leaseTTLEnv() (time.Duration, error) {
	v := os.Getenv(envLeaseTTL)
	if v == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < time.Millisecond {
		return 0, usageErrorf("%s=%q: want a duration of at least 1ms, as 5s or 500ms", envLeaseTTL, v)
	}
	return d, nil
}
