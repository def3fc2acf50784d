package server

import (
	"context"
	"encoding/json"
	"html"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/aslrun/aslrun/api"
	"github.com/aslrun/aslrun/engine"
	"github.com/aslrun/aslrun/states"
	"github.com/aslrun/aslrun/store"
)

// TestLongPayloadsCut: an execution carrying a 1.2 MB document makes an
// execution page that shows 64 KiB of each payload, says how much it
// cut, and links to the whole, which the raw routes serve as JSON to the
// signed-in.
func TestLongPayloadsCut(t *testing.T) {
	ts := newTestServer(t, func(c *Config) { c.MaxBody = 8 << 20 })
	text := strings.Repeat("é0123456789", 1_200_000/12)
	input, err := json.Marshal(map[string]any{"text": text})
	if err != nil {
		t.Fatal(err)
	}
	const flow = `{"StartAt":"Tag","States":{"Tag":{"Type":"Pass","Result":"yes","ResultPath":"$.tagged","Next":"Work"},
		"Work":{"Type":"Task","Agent":"W","ResultPath":"$.work","End":true}}}`
	start := map[string]any{"name": "big", "definition": json.RawMessage(flow), "input": json.RawMessage(input),
		"mock": json.RawMessage(`{"W":{"0":{"Return":"done"}}}`), "maxPayload": 8 << 20}
	if code, body := ts.call(t, RoleAdmin, "POST", "/v1/executions", start, nil); code != http.StatusCreated {
		t.Fatalf("start: %d %s", code, body)
	}
	ts.waitFor(t, "big", succeeded)
	viewer := ts.signedIn(t, RoleViewer)
	code, body, _ := viewer.get(t, "/executions/big")
	if code != http.StatusOK {
		t.Fatalf("the page: %d", code)
	}
	t.Logf("a %d-byte document, a %d-byte page", len(input), len(body))
	if len(body) > 2<<20 {
		t.Errorf("the page is %d bytes for a %d-byte document, want under 2 MiB", len(body), len(input))
	}
	links := regexp.MustCompile(`<p class="cut">([^<]*): <a href="([^"]+)" class="whole">`).FindAllStringSubmatch(body, -1)
	if len(links) < 5 {
		t.Fatalf("%d payloads cut, want every event carrying the document and the output", len(links))
	}
	for _, l := range links {
		if !strings.Contains(l[1], "of 1.2 MB shown") || !strings.Contains(l[1], "cut") {
			t.Errorf("the note %q does not say how much was cut", l[1])
		}
	}
	// Every link serves the whole, as JSON, and it holds the document.
	seen := map[string]bool{}
	for _, l := range links {
		href := html.UnescapeString(l[2])
		if seen[href] {
			continue
		}
		seen[href] = true
		code, whole, h := viewer.get(t, href)
		if code != http.StatusOK || h.Get("Content-Type") != "application/json" {
			t.Fatalf("%s: %d %s", href, code, h.Get("Content-Type"))
		}
		var v struct {
			Text string `json:"text"`
		}
		if err := json.Unmarshal([]byte(whole), &v); err != nil || v.Text != text {
			t.Errorf("%s does not serve the whole document (%d bytes, %v)", href, len(whole), err)
		}
	}
	if !seen["/executions/big/raw/output"] {
		t.Errorf("the execution's output has no link to the whole: %v", seen)
	}
	// A cut shown is valid UTF-8 (no character cut in half).
	for _, pre := range regexp.MustCompile(`(?s)<pre>(.*?)</pre>`).FindAllStringSubmatch(body, -1) {
		if !utf8.ValidString(html.UnescapeString(pre[1])) {
			t.Errorf("a payload cut in the middle of a character")
		}
	}
	// The raw routes need a sign-in, and name what they do not have.
	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	for _, path := range []string{"/executions/big/raw/output", "/executions/big/events/1/input"} {
		resp, err := noRedirect.Get(ts.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK || resp.Header.Get("Content-Type") == "application/json" {
			t.Errorf("%s without a sign-in: %d %s, want it refused", path, resp.StatusCode, resp.Header.Get("Content-Type"))
		}
	}
	for _, path := range []string{"/executions/big/events/0/input", "/executions/big/events/999/input", "/executions/big/events/1/nope",
		"/executions/big/raw/nope", "/executions/nobody/raw/output", "/executions/nobody/events/1/input"} {
		if code, body, _ := viewer.get(t, path); code != http.StatusNotFound {
			t.Errorf("%s: %d, want 404\n%s", path, code, body)
		}
	}
}

// TestCut: payloads up to maxShown bytes are shown whole; longer ones
// are cut on a character boundary.
func TestCut(t *testing.T) {
	for _, tc := range []struct {
		name string
		text string
		cut  int
	}{
		{"empty", "", 0},
		{"short", "abc", 0},
		{"at the limit", strings.Repeat("a", maxShown), 0},
		{"one over", strings.Repeat("a", maxShown+1), 1},
		{"a character across the limit", strings.Repeat("a", maxShown-1) + "é" + "b", 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := cut(tc.text, "/x")
			if p.Cut != tc.cut || p.Text+tc.text[len(p.Text):] != tc.text || !utf8.ValidString(p.Text) {
				t.Errorf("cut: %d bytes shown, %d cut, want %d cut", len(p.Text), p.Cut, tc.cut)
			}
			if (p.Href != "") != (tc.cut > 0) || tc.cut > 0 && p.Size != len(tc.text) {
				t.Errorf("cut: href %q, size %d", p.Href, p.Size)
			}
		})
	}
}

