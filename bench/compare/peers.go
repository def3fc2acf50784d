package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"

	"github.com/jackc/pgx/v5"

	"github.com/aslrun/aslrun/jsonvalue"
)

// The peers run the loop as their own programs: LangGraph JS
// (bench/langgraph/run.mjs, with node) on its memory, SQLite and
// PostgreSQL checkpointers, and DBOS Transact (bench/dbos, a Go module of
// its own, built once into the run's temporary folder).

// runLangGraph runs the loop on LangGraph JS with checkpointer (memory,
// sqlite or postgres; postgres on the empty database at pgURL) and checks
// what it returns.
func runLangGraph(ctx context.Context, cfg *config, w *workload, input, checkpointer, pgURL string) (measurement, error) {
	args := []string{cfg.langgraph, "--modules", cfg.modules, "--mock", filepath.Join(cfg.workflows, mockFile),
		"--input", input, "--checkpointer", checkpointer}
	switch checkpointer {
	case "sqlite":
		db, err := newDBPath(cfg.tmp)
		if err != nil {
			return unmeasured(), err
		}
		defer os.RemoveAll(filepath.Dir(db))
		args = append(args, "--sqlite", db)
	case "postgres":
		args = append(args, "--postgres", pgURL)
	}
	return runPeer(ctx, cfg, w, "LangGraph "+checkpointer, cfg.node, args...)
}

// runDBOS runs the loop on DBOS Transact on the empty database at pgURL
// and checks what it returns.
func runDBOS(ctx context.Context, cfg *config, w *workload, input, pgURL string) (measurement, error) {
	return runPeer(ctx, cfg, w, "DBOS", cfg.dbos, "-db", pgURL, "-mock", filepath.Join(cfg.workflows, mockFile), "-input", input)
}

// runPeer runs a peer's program, which prints {"seconds", "output"} as
// JSON, and on PostgreSQL "walBytes" and "tableBytes", checks the output and returns the measurement.
func runPeer(ctx context.Context, cfg *config, w *workload, peer, name string, args ...string) (measurement, error) {
	mt := unmeasured()
	if w.executions != 1 {
		return mt, fmt.Errorf("%s: %s runs one execution", w.name, peer)
	}
	out, _, ru, err := runProcess(ctx, cfg.timeout, name, args...)
	if err != nil {
		return mt, err
	}
	res := struct {
		Seconds    float64         `json:"seconds"`
		Output     json.RawMessage `json:"output"`
		WALBytes   int64           `json:"walBytes"`
		TableBytes int64           `json:"tableBytes"`
	}{WALBytes: -1, TableBytes: -1}
	if err := json.Unmarshal(bytes.TrimSpace(out), &res); err != nil {
		return mt, fmt.Errorf("%s printed %w", peer, err)
	}
	if res.Seconds <= 0 {
		return mt, fmt.Errorf("%s printed no time", peer)
	}
	output, err := jsonvalue.Decode(res.Output)
	if err != nil {
		return mt, fmt.Errorf("%s printed %w", peer, err)
	}
	if err := w.check([]any{output}); err != nil {
		return mt, fmt.Errorf("%s: %w", peer, err)
	}
	mt.Seconds, mt.WALBytes, mt.TableBytes = res.Seconds, res.WALBytes, res.TableBytes
	mt.MaxRSS = maxRSS(ru)
	return mt, nil
}

// databases numbers the databases a comparison makes.
var databases atomic.Int64

// withDatabase makes a fresh database on the PostgreSQL server at server
// (a URL; its database is replaced), runs fn on the new database's URL and
// drops it.
func withDatabase(ctx context.Context, server string, fn func(dbURL string) (measurement, error)) (measurement, error) {
	admin, err := pgx.Connect(ctx, withDB(server, "postgres"))
	if err != nil {
		return unmeasured(), fmt.Errorf("postgres: %w", err)
	}
	defer admin.Close(context.WithoutCancel(ctx))
	name := fmt.Sprintf("aslrun_compare_%d_%d", os.Getpid(), databases.Add(1))
	if _, err := admin.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		return unmeasured(), fmt.Errorf("create database %s: %w", name, err)
	}
	defer admin.Exec(context.WithoutCancel(ctx), "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)")
	return fn(withDB(server, name))
}

