package engine_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aslrun/aslrun/agents"
	"github.com/aslrun/aslrun/engine"
	"github.com/aslrun/aslrun/store"
)

const (
	secretSSN  = "123-45-6789"
	secretCard = "4111111111111111"
)

// redactFlow: Verify sees the customer (its Redact paths name the SSN and
// the card), answers with a note quoting the SSN and a copy of it; the
// execution then waits for a person (it parks, and is resumed from the
// store), and Charge gets the card and the SSN back as they were.
const redactFlow = `{"StartAt":"Verify","States":{
	"Verify":{"Type":"Task","Agent":"Verifier","ResultPath":"$.check",
		"Audit":{"Redact":["$.customer.ssn","$.card"],"LogLevel":"full"},"Next":"Keep"},
	"Keep":{"Type":"Checkpoint","Name":"verified","Next":"Review"},
	"Review":{"Type":"Approval","Prompt":"Charge {{$.customer.name}}?","Next":"Charge"},
	"Charge":{"Type":"Task","Agent":"Charger","Parameters":{"card.$":"$.card","ssn.$":"$.customer.ssn"},"ResultPath":"$.charge","End":true}}}`

const redactInput = `{"customer":{"name":"Ann","ssn":"` + secretSSN + `"},"card":{"number":` + secretCard + `,"cvv":"987"}}`

// redactKey writes a redaction key file for a test.
func redactKey(t *testing.T, b byte) []byte {
	t.Helper()
	return bytes.Repeat([]byte{b}, engine.MinRedactKey)
}

