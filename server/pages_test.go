package server

import (
	"bufio"
	"context"
	"encoding/json"
	"encoding/xml"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aslrun/aslrun/api"
	"github.com/aslrun/aslrun/engine"
)

// webClient is a client with a cookie jar that does not follow redirects.
type webClient struct {
	*http.Client
	base string
}

func (ts *testServer) web(t *testing.T) *webClient {
	t.Helper()
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	c := &http.Client{Jar: jar, Transport: ts.Client().Transport,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	return &webClient{Client: c, base: ts.URL}
}

// signedIn is a browser signed in with role's token.
func (ts *testServer) signedIn(t *testing.T, role Role) *webClient {
	t.Helper()
	b := ts.web(t)
	if code, _, h := b.post(t, "/signin", url.Values{"token": {ts.tokens[role]}, "csrf": {b.signinCSRF(t)}}); code != http.StatusSeeOther || h.Get("Location") != "/executions" {
		t.Fatalf("sign in as %v: %d to %q", role, code, h.Get("Location"))
	}
	return b
}

func (b *webClient) get(t *testing.T, path string) (int, string, http.Header) {
	t.Helper()
	resp, err := b.Get(b.base + path)
	if err != nil {
		t.Fatal(err)
	}
	return read(t, resp)
}

func (b *webClient) post(t *testing.T, path string, form url.Values) (int, string, http.Header) {
	t.Helper()
	resp, err := b.PostForm(b.base+path, form)
	if err != nil {
		t.Fatal(err)
	}
	return read(t, resp)
}

func read(t *testing.T, resp *http.Response) (int, string, http.Header) {
	t.Helper()
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(data), resp.Header
}

var csrfField = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

// signinCSRF is the sign-in form's token, read from the sign-in page
// (whose cookie the browser keeps).
func (b *webClient) signinCSRF(t *testing.T) string {
	t.Helper()
	_, body, _ := b.get(t, "/signin")
	m := csrfField.FindStringSubmatch(body)
	if m == nil {
		t.Fatalf("no CSRF token on the sign-in page:\n%s", body)
	}
	return m[1]
}

// csrf is the CSRF token of the browser's session, read from a page.
func (b *webClient) csrf(t *testing.T) string {
	t.Helper()
	_, body, _ := b.get(t, "/inbox")
	m := csrfField.FindStringSubmatch(body)
	if m == nil {
		t.Fatalf("no CSRF token on the inbox page:\n%s", body)
	}
	return m[1]
}

// waitingReview starts the review flow as name and waits for its
// approval.
func (ts *testServer) waitingReview(t *testing.T, name string) api.Approval {
	t.Helper()
	ts.startReview(t, name)
	e := ts.waitFor(t, name, func(e api.Execution) bool { return e.Status == "WAITING" })
	return e.Approvals[0]
}

func TestSignIn(t *testing.T) {
	ts := newTestServer(t)
	b := ts.web(t)
	// Without a session, a page sends to the sign-in page.
	if code, _, h := b.get(t, "/executions"); code != http.StatusSeeOther || h.Get("Location") != "/signin" {
		t.Errorf("GET /executions signed out: %d to %q, want 303 to /signin", code, h.Get("Location"))
	}
	code, body, _ := b.get(t, "/signin")
	if code != 200 || !strings.Contains(body, `id="signin-form"`) || !strings.Contains(body, `type="password" id="token" name="token"`) {
		t.Fatalf("GET /signin: %d\n%s", code, body)
	}
	csrf := b.signinCSRF(t)
	for _, token := range []string{"", "aslrun_not-a-token"} {
		code, body, h := b.post(t, "/signin", url.Values{"token": {token}, "csrf": {csrf}})
		if code != http.StatusUnauthorized || h.Get("Set-Cookie") != "" || !strings.Contains(body, `id="error"`) {
			t.Errorf("sign in with %q: %d, cookie %q, want 401 with the error and no cookie", token, code, h.Get("Set-Cookie"))
		}
	}
	code, _, h := b.post(t, "/signin", url.Values{"token": {ts.tokens[RoleViewer]}, "csrf": {csrf}})
	if code != http.StatusSeeOther {
		t.Fatalf("sign in: %d", code)
	}
	cookie := slices.DeleteFunc((&http.Response{Header: h}).Cookies(), func(c *http.Cookie) bool { return c.Name == signinCookie && c.MaxAge < 0 })
	if len(cookie) != 1 || cookie[0].Name != sessionCookie || !cookie[0].HttpOnly || cookie[0].SameSite != http.SameSiteStrictMode || cookie[0].Path != "/" ||
		cookie[0].MaxAge != 12*3600 || len(cookie[0].Value) < 43 {
		t.Errorf("session cookie %+v", cookie)
	}
	code, body, _ = b.get(t, "/executions")
	if code != 200 || !strings.Contains(body, "viewer-bot (viewer)") {
		t.Errorf("GET /executions signed in: %d\n%s", code, body)
	}
	// The session does not let in the API's writes.
	resp, err := b.Post(ts.URL+"/v1/executions", "application/json", strings.NewReader(`{"definition":{"StartAt":"P","States":{"P":{"Type":"Pass","End":true}}}}`))
	if err != nil {
		t.Fatal(err)
	}
	if code, _, _ := read(t, resp); code != http.StatusUnauthorized {
		t.Errorf("an API POST with only the session cookie: %d, want 401", code)
	}
	// Signing out needs the form's token, and ends the session.
	if code, _, _ := b.post(t, "/signout", url.Values{}); code != http.StatusForbidden {
		t.Errorf("sign out without the CSRF token: %d, want 403", code)
	}
	if code, _, h := b.post(t, "/signout", url.Values{"csrf": {b.csrf(t)}}); code != http.StatusSeeOther || h.Get("Location") != "/signin" {
		t.Errorf("sign out: %d to %q", code, h.Get("Location"))
	}
	if code, _, _ := b.get(t, "/executions"); code != http.StatusSeeOther {
		t.Errorf("GET /executions after signing out: %d, want 303", code)
	}
}

// TestPagesRender: the pages show the executions, an execution's summary
// and timeline, and the inbox, with what they hold escaped.
func TestPagesRender(t *testing.T) {
	ts := newTestServer(t)
	const flow = `{"StartAt":"<script>S</script>","States":{
		"<script>S</script>":{"Type":"Approval","Prompt":"<script>alert(1)</script>","Options":["go","<b>stop</b>"],"Next":"Done"},
		"Done":{"Type":"Pass","End":true}}}`
	if code, body := ts.call(t, RoleOperator, "POST", "/v1/executions", map[string]any{"definition": json.RawMessage(flow), "name": "x<y"}, nil); code != http.StatusCreated {
		t.Fatalf("start: %d %s", code, body)
	}
	ts.waitFor(t, "x<y", func(e api.Execution) bool { return e.Status == "WAITING" })
	if code, body := ts.call(t, RoleOperator, "POST", "/v1/executions", map[string]any{"definition": json.RawMessage(`{"StartAt":"P","States":{"P":{"Type":"Pass","End":true}}}`), "name": "done"}, nil); code != http.StatusCreated {
		t.Fatalf("start: %d %s", code, body)
	}
	ts.waitFor(t, "done", func(e api.Execution) bool { return e.Status == "SUCCEEDED" })
	b := ts.signedIn(t, RoleViewer)

	for _, tc := range []struct {
		path  string
		want  []string
		wantN []string // must not appear
	}{
		{"/executions", []string{`<a href="/executions/x%3Cy">x&lt;y</a>`, `status-WAITING">WAITING`, `<a href="/executions/done">done</a>`, `id="filter-form"`}, nil},
		{"/executions?status=succeeded", []string{`<a href="/executions/done">`, `<option value="SUCCEEDED" selected>`}, []string{"x&lt;y"}},
		{"/executions?workflow=StateMachine&status=WAITING", []string{"x&lt;y"}, []string{`href="/executions/done"`}},
		{"/executions/x%3Cy", []string{`<span id="status" class="status status-WAITING">WAITING</span>`, `<div id="graph" data-execution="x&lt;y"><svg`, `class="node current"`,
			`id="timeline"`, `<span class="type">ApprovalRequested</span>`, `<span class="state">&lt;script&gt;S&lt;/script&gt;</span>`, `<section id="approvals">`,
			`<script src="/static/execution.js" defer></script>`}, nil},
		{"/executions/done", []string{`status-SUCCEEDED">SUCCEEDED`, `id="output"`, `<span class="type">ExecutionSucceeded</span>`}, []string{`id="approvals"`}},
		{"/inbox", []string{`&lt;script&gt;alert(1)&lt;/script&gt;`, `&lt;script&gt;S&lt;/script&gt;`}, []string{"decision-form"}},
	} {
		code, body, h := b.get(t, tc.path)
		if code != 200 || !strings.HasPrefix(h.Get("Content-Type"), "text/html") {
			t.Errorf("GET %s: %d %s", tc.path, code, h.Get("Content-Type"))
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(body, w) {
				t.Errorf("GET %s: no %s in\n%s", tc.path, w, body)
			}
		}
		for _, w := range append(tc.wantN, "<script>alert", "<script>S", "<b>stop") {
			if strings.Contains(body, w) {
				t.Errorf("GET %s: %s in\n%s", tc.path, w, body)
			}
		}
		// Every script element is ours: a file of /static/.
		if n, ours := strings.Count(body, "<script"), strings.Count(body, `<script src="/static/`); n != ours {
			t.Errorf("GET %s: %d script elements, %d of them ours", tc.path, n, ours)
		}
	}
	// The timeline is well-formed: every event is an element.
	_, body, _ := b.get(t, "/executions/done")
	start, end := strings.Index(body, `<ol id="timeline"`), strings.Index(body, "</ol>")
	var ol struct {
		Items []struct {
			Type string `xml:"data-type,attr"`
		} `xml:"li"`
	}
	if err := xml.Unmarshal([]byte(body[start:end+len("</ol>")]), &ol); err != nil {
		t.Fatalf("the timeline is not well-formed: %v", err)
	}
	if len(ol.Items) < 2 || ol.Items[0].Type != "ExecutionStarted" || ol.Items[len(ol.Items)-1].Type != "ExecutionSucceeded" {
		t.Errorf("timeline %+v", ol.Items)
	}
	for _, tc := range []struct {
		path string
		want int
	}{{"/executions/none", 404}, {"/executions?status=DONE", 400}, {"/executions?after=none", 400}, {"/static/execution.js", 200}, {"/static/style.css", 200}} {
		if code, _, _ := b.get(t, tc.path); code != tc.want {
			t.Errorf("GET %s: %d, want %d", tc.path, code, tc.want)
		}
	}
}

// TestExecutionsPaging: the next link continues the listing with its
// filters.
func TestExecutionsPaging(t *testing.T) {
	ts := newTestServer(t)
	for i := range executionsPerPage + 1 {
		name := "p" + string(rune('A'+i/26)) + string(rune('a'+i%26))
		if code, body := ts.call(t, RoleOperator, "POST", "/v1/executions", map[string]any{"definition": json.RawMessage(`{"StartAt":"P","States":{"P":{"Type":"Pass","End":true}}}`), "name": name}, nil); code != http.StatusCreated {
			t.Fatalf("start: %d %s", code, body)
		}
		ts.waitFor(t, name, func(e api.Execution) bool { return e.Status == "SUCCEEDED" })
	}
	b := ts.signedIn(t, RoleViewer)
	_, body, _ := b.get(t, "/executions?status=SUCCEEDED")
	m := regexp.MustCompile(`<a href="([^"]+)" id="next"`).FindStringSubmatch(body)
	if m == nil || strings.Count(body, `class="execution"`) != executionsPerPage {
		t.Fatalf("first page: %d rows, next %v", strings.Count(body, `class="execution"`), m)
	}
	next := strings.ReplaceAll(m[1], "&amp;", "&")
	if !strings.Contains(next, "status=SUCCEEDED") {
		t.Errorf("next link %s drops the filter", next)
	}
	_, body, _ = b.get(t, next)
	if n := strings.Count(body, `class="execution"`); n != 1 || strings.Contains(body, `id="next"`) {
		t.Errorf("second page: %d rows, want 1 and no next link", n)
	}
}

// TestInboxDecide: an approver decides from the inbox and the execution
// succeeds with the approver, the option and the edit recorded.
func TestInboxDecide(t *testing.T) {
	ts := newTestServer(t)
	ap := ts.waitingReview(t, "r1")
	b := ts.signedIn(t, RoleApprover)
	_, body, _ := b.get(t, "/inbox")
	for _, w := range []string{`id="approval-` + ap.ID + `"`, `action="/inbox/` + ap.ID + `/decide"`, `name="digest" value="` + ap.Digest + `"`,
		`type="radio" name="option" value="publish"`, `<textarea id="edit-` + ap.ID + `" name="edit"`, `publish?`} {
		if !strings.Contains(body, w) {
			t.Errorf("inbox: no %s in\n%s", w, body)
		}
	}
	form := url.Values{"csrf": {b.csrf(t)}, "digest": {ap.Digest}, "option": {"publish"}, "comment": {"fine"}, "edit": {`{"draft":{"title":"Hi"}}`}}
	code, _, h := b.post(t, "/inbox/"+ap.ID+"/decide", form)
	if code != http.StatusSeeOther || h.Get("Location") != "/executions/r1" {
		t.Fatalf("decide: %d to %q, want 303 to /executions/r1", code, h.Get("Location"))
	}
	e := ts.waitFor(t, "r1", func(e api.Execution) bool { return e.Status == "SUCCEEDED" })
	var out struct {
		Review struct{ Approver, Approval, Comment string }
		Edited struct{ Draft struct{ Title string } }
	}
	if err := json.Unmarshal(e.Output, &out); err != nil {
		t.Fatal(err)
	}
	if out.Review.Approver != "approver-bot" || out.Review.Approval != "publish" || out.Review.Comment != "fine" || out.Edited.Draft.Title != "Hi" {
		t.Errorf("output %s: want the signed-in approver, the option, the comment and the edit", e.Output)
	}
}

// TestInboxRefusals: a stale digest, an option not offered and a bad
// edit show the inbox again with the reason, and change
// nothing.
func TestInboxRefusals(t *testing.T) {
	ts := newTestServer(t)
	ap := ts.waitingReview(t, "r1")
	b := ts.signedIn(t, RoleApprover)
	csrf := b.csrf(t)
	for _, tc := range []struct {
		name string
		form url.Values
		want int
	}{
		{"stale digest", url.Values{"digest": {"0000"}, "option": {"publish"}}, http.StatusConflict},
		{"option not offered", url.Values{"digest": {ap.Digest}, "option": {"ship"}}, http.StatusConflict},
		{"no option", url.Values{"digest": {ap.Digest}}, http.StatusBadRequest},
		{"edit not JSON", url.Values{"digest": {ap.Digest}, "option": {"publish"}, "edit": {`{"draft":`}}, http.StatusBadRequest},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.form.Set("csrf", csrf)
			code, body, _ := b.post(t, "/inbox/"+ap.ID+"/decide", tc.form)
			if code != tc.want || !strings.Contains(body, `id="error" role="alert"`) || !strings.Contains(body, `class="approval card refused" id="approval-`+ap.ID+`"`) {
				t.Errorf("%d, want %d with the refusal on the inbox\n%s", code, tc.want, body)
			}
			ts.checkPending(t, "r1", 1)
		})
	}
}

