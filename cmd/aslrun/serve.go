package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/aslrun/aslrun/agents"
	"github.com/aslrun/aslrun/builtin"
	"github.com/aslrun/aslrun/egress"
	"github.com/aslrun/aslrun/engine"
	"github.com/aslrun/aslrun/server"
	"github.com/aslrun/aslrun/store"
	"github.com/aslrun/aslrun/store/postgres"
	"github.com/aslrun/aslrun/store/postgres/liverelay"
	"github.com/aslrun/aslrun/tracing"
	"github.com/aslrun/aslrun/webhook"
)

// The timeouts of every connection the server accepts.
const (
	readHeaderTimeout = 10 * time.Second
	readTimeout       = time.Minute
	writeTimeout      = 2 * time.Minute
	idleTimeout       = 2 * time.Minute
	// shutdownGrace is how long requests in flight and running states may
	// take to finish when the server stops (--grace).
	shutdownGrace = 10 * time.Second
)

// pendingApprovals counts the approvals waiting for a decision.
func pendingApprovals(ctx context.Context, st store.Store) int {
	list, err := st.List(ctx, store.ListOptions{Status: engine.StatusWaiting})
	if err != nil {
		return 0
	}
	n := 0
	for _, sum := range list {
		if e, err := st.Load(ctx, sum.ID); err == nil {
			n += len(engine.PendingOf(e))
		}
	}
	return n
}

