package server

import (
	"encoding/json"
	"errors"
	"html"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/aslrun/aslrun/api"
	"github.com/aslrun/aslrun/engine"
	"github.com/aslrun/aslrun/states"
)

// startFlow starts an execution as an operator and waits until cond
// holds for it.
func (ts *testServer) startFlow(t *testing.T, name, def, input, mock string, cond func(api.Execution) bool) api.Execution {
	t.Helper()
	body := map[string]any{"name": name, "definition": json.RawMessage(def)}
	if input != "" {
		body["input"] = json.RawMessage(input)
	}
	if mock != "" {
		body["mock"] = json.RawMessage(mock)
	}
	if code, data := ts.call(t, RoleOperator, "POST", "/v1/executions", body, nil); code != http.StatusCreated {
		t.Fatalf("start %s: %d %s", name, code, data)
	}
	return ts.waitFor(t, name, cond)
}

func succeeded(e api.Execution) bool { return e.Status == "SUCCEEDED" }

// pricedFlow is a workflow with a Budget in euros whose agents report
// their usage (but the last, which reports none).
const (
	pricedFlow = `{"StartAt":"Draft","Budget":{"MaxCost":5,"MaxTokens":100000,"Currency":"EUR"},"States":{
		"Draft":{"Type":"Task","Agent":"Writer","ResultPath":"$.draft","Next":"Polish"},
		"Polish":{"Type":"Task","Agent":"Writer","ResultPath":"$.polished","Next":"Free"},
		"Free":{"Type":"Task","Agent":"Local","ResultPath":"$.local","End":true}}}`
	pricedMock = `{"Writer":{"0":{"Return":"a draft","Usage":{"InputTokens":1200,"OutputTokens":340,"Cost":0.0123}},
		"1":{"Return":"polished","Usage":{"InputTokens":800,"OutputTokens":90,"Cost":0.004}}},
		"Local":{"0":{"Return":"ok"}}}`
)

// TestExecutionUsage: each agent call's outcome shows the tokens and the
// cost it reported, in the workflow Budget's currency, and the summary
// the execution's totals with its Budget.
func TestExecutionUsage(t *testing.T) {
	ts := newTestServer(t)
	ts.startFlow(t, "priced", pricedFlow, `{}`, pricedMock, succeeded)
	ts.startFlow(t, "plain", `{"StartAt":"P","States":{"P":{"Type":"Pass","End":true}}}`, "", "", succeeded)
	b := ts.signedIn(t, RoleViewer)
	_, body, _ := b.get(t, "/executions/priced")
	for _, w := range []string{
		`<dd id="usage">2430 tokens (2000 in, 430 out), cost 0.0163 EUR`,
		`(Budget: 100000 tokens, 5 EUR; on exceeding: Fail)`,
		`<span class="usage">1540 tokens (1200 in, 340 out), cost 0.0123 EUR</span>`,
		`<span class="usage">890 tokens (800 in, 90 out), cost 0.004 EUR</span>`,
		`data-currency="EUR"`,
	} {
		if !strings.Contains(body, w) {
			t.Errorf("the page of priced has no %s in\n%s", w, body)
		}
	}
	// Two calls reported usage: two events show it, the free call none.
	if n := strings.Count(body, `<span class="usage">`); n != 2 {
		t.Errorf("%d events show usage, want 2", n)
	}
	_, body, _ = b.get(t, "/executions/plain")
	if strings.Contains(body, `id="usage"`) || strings.Contains(body, `class="usage"`) {
		t.Errorf("an execution without agents shows usage\n%s", body)
	}
}

