package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/aslrun/aslrun/agents"
	"github.com/aslrun/aslrun/api"
	"github.com/aslrun/aslrun/engine"
	"github.com/aslrun/aslrun/states"
	"github.com/aslrun/aslrun/store"
)

// DefaultMaxBody bounds a request body: a definition, an input and a mock
// file together.
const DefaultMaxBody = 8 << 20

// Config configures a Server. Store and Executor are required; the rest
// has working zero values.
type Config struct {
	// Store holds the executions; Executor runs them on it.
	Store    Store
	Executor *engine.Executor
	// Agents are the server's own agents (its agents file), used by
	// executions started without a mock; nil means none. AgentsFile is
	// that file's resolved content, stored with each such execution (as
	// kind "agents") so that whoever resumes it rebuilds the same agents.
	Agents     *agents.Registry
	AgentsFile []byte
	// Tokens are the bearer tokens accepted; nil accepts none (only the
	// unix socket's local admin is let in).
	Tokens *Tokens
	// Logger receives the request log; nil means slog.Default().
	Logger *slog.Logger
	// MaxBody bounds request bodies in bytes; 0 means DefaultMaxBody.
	MaxBody int64
	// Poll is how often due executions are looked for; 0 means a second.
	Poll time.Duration
	// MaxConcurrent bounds the executions the server runs at once
	// (engine.ServeOptions.MaxConcurrent); 0 means 64.
	MaxConcurrent int
	// Metrics, when set, is served at /metrics (see NewMetrics, whose
	// hooks the Executor's Config must carry).
	Metrics prometheus.Gatherer
	// MaxSessions bounds the pages' signed-in sessions, kept in memory;
	// 0 means DefaultMaxSessions. Past it, a sign-in ends the oldest.
	MaxSessions int
	// MaxSessionsPerPrincipal bounds the sessions of one token's holder;
	// 0 means DefaultMaxSessionsPerPrincipal. Past it, a sign-in ends the
	// holder's oldest.
	MaxSessionsPerPrincipal int
}

// Server serves the API and runs executions in the background: those it
// starts, those a decision continues, and, through Executor.Serve, those
// a crash left and those whose timers fall due. It is safe for
// concurrent use.
type Server struct {
	// machines are the inline definitions of the starts it served, parsed.
	machines   states.Cache
	st         Store
	x          *engine.Executor
	agents     *agents.Registry
	agentsFile []byte
	tokens     *Tokens
	log        *slog.Logger
	maxBody    int64
	poll       time.Duration
	maxConc    int
	metrics    http.Handler

	// runCtx is cancelled when the server stops: executions it runs stop
	// at their last commit and stay resumable. runs counts them.
	runCtx  context.Context
	stopRun context.CancelFunc
	runs    sync.WaitGroup
	mux     *http.ServeMux

	// streams are the open event streams (stream.go).
	streams streams
	// sessions are the signed-in browsers (session.go).
	sessions sessions
	// crossOrigin refuses the pages' form posts from other sites.
	crossOrigin *http.CrossOriginProtection
	// feed follows the executions for the list streams (stream_list.go).
	feed executionFeed
}

// New returns a Server; call Run to run executions and Close to stop.
func New(cfg Config) (*Server, error) {
	if cfg.Store == nil || cfg.Executor == nil {
		return nil, errors.New("server: Config.Store and Config.Executor are required")
	}
	s := &Server{st: cfg.Store, x: cfg.Executor, agents: cfg.Agents, agentsFile: cfg.AgentsFile, tokens: cfg.Tokens, log: cfg.Logger, maxBody: cfg.MaxBody, poll: cfg.Poll, maxConc: cfg.MaxConcurrent}
	if s.agents == nil {
		s.agents = agents.NewRegistry()
	}
	if s.log == nil {
		s.log = slog.Default()
	}
	if s.maxBody <= 0 {
		s.maxBody = DefaultMaxBody
	}
	if cfg.Metrics != nil {
		s.metrics = promhttp.HandlerFor(cfg.Metrics, promhttp.HandlerOpts{})
	}
	s.sessions.max, s.sessions.perPrincipal = cfg.MaxSessions, cfg.MaxSessionsPerPrincipal
	s.crossOrigin = http.NewCrossOriginProtection()
	s.runCtx, s.stopRun = context.WithCancel(context.Background())
	s.mux = http.NewServeMux()
	s.routes()
	return s, nil
}

// Handler is the server's HTTP handler: every route behind the request
// log, a recovered panic, the body limit and authentication.
func (s *Server) Handler() http.Handler {
	return s.logged(s.recovered(s.limited(s.authenticated(s.mux))))
}

