package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/aslrun/aslrun/engine"
	"github.com/aslrun/aslrun/store"
)

// gcEvery is how often the worker removes expired checkpoints.
const gcEvery = 10 * time.Minute

// socketPath is where the worker holding db listens for other commands.
func socketPath(db string) string { return db + ".sock" }

func cmdWorker(ctx context.Context, c *cmdContext, args []string) error {
	fs := flag.NewFlagSet("worker", flag.ContinueOnError)
	poll := fs.Duration("poll", time.Second, "how often to look for due executions")
	maxPayload := payloadFlag(fs)
	db := dbFlag(fs)
	pos, err := parseFlags(fs, "worker", args, c.stdout)
	if done, err := handleHelp(err); done || err != nil {
		return err
	}
	if len(pos) != 0 {
		return usageErrorf("worker: unexpected argument %q", pos[0])
	}
	if c.remote {
		return usageErrorf("worker: a worker is already running on this database")
	}
	st, closeStore, err := c.openStore(*db)
	if err != nil {
		// A database held by a worker: it answers that it is running.
		return err
	}
	defer closeStore()
	log := slog.New(slog.NewTextHandler(c.stderr, nil))
	x := engine.New(engine.Config{Store: st, AgentsFor: agentsOf, Logger: log, MaxPayloadSize: *maxPayload})
	sock := socketPath(c.path(*db))
	os.Remove(sock) // a stale socket: we hold the database lock, so no worker uses it
	ln, err := net.Listen("unix", sock)
	if err != nil {
		return fmt.Errorf("worker: listen on %s: %w", sock, err)
	}
	defer os.Remove(sock)
	ctx, stop := context.WithCancel(ctx)
	defer stop()
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		<-ctx.Done()
		ln.Close()
	}()
	wg.Add(1)
	go func() {
		defer wg.Done()
		serveClients(ctx, ln, &cmdContext{store: st, exec: x, execPayload: *maxPayload, remote: true})
	}()
	wg.Add(1)
	go func() {
		defer wg.Done()
		collectGarbage(ctx, st, log)
	}()
	log.Info("worker started", "db", c.path(*db), "socket", sock)
	err = x.Serve(ctx, engine.ServeOptions{Poll: *poll, OnResult: func(id string, res *engine.Result, err error) {
		switch {
		case err != nil:
			log.Error("execution", "id", id, "error", err)
		default:
			log.Info("execution", "id", id, "status", res.Status, "error", res.Error)
		}
	}})
	stop()
	wg.Wait()
	log.Info("worker stopped")
	return err
}

// collectGarbage removes expired checkpoints, unreferenced snapshots and
// expired memory now and every gcEvery until ctx ends.
func collectGarbage(ctx context.Context, st store.Store, log *slog.Logger) {
	t := time.NewTicker(gcEvery)
	defer t.Stop()
	for {
		if rep, err := st.GC(ctx, time.Now()); err != nil && ctx.Err() == nil {
			log.Error("gc", "error", err)
		} else if rep.Checkpoints+rep.Blobs+rep.Memory > 0 {
			log.Info("gc", "checkpoints", rep.Checkpoints, "snapshots", rep.Blobs, "memory", rep.Memory)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// request is what a client sends the worker: a command line to run there.
type request struct {
	Args  []string `json:"args"`
	Dir   string   `json:"dir"`
	Stdin []byte   `json:"stdin,omitempty"`
}

// exitFrame ends a response: the command's exit code and message.
type exitFrame struct {
	Code int    `json:"code"`
	Msg  string `json:"msg,omitempty"`
}

// Frames of a response: stdout and stderr chunks, then the exit.
const (
	frameStdout = 'o'
	frameStderr = 'e'
	frameExit   = 'x'
)

func serveClients(ctx context.Context, ln net.Listener, base *cmdContext) {
	var wg sync.WaitGroup
	defer wg.Wait()
	for {
		conn, err := ln.Accept()
		if err != nil {
			return
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer conn.Close()
			serveClient(ctx, conn, base)
		}()
	}
}

func serveClient(ctx context.Context, conn net.Conn, base *cmdContext) {
	var req request
	if err := json.NewDecoder(bufio.NewReader(conn)).Decode(&req); err != nil {
		return
	}
	fw := &frameWriter{w: conn}
	c := *base
	c.stdin, c.stdout, c.stderr, c.dir = bytes.NewReader(req.Stdin), fw.stream(frameStdout), fw.stream(frameStderr), req.Dir
	err := run(ctx, req.Args, c.stdin, c.stdout, c.stderr, &c)
	ex := exitFrame{}
	var ee *exitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		ex.Code, ex.Msg = ee.code, ee.msg
	default:
		ex.Code, ex.Msg = exitUsage, err.Error()
	}
	b, _ := json.Marshal(ex)
	fw.frame(frameExit, b)
}

// frameWriter writes response frames: a kind byte, a 4-byte length, data.
type frameWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (f *frameWriter) frame(kind byte, data []byte) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	var head [5]byte
	head[0] = kind
	binary.BigEndian.PutUint32(head[1:], uint32(len(data)))
	if _, err := f.w.Write(head[:]); err != nil {
		return err
	}
	_, err := f.w.Write(data)
	return err
}

type streamWriter struct {
	f    *frameWriter
	kind byte
}

func (f *frameWriter) stream(kind byte) io.Writer { return &streamWriter{f: f, kind: kind} }

func (s *streamWriter) Write(p []byte) (int, error) {
	if err := s.f.frame(s.kind, p); err != nil {
		return 0, err
	}
	return len(p), nil
}

// forward runs a command in the worker that holds db, relaying its output
// and exit code.
func forward(ctx context.Context, c *cmdContext, db string, args []string) error {
	sock := socketPath(db)
	conn, err := (&net.Dialer{Timeout: 2 * time.Second}).DialContext(ctx, "unix", sock)
	if err != nil {
		return usageErrorf("database %s is in use by another process, and no worker answers at %s (is another aslrun command running?)", db, sock)
	}
	defer conn.Close()
	dir := c.dir
	if dir == "" {
		if dir, err = os.Getwd(); err != nil {
			return err
		}
	}
	req := request{Args: args, Dir: dir}
	if slices.Contains(args, "-") {
		if req.Stdin, err = io.ReadAll(c.stdin); err != nil {
			return err
		}
	}
	if err := json.NewEncoder(conn).Encode(req); err != nil {
		return fmt.Errorf("send the command to the worker at %s: %w", sock, err)
	}
	br := bufio.NewReader(conn)
	for {
		var head [5]byte
		if _, err := io.ReadFull(br, head[:]); err != nil {
			return fmt.Errorf("the worker at %s stopped answering: %w", sock, err)
		}
		if string(head[:]) == "HTTP/" {
			return usageErrorf("database %s is held by `aslrun serve`, whose HTTP API answers at %s: the command line does not talk to it yet (see docs/api.md), or stop the server", db, sock)
		}
		data := make([]byte, binary.BigEndian.Uint32(head[1:]))
		if _, err := io.ReadFull(br, data); err != nil {
			return fmt.Errorf("the worker at %s stopped answering: %w", sock, err)
		}
		switch head[0] {
		case frameStdout:
			c.stdout.Write(data)
		case frameStderr:
			c.stderr.Write(data)
		case frameExit:
			var ex exitFrame
			if err := json.Unmarshal(data, &ex); err != nil {
				return fmt.Errorf("the worker at %s answered badly: %w", sock, err)
			}
			if ex.Code == 0 {
				return nil
			}
			return &exitError{code: ex.Code, msg: ex.Msg}
		}
	}
}
