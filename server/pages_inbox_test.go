package server

import (
	"encoding/json"
	"errors"
	"html"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/aslrun/aslrun/api"
	"github.com/aslrun/aslrun/engine"
	"github.com/aslrun/aslrun/jsonvalue"
)

// timedReview is an approval that escalates after an hour and times out
// after a day.
const timedReview = `{"StartAt":"Review","States":{"Review":{"Type":"Approval","Prompt":"ship?","Options":["ship","hold"],
	"Timeout":"24h","Escalation":{"After":"1h","Notify":["leads@example.com"]},"ResultPath":"$.review","End":true}}}`

// TestInboxPageLive: the inbox names the stream to follow from where it
// was read, and shows each escalation and deadline as a <time> to count
// down to.
func TestInboxPageLive(t *testing.T) {
	ts := newTestServer(t)
	if code, body := ts.call(t, RoleOperator, "POST", "/v1/executions", map[string]any{"definition": json.RawMessage(timedReview), "name": "t1"}, nil); code != http.StatusCreated {
		t.Fatalf("start: %d %s", code, body)
	}
	ap := ts.waitFor(t, "t1", func(e api.Execution) bool { return len(e.Approvals) == 1 }).Approvals[0]
	b := ts.signedIn(t, RoleApprover)
	_, body, _ := b.get(t, "/inbox")
	m := regexp.MustCompile(`<div id="inbox" data-stream="/v1/approvals/events\?after=(\d+)" data-can-decide="true">`).FindStringSubmatch(body)
	if m == nil {
		t.Fatalf("no stream on the inbox:\n%s", body)
	}
	if n, _ := strconv.ParseInt(m[1], 10, 64); n != ts.s.streams.inbox.cursor() {
		t.Errorf("the page resumes after %s, want the inbox's head %d", m[1], ts.s.streams.inbox.cursor())
	}
	for kind, at := range map[string]*time.Time{"escalation": ap.EscalatesAt, "deadline": ap.Deadline} {
		if at == nil {
			t.Fatalf("approval %+v without its %s", ap, kind)
		}
		re := regexp.MustCompile(`<span class="countdown" data-kind="` + kind + `"> · \w+ <time datetime="([^"]+)">([^<]+)</time> <span class="left">\(in ([^)]+)\)</span></span>`)
		m := re.FindStringSubmatch(body)
		if m == nil {
			t.Errorf("no %s countdown in\n%s", kind, body)
			continue
		}
		shown, err := time.Parse(time.RFC3339, m[1])
		if err != nil || !shown.Equal(at.Truncate(time.Second)) {
			t.Errorf("%s at %q (%v), want %s", kind, m[1], err, at)
		}
		if m[2] != formatTime(*at) {
			t.Errorf("%s reads %q, want %q", kind, m[2], formatTime(*at))
		}
		if _, err := time.ParseDuration(m[3]); err != nil {
			t.Errorf("%s left %q: %v", kind, m[3], err)
		}
	}
	for _, w := range []string{`data-check="/inbox/` + ap.ID + `/check"`, `<script src="/static/live.js" defer></script>`, `id="live-status"`} {
		if !strings.Contains(body, w) {
			t.Errorf("inbox: no %s in\n%s", w, body)
		}
	}
	if code, js, _ := b.get(t, "/static/live.js"); code != 200 || !strings.Contains(js, "EventSource") {
		t.Errorf("GET /static/live.js: %d", code)
	}
}

// checkForm posts the inbox's dry run of a decision and decodes it.
func checkForm(t *testing.T, b *webClient, id string, form url.Values) (int, editCheck) {
	t.Helper()
	code, body, h := b.post(t, "/inbox/"+id+"/check", form)
	if code == 500 {
		t.Log(body)
	}
	var out editCheck
	if h.Get("Content-Type") == "application/json" {
		if err := json.Unmarshal([]byte(body), &out); err != nil {
			t.Fatalf("check: %v in %s", err, body)
		}
	}
	return code, out
}