func cmdServe(ctx context.Context, c *cmdContext, args []string) error {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	listen := fs.String("listen", "", "also serve the API on TCP `ADDR` (host:port); needs --tokens")
	socket := fs.String("socket", "", "the unix socket `PATH` (default DB.sock, beside the database)")
	tokensFile := fs.String("tokens", "", "the bearer tokens `FILE` (made by aslrun token create)")
	insecure := fs.Bool("insecure", false, "with --listen on a loopback address: serve TCP without --tokens (only the health checks answer)")
	tlsCert := fs.String("tls-cert", "", "serve TCP with TLS: the certificate `FILE` (PEM)")
	tlsKey := fs.String("tls-key", "", "serve TCP with TLS: the key `FILE` (PEM)")
	poll := fs.Duration("poll", time.Second, "how often to look for due executions (on PostgreSQL, also for work other servers left, as a fallback for their wake-ups)")
	maxConcurrent := fs.Int("max-concurrent", 64, "the most executions this server runs at once; on PostgreSQL, a start beyond it is left to a server with room")
	grace := fs.Duration("grace", shutdownGrace, "on SIGINT or SIGTERM, how long requests in flight and running states get to finish before they are cancelled at their last commit")
	logFormat := fs.String("log-format", "text", "the log's `FORMAT`: text or json")
	logLevel := fs.String("log-level", "info", "the least `LEVEL` of the lines logged: debug, info, warn or error (a state's Audit.LogLevel debug lines need debug)")
	redactKeyFile := fs.String("redact-key", os.Getenv(envRedactKey), "the owner's redaction key `FILE` (at least 32 bytes, mode 0600) that seals the values Audit.Redact paths select ($"+envRedactKey+" when not given)")
	agentsFile := fs.String("agents", "", "the server's own agents `FILE` (built-in llm, exec and http agents) for executions started without a mock")
	webhookTimeout := fs.Duration("webhook-timeout", webhook.DefaultTimeout, "how long one webhook delivery attempt may take (a process that dies while delivering delays those deliveries twice that)")
	hosts := hostFlags(fs)
	bf := newBucketFlags(fs, false)
	maxPayload := payloadFlag(fs)
	durability := durabilityFlag(fs, "of the executions started without one of their own; the server keeps every execution, so not none")
	keepChildren := keepChildHistoryFlag(fs)
	db := dbFlag(fs)
	pos, err := parseFlags(fs, "serve", args, c.stdout)
	if done, err := handleHelp(err); done || err != nil {
		return err
	}
	if len(pos) != 0 {
		return usageErrorf("serve: unexpected argument %q", pos[0])
	}
	mode, err := durabilityOf(fs, "serve", *durability, *db)
	if err != nil {
		return err
	}
	access, err := bf.access("serve")
	if err != nil {
		return err
	}
	if mode == engine.DurabilityNone {
		return usageErrorf("serve: durability none keeps nothing, and a server lists, wakes and resumes the executions it keeps: want strict or batched, with a database")
	}
	if *maxConcurrent < 1 {
		return usageErrorf("serve: --max-concurrent %d: want 1 or more", *maxConcurrent)
	}
	if *poll <= 0 {
		return usageErrorf("serve: --poll %v: want a duration above 0, as 1s or 250ms", *poll)
	}
	if (*tlsCert == "") != (*tlsKey == "") {
		return usageErrorf("serve: --tls-cert and --tls-key go together")
	}
	if *listen == "" && (*tlsCert != "" || *insecure) {
		return usageErrorf("serve: --tls-cert, --tls-key and --insecure go with --listen")
	}
	var tokens *server.Tokens
	if *tokensFile != "" {
		if tokens, err = server.LoadTokens(*tokensFile); err != nil {
			return usageErrorf("serve: %v", err)
		}
	}
	if *listen != "" && tokens == nil {
		host, _, err := net.SplitHostPort(*listen)
		if err != nil {
			return usageErrorf("serve: --listen %q: %v", *listen, err)
		}
		ip := net.ParseIP(host)
		if !*insecure || !(host == "localhost" || ip != nil && ip.IsLoopback()) {
			return usageErrorf("serve: --listen %s needs --tokens FILE (aslrun token create); only a loopback address may go without, with --insecure", *listen)
		}
	}
	var handler slog.Handler
	var level slog.Level
	if err := level.UnmarshalText([]byte(*logLevel)); err != nil {
		return usageErrorf("serve: --log-level %q: want debug, info, warn or error", *logLevel)
	}
	hopts := &slog.HandlerOptions{Level: level}
	switch *logFormat {
	case "text":
		handler = slog.NewTextHandler(c.stderr, hopts)
	case "json":
		handler = slog.NewJSONHandler(c.stderr, hopts)
	default:
		return usageErrorf("serve: --log-format %q: want text or json", *logFormat)
	}
	log := slog.New(handler)
	c.log = log

	var serverAgents *agents.Registry
	var resolvedAgents []byte
	// The hosts webhook deliveries may reach: --allow-host and the agents
	// file's Hosts, as its agents'.
	webhookHosts := *hosts
	if *agentsFile != "" {
		data, err := os.ReadFile(*agentsFile)
		if err != nil {
			return usageErrorf("serve: %v", err)
		}
		if f, err := builtin.ParseAgentsFile(data); err == nil {
			webhookHosts = f.Hosts().Merge(webhookHosts)
		}
		if serverAgents, resolvedAgents, err = fileAgents(data, *agentsFile, filepath.Dir(*agentsFile), *hosts); err != nil {
			return usageErrorf("serve: %v", err)
		}
	}
	dbPath := *db
	sock := socketPath(dbPath)
	if *socket != "" {
		sock = *socket
	}
	if sock == "" {
		return usageErrorf("serve: --db %s: a PostgreSQL database has no file beside which to put the socket: give --socket PATH", postgres.Redact(dbPath))
	}
	h, err := c.open(ctx, dbPath, accessServe, holderInfo{API: apiAll, Socket: sock})
	if err != nil {
		return err
	}
	defer h.close()
	st := h.st
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	metrics := server.NewMetrics(reg, func() int { return pendingApprovals(ctx, st) }, func() int {
		due, _ := st.Due(ctx, time.Now())
		return len(due)
	})
	tr, err := tracing.FromEnv(ctx)
	if err != nil {
		return fmt.Errorf("serve: %w", err)
	}
	defer tr.Shutdown(context.WithoutCancel(ctx)) // flushes the spans left
	key, err := redactKey(*redactKeyFile)
	if err != nil {
		return fmt.Errorf("serve: --redact-key: %w", err)
	}
	x := engine.New(engine.Config{Store: st, AgentsFor: agentsOf(*hosts), Logger: log, MaxPayloadSize: *maxPayload, Durability: mode, Buckets: access, Hooks: tr.Hooks(metrics.Hooks(engine.Hooks{})), RedactKey: key, Workflows: store.WorkflowSource(st), KeepChildHistory: *keepChildren})
	if pg, ok := st.(*postgres.DB); ok {
		// Clients of this server follow executions other servers run:
		// their live feeds come through the database (docs/api.md).
		t, err := liverelay.Postgres(ctx, pg)
		if err != nil {
			return fmt.Errorf("serve: %w", err)
		}
		defer t.Close()
		r := liverelay.New(x, t, "", log)
		defer r.Close()
	}
	srv, err := server.New(server.Config{Store: st, Executor: x, Agents: serverAgents, AgentsFile: resolvedAgents, Tokens: tokens, Logger: log, Poll: *poll, MaxConcurrent: *maxConcurrent, Metrics: reg})
	if err != nil {
		return err
	}
	unixLn, err := server.ListenUnix(sock)
	if err != nil {
		return fmt.Errorf("serve: %w", err)
	}
	defer os.Remove(sock)
	hs := &http.Server{
		Handler: srv.Handler(), ConnContext: server.ConnContext, ErrorLog: slog.NewLogLogger(handler, slog.LevelWarn),
		ReadHeaderTimeout: readHeaderTimeout, ReadTimeout: readTimeout, WriteTimeout: writeTimeout, IdleTimeout: idleTimeout,
	}
	hs.RegisterOnShutdown(srv.StopStreams) // Shutdown does not end streams itself
	var tcpLn net.Listener
	if *listen != "" {
		if tcpLn, err = net.Listen("tcp", *listen); err != nil {
			unixLn.Close()
			return fmt.Errorf("serve: listen on %s: %w", *listen, err)
		}
	}

	// runCtx runs the executions, timers and garbage collection: a signal
	// (which ends ctx) does not cancel them but starts the drain below.
	runCtx, stopRuns := context.WithCancel(context.WithoutCancel(ctx))
	defer stopRuns()
	var wg sync.WaitGroup
	errs := make(chan error, 3)
	wg.Add(1)
	go func() {
		defer wg.Done()
		if err := hs.Serve(unixLn); !errors.Is(err, http.ErrServerClosed) {
			errs <- fmt.Errorf("serve %s: %w", sock, err)
		}
	}()
	if tcpLn != nil {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var err error
			if *tlsCert != "" {
				err = hs.ServeTLS(tcpLn, *tlsCert, *tlsKey)
			} else {
				err = hs.Serve(tcpLn)
			}
			if !errors.Is(err, http.ErrServerClosed) {
				errs <- fmt.Errorf("serve %s: %w", *listen, err)
			}
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		collectGarbage(runCtx, st, log)
	}()
	wg.Add(1)
	go func() {
		defer wg.Done()
		if err := srv.Run(runCtx); err != nil {
			errs <- err
		}
	}()
	if outbox, ok := st.(engine.OutboxStore); ok {
		// Deliver the events of workflows' webhook channels (ASL Events).
		policy, err := egress.New(webhookHosts)
		if err != nil {
			return usageErrorf("serve: %v", err)
		}
		d, err := webhook.New(webhook.Config{Store: outbox, Hosts: policy, Logger: log, Timeout: *webhookTimeout})
		if err != nil {
			return fmt.Errorf("serve: %w", err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			d.Run(runCtx)
		}()
	}
	log.Info("serving", "db", dbPath, "socket", sock, "listen", *listen, "tls", *tlsCert != "")
	var failure error
	select {
	case <-ctx.Done():
		log.Info("draining", "cause", context.Cause(ctx).Error(), "grace", grace.String(),
			"detail", "no new connections; requests in flight and running executions get the grace period, then what still runs is cancelled at its last commit; a second signal ends the process at once")
	case failure = <-errs:
		log.Error("draining", "error", failure.Error(), "grace", grace.String())
	}
	// Stop: no new connections, requests in flight finish; then running
	// states reach their next boundary (an agent call in flight finishes
	// and is committed) within the grace period, and whatever still runs
	// is cancelled at its last commit. The next serve resumes them all.
	stopping := time.Now()
	shutdownCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), *grace)
	defer cancel()
	if err := hs.Shutdown(shutdownCtx); err != nil {
		hs.Close()
	}
	if err := x.Drain(shutdownCtx); err != nil {
		log.Warn("executions still running after the grace period are cancelled at their last commit", "grace", *grace)
	}
	stopRuns()
	srv.Close()
	wg.Wait()
	log.Info("stopped", "took", time.Since(stopping).Round(time.Millisecond).String())
	return failure
}