// checkPending checks that execution id waits with n approvals.
func (ts *testServer) checkPending(t *testing.T, id string, n int) {
	t.Helper()
	e, err := ts.st.Load(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	if e.Status != engine.StatusWaiting || len(engine.PendingOf(e)) != n {
		t.Errorf("execution %s: %s with %d pending, want WAITING with %d", id, e.Status, len(engine.PendingOf(e)), n)
	}
}

// TestPageForgery: a viewer sees no decision form and is refused one;
// a POST without its session's CSRF token is refused; nothing changes.
func TestPageForgery(t *testing.T) {
	ts := newTestServer(t)
	ap := ts.waitingReview(t, "r1")
	viewer, approver, other := ts.signedIn(t, RoleViewer), ts.signedIn(t, RoleApprover), ts.signedIn(t, RoleApprover)
	_, body, _ := viewer.get(t, "/inbox")
	if strings.Contains(body, "<form method=\"post\" action=\"/inbox/") || strings.Contains(body, `name="option"`) || !strings.Contains(body, "publish?") {
		t.Errorf("the viewer's inbox shows a decision form, or not the approval\n%s", body)
	}
	good := func(csrf string) url.Values {
		return url.Values{"csrf": {csrf}, "digest": {ap.Digest}, "option": {"publish"}}
	}
	for _, tc := range []struct {
		name string
		b    *webClient
		form url.Values
		want int
	}{
		{"viewer", viewer, good(viewer.csrf(t)), http.StatusForbidden},
		{"no CSRF token", approver, url.Values{"digest": {ap.Digest}, "option": {"publish"}}, http.StatusForbidden},
		{"another session's token", approver, good(other.csrf(t)), http.StatusForbidden},
		{"no session", ts.web(t), good(approver.csrf(t)), http.StatusSeeOther}, // to /signin
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, _, _ := tc.b.post(t, "/inbox/"+ap.ID+"/decide", tc.form)
			if code != tc.want {
				t.Errorf("forged decision: %d, want %d", code, tc.want)
			}
			ts.checkPending(t, "r1", 1)
		})
	}
}