// TestCheckPage: the inbox's dry run answers each form as the decision
// would be answered, with each problem placed in the edit: a governance
// refusal at its JSON Pointer in the edited document, a syntax error at
// its line and column. Nothing is recorded.
func TestCheckPage(t *testing.T) {
	ts := newTestServer(t)
	ap := ts.waitingReview(t, "r1")
	b := ts.signedIn(t, RoleApprover)
	csrf := b.csrf(t)
	for _, tc := range []struct {
		name    string
		form    url.Values
		code    int
		ok      bool
		refused string
		problem editProblem
	}{
		{"fine", url.Values{"option": {"publish"}, "edit": {`{"draft":{"title":"Hi"}}`}}, http.StatusOK, true, "", editProblem{}},
		{"no option yet", url.Values{"edit": {`{"draft":{"title":"Hi"}}`}}, http.StatusOK, true, "", editProblem{}},
		{"no edit", url.Values{"option": {"reject"}}, http.StatusOK, true, "", editProblem{}},
		{"refused by the write policy", url.Values{"option": {"publish"}, "edit": {`{"draft":{"title":"forbidden"}}`}}, http.StatusUnprocessableEntity, false,
			"Governance.WriteDenied", editProblem{Error: "Governance.WriteDenied", Rule: "WritePolicy.Rules[0]", Path: "$.edited.draft.title", Pointer: "/draft/title", InEdit: true}},
		{"not JSON", url.Values{"option": {"publish"}, "edit": {"{\n  \"draft\": {\"title\": \"Hé\",}\n}"}}, http.StatusBadRequest, false,
			"line 2, column 27", editProblem{Error: "JSON", Path: "$.draft", Line: 2, Column: 27}},
		{"stale digest", url.Values{"option": {"publish"}, "digest": {"0000"}}, http.StatusConflict, false, "decision refused", editProblem{}},
		{"option not offered", url.Values{"option": {"ship"}}, http.StatusConflict, false, "decision refused", editProblem{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.form.Set("csrf", csrf)
			if tc.form.Get("digest") == "" {
				tc.form.Set("digest", ap.Digest)
			}
			code, got := checkForm(t, b, ap.ID, tc.form)
			if code != tc.code || got.OK != tc.ok || !strings.Contains(got.Refused, tc.refused) {
				t.Fatalf("check: %d %+v, want %d ok=%v refused with %q", code, got, tc.code, tc.ok, tc.refused)
			}
			if tc.problem.Error == "" {
				if len(got.Problems) != 0 {
					t.Errorf("problems %+v, want none", got.Problems)
				}
				return
			}
			if len(got.Problems) != 1 {
				t.Fatalf("problems %+v, want one", got.Problems)
			}
			p := got.Problems[0]
			if p.Detail == "" {
				t.Error("a problem without its detail")
			}
			p.Detail = ""
			if p != tc.problem {
				t.Errorf("problem %+v, want %+v", p, tc.problem)
			}
		})
	}
	ts.checkPending(t, "r1", 1)

	// Refused: a viewer, a form without the session's token, no session.
	viewer := ts.signedIn(t, RoleViewer)
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
		{"no CSRF token", b, url.Values{"option": {"publish"}}, http.StatusForbidden},
		{"no session", ts.web(t), good(csrf), http.StatusSeeOther},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if code, _, h := tc.b.post(t, "/inbox/"+ap.ID+"/check", tc.form); code != tc.want || h.Get("Content-Type") == "application/json" {
				t.Errorf("check: %d %s, want %d and no verdict", code, h.Get("Content-Type"), tc.want)
			}
		})
	}

	// Once decided, the approval is gone.
	ts.decideReview(t, "r1")
	if code, got := checkForm(t, b, ap.ID, good(csrf)); code != http.StatusNotFound || !got.Gone || got.OK {
		t.Errorf("check of a decided approval: %d %+v, want 404 gone", code, got)
	}
	if code, got := checkForm(t, b, "not-an-id", good(csrf)); code != http.StatusNotFound || !got.Gone {
		t.Errorf("check of no approval: %d %+v, want 404 gone", code, got)
	}
}

// TestDecideRefusalKeepsTheForm: without the page's script, a refused
// decision shows the inbox again with what the form held and the problem
// next to the editor, at its place.
func TestDecideRefusalKeepsTheForm(t *testing.T) {
	ts := newTestServer(t)
	ap := ts.waitingReview(t, "r1")
	b := ts.signedIn(t, RoleApprover)
	csrf := b.csrf(t)
	for _, tc := range []struct {
		name, edit string
		code       int
		where      string
	}{
		{"refused by the write policy", `{"draft":{"title":"forbidden"}}`, http.StatusUnprocessableEntity, "/draft/title"},
		{"not JSON", `{"draft":{"title":"x"`, http.StatusBadRequest, "line 1, column 22 ($.draft)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			form := url.Values{"csrf": {csrf}, "digest": {ap.Digest}, "option": {"reject"}, "comment": {"not <this> one"}, "edit": {tc.edit}}
			code, body, _ := b.post(t, "/inbox/"+ap.ID+"/decide", form)
			if code != tc.code {
				t.Fatalf("decide: %d, want %d\n%s", code, tc.code, body)
			}
			for _, w := range []string{
				`name="edit" rows="8" spellcheck="false" aria-describedby="problems-` + ap.ID + `" aria-invalid="true">` + html.EscapeString(tc.edit) + `</textarea>`,
				`<li class="problem"><code class="where">` + html.EscapeString(tc.where) + `</code>`,
				`value="reject" id="option-` + ap.ID + `-1" required checked>`,
				`name="comment" rows="2">not &lt;this&gt; one</textarea>`,
			} {
				if !strings.Contains(body, w) {
					t.Errorf("no %s in\n%s", w, body)
				}
			}
			ts.checkPending(t, "r1", 1)
		})
	}
}