func TestCallUsage(t *testing.T) {
	for _, tc := range []struct {
		name   string
		detail any
		want   usageView
		ok     bool
	}{
		{"none", nil, usageView{}, false},
		{"not an object", "x", usageView{}, false},
		{"no usage", map[string]any{"step": "A#1"}, usageView{}, false},
		{"usage not an object", map[string]any{"usage": json.Number("3")}, usageView{}, false},
		{"all zero", map[string]any{"usage": map[string]any{"tokens": json.Number("0"), "cost": json.Number("0")}}, usageView{}, false},
		{"tokens only", map[string]any{"usage": map[string]any{"inputTokens": json.Number("3"), "outputTokens": json.Number("4"), "tokens": json.Number("7"), "cost": json.Number("0")}},
			usageView{InputTokens: 3, OutputTokens: 4, Tokens: 7, Currency: "USD"}, true},
		{"cost", map[string]any{"usage": map[string]any{"cost": json.Number("0.1")}}, usageView{Cost: "0.1", Currency: "USD"}, true},
		{"wrong types ignored", map[string]any{"usage": map[string]any{"tokens": "7", "cost": json.Number("2")}}, usageView{Cost: "2", Currency: "USD"}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := callUsage(tc.detail, "USD")
			if got != tc.want || ok != tc.ok {
				t.Errorf("callUsage = %+v, %v; want %+v, %v", got, ok, tc.want, tc.ok)
			}
		})
	}
}

// debateFiles reads the technical-debate example: its workflow, input,
// and mock, each reply given a usage report.
func debateFiles(t *testing.T) (def, input, mock string) {
	t.Helper()
	dir := filepath.Join("..", "workflows", "technical-debate")
	read := func(name string) []byte {
		data, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		return data
	}
	var replies map[string]map[string]map[string]any
	if err := json.Unmarshal(read("mock.json"), &replies); err != nil {
		t.Fatal(err)
	}
	for agent, byCall := range replies {
		for n, reply := range byCall {
			tokens := 100 * (len(agent) + len(n))
			reply["Usage"] = map[string]any{"InputTokens": tokens, "OutputTokens": 25, "Cost": 0.002}
		}
	}
	m, err := json.Marshal(replies)
	if err != nil {
		t.Fatal(err)
	}
	return string(read("workflow.json")), string(read("input.json")), string(m)
}

// TestDebateTranscript: a Debate run by the engine with mocked debaters
// reads as a conversation: round by round, each debater's position and
// argument with its usage, then the arbiter's decision.
func TestDebateTranscript(t *testing.T) {
	ts := newTestServer(t)
	def, input, mock := debateFiles(t)
	ts.startFlow(t, "debate", def, input, mock, succeeded)
	_, body, _ := ts.signedIn(t, RoleViewer).get(t, "/executions/debate")
	section := between(t, body, `<section id="debates">`, `</article>`)
	text := plain(section)
	for _, w := range []string{
		"Topic: Should the billing service move from REST to gRPC?",
		"Round 1 Architect grpc 1025 tokens (1000 in, 25 out), cost 0.002 argument: typed contracts between services",
		"SRE rest 425 tokens (400 in, 25 out), cost 0.002 argument: our tooling and dashboards speak HTTP/JSON",
		"ProductEngineer rest 1625 tokens (1600 in, 25 out), cost 0.002 argument: clients depend on REST",
		"Round 2 Architect grpc",
		"ProductEngineer grpc 1625 tokens (1600 in, 25 out), cost 0.002 argument: if the public API stays REST, internal gRPC is fine",
		"Round 3 Architect grpc",
		"SRE rest 425 tokens (400 in, 25 out), cost 0.002 argument: not this quarter",
		"Arbiter CTO grpc-internal-rest-public 425 tokens (400 in, 25 out), cost 0.002 rationale: two of three favour gRPC internally",
		"No consensus (67% agreement): the arbiter CTO decided grpc-internal-rest-public",
	} {
		if !strings.Contains(text, w) {
			t.Errorf("the transcript has no %q in\n%s", w, text)
		}
	}
	if n := strings.Count(section, `<div class="turn">`); n != 10 {
		t.Errorf("%d turns, want 3 rounds of 3 and the arbiter's", n)
	}
	// The responses are prose, not JSON.
	if strings.Contains(section, "{") {
		t.Errorf("the transcript shows JSON:\n%s", section)
	}
}