// What a run on PostgreSQL writes, measured by each runner around its
// executions (after its tables are made): the write-ahead log the server
// wrote meanwhile (the whole server's: other databases' writes count
// too), and what the database's tables grew by (pg_total_relation_size:
// indexes and TOAST included). bench/langgraph/run.mjs and bench/dbos run
// the same statements.
const (
	walLSNSQL  = "SELECT pg_current_wal_lsn()::text"
	walDiffSQL = "SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), $1::pg_lsn)::bigint"
	tablesSQL  = `SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0)::bigint
	FROM pg_class c JOIN pg_namespace s ON s.oid = c.relnamespace
	WHERE c.relkind IN ('r', 'p', 'm') AND s.nspname NOT IN ('pg_catalog', 'information_schema')`
)

// A pgMark is the server's WAL position and the database's table bytes
// before a run.
type pgMark struct {
	lsn    string
	tables int64
}

// markPG reads the mark before a run.
func markPG(ctx context.Context, conn *pgx.Conn) (pgMark, error) {
	var m pgMark
	if err := conn.QueryRow(ctx, walLSNSQL).Scan(&m.lsn); err != nil {
		return m, fmt.Errorf("wal position: %w", err)
	}
	if err := conn.QueryRow(ctx, tablesSQL).Scan(&m.tables); err != nil {
		return m, fmt.Errorf("table sizes: %w", err)
	}
	return m, nil
}

// since fills in the WAL written and the table bytes grown since m.
func (m pgMark) since(ctx context.Context, conn *pgx.Conn, mt *measurement) error {
	if err := conn.QueryRow(ctx, walDiffSQL, m.lsn).Scan(&mt.WALBytes); err != nil {
		return fmt.Errorf("wal written: %w", err)
	}
	var tables int64
	if err := conn.QueryRow(ctx, tablesSQL).Scan(&tables); err != nil {
		return fmt.Errorf("table sizes: %w", err)
	}
	mt.TableBytes = tables - m.tables
	return nil
}

// withDB is the server URL with the database name as its path.
func withDB(server, name string) string {
	u, err := url.Parse(server)
	if err != nil || u.Scheme == "" {
		return server + "/" + name
	}
	u.Path = "/" + name
	return u.String()
}

// buildDBOS builds bench/dbos (a module of its own) into dir and returns
// the binary.
func buildDBOS(ctx context.Context, source, dir string) (string, error) {
	bin := filepath.Join(dir, "dbos-loop")
	abs, err := filepath.Abs(bin)
	if err != nil {
		return "", err
	}
	_, _, _, err = runProcess(ctx, defaultTimeout, "go", "-C", source, "build", "-o", abs, ".")
	if err != nil {
		return "", fmt.Errorf("building %s: %w", source, err)
	}
	return abs, nil
}

// peerVersion is the version of an npm package installed in modules, ""
// when it cannot be read.
func peerVersion(modules, pkg string) string {
	data, err := os.ReadFile(filepath.Join(modules, filepath.FromSlash(pkg), "package.json"))
	if err != nil {
		return ""
	}
	var p struct{ Version string }
	if json.Unmarshal(data, &p) != nil {
		return ""
	}
	return p.Version
}

// dbosVersion is the version of DBOS Transact bench/dbos requires, ""
// when it cannot be read.
func dbosVersion(source string) string {
	data, err := os.ReadFile(filepath.Join(source, "go.mod"))
	if err != nil {
		return ""
	}
	for line := range strings.Lines(string(data)) {
		f := strings.Fields(line)
		if len(f) >= 2 && f[0] == "github.com/dbos-inc/dbos-transact-golang" {
			return f[1]
		}
	}
	return ""
}
