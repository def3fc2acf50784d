package main

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/aslrun/aslrun/api"
	"github.com/aslrun/aslrun/client"
	"github.com/aslrun/aslrun/store/postgres/pgtest"
)

// TestAuditRedactEverywhere: `aslrun serve` with a redaction key runs a
// workflow whose Task redacts a customer's SSN and card; the SSN is copied
// into the agent's parameters, quoted in a note, and sent to a webhook by
// a state's OnExit event. Neither secret reaches the webhook body, the
// execution's page, its history over the API, the server's log (the state
// logs at LogLevel full, with its input and output) or the database file.
func TestAuditRedactEverywhere(t *testing.T) {
	t.Setenv("ASLRUN_WEBHOOK_SECRET", "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")
	const ssn, card = "987-65-4320", "5500005555555559"
	var mu sync.Mutex
	var bodies []string
	got := make(chan struct{}, 16)
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		bodies = append(bodies, string(b))
		mu.Unlock()
		select {
		case got <- struct{}{}:
		default:
		}
	}))
	defer hook.Close()
	dir := t.TempDir()
	key := filepath.Join(dir, "redact.key")
	if err := os.WriteFile(key, bytes.Repeat([]byte("k"), 32), 0o600); err != nil {
		t.Fatal(err)
	}
	db := filepath.Join(dir, "r.db")
	p := startServe(t, db, "--redact-key", key, "--allow-host", strings.TrimPrefix(hook.URL, "http://"))
	def := json.RawMessage(`{"StartAt": "Verify",
	  "Events": {"Channels": {"hooks": {"Type": "webhook", "Url": "` + hook.URL + `/e"}}},
	  "States": {
	    "Verify": {"Type": "Task", "Agent": "Verifier", "Parameters": {"ssn.$": "$.customer.ssn", "who.$": "$.customer.name"},
	      "ResultPath": "$.check", "Audit": {"Redact": ["$.customer.ssn", "$.card"], "LogLevel": "full"}, "Next": "Note"},
	    "Note": {"Type": "Pass", "Parameters": {"note.$": "States.Format('customer {} verified', $.customer.ssn)", "customer.$": "$.customer"},
	      "Events": {"OnExit": {"Type": "customer.verified", "Channel": "hooks", "Include": ["$.note", "$.customer"]}}, "End": true}}}`)
	input := json.RawMessage(`{"customer": {"name": "Ann", "ssn": "` + ssn + `"}, "card": {"number": "` + card + `", "cvv": "123"}}`)
	mock := json.RawMessage(`{"Verifier": {"0": {"Return": {"ok": true}}}}`)
	c := client.NewUnix(p.sock)
	ctx := context.Background()
	if _, err := c.Start(ctx, api.StartExecution{Definition: def, Mock: mock, Name: "secret", Input: input}); err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	e, err := c.Wait(wctx, "secret", 20*time.Millisecond)
	if err != nil || e.Status != "SUCCEEDED" {
		t.Fatalf("the execution: %+v %v; log:\n%s", e, err, p.log)
	}
	select {
	case <-got:
	case <-time.After(time.Minute):
		t.Fatalf("no webhook delivery; log:\n%s", p.log)
	}
	history, err := c.History(ctx, "secret", true)
	if err != nil {
		t.Fatal(err)
	}
	hist, _ := json.Marshal(history)
	hc := &http.Client{Transport: unixTransport(p.sock)}
	resp, err := hc.Get("http://aslrun/executions/secret")
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("the page: %s\n%s", resp.Status, page)
	}
	p.log.waitFor(t, "state ended", "state=Verify")
	p.stop(t, syscall.SIGTERM)
	file, err := os.ReadFile(db)
	if err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	hooks := strings.Join(bodies, "\n")
	mu.Unlock()
	for _, where := range []struct{ name, text string }{
		{"the webhook body", hooks}, {"the history", string(hist)}, {"the page", string(page)},
		{"the log", p.log.String()}, {"the database file", string(file)},
	} {
		for _, secret := range []string{ssn, card} {
			if strings.Contains(where.text, secret) {
				t.Errorf("%s holds %s", where.name, secret)
			}
		}
	}
	// What they hold instead: the markers, the same hash for the SSN in
	// each, and the rest of the data as it was.
	if !strings.Contains(hooks, `"$redacted":"h:`) || strings.Contains(hooks, `$sealed`) || !strings.Contains(hooks, `customer [redacted h:`) || !strings.Contains(hooks, `"name":"Ann"`) {
		t.Errorf("the webhook bodies do not hold the markers:\n%s", hooks)
	}
	if !strings.Contains(string(hist), `$sealed`) || !strings.Contains(string(page), "redacted") {
		t.Errorf("the history or the page shows no marker")
	}
	if !strings.Contains(p.log.String(), `input="{\"card\":{\"$redacted\"`) {
		t.Errorf("the log's state line does not show the redacted input:\n%s", p.log)
	}
}