// TestEditPointer: a path of the document is placed in the edit when it
// lies under the Editable's ResultPath of a top-level state.
func TestEditPointer(t *testing.T) {
	def := func(resultPath string) []byte {
		return []byte(`{"StartAt":"R","States":{"R":{"Type":"Approval","Prompt":"p","Editable":{"Fields":["$.a"],"ResultPath":"` + resultPath + `"},"Next":"N"},
			"N":{"Type":"Pass","End":true}}}`)
	}
	for _, tc := range []struct {
		name, resultPath, state, path string
		want                          string
		ok                            bool
	}{
		{"at the root", "$", "R", "$.a.b[2]", "/a/b/2", true},
		{"under the result path", "$.edited", "R", "$.edited.a['x/y~z']", "/a/x~1y~0z", true},
		{"the edit itself", "$.edited", "R", "$.edited", "", true},
		{"outside the edit", "$.edited", "R", "$.other.a", "", false},
		{"above the edit", "$.edited", "R", "$", "", false},
		{"a state in a Map", "$", "Each/0/R", "$.a", "", false},
		{"not an Approval", "$", "N", "$.a", "", false},
		{"a keyed path", "$", "R", `$.a[id="x"].b`, "", false},
		{"not a path", "$", "R", "", "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := &engine.Execution{Definition: def(tc.resultPath)}
			got, ok := editPointer(tc.path, e, tc.state)
			if got != tc.want || ok != tc.ok {
				t.Errorf("editPointer(%q) = %q, %v; want %q, %v", tc.path, got, ok, tc.want, tc.ok)
			}
		})
	}
}

// TestSyntaxProblem: a syntax error is placed at its line and column, in
// characters.
func TestSyntaxProblem(t *testing.T) {
	for _, tc := range []struct {
		text         string
		line, column int
		path         string
	}{
		{`{"a":}`, 1, 6, "$.a"},
		{"{\n\"é\": [1,\n 2,,]}", 3, 4, "$['é'][2]"},
		{"{\r\n  \"a\": tru}", 2, 8, "$.a"},
		{"[1] 2", 1, 5, "$"},
	} {
		_, err := jsonvalue.Decode([]byte(tc.text))
		if err == nil {
			t.Fatalf("Decode(%q) accepted it", tc.text)
		}
		p := syntaxProblem(tc.text, err)
		if p.Line != tc.line || p.Column != tc.column || p.Path != tc.path || p.Error != "JSON" || p.Detail == "" {
			t.Errorf("syntaxProblem(%q) = %+v, want line %d column %d at %s", tc.text, p, tc.line, tc.column, tc.path)
		}
	}
	// An error without a place keeps its message.
	if p := syntaxProblem("x", errors.New("no place")); p.Line != 0 || p.Detail != "no place" {
		t.Errorf("syntaxProblem of a plain error = %+v", p)
	}
}

// FuzzSyntaxProblem: any text the editor may send is either JSON or
// placed inside itself, never a panic.
func FuzzSyntaxProblem(f *testing.F) {
	for _, s := range []string{`{"a":}`, "{\n\"é\": [1,\n 2,,]}", "", "\xff", "[\n\n\n", `"\ud800"`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		_, err := jsonvalue.Decode([]byte(text))
		if err == nil {
			return
		}
		p := syntaxProblem(text, err)
		lines := strings.Count(text, "\n") + 1
		if p.Line < 1 || p.Line > lines || p.Column < 1 || p.Column > utf8.RuneCountInString(text)+1 || p.Detail == "" {
			t.Errorf("syntaxProblem(%q) = %+v: outside the text", text, p)
		}
	})
}