// Run runs what is due (recovered, woken) until ctx ends; the executions it
// started stop at their last commit. Meanwhile it forgets the pages'
// expired sessions every ten minutes.
func (s *Server) Run(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	var sweeper sync.WaitGroup
	sweeper.Go(func() { s.sessions.sweepEvery(ctx, sessionSweepEvery) })
	defer sweeper.Wait()
	defer cancel()
	return s.x.Serve(ctx, engine.ServeOptions{Poll: s.poll, MaxConcurrent: s.maxConc, OnResult: func(id string, res *engine.Result, err error) {
		if err != nil && ctx.Err() == nil {
			s.log.Error("execution stopped on an error", "execution", id, "error", err)
		}
	}})
}

// Close stops the executions the server runs in the background (at their
// last commit: they stay resumable) and waits for them, and ends the
// open event streams (StopStreams).
func (s *Server) Close() {
	s.stopRun()
	s.StopStreams()
	s.runs.Wait()
}

// continueLater resumes an execution in the background: one a decision, a
// rollback or a redrive has just been recorded for.
func (s *Server) continueLater(what, id string) {
	s.background(what, id, func(ctx context.Context) (*engine.Result, error) {
		return s.x.Resume(ctx, id, engine.ResumeOptions{})
	})
}

// background runs f as an execution's run, until it ends or the server
// stops.
func (s *Server) background(what, id string, f func(ctx context.Context) (*engine.Result, error)) {
	s.runs.Add(1)
	go func() {
		defer s.runs.Done()
		res, err := f(s.runCtx)
		switch {
		case err != nil && s.runCtx.Err() == nil && !errors.Is(err, engine.ErrBusy) && !errors.Is(err, engine.ErrEnded):
			s.log.Error(what+" failed", "execution", id, "error", err)
		case err == nil && res != nil && res.Status == engine.StatusRunning:
			// No slot free here (a store other servers share): left to
			// the server that claims it.
			s.log.Info("execution left to a server with room", "execution", res.ID)
		case err == nil && res != nil:
			attrs := []any{"execution", res.ID, "status", string(res.Status)}
			if res.State != "" {
				attrs = append(attrs, "state", res.State)
			}
			if res.Error != "" {
				attrs = append(attrs, "error", res.Error)
			}
			s.log.Info("execution stopped running", attrs...)
		}
	}()
}

// route is one route of the API.
type route struct {
	pattern string // "METHOD /path", as http.ServeMux takes it
	role    Role   // the least role that may call it (Role.allows); 0: open
	h       func(w http.ResponseWriter, r *http.Request) error
}