// TestSessionStream: the execution's event stream accepts the session
// cookie, as a browser's EventSource sends it.
func TestSessionStream(t *testing.T) {
	ts := newTestServer(t)
	if code, body := ts.call(t, RoleOperator, "POST", "/v1/executions", map[string]any{"definition": json.RawMessage(`{"StartAt":"P","States":{"P":{"Type":"Pass","End":true}}}`), "name": "s"}, nil); code != http.StatusCreated {
		t.Fatalf("start: %d %s", code, body)
	}
	ts.waitFor(t, "s", func(e api.Execution) bool { return e.Status == "SUCCEEDED" })
	b := ts.signedIn(t, RoleViewer)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", ts.URL+"/v1/executions/s/events", nil)
	resp, err := b.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		t.Fatalf("stream with the session cookie: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	var events []string
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if name, ok := strings.CutPrefix(sc.Text(), "event: "); ok {
			events = append(events, name)
			if name == "end" {
				break
			}
		}
	}
	if len(events) < 2 || events[0] != "ExecutionStarted" || events[len(events)-1] != "end" {
		t.Errorf("stream events %v", events)
	}
	// The page's script listens to every event the stream sent.
	listened := strings.Fields(streamEvents())
	for _, ev := range events[:len(events)-1] {
		if !contains(listened, ev) {
			t.Errorf("the page's script does not listen to %s", ev)
		}
	}
}

