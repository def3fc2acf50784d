package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/aslrun/aslrun/engine"
	"github.com/aslrun/aslrun/store/postgres"
)

// bytesRun is what -mode bytes measures: one execution of the loop, in
// strict durability, on a fresh database, and the bytes PostgreSQL wrote
// for it.
type bytesRun struct {
	Turns   int   `json:"turns"`
	Steps   int64 `json:"steps"` // states run to their end
	Commits int64 `json:"commits"`
	// WALBytes is the WAL the server wrote during the run
	// (pg_current_wal_lsn before and after): every database's, so it is
	// the run's only on a quiet server. WALRecords and WALFPI are
	// pg_stat_wal's records and full page images over the run.
	WALBytes   int64 `json:"walBytes"`
	WALRecords int64 `json:"walRecords"`
	WALFPI     int64 `json:"walFullPageImages"`
	// OwnWALBytes is the WAL of the run's own records, read back with
	// pg_walinspect: those naming a relation of the database, and the
	// commit records of their transactions (0 when the extension is not
	// available). OwnFPIBytes is the full page images among them.
	OwnWALBytes int64 `json:"ownWalBytes"`
	OwnFPIBytes int64 `json:"ownFpiBytes"`
	// TableBytes is pg_total_relation_size summed over the schema's
	// tables (heap, indexes, TOAST) after the run.
	TableBytes int64        `json:"tableBytes"`
	Tables     []tableBytes `json:"tables"`
	// OtherWAL is the run's own WAL that is no table's: the commit
	// records ("(commits)") and the catalogs' ("(catalog)").
	OtherWAL map[string]int64 `json:"otherWalBytes,omitempty"`
}

// tableBytes is one table of the schema after the run: its sizes, the
// WAL of its records (heap, indexes and TOAST, with pg_walinspect), and
// pg_stat_user_tables' row counts over the run.
type tableBytes struct {
	Name     string `json:"name"`
	Heap     int64  `json:"heapBytes"`
	Indexes  int64  `json:"indexBytes"`
	Toast    int64  `json:"toastBytes"` // the TOAST table and its index
	Total    int64  `json:"totalBytes"`
	WAL      int64  `json:"walBytes"`
	FPI      int64  `json:"fpiBytes"`
	Inserted int64  `json:"inserted"`
	Updated  int64  `json:"updated"`
	HOT      int64  `json:"hotUpdated"`
	Deleted  int64  `json:"deleted"`
}

// walPosition is where the WAL stood, and pg_stat_wal's counters.
type walPosition struct {
	lsn              string
	records, fpi, wb int64
}

// readWAL reads the WAL's position and pg_stat_wal.
func readWAL(ctx context.Context, conn *pgx.Conn) (walPosition, error) {
	var p walPosition
	err := conn.QueryRow(ctx, `SELECT pg_current_wal_lsn()::text, wal_records, wal_fpi, wal_bytes::bigint FROM pg_stat_wal`).Scan(&p.lsn, &p.records, &p.fpi, &p.wb)
	return p, err
}

