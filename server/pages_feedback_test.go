package server

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/aslrun/aslrun/api"
	"github.com/aslrun/aslrun/jsonvalue"
	"github.com/aslrun/aslrun/states"
)

// feedbackPageFlow has a Task of every kind of Feedback block, and one
// with none.
const (
	feedbackPageFlow = `{"StartAt":"Thumbs","States":{
		"Thumbs":{"Type":"Task","Agent":"W","ResultPath":"$.a","Feedback":{"Type":"thumbs","Question":"Is <this> right?"},"Next":"Rate"},
		"Rate":{"Type":"Task","Agent":"W","ResultPath":"$.b","Feedback":{"Type":"rating","Scale":[1,5],"Question":"How helpful?"},"Next":"Wide"},
		"Wide":{"Type":"Task","Agent":"W","ResultPath":"$.c","Feedback":{"Type":"rating","Scale":[0,1000]},"Next":"Pick"},
		"Pick":{"Type":"Task","Agent":"W","ResultPath":"$.d","Feedback":{"Type":"choice","Labels":["fine","b<x>"]},"Next":"Say"},
		"Say":{"Type":"Task","Agent":"W","ResultPath":"$.e","Feedback":{"Type":"text"},"Next":"Grade"},
		"Grade":{"Type":"Task","Agent":"W","ResultPath":"$.f","Feedback":{"Type":"structured","Fields":[{"Name":"accuracy","Type":"rating"},{"Name":"notes","Type":"text","Optional":true}]},"Next":"Log"},
		"Log":{"Type":"Task","Agent":"W","ResultPath":"$.g","End":true}}}`
	feedbackPageMock = `{"W":{"0":{"Return":"a"},"1":{"Return":"b"},"2":{"Return":"c"},"3":{"Return":"d"},"4":{"Return":"e"},"5":{"Return":"f"},"6":{"Return":"g"}}}`
)

// TestFeedbackPageForms: the execution page shows each state's question
// to everyone, and for an approver a form of the block's kind; a viewer
// gets no form.
func TestFeedbackPageForms(t *testing.T) {
	ts := newTestServer(t)
	ts.startFlow(t, "fbp", feedbackPageFlow, `{}`, feedbackPageMock, succeeded)

	_, body, _ := ts.signedIn(t, RoleViewer).get(t, "/executions/fbp")
	for _, want := range []string{`id="feedback"`, `Is &lt;this&gt; right?`, `How helpful?`, `data-state="Grade"`, `No feedback yet.`} {
		if !strings.Contains(body, want) {
			t.Errorf("the viewer's page lacks %s", want)
		}
	}
	for _, not := range []string{`class="feedback-form"`, `<article class="feedback-state" data-state="Log">`, `name="value"`} {
		if strings.Contains(body, not) {
			t.Errorf("the viewer's page holds %s", not)
		}
	}

	approver := ts.signedIn(t, RoleApprover)
	_, body, _ = approver.get(t, "/executions/fbp")
	for _, want := range []string{
		`<button type="submit" name="value" value="up">👍 up</button>`,
		`<button type="submit" name="value" value="down">👎 down</button>`,
		`<option value="5">5</option>`,
		`<input type="number" id="feedback-2-0-value" name="value" min="0" max="1000" step="any" value="" required>`,
		`<option value="b&lt;x&gt;">b&lt;x&gt;</option>`,
		`<textarea id="feedback-4-0-value" name="value"`,
		`Fields: accuracy (rating), notes (text, optional)`,
		`<input type="hidden" name="step" value="Rate#1">`,
		`name="csrf" value="` + approver.csrf(t) + `"`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("the approver's page lacks %s", want)
		}
	}
	if n := strings.Count(body, `class="feedback-form"`); n != 6 {
		t.Errorf("the approver's page has %d feedback forms, want 6", n)
	}
	if strings.Contains(body, `<option value="6">`) || strings.Contains(body, `<option value="0">`) {
		t.Errorf("the rating of [1, 5] offers a value outside its scale")
	}
}

