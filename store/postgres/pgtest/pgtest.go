// Package pgtest gives tests a PostgreSQL database of their own on a real
// server: the one ASLRUN_TEST_POSTGRES names, or DefaultURL when it is
// unset. Each test binary makes a fresh database (aslrun_test_<random>)
// and drops it when done; each test may take a fresh schema in it.
//
// Outside CI, tests skip, saying why, when no server answers; in CI
// (CI=true) that is a failure, so that the PostgreSQL tests cannot be
// skipped there unnoticed.
package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/url"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// EnvURL names the environment variable holding the server's URL.
const EnvURL = "ASLRUN_TEST_POSTGRES"

// DefaultURL is the server tests use when EnvURL is unset: the local
// one, as Debian's postgresql package sets it up.
const DefaultURL = "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"

// reachTimeout bounds the first connection to the server.
const reachTimeout = 5 * time.Second

// Server is a fresh database on the test server, or the reason tests
// skip. It is safe for concurrent use.
type Server struct {
	// admin is the URL tests were given, on which the database is made
	// and dropped; url is the fresh database's, name its name.
	admin, url, name string
	// skip is why tests skip ("" when the server answered).
	skip string
}

// Start makes a fresh database on the test server. Outside CI, an
// unreachable server gives a Server whose URL and Schema skip their tests;
// in CI it is an error.
func Start(ctx context.Context) (*Server, error) {
	admin := os.Getenv(EnvURL)
	if admin == "" {
		admin = DefaultURL
	}
	cctx, cancel := context.WithTimeout(ctx, reachTimeout)
	defer cancel()
	conn, err := pgx.Connect(cctx, admin)
	if err != nil {
		msg := fmt.Sprintf("no PostgreSQL answers at %s (set %s to one): %v", redact(admin), EnvURL, err)
		if os.Getenv("CI") == "true" {
			return nil, fmt.Errorf("CI: %s", msg)
		}
		return &Server{skip: msg}, nil
	}
	defer conn.Close(context.WithoutCancel(ctx))
	name := "aslrun_test_" + random()
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()); err != nil {
		return nil, fmt.Errorf("making test database %s at %s: %w", name, redact(admin), err)
	}
	u, err := url.Parse(admin)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", EnvURL, err)
	}
	u.Path = "/" + name
	return &Server{admin: admin, url: u.String(), name: name}, nil
}

// Close drops the database, ending the connections still open to it.
func (s *Server) Close() error {
	if s.skip != "" {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	conn, err := pgx.Connect(ctx, s.admin)
	if err != nil {
		return fmt.Errorf("dropping test database %s: %w", s.name, err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{s.name}.Sanitize()+" WITH (FORCE)"); err != nil {
		return fmt.Errorf("dropping test database %s: %w", s.name, err)
	}
	return nil
}

// URL returns the fresh database's URL, or skips t when there is no
// server.
func (s *Server) URL(t testing.TB) string {
	t.Helper()
	if s.skip != "" {
		t.Skip(s.skip)
	}
	return s.url
}

// Schema makes a fresh, empty schema in the database and returns a URL
// whose connections use it (search_path), or skips t when there is no
// server. The schema is dropped when t ends.
func (s *Server) Schema(t testing.TB) string {
	t.Helper()
	base := s.URL(t)
	name := "t_" + random()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, base)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE SCHEMA "+pgx.Identifier{name}.Sanitize()); err != nil {
		t.Fatalf("making schema %s: %v", name, err)
	}
	t.Cleanup(func() {
		conn, err := pgx.Connect(ctx, base)
		if err != nil {
			t.Errorf("dropping schema %s: %v", name, err)
			return
		}
		defer conn.Close(ctx)
		if _, err := conn.Exec(ctx, "DROP SCHEMA "+pgx.Identifier{name}.Sanitize()+" CASCADE"); err != nil {
			t.Errorf("dropping schema %s: %v", name, err)
		}
	})
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set("search_path", name)
	u.RawQuery = q.Encode()
	return u.String()
}

// Fresh makes a fresh database for t alone, dropped when t ends, and
// returns its URL; it skips t when there is no server (outside CI). It
// suits packages with few PostgreSQL tests; others Start one Server in
// TestMain.
func Fresh(t testing.TB) string {
	t.Helper()
	s, err := Start(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Error(err)
		}
	})
	return s.URL(t)
}

// random returns 16 random hex digits, for names.
func random() string {
	var b [8]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// redact returns s without its password.
func redact(s string) string {
	u, err := url.Parse(s)
	if err != nil {
		return "(a URL that does not parse)"
	}
	return u.Redacted()
}