// bytesTable runs one execution of the loop of turns turns on the
// PostgreSQL database at pgURL (which it migrates; it should be fresh, so
// that the table sizes are the run's alone) in strict durability, and
// prints the WAL and table bytes per step and per commit, per table.
func bytesTable(ctx context.Context, w io.Writer, dir, pgURL string, turns int) (*bytesRun, error) {
	f, err := newLoopFixture(dir, turns)
	if err != nil {
		return nil, err
	}
	db, err := postgres.Open(ctx, pgURL, postgres.Options{Migrate: true})
	if err != nil {
		return nil, err
	}
	conn, err := pgx.Connect(ctx, pgURL)
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("connecting to %s: %w", postgres.Redact(pgURL), err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	// pg_walinspect (PostgreSQL 15 and later) reads the run's own records
	// back; without it only the server's WAL is measured.
	_, inspectErr := conn.Exec(ctx, `CREATE EXTENSION IF NOT EXISTS pg_walinspect`)
	before, err := tableStats(ctx, conn)
	if err != nil {
		db.Close()
		return nil, err
	}
	start, err := readWAL(ctx, conn)
	if err != nil {
		db.Close()
		return nil, err
	}
	var commits, steps atomic.Int64
	x := engine.New(engine.Config{
		Agents:     f.agents,
		Store:      db,
		Durability: engine.DurabilityStrict,
		Hooks: engine.Hooks{
			Committed: func(_ time.Duration, err error) {
				if err == nil {
					commits.Add(1)
				}
			},
			StateExited: func(_, _ string) { steps.Add(1) },
		},
	})
	res, err := x.Run(ctx, f.machine, f.input, engine.StartOptions{})
	if err == nil && res.Status != engine.StatusSucceeded {
		err = fmt.Errorf("execution %s: %s: %s: %s", res.ID, res.Status, res.Error, res.Cause)
	}
	end, werr := readWAL(ctx, conn)
	// Closing the store ends its connections, which sends their table
	// statistics to the server.
	if cerr := db.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = werr
	}
	if err != nil {
		return nil, err
	}
	run := &bytesRun{Turns: turns, Steps: steps.Load(), Commits: commits.Load(),
		WALRecords: end.records - start.records, WALFPI: end.fpi - start.fpi}
	if err := conn.QueryRow(ctx, `SELECT pg_wal_lsn_diff($1::pg_lsn, $2::pg_lsn)::bigint`, end.lsn, start.lsn).Scan(&run.WALBytes); err != nil {
		return nil, err
	}
	after, err := settledStats(ctx, conn, run.Commits)
	if err != nil {
		return nil, err
	}
	sizes, err := tableSizes(ctx, conn)
	if err != nil {
		return nil, err
	}
	var wal map[string][2]int64
	if inspectErr == nil {
		if wal, run.OwnWALBytes, run.OwnFPIBytes, err = ownWAL(ctx, conn, start.lsn, end.lsn); err != nil {
			return nil, err
		}
	}
	for _, k := range []string{"(commits)", "(catalog)"} {
		if v, ok := wal[k]; ok {
			if run.OtherWAL == nil {
				run.OtherWAL = make(map[string]int64)
			}
			run.OtherWAL[k] = v[0]
		}
	}
	for _, t := range sizes {
		b, a := before[t.Name], after[t.Name]
		t.Inserted, t.Updated, t.HOT, t.Deleted = a[0]-b[0], a[1]-b[1], a[2]-b[2], a[3]-b[3]
		t.WAL, t.FPI = wal[t.Name][0], wal[t.Name][1]
		run.TableBytes += t.Total
		run.Tables = append(run.Tables, t)
	}
	printBytes(w, run, inspectErr)
	return run, nil
}

// perStep is n per step of r, 0 without steps.
func (r *bytesRun) perStep(n int64) float64 {
	if r.Steps == 0 {
		return 0
	}
	return float64(n) / float64(r.Steps)
}

// perCommit is n per commit of r, 0 without commits.
func (r *bytesRun) perCommit(n int64) float64 {
	if r.Commits == 0 {
		return 0
	}
	return float64(n) / float64(r.Commits)
}