// TestLocalAdminPages: the unix socket's local admin is signed in
// without a form, and decides from the inbox with its forms' token.
func TestLocalAdminPages(t *testing.T) {
	ts := newTestServer(t)
	ap := ts.waitingReview(t, "r1")
	path := filepath.Join(socketDir(t), "s.sock")
	ln := listenSocket(t, path)
	srv := &http.Server{Handler: ts.s.Handler(), ConnContext: ConnContext, ReadHeaderTimeout: 10 * time.Second}
	done := make(chan struct{})
	go func() { defer close(done); srv.Serve(ln) }()
	t.Cleanup(func() { srv.Shutdown(context.Background()); <-done })
	tr := &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", path)
	}}
	defer tr.CloseIdleConnections()
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	b := &webClient{Client: &http.Client{Transport: tr, Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}, base: "http://aslrun"}
	code, body, _ := b.get(t, "/inbox")
	if code != 200 || !strings.Contains(body, "local admin (uid") || !strings.Contains(body, `action="/inbox/`+ap.ID+`/decide"`) {
		t.Fatalf("the local admin's inbox: %d\n%s", code, body)
	}
	form := url.Values{"csrf": {b.csrf(t)}, "digest": {ap.Digest}, "option": {"reject"}}
	if code, _, h := b.post(t, "/inbox/"+ap.ID+"/decide", form); code != http.StatusSeeOther || h.Get("Location") != "/executions/r1" {
		t.Fatalf("the local admin decides: %d to %q", code, h.Get("Location"))
	}
	ts.waitFor(t, "r1", func(e api.Execution) bool { return e.Status == "SUCCEEDED" })
}

