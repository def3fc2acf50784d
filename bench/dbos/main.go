// Command dbos runs the loop of bench/workflows/loop.json as a DBOS
// Transact workflow on PostgreSQL and prints, as one line of JSON, how
// long it took and what it returned (the measurement bench/compare reads
// from its peers):
//
//	go run . -db URL -mock FILE -input FILE
//
// URL is an empty PostgreSQL database: DBOS makes its system tables there.
// The input is the loop's, {"doc": a 1 KiB document, "i": 0, "n": turns}.
// What aslrun commits becomes what DBOS persists: each call of the mocked
// agent Work is one durable step (dbos.RunAsStep, its output a row of
// DBOS's step outputs), and the Pass states and the Choice around it —
// Prepare, Review, Tally, Check — are plain code between the steps, as
// aslrun commits the Pass states together with the next agent call. The
// workflow's input and result are DBOS's workflow status row.
//
// It is a module of its own so that aslrun's module does not depend on
// DBOS.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/dbos-inc/dbos-transact-golang/dbos"
	"github.com/jackc/pgx/v5"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "dbos:", err)
		os.Exit(1)
	}
}

// State is the loop's document: the workflow's input and result.
type State struct {
	Doc    map[string]any `json:"doc"`
	I      int            `json:"i"`
	N      int            `json:"n"`
	Work   map[string]any `json:"work,omitempty"`
	Review map[string]any `json:"review,omitempty"`
}

// request is what Prepare hands Work.
type request struct {
	Subject string `json:"subject"`
	Owner   string `json:"owner"`
	Turn    int    `json:"turn"`
}

// run is the program.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("dbos", flag.ContinueOnError)
	fs.SetOutput(stderr)
	db := fs.String("db", "", "the PostgreSQL `URL` of an empty database")
	mockFile := fs.String("mock", "", "the mock `file` (bench/workflows/mock.json): Work returns its first response")
	inputFile := fs.String("input", "", "the loop's input `file`")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *db == "" || *mockFile == "" || *inputFile == "" {
		return errors.New("-db, -mock and -input are required")
	}
	workResult, err := mockedWork(*mockFile)
	if err != nil {
		return err
	}
	data, err := os.ReadFile(*inputFile)
	if err != nil {
		return err
	}
	var input State
	if err := json.Unmarshal(data, &input); err != nil {
		return fmt.Errorf("%s: %w", *inputFile, err)
	}
	if input.N < 1 {
		return fmt.Errorf("%s: n must be at least 1", *inputFile)
	}

	// The mocked agent returns a fresh copy of the mocked result, as a
	// remote agent's reply would be.
	work := func(_ context.Context, r request) (map[string]any, error) {
		if r.Subject == "" {
			return nil, errors.New("work: the request has no subject")
		}
		var out map[string]any
		err := json.Unmarshal(workResult, &out)
		return out, err
	}
	loop := func(ctx dbos.Context, s State) (State, error) {
		for {
			// Prepare (Pass)
			r := request{Subject: subject(s.Doc), Owner: owner(s.Doc), Turn: s.I}
			// Work (Task): the durable step.
			out, err := dbos.RunAsStep(ctx, func(c context.Context) (map[string]any, error) { return work(c, r) },
				dbos.WithStepName("Work"))
			if err != nil {
				return s, err
			}
			s.Work = out
			// Review, Tally (Pass) and Check (Choice).
			s.Review = map[string]any{"approved": true, "by": "reviewer"}
			s.I++
			if s.I >= s.N {
				return s, nil
			}
		}
	}

	dctx, err := dbos.NewContext(ctx, dbos.Config{
		AppName:     "aslrun-bench",
		DatabaseURL: *db,
		Logger:      slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
	})
	if err != nil {
		return err
	}
	dbos.RegisterWorkflow(dctx, loop, dbos.WithWorkflowName("loop"))
	if err := dbos.Launch(dctx); err != nil {
		return err
	}
	defer dbos.Shutdown(dctx, 10*time.Second)

	// The server's write-ahead log written during the run and what the
	// database's tables grew by, as bench/compare measures them.
	conn, err := pgx.Connect(ctx, *db)
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	var lsn string
	var tablesBefore int64
	if err := conn.QueryRow(ctx, walLSNSQL).Scan(&lsn); err != nil {
		return err
	}
	if err := conn.QueryRow(ctx, tablesSQL).Scan(&tablesBefore); err != nil {
		return err
	}

	start := time.Now()
	h, err := dbos.RunWorkflow(dctx, loop, input)
	if err != nil {
		return err
	}
	res, err := h.GetResult()
	seconds := time.Since(start).Seconds()
	if err != nil {
		return err
	}
	var wal, tables int64
	if err := conn.QueryRow(ctx, walDiffSQL, lsn).Scan(&wal); err != nil {
		return err
	}
	if err := conn.QueryRow(ctx, tablesSQL).Scan(&tables); err != nil {
		return err
	}
	return json.NewEncoder(stdout).Encode(map[string]any{"seconds": seconds, "output": res,
		"walBytes": wal, "tableBytes": tables - tablesBefore})
}

// The statements of bench/compare's peers.go.
const (
	walLSNSQL  = "SELECT pg_current_wal_lsn()::text"
	walDiffSQL = "SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), $1::pg_lsn)::bigint"
	tablesSQL  = `SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0)::bigint
	FROM pg_class c JOIN pg_namespace s ON s.oid = c.relnamespace
	WHERE c.relkind IN ('r', 'p', 'm') AND s.nspname NOT IN ('pg_catalog', 'information_schema')`
)

// subject and owner are what Prepare picks from the document.
func subject(doc map[string]any) string {
	t, _ := doc["ticket"].(map[string]any)
	s, _ := t["subject"].(string)
	return s
}

func owner(doc map[string]any) string {
	o, _ := doc["owner"].(map[string]any)
	s, _ := o["name"].(string)
	return s
}

// mockedWork is the Return of the mock file's first (only) response of
// Work, as JSON.
func mockedWork(path string) (json.RawMessage, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var mocks map[string]map[string]struct {
		Return json.RawMessage
	}
	if err := json.Unmarshal(data, &mocks); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(mocks["Work"]) != 1 {
		return nil, fmt.Errorf("%s: Work must have exactly one response", path)
	}
	for _, r := range mocks["Work"] {
		if r.Return == nil {
			return nil, fmt.Errorf("%s: Work's response must Return a result", path)
		}
		return r.Return, nil
	}
	return nil, nil
}
