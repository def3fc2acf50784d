package server

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/aslrun/aslrun/engine"
	"github.com/aslrun/aslrun/store"
)

// TestSigninCSRF: a sign-in needs the form's token matching the
// browser's sign-in cookie, and is refused from another site; the
// refusals open no session.
func TestSigninCSRF(t *testing.T) {
	ts := newTestServer(t)
	tok := ts.tokens[RoleViewer]
	b := ts.web(t)
	csrf := b.signinCSRF(t)
	resp, err := b.Get(ts.URL + "/signin")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	// The browser keeps its token: another look at the form gives the same.
	if again := b.signinCSRF(t); again != csrf {
		t.Errorf("the sign-in token changed from %q to %q", csrf, again)
	}
	u, _ := url.Parse(ts.URL + "/signin")
	cookies := b.Jar.Cookies(u)
	if len(cookies) != 1 || cookies[0].Name != signinCookie || cookies[0].Value != csrf {
		t.Fatalf("cookies for /signin: %+v, want the sign-in cookie holding the form's token", cookies)
	}
	// A page a fresh browser gets sets the cookie with these attributes.
	fresh, err := http.Get(ts.URL + "/signin")
	if err != nil {
		t.Fatal(err)
	}
	fresh.Body.Close()
	if c := fresh.Cookies(); len(c) != 1 || !c[0].HttpOnly || c[0].SameSite != http.SameSiteStrictMode || c[0].Path != "/signin" || c[0].MaxAge != 3600 {
		t.Errorf("sign-in cookie %+v, want HttpOnly, SameSite=Strict, Path=/signin, an hour", c)
	}

	post := func(form url.Values, header http.Header, jar bool) (int, string, http.Header) {
		t.Helper()
		req, err := http.NewRequest("POST", ts.URL+"/signin", strings.NewReader(form.Encode()))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		for k, v := range header {
			req.Header[k] = v
		}
		c := b.Client
		if !jar {
			c = &http.Client{Transport: b.Transport, CheckRedirect: b.CheckRedirect}
		}
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		return read(t, resp)
	}
	for _, tc := range []struct {
		name   string
		form   url.Values
		header http.Header
		jar    bool // send the browser's cookies
		want   int
	}{
		{"no token in the form", url.Values{"token": {tok}}, nil, true, http.StatusForbidden},
		{"another token in the form", url.Values{"token": {tok}, "csrf": {randomToken()}}, nil, true, http.StatusForbidden},
		{"no cookie (a cross-site post the browser sent without it)", url.Values{"token": {tok}, "csrf": {csrf}}, nil, false, http.StatusForbidden},
		{"from another origin", url.Values{"token": {tok}, "csrf": {csrf}}, http.Header{"Origin": {"https://evil.example"}}, true, http.StatusForbidden},
		{"cross-site fetch", url.Values{"token": {tok}, "csrf": {csrf}}, http.Header{"Sec-Fetch-Site": {"cross-site"}}, true, http.StatusForbidden},
		{"same-site fetch", url.Values{"token": {tok}, "csrf": {csrf}}, http.Header{"Sec-Fetch-Site": {"same-site"}}, true, http.StatusForbidden},
	} {
		code, body, h := post(tc.form, tc.header, tc.jar)
		if code != tc.want || strings.Contains(h.Get("Set-Cookie"), sessionCookie) {
			t.Errorf("%s: %d, Set-Cookie %q, want %d and no session\n%s", tc.name, code, h.Get("Set-Cookie"), tc.want, body)
		}
	}
	if n := ts.s.sessions.sweep(time.Now()); n != 0 {
		t.Errorf("%d sessions after the refused sign-ins, want none", n)
	}
	// The same origin, with the form's token, signs in (and the sign-in
	// cookie is cleared).
	code, _, h := post(url.Values{"token": {tok}, "csrf": {csrf}}, http.Header{"Sec-Fetch-Site": {"same-origin"}, "Origin": {ts.URL}}, true)
	if code != http.StatusSeeOther || !strings.Contains(strings.Join(h.Values("Set-Cookie"), "\n"), sessionCookie+"=") {
		t.Fatalf("sign in from the same origin: %d %v", code, h.Values("Set-Cookie"))
	}
	if got := b.Jar.Cookies(u); len(got) != 1 || got[0].Name != sessionCookie {
		t.Errorf("cookies after signing in: %+v, want the session's only", got)
	}
}