// TestTimelineMarksRefusals: a governance violation stands out in the
// timeline.
func TestTimelineMarksRefusals(t *testing.T) {
	ts := newTestServer(t)
	flow := `{"StartAt":"P","Governance":{"WritePolicy":{"Rules":[{"Deny":"value == 'forbidden'","Reason":"not that word"}]}},
		"States":{"P":{"Type":"Pass","Result":"forbidden","ResultPath":"$.x","End":true}}}`
	ts.call(t, RoleOperator, "POST", "/v1/executions", map[string]any{"definition": json.RawMessage(flow), "name": "g"}, nil)
	ts.waitFor(t, "g", func(e api.Execution) bool { return e.Status == "FAILED" })
	_, body, _ := ts.signedIn(t, RoleViewer).get(t, "/executions/g")
	if !regexp.MustCompile(`<li class="event flagged" id="event-\d+" data-type="GovernanceViolation">`).MatchString(body) ||
		!strings.Contains(body, `<strong class="flag">refused</strong>`) || !strings.Contains(body, `id="execution-error"`) {
		t.Errorf("the violation is not marked:\n%s", body)
	}
}

// confirm posts form to path twice, as a person does: the first POST
// must show the confirmation page and change nothing (unchanged checks
// it), the second carries confirm=yes; it returns the second's answer.
func (b *webClient) confirm(t *testing.T, path string, form url.Values, unchanged func()) (int, string, http.Header) {
	t.Helper()
	code, body, _ := b.post(t, path, form)
	if code != http.StatusOK || !strings.Contains(body, `id="confirm-form"`) || !strings.Contains(body, `name="confirm" value="yes"`) || !strings.Contains(body, `id="confirm-message"`) {
		t.Fatalf("POST %s unconfirmed: %d, want 200 with the confirmation form\n%s", path, code, body)
	}
	unchanged()
	confirmed := url.Values{"confirm": {"yes"}}
	for k, v := range form {
		confirmed[k] = v
	}
	return b.post(t, path, confirmed)
}

