package server

import (
	"bufio"
	"context"
	"encoding/json"
	"encoding/xml"
	"io"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"path/filepath"
	"regexp"
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
	if code, _, h := b.post(t, "/signin", url.Values{"token": {ts.tokens[role]}}); code != http.StatusSeeOther || h.Get("Location") != "/executions" {
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
	for _, token := range []string{"", "aslrun_not-a-token"} {
		code, body, h := b.post(t, "/signin", url.Values{"token": {token}})
		if code != http.StatusUnauthorized || h.Get("Set-Cookie") != "" || !strings.Contains(body, `id="error"`) {
			t.Errorf("sign in with %q: %d, cookie %q, want 401 with the error and no cookie", token, code, h.Get("Set-Cookie"))
		}
	}
	code, _, h := b.post(t, "/signin", url.Values{"token": {ts.tokens[RoleViewer]}})
	if code != http.StatusSeeOther {
		t.Fatalf("sign in: %d", code)
	}
	cookie := (&http.Response{Header: h}).Cookies()
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
		{"/executions", []string{`<a href="/executions/x%3cy">x&lt;y</a>`, `status-WAITING">WAITING`, `<a href="/executions/done">done</a>`, `id="filter-form"`}, nil},
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
		// The one script element is ours.
		if n := strings.Count(body, "<script"); n > 1 {
			t.Errorf("GET %s: %d script elements", tc.path, n)
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
