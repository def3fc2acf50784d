package engine_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/aslrun/aslrun/agents"
	"github.com/aslrun/aslrun/engine"
	"github.com/aslrun/aslrun/governance"
	"github.com/aslrun/aslrun/jsonvalue"
	"github.com/aslrun/aslrun/store"
)

const reviewFlow = `{"StartAt":"Draft","States":{
	"Draft":{"Type":"Task","Agent":"Writer","ResultPath":"$.draft","Next":"Review"},
	"Review":{"Type":"Approval","Prompt":"Publish {{$.draft.title}}?","Options":["publish","revise","reject"],
		"ResultPath":"$.review",
		"Choices":[{"Variable":"$.review.approval","StringEquals":"publish","Next":"Publish"},
		           {"Variable":"$.review.approval","StringEquals":"revise","Next":"Draft"}],
		"Default":"Rejected"},
	"Publish":{"Type":"Pass","Result":"published","ResultPath":"$.outcome","End":true},
	"Rejected":{"Type":"Fail","Error":"Rejected","Cause":"the reviewer rejected the draft"}}}`

// writer answers with a numbered draft and counts its calls.
type writer struct{ calls atomic.Int64 }

func (w *writer) agent() agents.Agent {
	return agents.Func(func(context.Context, *agents.Request) (any, error) {
		n := w.calls.Add(1)
		return map[string]any{"title": "Post " + string(rune('0'+n))}, nil
	})
}

func approvalExecutor(t *testing.T, st engine.Store, w *writer) *engine.Executor {
	t.Helper()
	return engine.New(engine.Config{Agents: registry(t, w.agent(), "Writer"), Store: st})
}