// status is the execution's status in the store.
func (ts *testServer) status(t *testing.T, id string) engine.Status {
	t.Helper()
	e, err := ts.st.Load(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return e.Status
}

// TestCheckpointsSection: everyone sees the checkpoints; only an operator
// sees the rollback and fork forms, each with the CSRF token.
func TestCheckpointsSection(t *testing.T) {
	ts := newTestServer(t)
	startCheckpointed(t, ts, "ck")
	_, body, _ := ts.signedIn(t, RoleViewer).get(t, "/executions/ck")
	for _, w := range []string{`<section id="checkpoints">`, `data-checkpoint="one"`, `data-checkpoint="two"`, `id="diff-form"`} {
		if !strings.Contains(body, w) {
			t.Errorf("the viewer's page: no %s in\n%s", w, body)
		}
	}
	for _, w := range []string{"rollback-form", "fork-form", `id="controls"`} {
		if strings.Contains(body, w) {
			t.Errorf("the viewer's page shows %s", w)
		}
	}
	op := ts.signedIn(t, RoleOperator)
	_, body, _ = op.get(t, "/executions/ck")
	csrf := op.csrf(t)
	if n := strings.Count(body, `class="rollback-form"`); n != 2 {
		t.Errorf("the operator's page has %d rollback forms, want 2", n)
	}
	if n := strings.Count(body, `class="fork-form"`); n != 2 {
		t.Errorf("the operator's page has %d fork forms, want 2", n)
	}
	if n := strings.Count(body, `name="csrf" value="`+csrf+`"`); n < 5 { // sign out, 2 rollbacks, 2 forks
		t.Errorf("the operator's page has %d forms with the CSRF token, want at least 5", n)
	}
	// A succeeded execution has no control to stop, resume or redrive.
	if strings.Contains(body, `id="controls"`) {
		t.Errorf("a SUCCEEDED execution shows the controls")
	}
}

// TestOperatorPagesRefused: a viewer's POSTs, and an operator's without
// its session's CSRF token, are refused and change nothing.
func TestOperatorPagesRefused(t *testing.T) {
	ts := newTestServer(t)
	startCheckpointed(t, ts, "ck")
	ts.startWaiting(t, "w1")
	failedExecution(t, ts, "f1")
	viewer, op, other := ts.signedIn(t, RoleViewer), ts.signedIn(t, RoleOperator), ts.signedIn(t, RoleOperator)
	_, body, _ := viewer.get(t, "/executions/w1")
	if strings.Contains(body, `id="stop-form"`) || strings.Contains(body, `id="resume-form"`) {
		t.Errorf("the viewer's page of a waiting execution shows the controls\n%s", body)
	}
	_, body, _ = op.get(t, "/executions/w1")
	if !strings.Contains(body, `id="stop-form"`) || !strings.Contains(body, `id="resume-form"`) || strings.Contains(body, `id="redrive-form"`) {
		t.Errorf("the operator's page of a waiting execution: want stop and resume, no redrive\n%s", body)
	}
	_, body, _ = op.get(t, "/executions/f1")
	if !strings.Contains(body, `id="redrive-form"`) || strings.Contains(body, `id="stop-form"`) {
		t.Errorf("the operator's page of a failed execution: want redrive, no stop\n%s", body)
	}
	with := func(csrf string, kv ...string) url.Values {
		v := url.Values{"confirm": {"yes"}}
		if csrf != "" {
			v.Set("csrf", csrf)
		}
		for i := 0; i < len(kv); i += 2 {
			v.Set(kv[i], kv[i+1])
		}
		return v
	}
	vc, oc := viewer.csrf(t), other.csrf(t)
	for _, tc := range []struct {
		name, path string
		b          *webClient
		form       url.Values
	}{
		{"viewer rollback", "/executions/ck/rollback", viewer, with(vc, "checkpoint", "one")},
		{"viewer fork", "/executions/ck/fork", viewer, with(vc, "checkpoint", "one", "name", "forked")},
		{"viewer stop", "/executions/w1/stop", viewer, with(vc)},
		{"viewer resume", "/executions/w1/resume", viewer, with(vc)},
		{"viewer redrive", "/executions/f1/redrive", viewer, with(vc)},
		{"no CSRF token", "/executions/w1/stop", op, with("")},
		{"another session's token", "/executions/w1/stop", op, with(oc)},
		{"no CSRF token rollback", "/executions/ck/rollback", op, with("", "checkpoint", "one")},
		{"wrong token fork", "/executions/ck/fork", op, with("x", "checkpoint", "one", "name", "forked")},
		{"wrong token redrive", "/executions/f1/redrive", op, with(oc)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if code, _, _ := tc.b.post(t, tc.path, tc.form); code != http.StatusForbidden {
				t.Errorf("POST %s: %d, want 403", tc.path, code)
			}
			if got := ts.status(t, "w1"); got != engine.StatusWaiting {
				t.Errorf("w1 is %s, want WAITING", got)
			}
			if got := ts.status(t, "f1"); got != engine.StatusFailed {
				t.Errorf("f1 is %s, want FAILED", got)
			}
			if evs := ts.events(t, "ck"); slices.Contains(evs, engine.EventExecutionRolledBack) || slices.Contains(evs, engine.EventForkedTo) {
				t.Errorf("ck's history %v: want no rollback and no fork", evs)
			}
			if _, err := ts.st.Load(context.Background(), "forked"); !errors.Is(err, engine.ErrNotFound) {
				t.Errorf("the fork exists (%v)", err)
			}
		})
	}
}

// TestRollbackPage: a rollback needs its confirmation; confirmed, the
// execution goes back to the checkpoint and runs on.
func TestRollbackPage(t *testing.T) {
	ts := newTestServer(t)
	startCheckpointed(t, ts, "ck")
	op := ts.signedIn(t, RoleOperator)
	form := url.Values{"csrf": {op.csrf(t)}, "checkpoint": {"one"}, "restore": {"document"}}
	code, _, h := op.confirm(t, "/executions/ck/rollback", form, func() {
		if evs := ts.events(t, "ck"); slices.Contains(evs, engine.EventExecutionRolledBack) {
			t.Errorf("the unconfirmed rollback rolled back: %v", evs)
		}
	})
	if code != http.StatusSeeOther || h.Get("Location") != "/executions/ck" {
		t.Fatalf("confirmed rollback: %d to %q, want 303 to /executions/ck", code, h.Get("Location"))
	}
	ts.waitFor(t, "ck", func(e api.Execution) bool {
		return e.Status == "SUCCEEDED" && slices.Contains(ts.events(t, "ck"), engine.EventExecutionRolledBack)
	})
	_, body, _ := op.get(t, "/executions/ck")
	if !strings.Contains(body, `data-type="ExecutionRolledBack"`) || !strings.Contains(body, `class="event superseded"`) {
		t.Errorf("the page does not show the rollback and the superseded events\n%s", body)
	}
	// Refusals show the execution page with the reason.
	for _, tc := range []struct {
		name string
		form url.Values
		want int
	}{
		{"no checkpoint", url.Values{}, http.StatusBadRequest},
		{"unknown checkpoint", url.Values{"checkpoint": {"three"}}, http.StatusNotFound},
		{"bad restore", url.Values{"checkpoint": {"one"}, "restore": {"all"}}, http.StatusBadRequest},
		{"memory alone of an ended execution", url.Values{"checkpoint": {"one"}, "restore": {"memory"}, "confirm": {"yes"}}, http.StatusConflict},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.form.Set("csrf", form.Get("csrf"))
			code, body, _ := op.post(t, "/executions/ck/rollback", tc.form)
			if code != tc.want || !strings.Contains(body, `id="error" role="alert"`) || !strings.Contains(body, `id="timeline"`) {
				t.Errorf("%d, want %d with the reason on the execution page\n%s", code, tc.want, body)
			}
		})
	}
	if code, _, _ := op.post(t, "/executions/none/rollback", url.Values{"csrf": {form.Get("csrf")}, "checkpoint": {"one"}}); code != http.StatusNotFound {
		t.Errorf("rollback of an unknown execution: %d, want 404", code)
	}
}

