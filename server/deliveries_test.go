package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/aslrun/aslrun/api"
	"github.com/aslrun/aslrun/engine"
	"github.com/aslrun/aslrun/store"
)

// lockedBuffer is a log's destination that handlers write concurrently.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// noOutbox is a store that keeps no outbox: a Store and nothing more.
type noOutbox struct{ Store }

// deliveryServer is a server over st (the memory store, or noOutbox of
// it when outbox is false) that runs nothing in the background, with a
// token per role and its log in the returned buffer.
func deliveryServer(t *testing.T, st *store.Memory, outbox bool) (*testServer, *lockedBuffer) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "tokens")
	tokens := map[Role]string{}
	for _, r := range []Role{RoleWorker, RoleViewer, RoleApprover, RoleOperator, RoleAdmin} {
		tok, err := CreateToken(path, r.String()+"-bot", r)
		if err != nil {
			t.Fatal(err)
		}
		tokens[r] = tok
	}
	ts, err := LoadTokens(path)
	if err != nil {
		t.Fatal(err)
	}
	var served Store = st
	if !outbox {
		served = noOutbox{st}
	}
	logs := &lockedBuffer{}
	s, err := New(Config{Store: served, Executor: engine.New(engine.Config{Store: st}), Tokens: ts, Logger: slog.New(slog.NewTextHandler(logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(s.Handler())
	t.Cleanup(func() { hs.Close(); s.Close() })
	return &testServer{Server: hs, s: s, st: st, tokens: tokens}, logs
}

// secretURL is a channel URL with secrets in its userinfo and query.
const secretURL = "https://user:pass@hooks.example.com/in?token=s3cret#frag"

// outboxWith commits, for each execution, an ended execution whose one
// commit carries its outbox entries (ids as given, in order), then sets
// each delivery's status when status is not nil: failed ones are parked
// after an attempt, delivered ones delivered, pending ones failed once and
// due in an hour (when status is nil, every one is pending, due now).
func outboxWith(t *testing.T, st *store.Memory, entries map[string][]string, status map[string]string) {
	t.Helper()
	ctx := context.Background()
	now := time.Now().UTC()
	for _, x := range slices.Sorted(maps.Keys(entries)) {
		var es []engine.OutboxEntry
		for _, id := range entries[x] {
			es = append(es, engine.OutboxEntry{ID: id, Channel: "hooks", URL: secretURL, Type: "execution.succeeded",
				Body: []byte(`{"id":"` + id + `","execution":"` + x + `"}`), CreatedAt: now})
		}
		if err := st.Create(ctx, &engine.Execution{ID: x, Status: engine.StatusRunning, StartedAt: now, Definition: []byte(`{}`), DefinitionHash: "h"}); err != nil {
			t.Fatal(err)
		}
		if err := st.Commit(ctx, &engine.Commit{Execution: x, Seq: 1, Status: engine.StatusSucceeded, Output: "done", StoppedAt: now, Outbox: es}); err != nil {
			t.Fatal(err)
		}
	}
	if status == nil {
		return // every one pending, never attempted
	}
	claimed, err := st.ClaimDeliveries(ctx, "test", 1000, now, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range claimed {
		var err error
		switch status[d.ID] {
		case engine.DeliveryFailed:
			err = st.FinishDelivery(ctx, d.ID, "test", now, "503 Service Unavailable from hooks.example.com", time.Time{}, true)
		case engine.DeliveryDelivered:
			err = st.FinishDelivery(ctx, d.ID, "test", now, "", time.Time{}, false)
		default:
			err = st.FinishDelivery(ctx, d.ID, "test", now, "connection refused", now.Add(time.Hour), false)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
}

// standardOutbox is the outbox most tests use: e1 emitted 01-a (FAILED),
// 01-b (DELIVERED), 01-c (PENDING); e2 emitted 02-a (FAILED), 02-b
// (PENDING).
func standardOutbox(t *testing.T, st *store.Memory) {
	t.Helper()
	outboxWith(t, st, map[string][]string{"e1": {"01-a", "01-b", "01-c"}, "e2": {"02-a", "02-b"}},
		map[string]string{"01-a": engine.DeliveryFailed, "01-b": engine.DeliveryDelivered, "02-a": engine.DeliveryFailed})
}

func ids(list []api.Delivery) []string {
	out := make([]string, len(list))
	for i, d := range list {
		out[i] = d.ID
	}
	return out
}

// TestDeliveriesList: filters by status (in any case) and execution, a
// limit with its next cursor, each delivery's fields with its URL
// redacted and no body unless asked for.
func TestDeliveriesList(t *testing.T) {
	st := store.NewMemory()
	standardOutbox(t, st)
	ts, _ := deliveryServer(t, st, true)
	for _, tc := range []struct {
		query string
		want  []string
		next  string
	}{
		{"", []string{"01-a", "01-b", "01-c", "02-a", "02-b"}, ""},
		{"?status=FAILED", []string{"01-a", "02-a"}, ""},
		{"?status=failed", []string{"01-a", "02-a"}, ""},
		{"?status=PENDING", []string{"01-c", "02-b"}, ""},
		{"?status=DELIVERED", []string{"01-b"}, ""},
		{"?execution=e2", []string{"02-a", "02-b"}, ""},
		{"?execution=e2&status=PENDING", []string{"02-b"}, ""},
		{"?execution=nope", []string{}, ""},
		{"?limit=2", []string{"01-a", "01-b"}, "01-b"},
		{"?limit=2&after=01-b", []string{"01-c", "02-a"}, "02-a"},
		{"?limit=2&after=02-a", []string{"02-b"}, ""},
		{"?limit=1&status=FAILED", []string{"01-a"}, "01-a"},
		{"?after=01-zzz", []string{"02-a", "02-b"}, ""},
		{"?limit=0", []string{"01-a", "01-b", "01-c", "02-a", "02-b"}, ""},
		{"?body=0", []string{"01-a", "01-b", "01-c", "02-a", "02-b"}, ""},
	} {
		t.Run(tc.query, func(t *testing.T) {
			var page api.DeliveryPage
			if code, body := ts.call(t, RoleViewer, "GET", "/v1/deliveries"+tc.query, nil, &page); code != http.StatusOK {
				t.Fatalf("GET %s = %d %s", tc.query, code, body)
			}
			if got := ids(page.Deliveries); !slices.Equal(got, tc.want) {
				t.Errorf("GET %s = %v, want %v", tc.query, got, tc.want)
			}
			if page.Next != tc.next {
				t.Errorf("GET %s: next %q, want %q", tc.query, page.Next, tc.next)
			}
		})
	}

	// The fields, as the raw JSON has them: no body, the URL redacted.
	code, raw := ts.call(t, RoleViewer, "GET", "/v1/deliveries", nil, nil)
	if code != http.StatusOK || bytes.Contains(raw, []byte(`"body"`)) || bytes.Contains(raw, []byte("s3cret")) || bytes.Contains(raw, []byte("pass")) {
		t.Errorf("GET /v1/deliveries = %d %s; want no body and no secret of the URL", code, raw)
	}
	var page api.DeliveryPage
	ts.call(t, RoleViewer, "GET", "/v1/deliveries", nil, &page)
	byID := map[string]api.Delivery{}
	for _, d := range page.Deliveries {
		byID[d.ID] = d
	}
	failed, delivered, pending := byID["01-a"], byID["01-b"], byID["01-c"]
	if failed.Execution != "e1" || failed.Channel != "hooks" || failed.Type != "execution.succeeded" || failed.Status != engine.DeliveryFailed ||
		failed.Attempts != 1 || failed.LastError == "" || failed.NextAt != nil || failed.DeliveredAt != nil || failed.CreatedAt.IsZero() {
		t.Errorf("the FAILED delivery: %+v", failed)
	}
	if failed.URL != "https://hooks.example.com/in" {
		t.Errorf("url %q, want https://hooks.example.com/in", failed.URL)
	}
	if delivered.Status != engine.DeliveryDelivered || delivered.DeliveredAt == nil || delivered.LastError != "" || delivered.NextAt != nil {
		t.Errorf("the DELIVERED delivery: %+v", delivered)
	}
	if pending.Status != engine.DeliveryPending || pending.NextAt == nil || !pending.NextAt.After(pending.CreatedAt) || pending.LastError != "connection refused" {
		t.Errorf("the PENDING delivery: %+v", pending)
	}
}

// TestDeliveriesBody: ?body=1 (or true) includes each delivery's body,
// the JSON its receiver gets.
func TestDeliveriesBody(t *testing.T) {
	st := store.NewMemory()
	standardOutbox(t, st)
	ts, _ := deliveryServer(t, st, true)
	for _, q := range []string{"?body=1", "?body=true&execution=e1"} {
		var page api.DeliveryPage
		if code, body := ts.call(t, RoleViewer, "GET", "/v1/deliveries"+q, nil, &page); code != http.StatusOK {
			t.Fatalf("GET %s = %d %s", q, code, body)
		}
		for _, d := range page.Deliveries {
			var got map[string]string
			if err := json.Unmarshal(d.Body, &got); err != nil || got["id"] != d.ID || got["execution"] != d.Execution {
				t.Errorf("GET %s: %s's body %s (%v)", q, d.ID, d.Body, err)
			}
		}
	}
}

// TestDeliveriesPaging: following next through pages of every size
// lists each delivery once, in order.
func TestDeliveriesPaging(t *testing.T) {
	st := store.NewMemory()
	var all []string
	for i := range 23 {
		all = append(all, "d-"+string(rune('a'+i)))
	}
	outboxWith(t, st, map[string][]string{"e": all}, nil)
	ts, _ := deliveryServer(t, st, true)
	for _, limit := range []int{1, 2, 5, 23, 100} {
		var got []string
		q := url.Values{"limit": {strconv.Itoa(limit)}}
		for pages := 0; ; pages++ {
			if pages > 30 {
				t.Fatalf("limit %d: more pages than deliveries", limit)
			}
			var page api.DeliveryPage
			if code, body := ts.call(t, RoleViewer, "GET", "/v1/deliveries?"+q.Encode(), nil, &page); code != http.StatusOK {
				t.Fatalf("limit %d: %d %s", limit, code, body)
			}
			got = append(got, ids(page.Deliveries)...)
			if page.Next == "" {
				break
			}
			q.Set("after", page.Next)
		}
		if !slices.Equal(got, all) {
			t.Errorf("limit %d: paged %v, want %v", limit, got, all)
		}
	}
}

// TestDeliveriesBadQuery: each query the list cannot take is a 400
// problem naming the parameter.
func TestDeliveriesBadQuery(t *testing.T) {
	st := store.NewMemory()
	standardOutbox(t, st)
	ts, _ := deliveryServer(t, st, true)
	for _, tc := range []struct {
		query, names string
	}{
		{"status=LOST", "status"},
		{"status=", ""}, // empty is all: not an error (checked below)
		{"limit=x", "limit"},
		{"limit=5000", "limit"},
		{"limit=-1", "limit"},
		{"limit=1.5", "limit"},
		{"body=yes", "body"},
		{"status=FAILED&status=PENDING", "status"},
		{"after=a&after=b", "after"},
		{"cursor=01-a", "cursor"},
		{"execution=" + url.QueryEscape("e\x1b[31m"), "execution"},
		{"execution=" + url.QueryEscape("\xff"), "execution"},
		{"after=" + strings.Repeat("x", maxExecutionID+1), "after"},
	} {
		t.Run(tc.query, func(t *testing.T) {
			code, body := ts.call(t, RoleViewer, "GET", "/v1/deliveries?"+tc.query, nil, nil)
			if tc.names == "" {
				if code != http.StatusOK {
					t.Errorf("GET ?%s = %d %s, want 200", tc.query, code, body)
				}
				return
			}
			var p api.Problem
			if err := json.Unmarshal(body, &p); err != nil || code != http.StatusBadRequest || p.Type != api.ProblemType+"bad-request" {
				t.Fatalf("GET ?%s = %d %s, want a 400 bad-request problem", tc.query, code, body)
			}
			if !strings.Contains(p.Detail, tc.names) {
				t.Errorf("GET ?%s: detail %q does not name %s", tc.query, p.Detail, tc.names)
			}
		})
	}
}

// TestDeliveriesRetry: an operator (or admin) makes a FAILED delivery
// PENDING and due now, and the log says who; an unknown id is 404, a
// PENDING or DELIVERED delivery 409 naming its status, a viewer or an
// approver 403, and none of the refusals changes anything.
func TestDeliveriesRetry(t *testing.T) {
	st := store.NewMemory()
	standardOutbox(t, st)
	outboxWith(t, st, map[string][]string{"e3": {"03-a"}}, map[string]string{"03-a": engine.DeliveryFailed})
	ts, logs := deliveryServer(t, st, true)
	before := time.Now()
	for _, tc := range []struct {
		name string
		role Role
		id   string
		want int
		kind string
		says string
	}{
		{"viewer", RoleViewer, "01-a", http.StatusForbidden, "forbidden", "operator"},
		{"approver", RoleApprover, "01-a", http.StatusForbidden, "forbidden", "operator"},
		{"worker", RoleWorker, "01-a", http.StatusForbidden, "forbidden", "operator"},
		{"no token", 0, "01-a", http.StatusUnauthorized, "unauthenticated", "bearer"},
		{"unknown", RoleOperator, "nope", http.StatusNotFound, "not-found", "nope"},
		{"pending", RoleOperator, "01-c", http.StatusConflict, "not-failed", engine.DeliveryPending},
		{"delivered", RoleOperator, "01-b", http.StatusConflict, "not-failed", engine.DeliveryDelivered},
		{"operator", RoleOperator, "01-a", http.StatusOK, "", ""},
		{"again", RoleOperator, "01-a", http.StatusConflict, "not-failed", engine.DeliveryPending},
		{"admin", RoleAdmin, "03-a", http.StatusOK, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, body := ts.call(t, tc.role, "POST", "/v1/deliveries/"+url.PathEscape(tc.id)+"/retry", nil, nil)
			if code != tc.want {
				t.Fatalf("retry %s as %v = %d %s, want %d", tc.id, tc.role, code, body, tc.want)
			}
			if tc.want != http.StatusOK {
				var p api.Problem
				if err := json.Unmarshal(body, &p); err != nil || p.Type != api.ProblemType+tc.kind || !strings.Contains(p.Detail, tc.says) {
					t.Errorf("retry %s as %v: %s, want a %s problem saying %q", tc.id, tc.role, body, tc.kind, tc.says)
				}
				return
			}
			var d api.Delivery
			if err := json.Unmarshal(body, &d); err != nil {
				t.Fatal(err)
			}
			if d.ID != tc.id || d.Status != engine.DeliveryPending || d.NextAt == nil || d.NextAt.Before(before.Add(-time.Second)) || d.Body != nil {
				t.Errorf("retry %s = %+v, want it PENDING, due now, without its body", tc.id, d)
			}
		})
	}
	var page api.DeliveryPage
	ts.call(t, RoleViewer, "GET", "/v1/deliveries", nil, &page)
	want := map[string]string{"01-a": engine.DeliveryPending, "01-b": engine.DeliveryDelivered, "01-c": engine.DeliveryPending,
		"02-a": engine.DeliveryFailed, "02-b": engine.DeliveryPending, "03-a": engine.DeliveryPending}
	for _, d := range page.Deliveries {
		if d.Status != want[d.ID] {
			t.Errorf("after the retries %s is %s, want %s", d.ID, d.Status, want[d.ID])
		}
	}
	log := logs.String()
	for _, w := range []string{`msg="delivery retried" delivery=01-a execution=e1 channel=hooks caller=operator-bot role=operator`,
		`msg="delivery retried" delivery=03-a execution=e3 channel=hooks caller=admin-bot role=admin`} {
		if !strings.Contains(log, w) {
			t.Errorf("the log has no %s:\n%s", w, log)
		}
	}
	if strings.Count(log, "delivery retried") != 2 {
		t.Errorf("the log has other retries than the two made:\n%s", log)
	}
}

// TestDeliveriesFindDelivery: a delivery is read back among others that
// share all but its last byte, and past a page of them; ids that sort
// between are not taken for it.
func TestDeliveriesFindDelivery(t *testing.T) {
	st := store.NewMemory()
	var many []string
	for i := range 1100 {
		many = append(many, fmt.Sprintf("x%04d", i))
	}
	outboxWith(t, st, map[string][]string{"a": {"a", "ab", "abc", "ac", "b"}, "m": many, "y": {"y"}}, nil)
	ctx := context.Background()
	// "y" is read past the 1105 ids that sort below it: two pages.
	for _, id := range []string{"a", "ab", "abc", "ac", "b", "x0000", "x1099", "x1050", "y"} {
		d, err := findDelivery(ctx, st, id)
		if err != nil || d.ID != id {
			t.Errorf("findDelivery(%q) = %q, %v", id, d.ID, err)
		}
	}
	for _, id := range []string{"", "aa", "abd", "x1100", "x10", "c", "0"} {
		if d, err := findDelivery(ctx, st, id); err == nil {
			t.Errorf("findDelivery(%q) = %q, want not found", id, d.ID)
		}
	}
}

// TestDeliveriesWithoutOutbox: a store that keeps no outbox answers both
// routes with a 501 problem saying so, and the page shows it.
func TestDeliveriesWithoutOutbox(t *testing.T) {
	ts, _ := deliveryServer(t, store.NewMemory(), false)
	for _, rc := range []struct {
		role         Role
		method, path string
	}{
		{RoleViewer, "GET", "/v1/deliveries"},
		{RoleViewer, "GET", "/v1/deliveries?status=LOST"},
		{RoleOperator, "POST", "/v1/deliveries/01-a/retry"},
	} {
		code, body := ts.call(t, rc.role, rc.method, rc.path, nil, nil)
		var p api.Problem
		if err := json.Unmarshal(body, &p); err != nil || code != http.StatusNotImplemented || p.Type != api.ProblemType+"no-outbox" || !strings.Contains(p.Detail, "outbox") {
			t.Errorf("%s %s = %d %s, want a 501 no-outbox problem", rc.method, rc.path, code, body)
		}
	}
	b := ts.signedIn(t, RoleOperator)
	if code, body, _ := b.get(t, "/deliveries"); code != http.StatusNotImplemented || !strings.Contains(body, "keeps no outbox") {
		t.Errorf("GET /deliveries = %d, want 501 saying the store keeps no outbox\n%s", code, body)
	}
}

// TestDeliveriesPage: the page lists FAILED deliveries first with their
// last errors, a tab a status, its URLs redacted; an operator gets a
// Retry button on each FAILED one (a viewer none) that makes it pending
// with the session's CSRF token, and nothing else does: a viewer, no
// token, another session's token, a form from another site, the API's
// route with the session's cookie.
func TestDeliveriesPage(t *testing.T) {
	st := store.NewMemory()
	standardOutbox(t, st)
	outboxWith(t, st, map[string][]string{"<x>": {"09-<b>"}}, map[string]string{"09-<b>": engine.DeliveryFailed})
	ts, logs := deliveryServer(t, st, true)
	viewer, op, other := ts.signedIn(t, RoleViewer), ts.signedIn(t, RoleOperator), ts.signedIn(t, RoleOperator)

	for _, tc := range []struct {
		b     *webClient
		path  string
		want  []string
		wantN []string
	}{
		{viewer, "/deliveries", []string{`<a href="/deliveries">Deliveries</a>`, `data-id="01-a"`, `data-id="02-a"`, `status-FAILED">FAILED`,
			"503 Service Unavailable from hooks.example.com", "https://hooks.example.com/in", `aria-current="page">Failed</a>`,
			`data-id="09-&lt;b&gt;"`, `<a href="/executions/%3Cx%3E">&lt;x&gt;</a>`},
			[]string{`data-id="01-b"`, `data-id="01-c"`, "retry-form", "s3cret", "pass@", "<x>", "<b>"}},
		{op, "/deliveries", []string{`action="/deliveries/01-a/retry"`, `action="/deliveries/02-a/retry"`, `action="/deliveries/09-%3Cb%3E/retry"`, `name="csrf"`}, nil},
		{op, "/deliveries?status=PENDING", []string{`data-id="01-c"`, `data-id="02-b"`, "connection refused", `aria-current="page">Pending</a>`, "due "},
			[]string{`data-id="01-a"`, "retry-form"}},
		{op, "/deliveries?status=delivered", []string{`data-id="01-b"`, `aria-current="page">Delivered</a>`}, []string{`data-id="01-a"`, "retry-form"}},
		{op, "/deliveries?status=all&execution=e2", []string{`data-id="02-a"`, `data-id="02-b"`, `id="execution-filter"`, `href="/deliveries?execution=e2&amp;status=PENDING"`},
			[]string{`data-id="01-a"`}},
		{op, "/deliveries?status=FAILED&execution=nope", []string{`id="no-delivery"`, "No FAILED delivery."}, nil},
	} {
		code, body, h := tc.b.get(t, tc.path)
		if code != http.StatusOK || !strings.HasPrefix(h.Get("Content-Type"), "text/html") {
			t.Errorf("GET %s: %d %s\n%s", tc.path, code, h.Get("Content-Type"), body)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(body, w) {
				t.Errorf("GET %s: no %s in\n%s", tc.path, w, body)
			}
		}
		for _, w := range tc.wantN {
			if strings.Contains(body, w) {
				t.Errorf("GET %s: %s in\n%s", tc.path, w, body)
			}
		}
	}
	for _, path := range []string{"/deliveries?status=LOST", "/deliveries?limit=5", "/deliveries?after=a&after=b", "/deliveries?foo=1"} {
		if code, body, _ := op.get(t, path); code != http.StatusBadRequest || !strings.Contains(body, `id="error"`) {
			t.Errorf("GET %s: %d, want 400 with the error\n%s", path, code, body)
		}
	}
	if code, _, h := ts.web(t).get(t, "/deliveries"); code != http.StatusSeeOther || h.Get("Location") != "/signin" {
		t.Errorf("GET /deliveries signed out: %d to %q, want 303 to /signin", code, h.Get("Location"))
	}

	// Paging: the next link keeps the status.
	many := store.NewMemory()
	var all []string
	for i := range deliveriesPerPage + 3 {
		all = append(all, fmt.Sprintf("p-%03d", i))
	}
	outboxWith(t, many, map[string][]string{"e": all}, nil)
	pts, _ := deliveryServer(t, many, true)
	pb := pts.signedIn(t, RoleViewer)
	_, body, _ := pb.get(t, "/deliveries?status=PENDING")
	next := fmt.Sprintf(`href="/deliveries?after=p-%03d&amp;status=PENDING"`, deliveriesPerPage-1)
	if strings.Count(body, `class="delivery"`) != deliveriesPerPage || !strings.Contains(body, next) {
		t.Errorf("the first page: want %d rows and %s\n%s", deliveriesPerPage, next, body)
	}
	_, body, _ = pb.get(t, fmt.Sprintf("/deliveries?status=PENDING&after=p-%03d", deliveriesPerPage-1))
	if strings.Count(body, `class="delivery"`) != 3 || strings.Contains(body, `id="next"`) {
		t.Errorf("the second page: want 3 rows and no next link\n%s", body)
	}

	// The refusals: nothing changes.
	form := func(csrf string) url.Values { return url.Values{"csrf": {csrf}} }
	for _, tc := range []struct {
		name string
		b    *webClient
		form url.Values
		hdr  map[string]string
		want int
	}{
		{"viewer", viewer, form(viewer.csrf(t)), nil, http.StatusForbidden},
		{"no CSRF token", op, url.Values{}, nil, http.StatusForbidden},
		{"another session's token", op, form(other.csrf(t)), nil, http.StatusForbidden},
		{"another site", op, form(op.csrf(t)), map[string]string{"Origin": "https://evil.example", "Sec-Fetch-Site": "cross-site"}, http.StatusForbidden},
		{"no session", ts.web(t), form(op.csrf(t)), nil, http.StatusSeeOther},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, err := http.NewRequest("POST", ts.URL+"/deliveries/01-a/retry", strings.NewReader(tc.form.Encode()))
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			for k, v := range tc.hdr {
				req.Header.Set(k, v)
			}
			resp, err := tc.b.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			if code, _, _ := read(t, resp); code != tc.want {
				t.Errorf("POST /deliveries/01-a/retry: %d, want %d", code, tc.want)
			}
			ts.checkDelivery(t, "01-a", engine.DeliveryFailed)
		})
	}
	// The API's write does not take the session's cookie.
	resp, err := op.Post(ts.URL+"/v1/deliveries/01-a/retry", "application/json", nil)
	if err != nil {
		t.Fatal(err)
	}
	if code, _, _ := read(t, resp); code != http.StatusUnauthorized {
		t.Errorf("POST /v1/deliveries/01-a/retry with a session: %d, want 401", code)
	}
	ts.checkDelivery(t, "01-a", engine.DeliveryFailed)

	// The operator's retry: back to the failed ones, saying so.
	code, _, h := op.post(t, "/deliveries/01-a/retry", form(op.csrf(t)))
	if code != http.StatusSeeOther || h.Get("Location") != "/deliveries?retried=01-a&status=FAILED" {
		t.Fatalf("retry: %d to %q", code, h.Get("Location"))
	}
	ts.checkDelivery(t, "01-a", engine.DeliveryPending)
	_, body, _ = op.get(t, h.Get("Location"))
	if !strings.Contains(body, `id="retried"`) || !strings.Contains(body, "Delivery 01-a is pending again") || strings.Contains(body, `data-id="01-a"`) {
		t.Errorf("after the retry: want the notice and 01-a gone from the failed ones\n%s", body)
	}
	if !strings.Contains(logs.String(), `msg="delivery retried" delivery=01-a execution=e1 channel=hooks caller=operator-bot`) {
		t.Errorf("the log does not say who retried 01-a:\n%s", logs)
	}
	// Retried again (a stale page), or an unknown one: the page says why.
	for _, tc := range []struct {
		id   string
		want int
		says string
	}{{"01-a", http.StatusConflict, "PENDING"}, {"nope", http.StatusNotFound, "nope"}} {
		code, body, _ := op.post(t, "/deliveries/"+tc.id+"/retry", form(op.csrf(t)))
		if code != tc.want || !strings.Contains(body, `id="error"`) || !strings.Contains(body, tc.says) || !strings.Contains(body, `data-id="02-a"`) {
			t.Errorf("retry %s: %d, want %d with the failed ones and why (%q)\n%s", tc.id, code, tc.want, tc.says, body)
		}
	}
}

// checkDelivery fails the test unless delivery id has status.
func (ts *testServer) checkDelivery(t *testing.T, id, status string) {
	t.Helper()
	d, err := findDelivery(context.Background(), ts.st, id)
	if err != nil || d.Status != status {
		t.Errorf("delivery %s is %q (%v), want %s", id, d.Status, err, status)
	}
}

// FuzzDeliveryQuery: parseDeliveryQuery never panics, and what it takes
// is a filter the store takes, of text a page shows as it is.
func FuzzDeliveryQuery(f *testing.F) {
	for _, s := range []string{"", "status=failed&limit=5", "limit=1001", "limit=-1", "body=1&after=01-a", "execution=%1b", "execution=%ff", "status=a&status=b", "x=1", "limit=99999999999999999999"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		q, err := url.ParseQuery(raw)
		if err != nil {
			return
		}
		dq, err := parseDeliveryQuery(q)
		if err != nil {
			var p *problem
			if !errors.As(err, &p) || p.status != http.StatusBadRequest {
				t.Fatalf("parseDeliveryQuery(%q) = %v, want a 400 problem", raw, err)
			}
			return
		}
		limit, err := store.CheckDeliveryFilter(dq.filter)
		if err != nil || limit != dq.limit || limit < 1 || limit > store.MaxDeliveryLimit {
			t.Fatalf("parseDeliveryQuery(%q) = %+v: the store says %d, %v", raw, dq, limit, err)
		}
		for _, v := range []string{dq.filter.Execution, dq.filter.After} {
			if !utf8.ValidString(v) || strings.ContainsFunc(v, func(r rune) bool { return r < ' ' || r == 0x7f }) || len(v) > maxExecutionID {
				t.Fatalf("parseDeliveryQuery(%q) took %q", raw, v)
			}
		}
	})
}