func TestApprovalWaitsAndRoutes(t *testing.T) {
	st := store.NewMemory()
	w := &writer{}
	x := approvalExecutor(t, st, w)
	ctx := context.Background()
	m := mustParse(t, reviewFlow)
	res, err := x.Run(ctx, m, map[string]any{}, engine.StartOptions{ID: "a"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != engine.StatusWaiting || res.WaitingFor != engine.WaitingForApproval || res.State != "Review" || len(res.Approvals) != 1 {
		t.Fatalf("run = %+v, want WAITING for one Approval at Review", res)
	}
	pa := res.Approvals[0]
	if pa.ID != "Review#1" || pa.Prompt != "Publish Post 1?" || strings.Join(pa.Options, ",") != "publish,revise,reject" || pa.Digest == "" {
		t.Errorf("pending approval = %+v", pa)
	}

	// A process that restarts (a new executor on the same store) sees it.
	y := approvalExecutor(t, st, w)
	pending, err := y.Pending(ctx, "a")
	if err != nil || len(pending) != 1 || pending[0].ID != "Review#1" {
		t.Fatalf("Pending = %+v, %v", pending, err)
	}

	// Refused decisions change nothing.
	for _, d := range []engine.Decision{
		{Approval: "ship"},
		{Approval: "publish", Digest: "0000"},
		{Approval: "publish", ApprovalID: "Other"},
		{Approval: "publish", Edit: map[string]any{"x": 1}},
	} {
		if _, err := y.Decide(ctx, "a", d, engine.ResumeOptions{}); !errors.Is(err, engine.ErrDecisionRefused) {
			t.Errorf("Decide(%+v) = %v, want ErrDecisionRefused", d, err)
		}
	}
	if p, _ := y.Pending(ctx, "a"); len(p) != 1 {
		t.Fatalf("after refusals, %d pending, want 1", len(p))
	}

	// "revise" loops back to Draft, which asks again.
	res, err = y.Decide(ctx, "a", engine.Decision{Approval: "revise", Approver: "ana", Comment: "shorter", Digest: pa.Digest}, engine.ResumeOptions{})
	if err != nil || res.Status != engine.StatusWaiting || res.Approvals[0].ID != "Review#2" || res.Approvals[0].Prompt != "Publish Post 2?" {
		t.Fatalf("after revise: %+v, %v", res, err)
	}
	res, err = y.Decide(ctx, "a", engine.Decision{Approval: "publish", Approver: "ana"}, engine.ResumeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != engine.StatusSucceeded {
		t.Fatalf("after publish: %+v", res)
	}
	out := res.Output.(map[string]any)
	review := out["review"].(map[string]any)
	if out["outcome"] != "published" || review["approval"] != "publish" || review["approver"] != "ana" || review["timestamp"] == nil {
		t.Errorf("output = %v", out)
	}
	// Deciding again is refused: nothing is pending.
	if _, err := y.Decide(ctx, "a", engine.Decision{Approval: "publish"}, engine.ResumeOptions{}); !errors.Is(err, engine.ErrDecisionRefused) {
		t.Errorf("second decision = %v, want ErrDecisionRefused", err)
	}
	hist, types := eventsOf(t, st, "a")
	_ = hist
	for _, want := range []string{engine.EventApprovalRequested, engine.EventApprovalDecided} {
		if !strings.Contains(strings.Join(types, " "), want) {
			t.Errorf("history lacks %s: %v", want, types)
		}
	}
}

func TestApprovalDecisionAppliedOnce(t *testing.T) {
	st := store.NewMemory()
	w := &writer{}
	x := approvalExecutor(t, st, w)
	ctx := context.Background()
	if _, err := x.Run(ctx, mustParse(t, reviewFlow), map[string]any{}, engine.StartOptions{ID: "once"}); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var applied, refused atomic.Int64
	for range 8 {
		wg.Go(func() {
			res, err := x.Decide(ctx, "once", engine.Decision{Approval: "publish"}, engine.ResumeOptions{})
			switch {
			case err == nil && res.Status == engine.StatusSucceeded:
				applied.Add(1)
			case errors.Is(err, engine.ErrDecisionRefused), errors.Is(err, engine.ErrBusy):
				refused.Add(1)
			default:
				t.Errorf("Decide = %+v, %v", res, err)
			}
		})
	}
	wg.Wait()
	if applied.Load() != 1 || refused.Load() != 7 {
		t.Errorf("applied %d, refused %d; want 1 and 7", applied.Load(), refused.Load())
	}
}

func TestApprovalWithoutResultPathMerges(t *testing.T) {
	st := store.NewMemory()
	x := engine.New(engine.Config{Store: st})
	ctx := context.Background()
	def := `{"StartAt":"Ok","States":{"Ok":{"Type":"Approval","Prompt":"ok?","End":true}}}`
	if _, err := x.Run(ctx, mustParse(t, def), mustJSON(t, `{"amount":5}`), engine.StartOptions{ID: "m"}); err != nil {
		t.Fatal(err)
	}
	res, err := x.Decide(ctx, "m", engine.Decision{Approval: "approve", Comment: "fine"}, engine.ResumeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	out := res.Output.(map[string]any)
	if out["approval"] != "approve" || out["comment"] != "fine" || out["amount"] == nil {
		t.Errorf("output = %v, want the decision's fields beside amount", out)
	}
}

func TestApprovalTimeoutAndEscalation(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := store.NewMemory()
		var mu sync.Mutex
		var notices []engine.EscalationNotice
		x := engine.New(engine.Config{Store: st, OnEscalation: func(_ context.Context, n engine.EscalationNotice) error {
			mu.Lock()
			notices = append(notices, n)
			mu.Unlock()
			return nil
		}})
		ctx := context.Background()
		def := `{"StartAt":"Sign","States":{
			"Sign":{"Type":"Approval","Prompt":"sign?","Timeout":"4h","ResultPath":"$.sign",
				"Escalation":{"After":"1h","Notify":["lead@example.com"],"Message":"still waiting","Repeat":{"Every":"1h","MaxTimes":1}},
				"Default":"Late","Next":"Signed"},
			"Signed":{"Type":"Succeed"},
			"Late":{"Type":"Pass","Result":"late","ResultPath":"$.outcome","End":true}}}`
		res, err := x.Run(ctx, mustParse(t, def), map[string]any{}, engine.StartOptions{ID: "t"})
		if err != nil || res.Status != engine.StatusWaiting {
			t.Fatalf("run = %+v, %v", res, err)
		}
		start := time.Now()
		if !res.WakeAt.Equal(start.Add(time.Hour)) {
			t.Errorf("wake at %v, want the first escalation an hour after %v", res.WakeAt, start)
		}
		// The worker wakes it when due: escalations at 1h and 2h, then
		// the timeout at 4h.
		for _, d := range []time.Duration{time.Hour, 2 * time.Hour, 4 * time.Hour} {
			time.Sleep(time.Until(start.Add(d)))
			if res, err = x.Resume(ctx, "t", engine.ResumeOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		wantOutput(t, res, `{"sign":{"approval":"timeout","timestamp":"`+formatUTC(start.Add(4*time.Hour))+`"},"outcome":"late"}`)
		if len(notices) != 2 || notices[0].Count != 1 || notices[1].Count != 2 || notices[0].Notify[0] != "lead@example.com" {
			t.Errorf("escalations = %+v, want 2", notices)
		}
	})
}

func formatUTC(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z") }

func TestApprovalTimeoutWithoutDefaultIsCatchable(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := store.NewMemory()
		x := engine.New(engine.Config{Store: st})
		ctx := context.Background()
		def := `{"StartAt":"Sign","States":{
			"Sign":{"Type":"Approval","Prompt":"sign?","Timeout":"30m","Next":"Signed",
				"Catch":[{"ErrorEquals":["States.Timeout"],"ResultPath":"$.error","Next":"Expired"}]},
			"Signed":{"Type":"Succeed"},"Expired":{"Type":"Succeed"}}}`
		if _, err := x.Run(ctx, mustParse(t, def), map[string]any{}, engine.StartOptions{ID: "c"}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(30 * time.Minute)
		res, err := x.Resume(ctx, "c", engine.ResumeOptions{})
		if err != nil {
			t.Fatal(err)
		}
		wantOutput(t, res, `{"error":{"Error":"States.Timeout","Cause":"the approval Sign#1 got no decision within its Timeout (30m0s)"}}`)
	})
}

func TestApprovalEditable(t *testing.T) {
	st := store.NewMemory()
	x := engine.New(engine.Config{Store: st})
	ctx := context.Background()
	def := `{"StartAt":"Edit","Governance":{"WritePolicy":{"Deny":["$.locked"]}},"States":{"Edit":{"Type":"Approval","Prompt":"fix the text",
		"Editable":{"Fields":["$.draft.text","$.tags"],"ResultPath":"$.edited"},"ResultPath":"$.review","End":true}}}`
	res, err := x.Run(ctx, mustParse(t, def), mustJSON(t, `{"draft":{"text":"helo","title":"T"},"tags":["a"],"locked":1}`), engine.StartOptions{ID: "e"})
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := jsonvalue.Marshal(res.Approvals[0].Editable); string(got) != `{"draft":{"text":"helo"},"tags":["a"]}` {
		t.Errorf("editable = %s", got)
	}
	_, err = x.Decide(ctx, "e", engine.Decision{Approval: "approve", Edit: mustJSON(t, `{"draft":{"title":"X"}}`)}, engine.ResumeOptions{})
	if !errors.Is(err, engine.ErrDecisionRefused) {
		t.Errorf("edit outside the fields: %v, want ErrDecisionRefused", err)
	}
	res, err = x.Decide(ctx, "e", engine.Decision{Approval: "approve", Edit: mustJSON(t, `{"draft":{"text":"hello"}}`)}, engine.ResumeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	out := res.Output.(map[string]any)
	if got, _ := jsonvalue.Marshal(out["edited"]); string(got) != `{"draft":{"text":"hello"}}` {
		t.Errorf("edited = %s", got)
	}
	if got, _ := jsonvalue.Marshal(out["review"].(map[string]any)["edited"]); string(got) != `{"draft":{"text":"hello"}}` {
		t.Errorf("decision.edited = %s", got)
	}
}

// TestApprovalEditableSpellings: an Editable field matches the edit's
// paths whichever way the field is spelled.
func TestApprovalEditableSpellings(t *testing.T) {
	for _, tc := range []struct {
		field, edit string
		ok          bool
	}{
		{`$.draft.['text']`, `{"draft":{"text":"y"}}`, true},
		{`$.draft.['text']`, `{"draft":{"title":"y"}}`, false},
		{`$['draft']`, `{"draft":{"text":"x"}}`, true},
		{`$['draft title']`, `{"draft title":"x"}`, true},
		{`$['draft title']`, `{"draft":"x"}`, false},
		{`$.draft`, `{"draftx":"x"}`, false},
	} {
		t.Run(tc.field+" "+tc.edit, func(t *testing.T) {
			x := engine.New(engine.Config{Store: store.NewMemory()})
			ctx := context.Background()
			def := `{"StartAt":"Edit","States":{"Edit":{"Type":"Approval","Prompt":"p",
				"Editable":{"Fields":[` + strconv.Quote(tc.field) + `],"ResultPath":"$.edited"},"ResultPath":"$.review","End":true}}}`
			if _, err := x.Run(ctx, mustParse(t, def), mustJSON(t, `{"draft":{"text":"x"},"draft title":""}`), engine.StartOptions{ID: "e"}); err != nil {
				t.Fatal(err)
			}
			_, err := x.Decide(ctx, "e", engine.Decision{Approval: "approve", Edit: mustJSON(t, tc.edit)}, engine.ResumeOptions{})
			if tc.ok && err != nil || !tc.ok && !errors.Is(err, engine.ErrDecisionRefused) {
				t.Errorf("Decide = %v, want ok %v", err, tc.ok)
			}
		})
	}
}

func TestApprovalWriteGoverned(t *testing.T) {
	st := store.NewMemory()
	x := engine.New(engine.Config{Store: st})
	ctx := context.Background()
	def := `{"StartAt":"Edit","Governance":{"WritePolicy":{"Allow":["$.review"]}},"States":{"Edit":{"Type":"Approval","Prompt":"fix",
		"Editable":{"Fields":["$.text"],"ResultPath":"$.text"},"ResultPath":"$.review","End":true}}}`
	if _, err := x.Run(ctx, mustParse(t, def), mustJSON(t, `{"text":"a"}`), engine.StartOptions{ID: "g"}); err != nil {
		t.Fatal(err)
	}
	res, err := x.Decide(ctx, "g", engine.Decision{Approval: "approve", Edit: mustJSON(t, `{"text":"b"}`)}, engine.ResumeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	wantError(t, res, governance.ErrWriteDenied, "write to $.text denied")
}

func TestApprovalInsideParallelPausesOnlyItsBranch(t *testing.T) {
	st := store.NewMemory()
	w := &writer{}
	x := approvalExecutor(t, st, w)
	ctx := context.Background()
	def := `{"StartAt":"Both","States":{"Both":{"Type":"Parallel","End":true,"Branches":[
		{"StartAt":"Write","States":{"Write":{"Type":"Task","Agent":"Writer","End":true}}},
		{"StartAt":"Ask","States":{"Ask":{"Type":"Approval","Prompt":"go?","ResultPath":"$.ask","End":true}}}]}}}`
	res, err := x.Run(ctx, mustParse(t, def), map[string]any{}, engine.StartOptions{ID: "p"})
	if err != nil || res.Status != engine.StatusWaiting || res.State != "Both/1/Ask" {
		t.Fatalf("run = %+v, %v", res, err)
	}
	if w.calls.Load() != 1 {
		t.Fatalf("the other branch ran %d times, want 1", w.calls.Load())
	}
	res, err = x.Decide(ctx, "p", engine.Decision{Approval: "approve", ApprovalID: "Ask"}, engine.ResumeOptions{})
	if err != nil || res.Status != engine.StatusSucceeded {
		t.Fatalf("decide = %+v, %v", res, err)
	}
	if w.calls.Load() != 1 {
		t.Errorf("the finished branch ran again: %d calls", w.calls.Load())
	}
	out := res.Output.([]any)
	if out[0].(map[string]any)["title"] != "Post 1" || out[1].(map[string]any)["ask"].(map[string]any)["approval"] != "approve" {
		t.Errorf("output = %v", out)
	}
}

func TestApprovalsInMapItems(t *testing.T) {
	st := store.NewMemory()
	x := engine.New(engine.Config{Store: st})
	ctx := context.Background()
	def := `{"StartAt":"Each","States":{"Each":{"Type":"Map","End":true,"ItemProcessor":{"StartAt":"Ok","States":{
		"Ok":{"Type":"Approval","Prompt":"item {{$.n}}?","ResultPath":"$.ok","End":true}}}}}}`
	res, err := x.Run(ctx, mustParse(t, def), mustJSON(t, `[{"n":1},{"n":2}]`), engine.StartOptions{ID: "i"})
	if err != nil || res.Status != engine.StatusWaiting || len(res.Approvals) != 2 {
		t.Fatalf("run = %+v, %v", res, err)
	}
	// The same decision is accepted below once one approval is left: the
	// refusal is for the ambiguity.
	if _, err := x.Decide(ctx, "i", engine.Decision{Approval: "approve"}, engine.ResumeOptions{}); !errors.Is(err, engine.ErrDecisionRefused) {
		t.Errorf("ambiguous decision: %v, want %v", err, engine.ErrDecisionRefused)
	}
	res, err = x.Decide(ctx, "i", engine.Decision{Approval: "reject", ApprovalID: "Each#1.0/1/Ok#1"}, engine.ResumeOptions{})
	if err != nil || res.Status != engine.StatusWaiting || len(res.Approvals) != 1 || res.Approvals[0].Prompt != "item 1?" {
		t.Fatalf("after the first decision: %+v, %v", res, err)
	}
	res, err = x.Decide(ctx, "i", engine.Decision{Approval: "approve"}, engine.ResumeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := jsonvalue.Marshal(res.Output); !strings.Contains(string(got), `"approval":"approve"`) || !strings.Contains(string(got), `"approval":"reject"`) {
		t.Errorf("output = %s", got)
	}
}

// TestApprovalNeedsAStore: without a store (durability none) a workflow
// that could wait for a decision is refused before it starts, wherever its
// Approval is nested.
func TestApprovalNeedsAStore(t *testing.T) {
	for _, tc := range []struct{ def, where string }{
		{`{"StartAt":"A","States":{"A":{"Type":"Approval","Prompt":"ok?","End":true}}}`, `state "A" is an Approval`},
		{`{"StartAt":"M","States":{"M":{"Type":"Map","ItemProcessor":{"StartAt":"P","States":{"P":{"Type":"Parallel","End":true,
			"Branches":[{"StartAt":"X","States":{"X":{"Type":"Pass","End":true}}},{"StartAt":"A","States":{"A":{"Type":"Approval","Prompt":"ok?","End":true}}}]}}},"End":true}}}`, `state "M/P/1/A" is an Approval`},
		{`{"StartAt":"W","States":{"W":{"Type":"Wait","Seconds":6,"End":true}}}`, `state "W" waits 6 seconds (longer than 5s)`},
	} {
		x := engine.New(engine.Config{})
		res, err := x.Run(context.Background(), mustParse(t, tc.def), map[string]any{}, engine.StartOptions{})
		if !errors.Is(err, engine.ErrDurability) || !strings.Contains(err.Error(), tc.where) || res != nil {
			t.Errorf("%s: Run = %v, %v; want ErrDurability naming %s", tc.def, res, err, tc.where)
		}
	}
}

// TestCheckDecision: the dry run accepts what Decide would, refuses what
// it would, reports what governance would refuse, and records nothing;
// RecordOnly records a decision without continuing the execution.
func TestCheckDecision(t *testing.T) {
	st := store.NewMemory()
	x := engine.New(engine.Config{Store: st})
	ctx := context.Background()
	def := `{"StartAt":"Edit","Governance":{"WritePolicy":{"Rules":[{"Deny":"value == 'forbidden'","Reason":"no"}]}},
		"States":{"Edit":{"Type":"Approval","Prompt":"p","Editable":{"Fields":["$.draft.text"],"ResultPath":"$.draft"},"ResultPath":"$.review","Next":"Done"},
		"Done":{"Type":"Pass","End":true}}}`
	if _, err := x.Run(ctx, mustParse(t, def), mustJSON(t, `{"draft":{"text":"helo"}}`), engine.StartOptions{ID: "c"}); err != nil {
		t.Fatal(err)
	}
	before, _ := st.History(ctx, "c")
	var ge *engine.GovernanceError
	for _, tc := range []struct {
		name string
		d    engine.Decision
		ok   bool
		gov  bool
	}{
		{"accepted", engine.Decision{Approval: "approve", Edit: mustJSON(t, `{"draft":{"text":"hello"}}`)}, true, false},
		{"not an option", engine.Decision{Approval: "ship"}, false, false},
		{"outside the fields", engine.Decision{Approval: "approve", Edit: mustJSON(t, `{"other":1}`)}, false, false},
		{"governance", engine.Decision{Approval: "approve", Edit: mustJSON(t, `{"draft":{"text":"forbidden"}}`)}, false, true},
	} {
		err := x.CheckDecision(ctx, "c", tc.d)
		switch {
		case tc.ok && err != nil:
			t.Errorf("%s: %v, want accepted", tc.name, err)
		case tc.gov && !errors.As(err, &ge):
			t.Errorf("%s: %v, want a *GovernanceError", tc.name, err)
		case !tc.ok && !tc.gov && !errors.Is(err, engine.ErrDecisionRefused):
			t.Errorf("%s: %v, want ErrDecisionRefused", tc.name, err)
		}
	}
	if after, _ := st.History(ctx, "c"); len(after) != len(before) {
		t.Errorf("CheckDecision recorded %d events", len(after)-len(before))
	}
	res, err := x.Decide(ctx, "c", engine.Decision{Approval: "approve"}, engine.ResumeOptions{RecordOnly: true})
	if err != nil || res.Status != engine.StatusRunning {
		t.Fatalf("Decide(RecordOnly) = %+v, %v; want RUNNING", res, err)
	}
	if e, _ := st.Load(ctx, "c"); e.Status != engine.StatusRunning {
		t.Errorf("stored status %s, want RUNNING", e.Status)
	}
	if res, err := x.Resume(ctx, "c", engine.ResumeOptions{}); err != nil || res.Status != engine.StatusSucceeded {
		t.Errorf("Resume after the recorded decision = %+v, %v", res, err)
	}
}