// printBytes prints r; inspectErr is why pg_walinspect could not be used.
func printBytes(w io.Writer, r *bytesRun, inspectErr error) {
	fmt.Fprintf(w, "loop of %d turns, strict: %d steps, %d commits\n", r.Turns, r.Steps, r.Commits)
	fmt.Fprintf(w, "server WAL:  %10d bytes  %8.0f B/step  %8.0f B/commit  (%d records, %d full page images; every database's)\n",
		r.WALBytes, r.perStep(r.WALBytes), r.perCommit(r.WALBytes), r.WALRecords, r.WALFPI)
	if inspectErr != nil {
		fmt.Fprintf(w, "own WAL:     not measured (pg_walinspect: %v)\n", inspectErr)
	} else {
		fmt.Fprintf(w, "own WAL:     %10d bytes  %8.0f B/step  %8.0f B/commit  (full page images %d bytes)\n",
			r.OwnWALBytes, r.perStep(r.OwnWALBytes), r.perCommit(r.OwnWALBytes), r.OwnFPIBytes)
	}
	fmt.Fprintf(w, "tables:      %10d bytes  %8.0f B/step  %8.0f B/commit\n", r.TableBytes, r.perStep(r.TableBytes), r.perCommit(r.TableBytes))
	fmt.Fprintf(w, "%-18s %10s %10s %10s %10s %8s %10s %10s %8s %8s %8s %8s\n",
		"table", "heap", "indexes", "toast", "total", "B/step", "WAL", "WAL/step", "ins", "upd", "hot", "del")
	for _, t := range r.Tables {
		if t.Total <= 8192*2 && t.WAL == 0 && t.Inserted+t.Updated+t.Deleted == 0 {
			continue // untouched
		}
		fmt.Fprintf(w, "%-18s %10d %10d %10d %10d %8.0f %10d %10.0f %8d %8d %8d %8d\n",
			t.Name, t.Heap, t.Indexes, t.Toast, t.Total, r.perStep(t.Total), t.WAL, r.perStep(t.WAL), t.Inserted, t.Updated, t.HOT, t.Deleted)
	}
	for _, k := range []string{"(commits)", "(catalog)"} {
		if v, ok := r.OtherWAL[k]; ok {
			fmt.Fprintf(w, "%-18s %10s %10s %10s %10s %8s %10d %10.0f\n", k, "", "", "", "", "", v, r.perStep(v))
		}
	}
}