// TestAuditRedactKeyRefused: serve refuses a key file others may read, and
// `aslrun run` of a workflow that redacts, without a key, says how to
// give one.
func TestAuditRedactKeyRefused(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	key := writeFile(t, dir, "open.key", strings.Repeat("k", 32))
	if err := os.Chmod(key, 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, errOut := invoke(t, "", "serve", "--db", filepath.Join(dir, "s.db"), "--redact-key", key)
	if code == 0 || !strings.Contains(errOut, "others may read it (mode 0644): chmod 600 it") {
		t.Errorf("serve with an open key: exit %d, %s", code, errOut)
	}
	wf := writeFile(t, dir, "w.json", `{"StartAt":"T","States":{"T":{"Type":"Task","Agent":"A","Audit":{"Redact":["$.ssn"]},"End":true}}}`)
	mock := writeFile(t, dir, "m.json", `{"A":{"0":{"Return":1}}}`)
	code, _, errOut = invoke(t, "", "run", wf, "--mock", mock, "--db", filepath.Join(dir, "r.db"), "--input", `{"ssn":"111-22-3333"}`)
	if code == 0 || !strings.Contains(errOut, "state T: Audit.Redact seals values with the owner's redaction key") || !strings.Contains(errOut, "ASLRUN_REDACT_KEY_FILE") {
		t.Errorf("run without a key: exit %d, %s", code, errOut)
	}
}

// TestAuditRedactPostgres: on PostgreSQL, `aslrun run` with the key from
// ASLRUN_REDACT_KEY_FILE leaves the secret in no table, as text or as
// bytes, while a value no path names (the control) is there to be found.
func TestAuditRedactPostgres(t *testing.T) {
	const ssn, control = "555-44-3333", "Annabelle-Control"
	db := pgtest.Fresh(t)
	if code, out, errOut := invoke(t, "", "migrate", "--db", db); code != 0 {
		t.Fatalf("migrate: exit %d: %s%s", code, out, errOut)
	}
	dir := t.TempDir()
	key := filepath.Join(dir, "k")
	if err := os.WriteFile(key, bytes.Repeat([]byte("z"), 40), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv(envRedactKey, key)
	wf := writeFile(t, dir, "w.json", `{"StartAt":"Verify","States":{
	  "Verify":{"Type":"Task","Agent":"Verifier","Parameters":{"ssn.$":"$.customer.ssn"},"ResultPath":"$.check","Audit":{"Redact":["$.customer.ssn"]},"Next":"Keep"},
	  "Keep":{"Type":"Checkpoint","Name":"k","Next":"Note"},
	  "Note":{"Type":"Pass","Parameters":{"note.$":"States.Format('{} has {}', $.customer.name, $.customer.ssn)"},"End":true}}}`)
	mock := writeFile(t, dir, "m.json", `{"Verifier":{"0":{"Return":{"ok":true}}}}`)
	code, out, errOut := invoke(t, "", "run", wf, "--mock", mock, "--db", db, "--name", "pg-secret",
		"--input", `{"customer":{"name":"`+control+`","ssn":"`+ssn+`"}}`)
	if code != 0 || strings.Contains(out, ssn) || !strings.Contains(out, control+" has [redacted h:") {
		t.Fatalf("run: exit %d, %s %s", code, out, errOut)
	}
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	rows, err := conn.Query(ctx, `SELECT quote_ident(table_name) FROM information_schema.tables WHERE table_schema = current_schema() AND table_type = 'BASE TABLE'`)
	if err != nil {
		t.Fatal(err)
	}
	tables, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil || len(tables) == 0 {
		t.Fatalf("tables: %v %v", tables, err)
	}
	var dump strings.Builder
	for _, table := range tables {
		var text *string
		if err := conn.QueryRow(ctx, `SELECT string_agg(t::text, E'\n') FROM `+table+` t`).Scan(&text); err != nil {
			t.Fatalf("%s: %v", table, err)
		}
		if text != nil {
			dump.WriteString(*text)
		}
	}
	all := dump.String()
	if !strings.Contains(all, control) && !strings.Contains(all, hex.EncodeToString([]byte(control))) {
		t.Fatalf("the control value is in no table: the dump shows nothing (%d bytes)", len(all))
	}
	for _, form := range []string{ssn, hex.EncodeToString([]byte(ssn))} {
		if strings.Contains(all, form) {
			t.Errorf("a table holds the SSN (%s)", form)
		}
	}
}