// TestDebateOutcomes: a consensus reached, a result the state's output
// does not keep, and a debater whose response is not an object.
func TestDebateOutcomes(t *testing.T) {
	ts := newTestServer(t)
	const agreed = `{"StartAt":"D","States":{"D":{"Type":"Debate","Agents":["A","B"],"Topic":"tabs or spaces?","Rounds":2,
		"Consensus":{"Threshold":1},"ResultPath":"$.result","End":true}}}`
	const dropped = `{"StartAt":"D","States":{"D":{"Type":"Debate","Agents":["A","B"],"Topic":"tabs?","Rounds":1,"ResultPath":null,"End":true}}}`
	mock := `{"A":{"0-1":{"Return":{"position":"spaces","why":"PEP 8"}}},"B":{"0":{"Return":"tabs, surely"},"1":{"Return":{"position":"spaces"}}}}`
	ts.startFlow(t, "agreed", agreed, `{}`, mock, succeeded)
	ts.startFlow(t, "dropped", dropped, `{}`, mock, succeeded)
	b := ts.signedIn(t, RoleViewer)
	_, body, _ := b.get(t, "/executions/agreed")
	text := plain(between(t, body, `<section id="debates">`, "</article>"))
	for _, w := range []string{"Topic: tabs or spaces?", "Round 1 A spaces why: PEP 8 B tabs, surely", "Round 2 A spaces why: PEP 8 B spaces",
		"Consensus reached (100% agreement): decision spaces"} {
		if !strings.Contains(text, w) {
			t.Errorf("agreed: no %q in\n%s", w, text)
		}
	}
	_, body, _ = b.get(t, "/executions/dropped")
	if text := plain(between(t, body, `<section id="debates">`, "</article>")); !strings.Contains(text, "Ended; its output does not hold the Debate's result.") {
		t.Errorf("dropped: no outcome note in\n%s", text)
	}
}

func TestDebateCall(t *testing.T) {
	for _, tc := range []struct {
		detail any
		round  int64
		agent  string
		ok     bool
	}{
		{map[string]any{"step": "D#1/round-2/Critic"}, 2, "Critic", true},
		{map[string]any{"step": "Review#1.0/2/D#3/round-14/A/B"}, 14, "A/B", true},
		{map[string]any{"step": "T#1"}, 0, "", false},
		{map[string]any{"step": "D#1/round-x/A"}, 0, "", false},
		{map[string]any{"step": "D#1/round-2/"}, 0, "", false},
		{map[string]any{"step": "D#1/round-2"}, 0, "", false},
		{map[string]any{"step": 3}, 0, "", false},
		{nil, 0, "", false},
	} {
		round, agent, ok := debateCall(tc.detail)
		if round != tc.round || agent != tc.agent || ok != tc.ok {
			t.Errorf("debateCall(%v) = %d, %q, %v; want %d, %q, %v", tc.detail, round, agent, ok, tc.round, tc.agent, tc.ok)
		}
	}
}

// TestDebatesFromHistory: a retried Debate is shown attempt by attempt,
// rolled back events are left out, and events of a state that is not a
// Debate are ignored.
func TestDebatesFromHistory(t *testing.T) {
	m, err := states.Parse([]byte(`{"StartAt":"D","States":{"D":{"Type":"Debate","Agents":["A","B"],"Topic":"t","Rounds":1,"Next":"P"},"P":{"Type":"Pass","End":true}}}`))
	if err != nil {
		t.Fatal(err)
	}
	round := func(n int, superseded bool) engine.Event {
		turns := []any{map[string]any{"round": json.Number("1"), "agent": "A", "response": "x"}, map[string]any{"round": json.Number("1"), "agent": "B", "response": "y"}}
		return engine.Event{Type: engine.EventDebateRound, State: "D", Detail: map[string]any{"round": json.Number("1"), "turns": turns}, Superseded: superseded}
	}
	events := []engine.Event{
		{Type: "DebateStateEntered", State: "D"},
		round(1, true),
		round(1, false),
		round(1, false),
		{Type: "PassStateEntered", State: "P"},
		{Type: engine.EventDebateRound, State: "P"},
	}
	got := debates(m, events, "")
	if len(got) != 2 || got[0].Attempt != 1 || got[1].Attempt != 2 || len(got[0].Rounds) != 1 || len(got[1].Rounds) != 1 || got[1].Seq != 1 {
		t.Errorf("debates = %+v, want two attempts of one round each, entered at event 1", got)
	}
	if got[0].Ended || got[0].Outcome != nil {
		t.Errorf("a Debate that has not exited has an outcome: %+v", got[0])
	}
	if got := debates(nil, events, ""); got != nil {
		t.Errorf("debates without a machine = %+v", got)
	}
}