// TestAuditRedactStore: a secret at a redacted path, and every copy of it
// an agent made, never reaches the bbolt file in plain text — the input,
// history, positions, checkpoint, agent call journal, output — while the
// run, and the run resumed from the store after it waited, see the real
// values; equal values get equal hashes.
func TestAuditRedactStore(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "redact.db")
	st, err := store.OpenBolt(path, store.BoltOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var seen []string
	reg := agents.NewRegistry()
	reg.Register("Verifier", agents.Func(func(_ context.Context, req *agents.Request) (any, error) {
		in := req.Input.(map[string]any)
		ssn := in["customer"].(map[string]any)["ssn"].(string)
		mu.Lock()
		seen = append(seen, "verify "+ssn)
		mu.Unlock()
		return map[string]any{"note": "customer " + ssn + " verified", "copy": ssn}, nil
	}))
	reg.Register("Charger", agents.Func(func(_ context.Context, req *agents.Request) (any, error) {
		b, _ := json.Marshal(req.Input)
		mu.Lock()
		seen = append(seen, "charge "+string(b))
		mu.Unlock()
		return map[string]any{"ok": true}, nil
	}))
	key := redactKey(t, 7)
	x := engine.New(engine.Config{Agents: reg, Store: st, RedactKey: key})
	res, err := x.Run(ctx, mustParse(t, redactFlow), mustJSON(t, redactInput), engine.StartOptions{ID: "r1"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != engine.StatusWaiting {
		t.Fatalf("status %s, want WAITING (%s %s)", res.Status, res.Error, res.Cause)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}

	// Another process, the same key: it resumes with the values.
	st, err = store.OpenBolt(path, store.BoltOptions{})
	if err != nil {
		t.Fatal(err)
	}
	y := engine.New(engine.Config{Agents: reg, Store: st, RedactKey: key})
	pending, err := y.Pending(ctx, "r1")
	if err != nil || len(pending) != 1 {
		t.Fatalf("Pending = %v, %v", pending, err)
	}
	res, err = y.Decide(ctx, "r1", engine.Decision{Approval: "approve", Approver: "bo"}, engine.ResumeOptions{})
	if err != nil || res.Status != engine.StatusSucceeded {
		t.Fatalf("Decide = %+v, %v", res, err)
	}
	mu.Lock()
	got := strings.Join(seen, "\n")
	mu.Unlock()
	for _, want := range []string{"verify " + secretSSN, `"number":` + secretCard, `"cvv":"987"`, `"ssn":"` + secretSSN + `"`} {
		if !strings.Contains(got, want) {
			t.Errorf("the agents did not get %s; they saw:\n%s", want, got)
		}
	}

	// What the run returns is as stored: markers, one hash per value.
	out, _ := json.Marshal(res.Output)
	if bytes.Contains(out, []byte(secretSSN)) || bytes.Contains(out, []byte(secretCard)) {
		t.Errorf("the result holds a secret: %s", out)
	}
	doc := res.Output.(map[string]any)
	ssnMark := doc["customer"].(map[string]any)["ssn"].(map[string]any)
	copyMark := doc["check"].(map[string]any)["copy"].(map[string]any)
	if ssnMark[engine.RedactedKey] == nil || ssnMark[engine.RedactedKey] != copyMark[engine.RedactedKey] {
		t.Errorf("the SSN's marker %v and its copy's %v differ", ssnMark, copyMark)
	}
	note := doc["check"].(map[string]any)["note"].(string)
	if want := "customer [redacted " + ssnMark[engine.RedactedKey].(string) + "] verified"; note != want {
		t.Errorf("note = %q, want %q", note, want)
	}

	// The history verifies: its chain covers what is stored.
	if err := st.VerifyHistory(ctx, "r1"); err != nil {
		t.Errorf("VerifyHistory: %v", err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{secretSSN, secretCard} {
		if bytes.Contains(raw, []byte(s)) {
			t.Errorf("the database file holds %s in plain text", s)
		}
	}
	if !bytes.Contains(raw, []byte(engine.SealedKey)) {
		t.Error("the database file holds no sealed value: did the test store anything?")
	}
}

// TestAuditRedactRefused: a durable executor without a key refuses to start
// an execution that redacts, naming the state; one with another key cannot
// resume it; a key too short is refused.
func TestAuditRedactRefused(t *testing.T) {
	ctx := context.Background()
	st := store.NewMemory()
	reg := registry(t, agents.Func(func(_ context.Context, req *agents.Request) (any, error) { return map[string]any{}, nil }), "Verifier", "Charger")
	_, err := engine.New(engine.Config{Agents: reg, Store: st}).Run(ctx, mustParse(t, redactFlow), mustJSON(t, redactInput), engine.StartOptions{})
	if err == nil || !strings.Contains(err.Error(), "state Verify: Audit.Redact seals values with the owner's redaction key") {
		t.Errorf("Run without a key = %v", err)
	}
	_, err = engine.New(engine.Config{Agents: reg, Store: st, RedactKey: []byte("short")}).Run(ctx, mustParse(t, redactFlow), mustJSON(t, redactInput), engine.StartOptions{})
	if err == nil || !strings.Contains(err.Error(), "a redaction key has at least 32 bytes, not 5") {
		t.Errorf("Run with a short key = %v", err)
	}
	x := engine.New(engine.Config{Agents: reg, Store: st, RedactKey: redactKey(t, 1)})
	if res, err := x.Run(ctx, mustParse(t, redactFlow), mustJSON(t, redactInput), engine.StartOptions{ID: "k"}); err != nil || res.Status != engine.StatusWaiting {
		t.Fatalf("Run = %+v, %v", res, err)
	}
	y := engine.New(engine.Config{Agents: reg, Store: st, RedactKey: redactKey(t, 2)})
	_, err = y.Decide(ctx, "k", engine.Decision{Approval: "approve"}, engine.ResumeOptions{})
	if err == nil || !strings.Contains(err.Error(), "does not open with the redaction key") {
		t.Errorf("Decide with another key = %v", err)
	}
	z := engine.New(engine.Config{Agents: reg, Store: st})
	_, err = z.Decide(ctx, "k", engine.Decision{Approval: "approve"}, engine.ResumeOptions{})
	if err == nil || !strings.Contains(err.Error(), "execution k: state Verify: Audit.Redact") {
		t.Errorf("Decide without a key = %v", err)
	}
}

// TestAuditRedactReadKey: a key file others may read, a short one and a
// missing one are refused; a good one is read.
func TestAuditRedactReadKey(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, data []byte, mode os.FileMode) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, data, mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good := write("good", redactKey(t, 3), 0o600)
	if k, err := engine.ReadRedactKey(good); err != nil || len(k) != engine.MinRedactKey {
		t.Errorf("ReadRedactKey(good) = %d bytes, %v", len(k), err)
	}
	for _, tc := range []struct{ path, want string }{
		{write("open", redactKey(t, 3), 0o644), "others may read it (mode 0644): chmod 600 it"},
		{write("short", []byte("0123456789"), 0o600), "10 bytes, want at least 32"},
		{filepath.Join(dir, "none"), "no such file"},
		{dir, "not a regular file"},
	} {
		if _, err := engine.ReadRedactKey(tc.path); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ReadRedactKey(%s) = %v, want %q", tc.path, err, tc.want)
		}
	}
}

// TestAuditRedactCache: a cached result holding a secret is stored sealed
// in the result cache, and a hit gives the next run the real value.
func TestAuditRedactCache(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "cache.db")
	st, err := store.OpenBolt(path, store.BoltOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	var mu sync.Mutex
	var calls int
	var used []string
	reg := agents.NewRegistry()
	reg.Register("Lookup", agents.Func(func(_ context.Context, req *agents.Request) (any, error) {
		mu.Lock()
		calls++
		mu.Unlock()
		ssn := req.Input.(map[string]any)["customer"].(map[string]any)["ssn"]
		return map[string]any{"found": ssn, "note": fmt.Sprint("record of ", ssn)}, nil
	}))
	reg.Register("Use", agents.Func(func(_ context.Context, req *agents.Request) (any, error) {
		mu.Lock()
		used = append(used, fmt.Sprint(req.Input))
		mu.Unlock()
		return "ok", nil
	}))
	def := `{"StartAt":"Lookup","States":{
		"Lookup":{"Type":"Task","Agent":"Lookup","ResultPath":"$.lookup","Cache":{"Key":"one"},
			"Audit":{"Redact":["$.customer.ssn"]},"Next":"Use"},
		"Use":{"Type":"Task","Agent":"Use","Parameters":{"found.$":"$.lookup.found"},"ResultPath":"$.used","End":true}}}`
	x := engine.New(engine.Config{Agents: reg, Store: st, RedactKey: redactKey(t, 5)})
	for i := range 2 {
		res, err := x.Run(ctx, mustParse(t, def), mustJSON(t, `{"customer":{"ssn":"`+secretSSN+`"}}`), engine.StartOptions{})
		if err != nil || res.Status != engine.StatusSucceeded {
			t.Fatalf("run %d: %+v %v", i, res, err)
		}
	}
	mu.Lock()
	if calls != 1 || len(used) != 2 || !strings.Contains(used[1], secretSSN) {
		t.Errorf("%d calls, the next state saw %q; want 1 call and the SSN both times", calls, used)
	}
	mu.Unlock()
	entries, err := st.ListCache(ctx, engine.CacheFilter{}, time.Now())
	if err != nil || len(entries) != 1 {
		t.Fatalf("ListCache = %+v, %v", entries, err)
	}
	if b, _ := json.Marshal(entries[0].Result); bytes.Contains(b, []byte(secretSSN)) || !bytes.Contains(b, []byte(engine.SealedKey)) {
		t.Errorf("the cache entry holds %s", b)
	}
}

// TestAuditRedactFeedbackWait: a Task that redacts and waits for feedback
// keeps the secret out of its wait's record and of the feedback store.
func TestAuditRedactFeedbackWait(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "fb.db")
	st, err := store.OpenBolt(path, store.BoltOptions{})
	if err != nil {
		t.Fatal(err)
	}
	reg := registry(t, agents.Func(func(_ context.Context, req *agents.Request) (any, error) {
		return map[string]any{"draft": fmt.Sprint("Dear customer ", req.Input.(map[string]any)["ssn"])}, nil
	}), "Writer")
	def := `{"StartAt":"Answer","States":{"Answer":{"Type":"Task","Agent":"Writer","ResultPath":"$.reply",
		"Audit":{"Redact":["$.ssn"]},"Feedback":{"Type":"thumbs","Wait":true},"End":true}}}`
	x := engine.New(engine.Config{Agents: reg, Store: st, RedactKey: redactKey(t, 6)})
	res, err := x.Run(ctx, mustParse(t, def), mustJSON(t, `{"ssn":"`+secretSSN+`"}`), engine.StartOptions{ID: "fbw"})
	if err != nil || res.Status != engine.StatusWaiting {
		t.Fatalf("run = %+v, %v", res, err)
	}
	f := &engine.Feedback{ID: "fb1", Execution: "fbw", Workflow: "w", State: "Answer", Step: "Answer#1", By: "ann", Role: "approver",
		Type: "thumbs", Value: "up", Comment: "fine for " + secretSSN, CreatedAt: time.Now().UTC()}
	if res, err = x.GiveFeedback(ctx, "fbw", f, engine.ResumeOptions{}); err != nil || res.Status != engine.StatusSucceeded {
		t.Fatalf("GiveFeedback = %+v, %v", res, err)
	}
	list, err := st.ListFeedback(ctx, engine.FeedbackFilter{Execution: "fbw"})
	if err != nil || len(list) != 1 {
		t.Fatalf("ListFeedback = %+v, %v", list, err)
	}
	if b, _ := json.Marshal(list[0].Output); bytes.Contains(b, []byte(secretSSN)) {
		t.Errorf("the stored feedback's output holds the SSN: %s", b)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(raw, []byte(secretSSN)) {
		t.Error("the database file holds the SSN")
	}
}

// TestAuditRedactStop: stopping a waiting execution on an executor with a
// redaction key ends it ABORTED, its sealed values left sealed.
func TestAuditRedactStop(t *testing.T) {
	ctx := context.Background()
	st := store.NewMemory()
	reg := registry(t, agents.Func(func(context.Context, *agents.Request) (any, error) { return map[string]any{}, nil }), "Verifier", "Charger")
	x := engine.New(engine.Config{Agents: reg, Store: st, RedactKey: redactKey(t, 4)})
	if res, err := x.Run(ctx, mustParse(t, redactFlow), mustJSON(t, redactInput), engine.StartOptions{ID: "s"}); err != nil || res.Status != engine.StatusWaiting {
		t.Fatalf("Run = %+v, %v", res, err)
	}
	res, err := x.Stop(ctx, "s", "", "")
	if err != nil || res.Status != engine.StatusAborted {
		t.Fatalf("Stop = %+v, %v", res, err)
	}
	e, err := st.Load(ctx, "s")
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := json.Marshal(e); bytes.Contains(b, []byte(secretSSN)) {
		t.Error("the stopped execution's record holds the SSN")
	}
}
