package main

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aslrun/aslrun/server"
)

func TestTokenCreate(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	// The default --tokens file, relative to the command's directory.
	var stdout, stderr bytes.Buffer
	cmd := aslrunCmd("token", "create", "ci", "--role", "operator")
	cmd.Dir, cmd.Stdout, cmd.Stderr = dir, &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("token create ci: %v (stderr %q)", err, stderr.String())
	}
	path := filepath.Join(dir, "aslrun.tokens")
	tok := strings.TrimSuffix(stdout.String(), "\n")
	if !strings.HasPrefix(tok, "aslrun_") || strings.Contains(tok, "\n") {
		t.Errorf("token create printed %q, want one line with the token", stdout.String())
	}
	if !strings.Contains(stderr.String(), "aslrun.tokens") || !strings.Contains(stderr.String(), "cannot be shown again") {
		t.Errorf("token create: stderr %q, want where the token is stored and that it cannot be shown again", stderr.String())
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("tokens file mode = %04o, want 0600", fi.Mode().Perm())
	}
	ts, err := server.LoadTokens(path)
	if err != nil {
		t.Fatal(err)
	}
	if p, ok := ts.Authenticate(tok); !ok || p.Name != "ci" || p.Role != server.RoleOperator {
		t.Errorf("Authenticate(printed token) = %+v, %v, want ci with role operator", p, ok)
	}
	before, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name string
		args []string
		code int
	}{
		{"duplicate name", []string{"token", "create", "ci", "--role", "viewer", "--tokens", path}, exitUsage},
		{"bad role", []string{"token", "create", "bob", "--role", "root", "--tokens", path}, exitUsage},
		{"no role", []string{"token", "create", "bob", "--tokens", path}, exitUsage},
		{"bad name", []string{"token", "create", "b o b", "--role", "viewer", "--tokens", path}, exitUsage},
		{"no name", []string{"token", "create", "--role", "viewer", "--tokens", path}, exitUsage},
		{"two names", []string{"token", "create", "a", "b", "--role", "viewer", "--tokens", path}, exitUsage},
		{"no subcommand", []string{"token", "--role", "viewer", "--tokens", path}, exitUsage},
		{"unknown subcommand", []string{"token", "delete", "ci", "--role", "viewer", "--tokens", path}, exitUsage},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errOut := invoke(t, "", tt.args...)
			if code != tt.code || out != "" {
				t.Errorf("%v: code %d, stdout %q, want code %d and no stdout (stderr %q)", tt.args, code, out, tt.code, errOut)
			}
		})
	}
	after, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(after, before) {
		t.Errorf("refused commands changed the tokens file:\n%s\nwant\n%s", after, before)
	}
}

func TestTokenCreateRefusesFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	open := filepath.Join(dir, "open.tokens")
	if err := os.WriteFile(open, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(open, 0o644); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	err := run(context.Background(), []string{"token", "create", "ci", "--role", "admin", "--tokens", open}, strings.NewReader(""), &stdout, &stderr)
	if !errors.Is(err, server.ErrFileMode) || stdout.Len() != 0 {
		t.Errorf("token create on a 0644 tokens file = %v, stdout %q, want %v and no token", err, stdout.String(), server.ErrFileMode)
	}
	missingDir := filepath.Join(dir, "no", "such", "x.tokens")
	err = run(context.Background(), []string{"token", "create", "ci", "--role", "admin", "--tokens", missingDir}, strings.NewReader(""), &stdout, &stderr)
	if !errors.Is(err, fs.ErrNotExist) || stdout.Len() != 0 {
		t.Errorf("token create in a missing directory = %v, stdout %q, want %v and no token", err, stdout.String(), fs.ErrNotExist)
	}
}