// table lists the API's routes; the OpenAPI document describes exactly
// these (a test checks it).
func (s *Server) table() []route {
	return []route{
		{"GET /healthz", 0, s.health},
		{"GET /readyz", 0, s.ready},
		{"GET /v1/openapi.json", 0, s.openAPI},
		{"GET /metrics", RoleViewer, s.serveMetrics},
		{"POST /v1/workflows/validate", RoleViewer, s.validateWorkflow},
		{"POST /v1/workflows", RoleAdmin, s.registerWorkflow},
		{"GET /v1/workflows", RoleViewer, s.listWorkflows},
		{"GET /v1/workflows/{name}", RoleViewer, s.getWorkflow},
		{"GET /v1/workflows/{name}/versions", RoleViewer, s.workflowVersions},
		{"GET /v1/workflows/{name}/aliases", RoleViewer, s.listAliases},
		{"PUT /v1/workflows/{name}/aliases/{alias}", RoleAdmin, s.setAlias},
		{"DELETE /v1/workflows/{name}/aliases/{alias}", RoleAdmin, s.deleteAlias},
		{"GET /v1/workflows/{name}/diff", RoleViewer, s.diffWorkflow},
		{"POST /v1/executions", RoleOperator, s.startExecution},
		{"GET /v1/executions", RoleViewer, s.listExecutions},
		{"GET /v1/executions/{id}", RoleViewer, s.getExecution},
		{"GET /v1/executions/{id}/history", RoleViewer, s.getHistory},
		{"POST /v1/executions/{id}/resume", RoleOperator, s.resumeExecution},
		{"GET /v1/approvals", RoleViewer, s.listApprovals},
		{"GET /v1/approvals/{id}", RoleViewer, s.getApproval},
		{"POST /v1/approvals/{id}/decision", RoleApprover, s.decide},
		{"POST /v1/approvals/{id}/check", RoleApprover, s.checkDecision},
		// Checkpoints, rollback, fork and agent memory (checkpoints.go).
		{"GET /v1/executions/{id}/checkpoints", RoleViewer, s.listCheckpoints},
		{"GET /v1/executions/{id}/checkpoints/{name}", RoleViewer, s.getCheckpoint},
		{"GET /v1/executions/{id}/checkpoints/{name}/diff", RoleViewer, s.diffCheckpoints},
		{"POST /v1/executions/{id}/rollback", RoleOperator, s.rollback},
		{"POST /v1/executions/{id}/fork", RoleOperator, s.fork},
		{"GET /v1/memory", RoleViewer, s.listNamespaces},
		{"GET /v1/memory/{namespace}", RoleViewer, s.listMemory},
		// Server-Sent Events streams (stream.go).
		{"GET /v1/executions/{id}/events", RoleViewer, s.streamHistory},
		{"GET /v1/executions/{id}/ws", RoleViewer, s.streamHistoryWS},
		{"GET /v1/approvals/events", RoleViewer, s.streamApprovals},
		{"GET /v1/execution-events", RoleViewer, s.streamExecutions},
		// Redrive: restart a failed execution from the state that failed.
		{"POST /v1/executions/{id}/redrive", RoleOperator, s.redriveExecution},
		{"GET /v1/executions/{id}/map-runs", RoleViewer, s.listMapRuns},
		{"GET /v1/executions/{id}/map-runs/{mapRun}/children", RoleViewer, s.listMapRunChildren},
		// Child executions of Workflow states (executions_children.go).
		{"GET /v1/executions/{id}/children", RoleViewer, s.listChildren},
		// Control of executions (control.go).
		{"POST /v1/executions/{id}/stop", RoleOperator, s.stopExecution},
		// The answers to task tokens (tasktokens.go), and the activities'
		// workers' polls (activities.go): RoleWorker means a worker, an
		// operator or an admin.
		{"POST /v1/task-tokens/success", RoleWorker, s.taskSuccess},
		{"POST /v1/task-tokens/failure", RoleWorker, s.taskFailure},
		{"POST /v1/task-tokens/heartbeat", RoleWorker, s.taskHeartbeat},
		{"POST /v1/activities/{name}/poll", RoleWorker, s.pollActivity},
		{"GET /v1/activities", RoleViewer, s.listActivities},
		// The webhook deliveries of ASL Events (deliveries.go).
		{"GET /v1/deliveries", RoleViewer, s.listDeliveries},
		{"POST /v1/deliveries/{id}/retry", RoleOperator, s.retryDelivery},
		// Feedback on states' outputs (feedback.go).
		{"POST /v1/executions/{id}/feedback", RoleApprover, s.giveFeedback},
		{"GET /v1/feedback", RoleViewer, s.listFeedback},
		// The result cache of Tasks (cache.go).
		{"GET /v1/cache", RoleAdmin, s.listCache},
		{"DELETE /v1/cache", RoleAdmin, s.purgeCache},
		{"DELETE /v1/cache/{key}", RoleAdmin, s.purgeCache},
	}
}

func (s *Server) routes() {
	for _, rt := range s.table() {
		s.mux.Handle(rt.pattern, s.handler(rt.role, rt.h))
	}
	// The pages for people (pages.go): not API routes.
	for _, rt := range s.pageRoutes() {
		s.mux.Handle(rt.pattern, s.page(rt.role, rt.h))
	}
	s.mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeProblem(w, &problem{status: http.StatusNotFound, kind: "not-found", title: "no such route", detail: fmt.Sprintf("%s %s is not a route of this API (see /v1/openapi.json)", r.Method, r.URL.Path)})
	})
}

func (s *Server) health(w http.ResponseWriter, r *http.Request) error {
	writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	return nil
}

func (s *Server) serveMetrics(w http.ResponseWriter, r *http.Request) error {
	if s.metrics == nil {
		return &problem{status: http.StatusNotFound, kind: "not-found", title: "no metrics", detail: "this server was started without metrics"}
	}
	s.metrics.ServeHTTP(w, r)
	return nil
}

func (s *Server) openAPI(w http.ResponseWriter, r *http.Request) error {
	w.Header().Set("Content-Type", "application/json")
	_, err := w.Write(api.OpenAPI)
	return err
}

// ready answers 200 while the store answers, 503 otherwise.
func (s *Server) ready(w http.ResponseWriter, r *http.Request) error {
	if _, err := s.st.List(r.Context(), store.ListOptions{Limit: 1}); err != nil {
		return &problem{status: http.StatusServiceUnavailable, kind: "not-ready", title: "the store does not answer", detail: err.Error()}
	}
	writeJSON(w, http.StatusOK, map[string]string{"status": "ready"})
	return nil
}