// tableStats reads pg_stat_user_tables' inserted, updated, HOT-updated
// and deleted rows of each table of the current schema.
func tableStats(ctx context.Context, conn *pgx.Conn) (map[string][4]int64, error) {
	if _, err := conn.Exec(ctx, `SELECT pg_stat_clear_snapshot()`); err != nil {
		return nil, err
	}
	rows, err := conn.Query(ctx, `SELECT relname, n_tup_ins, n_tup_upd, n_tup_hot_upd, n_tup_del
FROM pg_stat_user_tables WHERE schemaname = current_schema()`)
	if err != nil {
		return nil, fmt.Errorf("reading table statistics: %w", err)
	}
	out := make(map[string][4]int64)
	var name string
	var v [4]int64
	_, err = pgx.ForEachRow(rows, []any{&name, &v[0], &v[1], &v[2], &v[3]}, func() error {
		out[name] = v
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("reading table statistics: %w", err)
	}
	return out, nil
}

// settledStats reads tableStats once the statistics of the run's
// connections reached the server: every commit updated its execution's
// row, so the executions table counts at least commits updates. The
// statistics arrive as the store's connections end, which they did
// before; this waits at most 10 seconds for the server to take them in.
func settledStats(ctx context.Context, conn *pgx.Conn, commits int64) (map[string][4]int64, error) {
	deadline := time.Now().Add(10 * time.Second)
	for {
		s, err := tableStats(ctx, conn)
		if err != nil {
			return nil, err
		}
		if s["executions"][1] >= commits {
			return s, nil
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("table statistics: executions counts %d updates after 10s, want at least %d (one per commit)", s["executions"][1], commits)
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// tableSizes returns the sizes of the tables of the current schema, by
// name.
func tableSizes(ctx context.Context, conn *pgx.Conn) ([]tableBytes, error) {
	rows, err := conn.Query(ctx, `SELECT c.relname, pg_relation_size(c.oid), pg_indexes_size(c.oid),
  coalesce(pg_total_relation_size(nullif(c.reltoastrelid, 0)), 0), pg_total_relation_size(c.oid)
FROM pg_class c WHERE c.relkind = 'r' AND c.relnamespace = current_schema()::regnamespace ORDER BY c.relname`)
	if err != nil {
		return nil, fmt.Errorf("reading table sizes: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (tableBytes, error) {
		var t tableBytes
		err := r.Scan(&t.Name, &t.Heap, &t.Indexes, &t.Toast, &t.Total)
		return t, err
	})
	if err != nil {
		return nil, fmt.Errorf("reading table sizes: %w", err)
	}
	return out, nil
}

// ownWALQuery attributes the WAL records between $1 and $2 to the tables
// of the current database: a record naming a block of a relation (its
// first) goes to the table the relation is, or is the index or TOAST
// of ('(catalog)' for the catalogs'); a record that names none (a
// commit) goes to '(commits)' when its transaction wrote a relation of the
// database. It returns per table the
// records' bytes and their full page images' bytes.
const ownWALQuery = `WITH r AS (
  SELECT xid, record_length, fpi_length,
         substring(block_ref from 'rel [0-9]+/([0-9]+)/[0-9]+')::oid AS db,
         substring(block_ref from 'rel [0-9]+/[0-9]+/([0-9]+)')::oid AS node
  FROM pg_get_wal_records_info($1::pg_lsn, $2::pg_lsn)),
t AS (SELECT oid, relname, relfilenode, reltoastrelid FROM pg_class WHERE relkind = 'r' AND relnamespace = current_schema()::regnamespace),
owner AS (
  SELECT t.relfilenode AS node, t.relname AS name FROM t
  UNION ALL SELECT i.relfilenode, t.relname FROM t JOIN pg_index x ON x.indrelid = t.oid JOIN pg_class i ON i.oid = x.indexrelid
  UNION ALL SELECT s.relfilenode, t.relname FROM t JOIN pg_class s ON s.oid = t.reltoastrelid
  UNION ALL SELECT i.relfilenode, t.relname FROM t JOIN pg_index x ON x.indrelid = t.reltoastrelid JOIN pg_class i ON i.oid = x.indexrelid),
ours AS (
  SELECT r.xid, r.record_length, r.fpi_length, coalesce((SELECT min(o.name) FROM owner o WHERE o.node = r.node), '(catalog)') AS name
  FROM r WHERE r.db = (SELECT oid FROM pg_database WHERE datname = current_database()))
SELECT name, sum(record_length)::bigint, sum(fpi_length)::bigint FROM (
  SELECT name, record_length, fpi_length FROM ours
  UNION ALL
  SELECT '(commits)', record_length, fpi_length FROM r
  WHERE r.node IS NULL AND r.xid IN (SELECT DISTINCT xid FROM ours WHERE xid <> 0)) a
GROUP BY name`

// ownWAL reads the WAL records between two positions that are the
// current database's (ownWALQuery): bytes and full page image bytes per
// table (and '(commits)', '(catalog)'), and in all.
func ownWAL(ctx context.Context, conn *pgx.Conn, from, to string) (map[string][2]int64, int64, int64, error) {
	rows, err := conn.Query(ctx, ownWALQuery, from, to)
	if err != nil {
		return nil, 0, 0, fmt.Errorf("reading the WAL with pg_walinspect: %w", err)
	}
	out := make(map[string][2]int64)
	var total, fpi int64
	var name string
	var v [2]int64
	_, err = pgx.ForEachRow(rows, []any{&name, &v[0], &v[1]}, func() error {
		out[name] = v
		total += v[0]
		fpi += v[1]
		return nil
	})
	if err != nil {
		return nil, 0, 0, fmt.Errorf("reading the WAL with pg_walinspect: %w", err)
	}
	if len(out) == 0 {
		return nil, 0, 0, errors.New("reading the WAL with pg_walinspect: no record of this database")
	}
	return out, total, fpi, nil
}