// TestForkPage: a confirmed fork creates the linked execution and shows
// its page; a name taken is refused.
func TestForkPage(t *testing.T) {
	ts := newTestServer(t)
	startCheckpointed(t, ts, "ck")
	op := ts.signedIn(t, RoleOperator)
	csrf := op.csrf(t)
	form := url.Values{"csrf": {csrf}, "checkpoint": {"one"}, "name": {"ck-fork"}}
	code, _, h := op.confirm(t, "/executions/ck/fork", form, func() {
		if _, err := ts.st.Load(context.Background(), "ck-fork"); !errors.Is(err, engine.ErrNotFound) {
			t.Errorf("the unconfirmed fork exists (%v)", err)
		}
	})
	if code != http.StatusSeeOther || h.Get("Location") != "/executions/ck-fork" {
		t.Fatalf("confirmed fork: %d to %q, want 303 to /executions/ck-fork", code, h.Get("Location"))
	}
	child := ts.waitFor(t, "ck-fork", func(e api.Execution) bool { return e.Status == "SUCCEEDED" })
	if child.Parent != "ck" {
		t.Errorf("the fork's parent is %q, want ck", child.Parent)
	}
	if !slices.Contains(ts.events(t, "ck"), engine.EventForkedTo) {
		t.Errorf("ck's history %v does not say it was forked", ts.events(t, "ck"))
	}
	// Without a name: a new id.
	code, _, h = op.post(t, "/executions/ck/fork", url.Values{"csrf": {csrf}, "checkpoint": {"two"}, "confirm": {"yes"}})
	id, ok := strings.CutPrefix(h.Get("Location"), "/executions/")
	if code != http.StatusSeeOther || !ok || id == "" || id == "ck" {
		t.Fatalf("fork without a name: %d to %q", code, h.Get("Location"))
	}
	if e := ts.waitFor(t, id, func(e api.Execution) bool { return e.Status == "SUCCEEDED" }); e.Parent != "ck" {
		t.Errorf("the unnamed fork's parent is %q, want ck", e.Parent)
	}
	for _, tc := range []struct {
		name string
		form url.Values
		want int
	}{
		{"name taken", url.Values{"checkpoint": {"one"}, "name": {"ck-fork"}, "confirm": {"yes"}}, http.StatusConflict},
		{"name with a slash", url.Values{"checkpoint": {"one"}, "name": {"a/b"}}, http.StatusBadRequest},
		{"unknown checkpoint", url.Values{"checkpoint": {"nope"}, "name": {"x"}}, http.StatusNotFound},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.form.Set("csrf", csrf)
			code, body, _ := op.post(t, "/executions/ck/fork", tc.form)
			if code != tc.want || !strings.Contains(body, `id="error" role="alert"`) {
				t.Errorf("%d, want %d with the reason\n%s", code, tc.want, body)
			}
		})
	}
}

// TestStopPage: a confirmed stop ends a waiting execution as ABORTED; a
// second is refused on the execution page, as is a resume.
func TestStopPage(t *testing.T) {
	ts := newTestServer(t)
	ts.startWaiting(t, "w1")
	op := ts.signedIn(t, RoleOperator)
	csrf := op.csrf(t)
	code, _, h := op.confirm(t, "/executions/w1/stop", url.Values{"csrf": {csrf}}, func() { ts.checkPending(t, "w1", 1) })
	if code != http.StatusSeeOther || h.Get("Location") != "/executions/w1" {
		t.Fatalf("confirmed stop: %d to %q", code, h.Get("Location"))
	}
	if e := ts.waitFor(t, "w1", func(api.Execution) bool { return true }); e.Status != "ABORTED" || !strings.Contains(e.Cause, "operator-bot") {
		t.Errorf("stopped: %s with cause %q, want ABORTED naming the operator", e.Status, e.Cause)
	}
	for _, path := range []string{"/executions/w1/stop", "/executions/w1/resume"} {
		code, body, _ := op.post(t, path, url.Values{"csrf": {csrf}, "confirm": {"yes"}})
		if code != http.StatusConflict || !strings.Contains(body, `id="error" role="alert"`) || !strings.Contains(body, `id="timeline"`) {
			t.Errorf("POST %s of an ABORTED execution: %d, want 409 with the reason on its page\n%s", path, code, body)
		}
	}
}

