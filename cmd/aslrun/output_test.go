package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aslrun/aslrun/engine"
	"github.com/aslrun/aslrun/states"
	"github.com/aslrun/aslrun/store"
)

func TestTermSafe(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"order-42", "order-42"},
		{"Bestellung für Müller 注文 👍🏽", "Bestellung für Müller 注文 👍🏽"},
		{`back\slash`, `back\slash`},
		{"a\nb\x1b[31m", `a\nb\x1b[31m`},
		{"a\rb\tc\x00d\x7f", `a\rb\tc\x00d\x7f`},
		{"invoice\u202efdp.exe", `invoice\u202efdp.exe`},
		{"\u2066x\u2069\u200e\u200f\u061c", `\u2066x\u2069\u200e\u200f\u061c`},
		{"line\u2028para\u2029", `line\u2028para\u2029`},
		{"c1\u0085\u009b", `c1\u0085\u009b`},
		{"bad\xff\xe2\x80", `bad\xff\xe2\x80`},
		{"\ufffd", "\ufffd"},
	} {
		if got := termSafe(tc.in); got != tc.want {
			t.Errorf("termSafe(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
	if got := termSafeLines("one\ntwo\x1b]0;x\x07"); got != "one\n"+`two\x1b]0;x\x07` {
		t.Errorf("termSafeLines = %q", got)
	}
}

// FuzzTermSafe: what termSafe writes holds nothing a terminal
// interprets, and nothing is lost (every character that needs no escape
// is kept, in order).
func FuzzTermSafe(f *testing.F) {
	for _, s := range []string{"a\nb\x1b[31m", "x\u202ey", "\xff", "plain", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got := termSafe(s)
		for i, r := range got {
			if needsEscape(r, len(string(r))) || r == 0xfffd && !strings.Contains(s, "\ufffd") {
				t.Fatalf("termSafe(%q) = %q holds U+%04X at %d", s, got, r, i)
			}
		}
		if !strings.ContainsRune(s, '\\') && termSafe(got) != got {
			t.Fatalf("termSafe(termSafe(%q)) changed", s)
		}
	})
}

// TestStoredNamesPrintEscaped: names, errors and state names a database
// holds (written there before names were checked, or by a program on
// the engine) reach the terminal escaped, in every table.
func TestStoredNamesPrintEscaped(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	db := filepath.Join(dir, "x.db")
	st, err := store.OpenBolt(db, store.BoltOptions{})
	if err != nil {
		t.Fatal(err)
	}
	m, err := states.Parse([]byte(`{"StartAt":"Bad\u001b[2JState","States":{"Bad\u001b[2JState":{"Type":"Fail","Error":"E\u202erorr","Cause":"line1\nline2"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	name := "a\nb\u001b[31m\u202e"
	x := engine.New(engine.Config{Store: st})
	if _, err := x.Run(context.Background(), m, map[string]any{}, engine.StartOptions{ID: name, MachineName: "wf\u2066"}); err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"list"}, {"status", name}, {"history", name}} {
		code, out, errOut := invoke(t, "", append(args, "--db", db)...)
		if code != 0 {
			t.Fatalf("%q: code %d, stderr %s", args, code, errOut)
		}
		if strings.ContainsAny(out, "\x1b\u202e\u2066") || strings.Contains(out, "a\nb") {
			t.Errorf("%q printed raw control characters:\n%q", args, out)
		}
		for _, want := range []string{`a\nb\x1b[31m\u202e`} {
			if !strings.Contains(out, want) && args[0] != "history" {
				t.Errorf("%q: output %q, want %s", args, out, want)
			}
		}
		if args[0] != "list" && !strings.Contains(out, `E\u202erorr`) {
			t.Errorf("%q: output %q, want the error escaped", args, out)
		}
	}
	// Rows stay rows: one line per execution, and a header.
	_, out, _ := invoke(t, "", "list", "--db", db)
	if n := strings.Count(out, "\n"); n != 2 {
		t.Errorf("list printed %d lines, want 2:\n%s", n, out)
	}
}

// TestNameFlagsRefused: run --name, resume --fork --name and approve --by
// refuse what the API refuses, before opening anything.
func TestNameFlagsRefused(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	def := writeFile(t, dir, "p.json", `{"StartAt":"P","States":{"P":{"Type":"Pass","End":true}}}`)
	db := filepath.Join(dir, "x.db")
	for _, args := range [][]string{
		{"run", def, "--name", "a\nb\x1b[31m"},
		{"run", def, "--name", "x\u202ey"},
		{"run", def, "--name", "a/b"},
		{"resume", "x", "--from-checkpoint", "c", "--fork", "--name", "a\u2067"},
		{"approve", "x", "--decision", "ok", "--by", "boss\x1b[0m"},
	} {
		code, _, errOut := invoke(t, "", append(args, "--db", db)...)
		if code != exitUsage || !strings.Contains(errOut, "U+") && !strings.Contains(errOut, "'/'") || strings.ContainsAny(errOut, "\x1b\u202e\u2067") {
			t.Errorf("%q: code %d, stderr %q, want a usage error naming the character, escaped", args, code, errOut)
		}
	}
	if _, err := os.Stat(db); !os.IsNotExist(err) {
		t.Errorf("the refusals made the database %s: %v", db, err)
	}
}

// TestUsageText: status shows only what the agents reported: a total alone
// is "N tokens", never "(0 in, 0 out)", and no cost when there is none.
func TestUsageText(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		u    engine.Usage
		want string
	}{
		{engine.Usage{Tokens: 4000}, "4000 tokens"},
		{engine.Usage{Tokens: 1025, InputTokens: 1000, OutputTokens: 25, Cost: 0.002}, "1025 tokens (1000 in, 25 out), cost 0.002"},
		{engine.Usage{Tokens: 30, InputTokens: 30}, "30 tokens (30 in, 0 out)"},
		{engine.Usage{Tokens: 4000, Cost: 0.5}, "4000 tokens, cost 0.5"},
		{engine.Usage{Cost: 1.25}, "cost 1.25"},
	} {
		if got := usageText(tc.u); got != tc.want {
			t.Errorf("usageText(%+v) = %q, want %q", tc.u, got, tc.want)
		}
	}
}

// TestStatusUsageTotalOnly: an agent that reports only a total shows as
// "4000 tokens" in status, not "4000 tokens (0 in, 0 out), cost 0".
func TestStatusUsageTotalOnly(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	db := filepath.Join(dir, "u.db")
	wf := writeFile(t, dir, "u.json", `{"StartAt":"A","States":{"A":{"Type":"Task","Agent":"Writer","End":true}}}`)
	mock := writeFile(t, dir, "mock.json", `{"Writer":{"0":{"Return":1,"Usage":{"Tokens":4000}}}}`)
	if code, _, errOut := invoke(t, "", "run", wf, "--mock", mock, "--name", "u", "--db", db); code != 0 {
		t.Fatalf("run: exit %d, %s", code, errOut)
	}
	code, out, errOut := invoke(t, "", "status", "u", "--db", db)
	if code != 0 {
		t.Fatalf("status: exit %d, %s", code, errOut)
	}
	var line string
	for l := range strings.Lines(out) {
		if strings.HasPrefix(l, "usage") {
			line = strings.Join(strings.Fields(l), " ")
		}
	}
	if line != "usage 4000 tokens" {
		t.Errorf("status usage line = %q, want %q; status:\n%s", line, "usage 4000 tokens", out)
	}
}
