package server

import (
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"
)

// TestExecutionsPageLive: the list names the stream to follow, with its
// filters, from where it was read; past the first page it says so; a
// filter the list cannot take is refused on the page with why, and
// nothing is followed.
func TestExecutionsPageLive(t *testing.T) {
	ts := newTestServer(t)
	ts.startPass(t, "p1")
	b := ts.signedIn(t, RoleViewer)
	stream := regexp.MustCompile(`<table id="executions" data-stream="([^"]+)" data-limit="50"( data-paged="true")?>`)
	for _, tc := range []struct {
		path, query string
		paged       bool
	}{
		{"/executions", "", false},
		{"/executions?status=succeeded&workflow=StateMachine", "status=SUCCEEDED&workflow=StateMachine", false},
		{"/executions?after=p1", "", true},
	} {
		code, body, _ := b.get(t, tc.path)
		m := stream.FindStringSubmatch(body)
		if code != http.StatusOK || m == nil {
			t.Errorf("GET %s: %d, no stream in\n%s", tc.path, code, body)
			continue
		}
		u, err := url.Parse(strings.ReplaceAll(m[1], "&amp;", "&"))
		if err != nil || u.Path != "/v1/execution-events" {
			t.Errorf("GET %s: stream %q", tc.path, m[1])
			continue
		}
		q := u.Query()
		after, err := strconv.ParseInt(q.Get("after"), 10, 64)
		if err != nil || after != ts.s.feed.cursor() {
			t.Errorf("GET %s: resumes after %q, want the feed's head %d", tc.path, q.Get("after"), ts.s.feed.cursor())
		}
		q.Del("after")
		if q.Encode() != tc.query || (m[2] != "") != tc.paged {
			t.Errorf("GET %s: stream filter %q paged %v, want %q paged %v", tc.path, q.Encode(), m[2] != "", tc.query, tc.paged)
		}
		if !strings.Contains(body, `<tr class="execution" data-id="p1" data-started="`) && !tc.paged {
			t.Errorf("GET %s: no row of p1 in\n%s", tc.path, body)
		}
	}
	for _, tc := range []struct{ path, says string }{
		{"/executions?status=DONE", `status &#34;DONE&#34; is not one of`},
		{"/executions?status=FAILED&status=RUNNING", "status is given 2 times"},
		{"/executions?workflow=" + url.QueryEscape("a\x00b"), "control character"},
		{"/executions?workflow=%c3", "not valid UTF-8"},
		{"/executions?after=none", `after &#34;none&#34; names no execution`},
	} {
		code, body, _ := b.get(t, tc.path)
		if code != http.StatusBadRequest || !strings.Contains(body, `<p class="error" id="error" role="alert">`) || !strings.Contains(body, tc.says) || !strings.Contains(body, `id="filter-form"`) {
			t.Errorf("GET %s: %d, want 400 with the form and %q\n%s", tc.path, code, tc.says, body)
		}
		if strings.Contains(body, "data-stream") {
			t.Errorf("GET %s: a refused list is followed", tc.path)
		}
	}
}

// FuzzListQuery: any query string is a filter or a refusal, never a
// panic; an accepted filter is one the list can hold, and reads back the
// same from its own query string.
func FuzzListQuery(f *testing.F) {
	for _, s := range []string{"", "status=running", "status=DONE", "workflow=a%00b", "workflow=%ff", "status=WAITING&workflow=x&after=3", "status=a&status=b", "workflow=" + strings.Repeat("w", 2000)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		q, err := url.ParseQuery(raw)
		if err != nil {
			return
		}
		lq, err := parseListQuery(q)
		if err != nil {
			if p := problemOf(err); p.status != http.StatusBadRequest || p.detail == "" {
				t.Errorf("parseListQuery(%q): %v, want a 400 saying why", raw, err)
			}
			return
		}
		if lq.Status != "" && !slices.Contains(listStatuses, lq.Status) || !utf8.ValidString(lq.Workflow) || len(lq.Workflow) > maxExecutionID {
			t.Errorf("parseListQuery(%q) = %+v", raw, lq)
		}
		again, err := parseListQuery(lq.values())
		if err != nil || again != lq {
			t.Errorf("parseListQuery(%q) = %+v, read back as %+v, %v", raw, lq, again, err)
		}
	})
}