// TestMapIterationsNote: the Map's processor is one cluster in the graph,
// labelled with how many items ran and failed.
func TestMapIterationsNote(t *testing.T) {
	ts := newTestServer(t)
	const flow = `{"StartAt":"Each","States":{"Each":{"Type":"Map","ItemsPath":"$.items","ToleratedFailureCount":2,
		"ItemProcessor":{"StartAt":"Work","States":{"Work":{"Type":"Task","Agent":"W","End":true}}},"End":true}}}`
	mock := `{"W":{"0-2":{"Return":"done"},"3-4":{"Throw":{"Error":"Bad","Cause":"no"}}}}`
	ts.startFlow(t, "mapped", flow, `{"items":[1,2,3,4,5]}`, mock, succeeded)
	_, body, _ := ts.signedIn(t, RoleViewer).get(t, "/executions/mapped")
	graph := between(t, body, `<div id="graph"`, `</svg>`)
	if n := strings.Count(graph, `<g class="cluster">`); n != 1 {
		t.Errorf("%d clusters, want the Map's one", n)
	}
	if n := strings.Count(graph, `<title>Each/*/Work (Task)</title>`); n != 1 {
		t.Errorf("%d nodes of Work, want one for every item", n)
	}
	if !strings.Contains(graph, `Each: each item — <tspan class="note">5 items, 2 failed</tspan>`) {
		t.Errorf("the cluster does not say how the items went:\n%s", graph)
	}
}

func TestMapNotes(t *testing.T) {
	m, err := states.Parse([]byte(`{"StartAt":"Outer","States":{"Outer":{"Type":"Map","ItemProcessor":{"StartAt":"Inner","States":{
		"Inner":{"Type":"Map","ItemProcessor":{"StartAt":"W","States":{"W":{"Type":"Pass","End":true}}},"End":true}}},"End":true}}}`))
	if err != nil {
		t.Fatal(err)
	}
	ev := func(typ, scope string, superseded bool) engine.Event {
		state := "Outer"
		if scope != "" {
			state = "Inner"
		}
		return engine.Event{Type: typ, State: state, Scope: scope, Superseded: superseded}
	}
	events := []engine.Event{
		ev(engine.EventMapStateStarted, "", false),
		ev(engine.EventMapIterationStart, "", false), ev(engine.EventMapIterationStart, "", false),
		// Item 0's inner Map: 2 items, one failed; item 1's: 1 item, running.
		ev(engine.EventMapStateStarted, "Outer/0/", false),
		ev(engine.EventMapIterationStart, "Outer/0/", false), ev(engine.EventMapIterationStart, "Outer/0/", false),
		ev(engine.EventMapIterationOK, "Outer/0/", false), ev(engine.EventMapIterationFailed, "Outer/0/", false),
		ev(engine.EventMapStateSucceeded, "Outer/0/", false),
		ev(engine.EventMapStateStarted, "Outer/1/", false),
		ev(engine.EventMapIterationStart, "Outer/1/", false),
		ev(engine.EventMapIterationStart, "Outer/1/", true), // rolled back over
		ev(engine.EventMapIterationOK, "", false),
	}
	got := mapNotes(m, events, false)
	want := map[string]string{"Outer": "2 items, 1 running", "Outer/*/Inner": "3 items, 1 failed, 1 running"}
	if len(got) != len(want) || got["Outer"] != want["Outer"] || got["Outer/*/Inner"] != want["Outer/*/Inner"] {
		t.Errorf("mapNotes = %q, want %q", got, want)
	}
	// Once the execution ended, nothing is running.
	if got := mapNotes(m, events, true); got["Outer"] != "2 items" || got["Outer/*/Inner"] != "3 items, 1 failed" {
		t.Errorf("mapNotes of an ended execution = %q", got)
	}
	// A second run of a Map counts afresh.
	events = append(events, ev(engine.EventMapStateStarted, "", false), ev(engine.EventMapIterationStart, "", false))
	if got := mapNotes(m, events, false); got["Outer"] != "1 item, 1 running" {
		t.Errorf("after a second run, Outer: %q", got["Outer"])
	}
}

