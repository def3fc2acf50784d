package conformance

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/aslrun/aslrun/engine"
	"github.com/aslrun/aslrun/store"
	"github.com/aslrun/aslrun/store/postgres"
	"github.com/aslrun/aslrun/store/postgres/pgtest"
)

// pgWorkers is how many cases run at once on PostgreSQL: cases mostly
// wait on the database's round trips, so more than the cores.
const pgWorkers = 12

// TestPostgresCases runs every case (ours and the AWS-recorded ones) on
// PostgreSQL, in strict durability and real time, several at once. Each
// worker has a schema of its own, whose agent memory is emptied before
// each case: cases that seed or check memory see only their own.
//
// Every case runs in real time, none only on the fake clock of
// TestOwnCases and TestAWSCases: the longest simulated time a case takes
// (its Waits, retry back-offs, timeouts and late approvers) is 7 seconds
// (map-state-retry-multiple-retriers), and the run takes about 25 s.
func TestPostgresCases(t *testing.T) {
	roots := []string{"testdata"}
	if _, err := os.Stat(awsCases); err == nil {
		roots = append(roots, awsCases)
	} else if os.Getenv("CI") == "true" {
		t.Fatalf("AWS-recorded cases not found at %s: CI must run them", awsCases)
	}
	var files []string
	for _, root := range roots {
		f, err := Collect([]string{root})
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, f...)
	}
	base := pgtest.Fresh(t)
	skips := loadSkips(t)
	ctx := context.Background()

	type result struct {
		skip string
		err  error
	}
	results := make([]result, len(files))
	jobs := make(chan int)
	done := make(chan error, pgWorkers)
	for w := range pgWorkers {
		go func() { done <- pgWorker(ctx, base, w, files, jobs, func(i int, err error) { results[i].err = err }) }()
	}
	go func() {
		defer close(jobs)
		for i, f := range files {
			if reason, ok := skips.Reason(f); ok {
				results[i].skip = "known gap: " + reason
				continue
			}
			jobs <- i
		}
	}()
	for range pgWorkers {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	for i, f := range files {
		name := filepath.ToSlash(f)
		t.Run(name, func(t *testing.T) {
			r := results[i]
			if r.skip != "" {
				t.Skip(r.skip)
			}
			if r.err != nil {
				t.Error(r.err)
			}
		})
	}
}

// pgWorker runs the cases jobs names on a schema of its own in the
// database at base, reporting each one's error to report.
func pgWorker(ctx context.Context, base string, w int, files []string, jobs <-chan int, report func(int, error)) error {
	schema := fmt.Sprintf("w%d", w)
	admin, err := pgx.Connect(ctx, base)
	if err != nil {
		return err
	}
	defer admin.Close(context.WithoutCancel(ctx))
	if _, err := admin.Exec(ctx, "CREATE SCHEMA "+schema); err != nil {
		return fmt.Errorf("making schema %s: %w", schema, err)
	}
	u, err := url.Parse(base)
	if err != nil {
		return err
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	db, err := postgres.Open(ctx, u.String(), postgres.Options{Migrate: true})
	if err != nil {
		return err
	}
	defer db.Close()
	clear := "DELETE FROM " + schema + ".agent_memory; DELETE FROM " + schema + ".memory_namespaces"
	newStore := func(ctx context.Context) (store.Store, func(), error) {
		if _, err := admin.Exec(ctx, clear); err != nil {
			return nil, nil, fmt.Errorf("emptying agent memory: %w", err)
		}
		return db, func() {}, nil
	}
	for i := range jobs {
		c, err := Load(files[i])
		if err == nil {
			err = RunWith(ctx, c, Options{Durability: engine.DurabilityStrict, NewStore: newStore})
		}
		report(i, err)
	}
	return nil
}