// FuzzRawRoutes: whatever a caller puts in the raw routes' path, they
// answer the whole payload or "not found", never a panic or another
// failure.
func FuzzRawRoutes(f *testing.F) {
	st := store.NewMemory()
	x := engine.New(engine.Config{Store: st})
	m, err := states.Parse([]byte(`{"StartAt":"P","States":{"P":{"Type":"Pass","End":true}}}`))
	if err != nil {
		f.Fatal(err)
	}
	if _, err := x.Run(context.Background(), m, map[string]any{"a": 1.0}, engine.StartOptions{ID: "raw"}); err != nil {
		f.Fatal(err)
	}
	s := &Server{st: st, x: x}
	for _, seed := range [][3]string{{"raw", "1", "input"}, {"raw", "0", "output"}, {"raw", "-1", "detail"}, {"raw", "99999999999999999999", "cause"},
		{"raw", "2", "nope"}, {"nobody", "1", "input"}, {"raw", "1e3", "input"}, {"", "", ""}, {"raw", "output", "redrive-input"}} {
		f.Add(seed[0], seed[1], seed[2])
	}
	f.Fuzz(func(t *testing.T, id, seq, field string) {
		for _, raw := range []bool{false, true} {
			r := httptest.NewRequest(http.MethodGet, "/", nil)
			r.SetPathValue("id", id)
			r.SetPathValue("seq", seq)
			r.SetPathValue("field", field)
			w := httptest.NewRecorder()
			var err error
			if raw {
				err = s.rawExecution(w, r)
			} else {
				err = s.rawEvent(w, r)
			}
			if err != nil {
				if p := problemOf(err); p.status != http.StatusNotFound {
					t.Errorf("(%q, %q, %q): %d %v, want the payload or 404", id, seq, field, p.status, err)
				}
				continue
			}
			if ct := w.Header().Get("Content-Type"); ct != "application/json" || !json.Valid(w.Body.Bytes()) {
				t.Errorf("(%q, %q, %q): %s %q, want JSON", id, seq, field, ct, w.Body.String())
			}
		}
	})
}

// TestInboxLongDocumentCut: the inbox shows 64 KiB of a long document
// under review, with a link to the approval, which has it whole; the
// editor holds it whole.
func TestInboxLongDocumentCut(t *testing.T) {
	ts := newTestServer(t, func(c *Config) { c.MaxBody = 8 << 20 })
	text := strings.Repeat("0123456789", 30_000)
	input, err := json.Marshal(map[string]any{"draft": map[string]any{"text": text}})
	if err != nil {
		t.Fatal(err)
	}
	start := map[string]any{"name": "long-review", "input": json.RawMessage(input), "maxPayload": 8 << 20,
		"definition": json.RawMessage(`{"StartAt":"Review","States":{"Review":{"Type":"Approval","Prompt":"ok?","Options":["ok"],
			"Editable":{"Fields":["$.draft.text"],"ResultPath":"$.edited"},"ResultPath":"$.review","End":true}}}`)}
	if code, body := ts.call(t, RoleAdmin, "POST", "/v1/executions", start, nil); code != http.StatusCreated {
		t.Fatalf("start: %d %s", code, body)
	}
	ts.waitFor(t, "long-review", func(e api.Execution) bool { return e.Status == "WAITING" })
	for _, role := range []Role{RoleViewer, RoleApprover} {
		web := ts.signedIn(t, role)
		_, body, _ := web.get(t, "/inbox")
		doc := between(t, body, `<details class="document"`, `</details>`)
		if len(doc) > maxShown+1024 || !strings.Contains(doc, `<p class="cut">`) {
			t.Errorf("%v: the document under review is shown in %d bytes, want it cut to %d with a note", role, len(doc), maxShown)
		}
		m := regexp.MustCompile(`class="cut">[^<]*<a href="([^"]+)"`).FindStringSubmatch(doc)
		if m == nil {
			t.Fatalf("%v: no link to the whole:\n%.300s", role, doc)
		}
		code, whole, _ := web.get(t, html.UnescapeString(m[1]))
		if code != http.StatusOK || !strings.Contains(whole, text) {
			t.Errorf("%v: %s: %d, %d bytes, want the approval with the whole document", role, m[1], code, len(whole))
		}
		if role == RoleApprover && !strings.Contains(body, text) {
			t.Errorf("the approver's editor does not hold the whole document")
		}
	}
}