// TestExecutionLive: the live fragment is the live part of the page
// alone, with the controls the caller's role and the execution's status
// allow; it follows the status as it changes.
func TestExecutionLive(t *testing.T) {
	ts := newTestServer(t)
	ts.startWaiting(t, "w1")
	viewer, op := ts.signedIn(t, RoleViewer), ts.signedIn(t, RoleOperator)
	code, body, h := op.get(t, "/executions/w1/live")
	if code != 200 || !strings.HasPrefix(h.Get("Content-Type"), "text/html") || h.Get("Cache-Control") != "no-store" {
		t.Fatalf("GET live: %d %s %q", code, h.Get("Content-Type"), h.Get("Cache-Control"))
	}
	if !strings.HasPrefix(body, `<div id="live" data-live="/executions/w1/live">`) || strings.Contains(body, "<html") || strings.Contains(body, `id="timeline"`) {
		t.Errorf("the fragment is not the live part alone:\n%s", body)
	}
	for _, w := range []string{`status-WAITING">WAITING`, `id="stop-form"`, `id="resume-form"`, `class="approval-link"`, `<div id="graph"`, `name="csrf" value="` + op.csrf(t) + `"`} {
		if !strings.Contains(body, w) {
			t.Errorf("the operator's fragment of a waiting execution has no %s\n%s", w, body)
		}
	}
	// The page holds the same part.
	_, page, _ := op.get(t, "/executions/w1")
	if !strings.Contains(page, body) {
		t.Errorf("the page does not hold the fragment as is")
	}
	_, body, _ = viewer.get(t, "/executions/w1/live")
	if strings.Contains(body, "<form") || !strings.Contains(body, `status-WAITING`) {
		t.Errorf("the viewer's fragment has forms, or no status:\n%s", body)
	}
	ts.decideReview(t, "w1")
	ts.waitFor(t, "w1", succeeded)
	_, body, _ = op.get(t, "/executions/w1/live")
	if !strings.Contains(body, `status-SUCCEEDED">SUCCEEDED`) || strings.Contains(body, `id="stop-form"`) || strings.Contains(body, `id="controls"`) || strings.Contains(body, `id="approvals"`) {
		t.Errorf("after the decision the fragment still shows the controls or the approval:\n%s", body)
	}
	for _, tc := range []struct {
		b    *webClient
		path string
		want int
	}{
		{op, "/executions/none/live", http.StatusNotFound},
		{ts.web(t), "/executions/w1/live", http.StatusSeeOther}, // signed out: to the sign-in page
	} {
		if code, _, _ := tc.b.get(t, tc.path); code != tc.want {
			t.Errorf("GET %s: %d, want %d", tc.path, code, tc.want)
		}
	}
}

// TestRollbackHiddenWhileRunning: no rollback form while a run is under
// way (it would be refused); the fork form stays.
func TestRollbackHiddenWhileRunning(t *testing.T) {
	ts := newTestServer(t)
	const flow = `{"StartAt":"Save","States":{"Save":{"Type":"Checkpoint","Name":"one","Next":"Slow"},
		"Slow":{"Type":"Task","Agent":"S","End":true}}}`
	ts.startFlow(t, "slow", flow, `{}`, `{"S":{"0":{"Return":1,"DelaySeconds":30}}}`, func(e api.Execution) bool { return e.Status == "RUNNING" })
	op := ts.signedIn(t, RoleOperator)
	var body string
	ts.waitFor(t, "slow", func(api.Execution) bool {
		_, body, _ = op.get(t, "/executions/slow/live")
		return strings.Contains(body, `data-checkpoint="one"`)
	})
	if strings.Contains(body, "rollback-form") || !strings.Contains(body, "fork-form") || !strings.Contains(body, `id="stop-form"`) {
		t.Errorf("a running execution: want fork and stop, no rollback\n%s", body)
	}
	if code, _, _ := op.post(t, "/executions/slow/stop", url.Values{"csrf": {op.csrf(t)}, "confirm": {"yes"}}); code != http.StatusSeeOther {
		t.Errorf("stop: %d", code)
	}
	ts.waitFor(t, "slow", func(e api.Execution) bool { return e.Status == "ABORTED" })
}