// TestFeedbackPageGive: an approver's form gives feedback and the page
// says so and lists it; a form without the session's CSRF token, from a
// viewer, or with a value the block refuses changes nothing, the last
// showing the page again with the form as sent and why.
func TestFeedbackPageGive(t *testing.T) {
	ts := newTestServer(t)
	ts.startFlow(t, "fbp", feedbackPageFlow, `{}`, feedbackPageMock, succeeded)
	approver, viewer := ts.signedIn(t, RoleApprover), ts.signedIn(t, RoleApprover)
	csrf := approver.csrf(t)
	reader := ts.signedIn(t, RoleViewer)
	stored := func() int {
		t.Helper()
		var page api.FeedbackPage
		if code, body := ts.call(t, RoleViewer, "GET", "/v1/feedback?execution=fbp", nil, &page); code != http.StatusOK {
			t.Fatalf("list: %d %s", code, body)
		}
		return len(page.Feedback)
	}
	form := func(csrf, state, step, value string) url.Values {
		v := url.Values{"state": {state}, "step": {step}, "value": {value}, "comment": {"c"}}
		if csrf != "" {
			v.Set("csrf", csrf)
		}
		return v
	}

	for _, tc := range []struct {
		name string
		b    *webClient
		form url.Values
	}{
		{"no CSRF token", approver, form("", "Thumbs", "Thumbs#1", "up")},
		{"a wrong token", approver, form("x"+csrf, "Thumbs", "Thumbs#1", "up")},
		{"another session's token", viewer, form(csrf, "Thumbs", "Thumbs#1", "up")},
		{"a viewer", reader, form(reader.csrf(t), "Thumbs", "Thumbs#1", "up")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if code, body, _ := tc.b.post(t, "/executions/fbp/feedback", tc.form); code != http.StatusForbidden {
				t.Errorf("POST: %d, want 403\n%s", code, body)
			}
			if n := stored(); n != 0 {
				t.Errorf("%d feedback stored, want none", n)
			}
		})
	}

	for _, tc := range []struct {
		name              string
		form              url.Values
		code              int
		says, kept, field string
	}{
		{"out of scale", form(csrf, "Wide", "Wide#1", "2000"), http.StatusBadRequest, "value: ", `value="2000"`, `id="feedback-2-0-error"`},
		{"a rating not a number", form(csrf, "Rate", "", "great"), http.StatusBadRequest, `value &#34;great&#34; is not a number`, "", `id="feedback-1-0-error"`},
		{"no rating", form(csrf, "Rate", "Rate#1", ""), http.StatusBadRequest, "value is required", "", `id="feedback-1-0-error"`},
		{"a label not offered", form(csrf, "Pick", "Pick#1", "other"), http.StatusBadRequest, "value: ", "", `id="feedback-3-0-error"`},
		{"structured not JSON", form(csrf, "Grade", "Grade#1", "{accuracy: 3}"), http.StatusBadRequest, "not a JSON object", `{accuracy: 3}</textarea>`, `id="feedback-5-0-error"`},
		{"a field missing", form(csrf, "Grade", "Grade#1", `{"notes":"n"}`), http.StatusBadRequest, "accuracy", "", `id="feedback-5-0-error"`},
		{"no such visit", form(csrf, "Rate", "Rate#7", "3"), http.StatusConflict, "no completed visit Rate#7", "", ""},
		{"a state without a block", form(csrf, "Log", "", "3"), http.StatusBadRequest, "no Feedback block", "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, body, _ := approver.post(t, "/executions/fbp/feedback", tc.form)
			if code != tc.code || !strings.Contains(body, `id="error"`) || !strings.Contains(body, tc.says) || !strings.Contains(body, tc.kept) || !strings.Contains(body, tc.field) {
				t.Errorf("POST: %d, want %d saying %q, keeping %q, at %q\n%s", code, tc.code, tc.says, tc.kept, tc.field, body)
			}
			if !strings.Contains(body, `class="feedback-form"`) {
				t.Errorf("the page shown again has no feedback form")
			}
			if n := stored(); n != 0 {
				t.Errorf("%d feedback stored, want none", n)
			}
		})
	}
	if code, _, _ := approver.post(t, "/executions/nope/feedback", form(csrf, "Rate", "", "3")); code != http.StatusNotFound {
		t.Errorf("feedback on an execution that is not there: %d, want 404", code)
	}

	code, _, h := approver.post(t, "/executions/fbp/feedback", form(csrf, "Thumbs", "Thumbs#1", "up"))
	if code != http.StatusSeeOther || h.Get("Location") != "/executions/fbp?feedback=Thumbs%231#feedback" {
		t.Fatalf("give: %d to %q", code, h.Get("Location"))
	}
	if code, _, _ := approver.post(t, "/executions/fbp/feedback", form(csrf, "Grade", "", `{"accuracy": 4}`)); code != http.StatusSeeOther {
		t.Fatalf("give structured: %d", code)
	}
	var page api.FeedbackPage
	ts.call(t, RoleViewer, "GET", "/v1/feedback?execution=fbp", nil, &page)
	if len(page.Feedback) != 2 || string(page.Feedback[0].Value) != `"up"` || page.Feedback[0].By != "approver-bot" || page.Feedback[0].Comment != "c" ||
		string(page.Feedback[1].Value) != `{"accuracy":4}` || page.Feedback[1].Step != "Grade#1" {
		t.Errorf("stored: %+v", page.Feedback)
	}
	_, body, _ := approver.get(t, "/executions/fbp?feedback=Thumbs%231")
	if !strings.Contains(body, `id="feedback-given"`) || !strings.Contains(body, "Your feedback on Thumbs#1 is recorded.") ||
		!strings.Contains(body, `<strong class="by">approver-bot</strong> <span class="role">(approver)</span>: <span class="value">up</span> — <span class="comment">c</span>`) ||
		!strings.Contains(body, `<span class="value">{&#34;accuracy&#34;:4}</span>`) {
		t.Errorf("after giving: want the notice and the feedback listed\n%s", body)
	}
	// Only who gave it is told so.
	if _, body, _ := reader.get(t, "/executions/fbp?feedback=Thumbs%231"); strings.Contains(body, `id="feedback-given"`) || !strings.Contains(body, `<span class="value">up</span>`) {
		t.Errorf("the viewer: want the feedback listed, without the notice")
	}
}

