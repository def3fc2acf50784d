package postgres

import (
	"context"
	"fmt"
	"os"
	"testing"

	"github.com/aslrun/aslrun/store/postgres/pgtest"
)

// testServer is this test binary's database on the test server.
var testServer *pgtest.Server

func TestMain(m *testing.M) {
	s, err := pgtest.Start(context.Background())
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	testServer = s
	code := m.Run()
	if err := s.Close(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		code = max(code, 1)
	}
	os.Exit(code)
}

// openTest opens a migrated database in a fresh schema, closed when t
// ends.
func openTest(t testing.TB, opts Options) *DB {
	t.Helper()
	opts.Migrate = true
	db, err := Open(context.Background(), testServer.Schema(t), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}