var textareaRe = regexp.MustCompile(`(?s)<textarea id="redrive-patch"[^>]*>(.*?)</textarea>`)

// typedPatch is the redrive form's patch as the page shows it.
func typedPatch(t *testing.T, body string) string {
	t.Helper()
	m := textareaRe.FindStringSubmatch(body)
	if m == nil {
		t.Fatalf("no redrive patch on the page:\n%s", body)
	}
	return html.UnescapeString(m[1])
}

// TestRedrivePatchPage: a redrive with a JSON Patch; every refusal shows
// the page again with the patch as typed and the error where it is.
func TestRedrivePatchPage(t *testing.T) {
	ts := newTestServer(t)
	failedExecution(t, ts, "f1")
	op := ts.signedIn(t, RoleOperator)
	csrf := op.csrf(t)
	_, body, _ := op.get(t, "/executions/f1")
	if !strings.Contains(body, `<label for="redrive-patch">JSON Patch (RFC 6902) applied to the input of state <code>Route</code> first (optional)</label>`) ||
		!strings.Contains(body, `<details id="redrive-input"><summary>Input of Route</summary>`) || typedPatch(t, body) != "" {
		t.Errorf("the redrive form does not offer a patch of Route's input:\n%s", body)
	}
	if !strings.Contains(body, `<g class="node failed"><title>Route (Choice)</title>`) {
		t.Errorf("the graph does not mark Route, where the execution failed")
	}
	for _, tc := range []struct {
		name, patch string
		confirm     bool
		want        int
		error       string
	}{
		{"not JSON", "[{\"op\": \"replace\",\n  \"path\": \"/kind\" \"value\": 1}]", false, http.StatusBadRequest,
			"the patch is not JSON: line 2, column 19 ($[0]): expected ',' or '}' after object member"},
		{"not an array", `{"op":"remove","path":"/kind"}`, false, http.StatusBadRequest, "the patch: a JSON Patch is an array of operations, not object"},
		{"unknown op", `[{"op":"test","path":"/kind","value":"z"},{"op":"rename","path":"/kind"}]`, false, http.StatusBadRequest,
			`operation 1 of the patch (at /1/op): unknown operation "rename"`},
		{"bad pointer", `[{"op":"remove","path":"kind"}]`, false, http.StatusBadRequest, "operation 0 of the patch (at /0/path): "},
		{"test fails", `[{"op":"test","path":"/kind","value":"a"}]`, false, http.StatusBadRequest, "operation 0 of the patch (at /0"},
		{"no such member", `[{"op":"remove","path":"/nope"}]`, false, http.StatusBadRequest, "operation 0 of the patch (at /0"},
		{"refused by the guard", `[{"op":"remove","path":"/kind"}]`, true, http.StatusUnprocessableEntity,
			"the workflow's governance refuses the patched input: Governance.SchemaViolation"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			form := url.Values{"csrf": {csrf}, "patch": {tc.patch}}
			if tc.confirm {
				form.Set("confirm", "yes")
			}
			code, body, _ := op.post(t, "/executions/f1/redrive", form)
			if code != tc.want {
				t.Errorf("%d, want %d\n%s", code, tc.want, body)
			}
			errText := between(t, body, `<p id="redrive-patch-error" class="field-error">`, "</p>")
			if !strings.Contains(html.UnescapeString(errText), tc.error) {
				t.Errorf("the patch's error says %q, want %q", html.UnescapeString(errText), tc.error)
			}
			if got := typedPatch(t, body); got != tc.patch {
				t.Errorf("the patch is now %q, want it kept as typed %q", got, tc.patch)
			}
			if !strings.Contains(body, `aria-invalid="true"`) || !strings.Contains(body, `id="timeline"`) {
				t.Errorf("the refusal is not shown on the execution page at the patch")
			}
			if got := ts.status(t, "f1"); got != engine.StatusFailed {
				t.Errorf("f1 is %s, want FAILED", got)
			}
			if slices.Contains(ts.events(t, "f1"), engine.EventExecutionRedriven) {
				t.Errorf("f1 was redriven")
			}
		})
	}
	// A patch that applies is confirmed first, shown on the confirmation.
	fix := `[{"op":"test","path":"/kind","value":"z"},{"op":"replace","path":"/kind","value":"a"}]`
	code, body, h := op.confirm(t, "/executions/f1/redrive", url.Values{"csrf": {csrf}, "patch": {fix}}, func() {
		if slices.Contains(ts.events(t, "f1"), engine.EventExecutionRedriven) {
			t.Errorf("the unconfirmed redrive redrove")
		}
	})
	if code != http.StatusSeeOther || h.Get("Location") != "/executions/f1" {
		t.Fatalf("confirmed redrive: %d to %q\n%s", code, h.Get("Location"), body)
	}
	ts.waitFor(t, "f1", succeeded)
	// The confirmation page shows the patch.
	failedExecution(t, ts, "f2")
	_, body, _ = op.post(t, "/executions/f2/redrive", url.Values{"csrf": {csrf}, "patch": {fix}})
	if !strings.Contains(body, `<pre id="confirm-patch">`+html.EscapeString(fix)+`</pre>`) || !strings.Contains(body, "(2 operations)") {
		t.Errorf("the confirmation does not show the patch:\n%s", body)
	}
}