// FuzzFeedbackFormValue: a form's value, of any text, is read or refused
// for every kind of block without a panic, and what is read goes through
// the block's check without one.
func FuzzFeedbackFormValue(f *testing.F) {
	for _, s := range []string{"", "3", " 4 ", "1e400", "-0", "up", "great", `{"accuracy": 4}`, `{"accuracy": "x"}`, "[1]", "\x00", `"5"`, "NaN"} {
		f.Add(s)
	}
	blocks := []*states.FeedbackConfig{
		{Collect: true, Type: states.FeedbackRating, Scale: [2]float64{1, 5}},
		{Collect: true, Type: states.FeedbackThumbs},
		{Collect: true, Type: states.FeedbackChoice, Labels: []string{"a", "b"}},
		{Collect: true, Type: states.FeedbackText},
		{Collect: true, Type: states.FeedbackStructured, Fields: []states.FeedbackField{{Name: "accuracy", Type: states.FeedbackRating, Scale: [2]float64{1, 5}}}},
	}
	f.Fuzz(func(t *testing.T, raw string) {
		for _, fb := range blocks {
			v, err := feedbackFormValue(raw)(fb)
			if err != nil {
				continue
			}
			if fb.Type == states.FeedbackRating && jsonvalue.TypeName(v) != "number" {
				t.Errorf("rating %q read as %s", raw, jsonvalue.TypeName(v))
			}
			fb.Check(v)
		}
	})
}