// TestResumePage: a resume of a waiting execution goes back to its page
// and changes nothing while it waits for a decision.
func TestResumePage(t *testing.T) {
	ts := newTestServer(t)
	ts.startWaiting(t, "w1")
	op := ts.signedIn(t, RoleOperator)
	code, _, h := op.post(t, "/executions/w1/resume", url.Values{"csrf": {op.csrf(t)}})
	if code != http.StatusSeeOther || h.Get("Location") != "/executions/w1" {
		t.Fatalf("resume: %d to %q", code, h.Get("Location"))
	}
	ts.checkPending(t, "w1", 1)
}

// TestRedrivePage: a confirmed redrive runs a failed execution again from
// the state that failed; one that succeeded is refused.
func TestRedrivePage(t *testing.T) {
	ts := newTestServer(t)
	failedExecution(t, ts, "f1")
	startCheckpointed(t, ts, "ck")
	op := ts.signedIn(t, RoleOperator)
	csrf := op.csrf(t)
	code, _, h := op.confirm(t, "/executions/f1/redrive", url.Values{"csrf": {csrf}}, func() {
		if evs := ts.events(t, "f1"); slices.Contains(evs, engine.EventExecutionRedriven) {
			t.Errorf("the unconfirmed redrive redrove: %v", evs)
		}
	})
	if code != http.StatusSeeOther || h.Get("Location") != "/executions/f1" {
		t.Fatalf("confirmed redrive: %d to %q", code, h.Get("Location"))
	}
	// The same input fails again, after the redrive.
	ts.waitFor(t, "f1", func(e api.Execution) bool {
		evs := ts.events(t, "f1")
		return e.Status == "FAILED" && slices.Contains(evs, engine.EventExecutionRedriven) && evs[len(evs)-1] == engine.EventExecutionFailed
	})
	code, body, _ := op.post(t, "/executions/ck/redrive", url.Values{"csrf": {csrf}, "confirm": {"yes"}})
	if code != http.StatusConflict || !strings.Contains(body, `id="error" role="alert"`) {
		t.Errorf("redrive of a SUCCEEDED execution: %d, want 409 with the reason\n%s", code, body)
	}
}

// TestCheckpointDiffPage: the difference of two checkpoints is a table
// of the JSON Patch's operations.
func TestCheckpointDiffPage(t *testing.T) {
	ts := newTestServer(t)
	startCheckpointed(t, ts, "ck")
	b := ts.signedIn(t, RoleViewer)
	code, body, _ := b.get(t, "/executions/ck/checkpoints/diff?from=one&to=two")
	if code != 200 {
		t.Fatalf("diff: %d\n%s", code, body)
	}
	for _, w := range []string{`<table id="checkpoint-diff">`,
		"<td class=\"op\">replace</td>\n<td class=\"path\"><code>/first/n</code></td>\n<td class=\"value\"><code>2</code></td>",
		"<td class=\"op\">add</td>\n<td class=\"path\"><code>/first/x~1y</code></td>\n<td class=\"value\"><code>true</code></td>",
		"<td class=\"op\">remove</td>\n<td class=\"path\"><code>/topic</code></td>\n<td class=\"value\"></td>",
		"<td class=\"op\">add</td>\n<td class=\"path\"><code>/tags~0</code></td>\n<td class=\"value\"><code>[&#34;a&#34;]</code></td>",
	} {
		if !strings.Contains(body, w) {
			t.Errorf("diff: no %s in\n%s", w, body)
		}
	}
	if n := strings.Count(body, `class="patch-op`); n != 4 {
		t.Errorf("diff has %d rows, want 4", n)
	}
	if _, body, _ := b.get(t, "/executions/ck/checkpoints/diff?from=two&to=two"); !strings.Contains(body, `id="no-difference"`) {
		t.Errorf("diff two → two: want no difference\n%s", body)
	}
	for _, tc := range []struct {
		path string
		want int
	}{
		{"/executions/ck/checkpoints/diff?from=one", http.StatusBadRequest},
		{"/executions/ck/checkpoints/diff?from=one&to=three", http.StatusNotFound},
		{"/executions/none/checkpoints/diff?from=one&to=two", http.StatusNotFound},
	} {
		if code, _, _ := b.get(t, tc.path); code != tc.want {
			t.Errorf("GET %s: %d, want %d", tc.path, code, tc.want)
		}
	}
}