// TestRedrivePatchRefused: only an operator, with the session's CSRF
// token, may redrive with a patch.
func TestRedrivePatchRefused(t *testing.T) {
	ts := newTestServer(t)
	failedExecution(t, ts, "f1")
	viewer, approver, op := ts.signedIn(t, RoleViewer), ts.signedIn(t, RoleApprover), ts.signedIn(t, RoleOperator)
	fix := `[{"op":"replace","path":"/kind","value":"a"}]`
	_, body, _ := viewer.get(t, "/executions/f1")
	if strings.Contains(body, "redrive-form") || strings.Contains(body, "redrive-patch") {
		t.Errorf("the viewer's page shows the redrive form")
	}
	for _, tc := range []struct {
		name string
		b    *webClient
		csrf string
	}{
		{"viewer", viewer, viewer.csrf(t)},
		{"approver", approver, approver.csrf(t)},
		{"no CSRF token", op, ""},
		{"another session's token", op, viewer.csrf(t)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			form := url.Values{"patch": {fix}, "confirm": {"yes"}}
			if tc.csrf != "" {
				form.Set("csrf", tc.csrf)
			}
			if code, _, _ := tc.b.post(t, "/executions/f1/redrive", form); code != http.StatusForbidden {
				t.Errorf("POST redrive: %d, want 403", code)
			}
			if got := ts.status(t, "f1"); got != engine.StatusFailed {
				t.Errorf("f1 is %s, want FAILED", got)
			}
		})
	}
}

func TestReadPatch(t *testing.T) {
	for _, tc := range []struct {
		text, err string
		ops       int
	}{
		{`[]`, "", 0},
		{`[{"op":"add","path":"/a","value":{"b":[1]}},{"op":"move","from":"/a","path":"/c"}]`, "", 2},
		{``, "the patch is not JSON: ", 0},
		{"[\n\n  {\"op\": \"add\" \"path\": \"/a\"}]", "the patch is not JSON: line 3, column 16 ($[0]): ", 0},
		{`[{"op":"add","path":"/é","value":1},]`, "the patch is not JSON: line 1, column 37 ($[1]): ", 0},
		{`[{"op":"add","op":"remove","path":"/a"}]`, "the patch is not JSON: line 1, column 14 ($[0]): duplicate key", 0},
		{`null`, "the patch: a JSON Patch is an array of operations, not null", 0},
		{`[1]`, "operation 0 of the patch (at /0): an operation is an object, not number", 0},
		{`[{"op":"copy","path":"/a"}]`, `operation 0 of the patch (at /0/from): "from" is missing`, 0},
		{`[{"op":"add","path":"/a"}]`, `operation 0 of the patch (at /0/value): "add" needs a "value"`, 0},
	} {
		p, err := readPatch(tc.text)
		switch {
		case tc.err == "" && err != nil:
			t.Errorf("readPatch(%q): %v", tc.text, err)
		case tc.err != "" && (err == nil || !strings.HasPrefix(err.Error(), tc.err)):
			t.Errorf("readPatch(%q) = %v, want an error starting %q", tc.text, err, tc.err)
		case len(p) != tc.ops:
			t.Errorf("readPatch(%q) has %d operations, want %d", tc.text, len(p), tc.ops)
		}
	}
	if msg := patchMessage(errors.New("plain")); msg != "plain" {
		t.Errorf("patchMessage of a plain error = %q", msg)
	}
}