// TestSessionBounds: past the bound of a principal's sessions, or of
// all, a sign-in ends the oldest.
func TestSessionBounds(t *testing.T) {
	ts := newTestServer(t, func(c *Config) { c.MaxSessions, c.MaxSessionsPerPrincipal = 3, 2 })
	signedIn := func(b *webClient) bool {
		t.Helper()
		code, _, _ := b.get(t, "/executions")
		return code == http.StatusOK
	}
	v1 := ts.signedIn(t, RoleViewer)
	v2 := ts.signedIn(t, RoleViewer)
	if !signedIn(v1) || !signedIn(v2) {
		t.Fatal("two sessions of a viewer: want both")
	}
	v3 := ts.signedIn(t, RoleViewer)
	if signedIn(v1) || !signedIn(v2) || !signedIn(v3) {
		t.Errorf("a third session of a viewer: want the first ended, the others on")
	}
	a1 := ts.signedIn(t, RoleApprover)
	if !signedIn(v2) || !signedIn(v3) || !signedIn(a1) {
		t.Errorf("three sessions in all: want all on")
	}
	o1 := ts.signedIn(t, RoleOperator)
	if signedIn(v2) || !signedIn(v3) || !signedIn(a1) || !signedIn(o1) {
		t.Errorf("a fourth session: want the oldest (the viewer's second) ended")
	}
	if n := ts.s.sessions.sweep(time.Now()); n != 3 {
		t.Errorf("%d sessions, want 3", n)
	}
}

// TestSessionSweep: expired sessions are forgotten by the sweep, without
// any sign-in, and none before it is due.
func TestSessionSweep(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var ss sessions
		ss.start(Principal{Name: "a", Role: RoleViewer})
		time.Sleep(time.Hour)
		ss.start(Principal{Name: "b", Role: RoleViewer})
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan struct{})
		go func() { ss.sweepEvery(ctx, sessionSweepEvery); close(done) }()
		count := func() int {
			ss.mu.Lock()
			defer ss.mu.Unlock()
			return len(ss.byID)
		}
		time.Sleep(sessionLife - time.Hour - time.Second)
		synctest.Wait()
		if n := count(); n != 2 {
			t.Errorf("before the first expires: %d sessions, want 2", n)
		}
		time.Sleep(sessionSweepEvery + time.Second)
		synctest.Wait()
		if n := count(); n != 1 {
			t.Errorf("after the first expired and a sweep: %d sessions, want 1", n)
		}
		time.Sleep(time.Hour + sessionSweepEvery)
		synctest.Wait()
		if n := count(); n != 0 {
			t.Errorf("after both expired and a sweep: %d sessions, want 0", n)
		}
		cancel()
		<-done
	})
}

// TestRunSweepsSessions: Server.Run sweeps the sessions while it runs,
// and its sweeper ends with it.
func TestRunSweepsSessions(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := store.NewMemory()
		s, err := New(Config{Store: st, Executor: engine.New(engine.Config{Store: st}), Logger: discardLogger()})
		if err != nil {
			t.Fatal(err)
		}
		s.sessions.start(Principal{Name: "a", Role: RoleViewer})
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error)
		go func() { done <- s.Run(ctx) }()
		time.Sleep(sessionLife + sessionSweepEvery)
		synctest.Wait()
		s.sessions.mu.Lock()
		n := len(s.sessions.byID)
		s.sessions.mu.Unlock()
		if n != 0 {
			t.Errorf("%d sessions after they expired while Run ran, want 0", n)
		}
		cancel()
		<-done
		s.Close()
	})
}