func TestLineColumn(t *testing.T) {
	text := "ab\ncdé\nf"
	for _, tc := range []struct{ offset, line, col int }{
		{0, 1, 1}, {2, 1, 3}, {3, 2, 1}, {7, 2, 4}, {8, 3, 1}, {9, 3, 2}, {-4, 1, 1}, {99, 3, 2},
	} {
		if line, col := lineColumn(text, tc.offset); line != tc.line || col != tc.col {
			t.Errorf("lineColumn(%d) = %d:%d, want %d:%d", tc.offset, line, col, tc.line, tc.col)
		}
	}
}

// FuzzReadPatch: any text typed into the redrive form is a patch or an
// error that says where, never a panic.
func FuzzReadPatch(f *testing.F) {
	for _, s := range []string{`[]`, `[{"op":"replace","path":"/kind","value":"a"}]`, `[{"op":"move","from":"/a/~1","path":"/b/-"}]`, "[\n{", `{"op":1}`, "\xff"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		p, err := readPatch(text)
		if err != nil {
			if err.Error() == "" {
				t.Errorf("readPatch(%q): an empty error", text)
			}
			return
		}
		if _, err := p.Apply(map[string]any{"kind": "z"}); err != nil && patchMessage(err) == "" {
			t.Errorf("Apply: an empty error")
		}
	})
}

// between returns the text of s from the first start to the end that
// follows it (end included).
func between(t *testing.T, s, start, end string) string {
	t.Helper()
	i := strings.Index(s, start)
	if i < 0 {
		t.Fatalf("no %q in\n%s", start, s)
	}
	j := strings.Index(s[i:], end)
	if j < 0 {
		t.Fatalf("no %q after %q in\n%s", end, start, s[i:])
	}
	return s[i : i+j+len(end)]
}

var tags = regexp.MustCompile(`<[^>]*>`)

// plain is HTML as the words a reader sees, on one line.
func plain(s string) string {
	return strings.Join(strings.Fields(html.UnescapeString(tags.ReplaceAllString(s, " "))), " ")
}

// BenchmarkLiveParts measures what the live part costs to build for a Map
// of 1000 items (4 events each): the graph with its notes, and the
// debates (none, but every event is looked at).
func BenchmarkLiveParts(b *testing.B) {
	const flow = `{"StartAt":"Each","States":{"Each":{"Type":"Map","ItemProcessor":{"StartAt":"Work","States":{"Work":{"Type":"Task","Agent":"W","End":true}}},"End":true}}}`
	m, err := states.Parse([]byte(flow))
	if err != nil {
		b.Fatal(err)
	}
	e := &engine.Execution{ID: "b", Status: engine.StatusRunning, Definition: []byte(flow)}
	events := []engine.Event{{Type: "MapStateEntered", State: "Each"}, {Type: engine.EventMapStateStarted, State: "Each"}}
	for i := range 1000 {
		scope := "Each/" + strconv.Itoa(i) + "/"
		done := engine.EventMapIterationOK
		if i%50 == 0 {
			done = engine.EventMapIterationFailed
		}
		events = append(events, engine.Event{Type: engine.EventMapIterationStart, State: "Each"},
			engine.Event{Type: "TaskStateEntered", State: "Work", Scope: scope},
			engine.Event{Type: "TaskStateExited", State: "Work", Scope: scope},
			engine.Event{Type: done, State: "Each"})
	}
	b.Run("graph", func(b *testing.B) {
		for b.Loop() {
			if _, err := executionGraph(m, e, events); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("debates", func(b *testing.B) {
		for b.Loop() {
			debates(m, events, "")
		}
	})
}
