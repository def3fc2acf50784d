package engine_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"testing/synctest"

	asl "github.com/aslrun/aslrun"
	"github.com/aslrun/aslrun/agents"
	"github.com/aslrun/aslrun/engine"
	"github.com/aslrun/aslrun/jsonvalue"
	"github.com/aslrun/aslrun/store"
)

// debaters answers as a script says: positions[agent][round-1] is the
// debater's position in that round (the last one holds for later rounds).
// It records every call's input and key, and can crash during one call.
type debaters struct {
	positions map[string][]string
	mu        sync.Mutex
	inputs    []map[string]any // in call order
	agentsBy  []string
	keys      []string
	crashAt   int
	cancel    context.CancelFunc
	failAt    int // 1-based call that fails with Agent.ModelError
}

func (d *debaters) agent() agents.Agent {
	return agents.Func(func(ctx context.Context, req *agents.Request) (any, error) {
		in := req.Input.(map[string]any)
		d.mu.Lock()
		d.inputs = append(d.inputs, in)
		d.agentsBy = append(d.agentsBy, req.Agent)
		d.keys = append(d.keys, req.IdempotencyKey())
		n := len(d.keys)
		d.mu.Unlock()
		if n == d.crashAt {
			d.cancel()
			<-ctx.Done()
			return nil, ctx.Err()
		}
		if n == d.failAt {
			return nil, asl.Errorf(asl.ErrAgentModelError, "model unavailable")
		}
		round, _ := jsonvalue.Int64(in["round"].(json.Number))
		script := d.positions[req.Agent]
		if len(script) == 0 {
			return nil, fmt.Errorf("no script for %s", req.Agent)
		}
		pos := script[min(int(round), len(script))-1]
		return map[string]any{"position": pos, "argument": req.Agent + " says " + pos}, nil
	})
}

func (d *debaters) registry(t *testing.T) *agents.Registry {
	names := make([]string, 0, len(d.positions))
	for n := range d.positions {
		names = append(names, n)
	}
	return registry(t, d.agent(), names...)
}

// seen is what the n-th call (0-based) saw: "agent@round" for each turn in
// its history.
func (d *debaters) seen(n int) string {
	d.mu.Lock()
	defer d.mu.Unlock()
	var out []string
	for _, h := range d.inputs[n]["history"].([]any) {
		t := h.(map[string]any)
		out = append(out, fmt.Sprint(t["agent"], "@", t["round"]))
	}
	return strings.Join(out, " ")
}

func (d *debaters) order() string {
	d.mu.Lock()
	defer d.mu.Unlock()
	var out []string
	for i, a := range d.agentsBy {
		out = append(out, fmt.Sprint(a, "@", d.inputs[i]["round"]))
	}
	return strings.Join(out, " ")
}

func runDebate(t *testing.T, d *debaters, def, input string) *engine.Result {
	t.Helper()
	x := engine.New(engine.Config{Agents: d.registry(t)})
	res, err := x.Run(context.Background(), mustParse(t, def), mustJSON(t, input), engine.StartOptions{})
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	return res
}

func debateDef(fields string) string {
	return `{"StartAt":"D","States":{"D":{"Type":"Debate","Agents":["A","B"],"Topic":"tabs or spaces",` + fields + `,"End":true}}}`
}

func TestDebateTurnBasedSeesEarlierTurns(t *testing.T) {
	d := &debaters{positions: map[string][]string{"A": {"tabs", "spaces"}, "B": {"spaces"}}}
	res := runDebate(t, d, debateDef(`"Rounds":2,"Consensus":{"Threshold":1},"ResultPath":"$.debate"`), `{"n":1}`)
	wantOutput(t, res, `{"n":1,"debate":{"topic":"tabs or spaces","rounds":2,"participants":["A","B"],
		"responses":[
			{"round":1,"agent":"A","response":{"position":"tabs","argument":"A says tabs"}},
			{"round":1,"agent":"B","response":{"position":"spaces","argument":"B says spaces"}},
			{"round":2,"agent":"A","response":{"position":"spaces","argument":"A says spaces"}},
			{"round":2,"agent":"B","response":{"position":"spaces","argument":"B says spaces"}}],
		"agreement":1,"consensus":true,"decision":"spaces"}}`)
	if got := d.order(); got != "A@1 B@1 A@2 B@2" {
		t.Errorf("call order %q", got)
	}
	for i, want := range []string{"", "A@1", "A@1 B@1", "A@1 B@1 A@2"} {
		if got := d.seen(i); got != want {
			t.Errorf("call %d saw %q, want %q", i, got, want)
		}
	}
	if topic := d.inputs[0]["topic"]; topic != "tabs or spaces" {
		t.Errorf("topic %v", topic)
	}
	if p, ok := d.inputs[0]["parameters"]; !ok || p != nil {
		t.Errorf("parameters = %v (present %v), want null", p, ok)
	}
}

func TestDebateCommunication(t *testing.T) {
	cases := []struct {
		name, comm, order string
		seen              []string
	}{
		{"simultaneous sees earlier rounds only", `"Style":"simultaneous"`, "",
			[]string{"", "", "A@1 B@1", "A@1 B@1"}},
		{"own history", `"VisibleHistory":"own"`, "A@1 B@1 A@2 B@2",
			[]string{"", "", "A@1", "B@1"}},
		{"own_only spelling", `"VisibleHistory":"own_only"`, "A@1 B@1 A@2 B@2",
			[]string{"", "", "A@1", "B@1"}},
		{"no history", `"VisibleHistory":"none"`, "A@1 B@1 A@2 B@2",
			[]string{"", "", "", ""}},
		{"speaking order", `"Order":["B","A"]`, "B@1 A@1 B@2 A@2",
			[]string{"", "B@1", "B@1 A@1", "B@1 A@1 B@2"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d := &debaters{positions: map[string][]string{"A": {"x"}, "B": {"y"}}}
			runDebate(t, d, debateDef(`"Rounds":2,"Communication":{`+c.comm+`}`), `{}`)
			if c.order != "" {
				if got := d.order(); got != c.order {
					t.Errorf("call order %q, want %q", got, c.order)
				}
			}
			// Simultaneous calls may come in any order: compare by agent
			// and round.
			got := map[string]string{}
			for i := range d.inputs {
				got[fmt.Sprint(d.agentsBy[i], "@", d.inputs[i]["round"])] = d.seen(i)
			}
			want := map[string]string{}
			keys := strings.Fields(c.order)
			if keys == nil {
				keys = []string{"A@1", "B@1", "A@2", "B@2"}
			}
			for i, k := range keys {
				want[k] = c.seen[i]
			}
			for k, w := range want {
				if got[k] != w {
					t.Errorf("%s saw %q, want %q", k, got[k], w)
				}
			}
		})
	}
}

func TestDebateConsensus(t *testing.T) {
	three := map[string][]string{"A": {"go"}, "B": {"go"}, "C": {"rust"}, "Judge": {"zig"}}
	cases := []struct {
		name, consensus, want string
		wantErr               asl.ErrorName
		calls                 int
	}{
		{"no Consensus block", `"ResultPath":"$.r"`, `{"r":{"agreement":0.6666666666666666,"consensus":null,"decision":null}}`, "", 3},
		{"threshold met", `"Consensus":{"Threshold":0.6},"ResultPath":"$.r"`, `{"r":{"agreement":0.6666666666666666,"consensus":true,"decision":"go"}}`, "", 3},
		{"unanimity missed, not required", `"Consensus":{},"ResultPath":"$.r"`, `{"r":{"agreement":0.6666666666666666,"consensus":false,"decision":null}}`, "", 3},
		{"arbiter decides", `"Consensus":{"Threshold":0.9,"Arbiter":"Judge"},"ResultPath":"$.r"`, `{"r":{"agreement":0.6666666666666666,"consensus":false,"decision":"zig","arbiter":"Judge"}}`, "", 4},
		{"required without arbiter", `"Consensus":{"Required":true},"ResultPath":"$.r"`, "", asl.ErrAgentNoConsensus, 3},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d := &debaters{positions: three}
			def := `{"StartAt":"D","States":{"D":{"Type":"Debate","Agents":["A","B","C"],"Rounds":1,"Topic":"t",` + c.consensus + `,"Next":"Pick"},
				"Pick":{"Type":"Pass","Parameters":{"r":{"agreement.$":"$.r.agreement","consensus.$":"$.r.consensus","decision.$":"$.r.decision"}},"End":true}}}`
			if strings.Contains(c.consensus, "Arbiter") {
				def = strings.Replace(def, `"decision.$":"$.r.decision"`, `"decision.$":"$.r.decision","arbiter.$":"$.r.arbiter"`, 1)
			}
			res := runDebate(t, d, def, `{}`)
			if c.wantErr != "" {
				wantError(t, res, c.wantErr, "short of the 100% its Consensus requires")
			} else {
				wantOutput(t, res, c.want)
			}
			if len(d.inputs) != c.calls {
				t.Errorf("%d calls, want %d", len(d.inputs), c.calls)
			}
			if c.calls == 4 {
				judge := d.inputs[3]
				if d.agentsBy[3] != "Judge" || judge["round"] != json.Number("2") || len(judge["history"].([]any)) != 3 {
					t.Errorf("the arbiter was called as %s with %v", d.agentsBy[3], judge)
				}
			}
		})
	}
}

func TestDebateTopicAndParameters(t *testing.T) {
	d := &debaters{positions: map[string][]string{"A": {"x"}, "B": {"x"}}}
	def := `{"StartAt":"D","States":{"D":{"Type":"Debate","Agents":["A","B"],"Rounds":1,"TopicPath":"$.q",
		"Parameters":{"lang.$":"$.lang","fixed":1},"ResultPath":"$.r","Next":"P"},
		"P":{"Type":"Pass","Parameters":{"t.$":"$.r.topic"},"End":true}}}`
	wantOutput(t, runDebate(t, d, def, `{"q":{"title":"pick one"},"lang":"go"}`), `{"t":{"title":"pick one"}}`)
	if p := d.inputs[1]["parameters"]; !jsonvalue.Equal(p, mustJSON(t, `{"lang":"go","fixed":1}`)) {
		t.Errorf("parameters %v", p)
	}
	def = strings.Replace(def, `"TopicPath":"$.q"`, `"Topic.$":"States.Format('about {}', $.lang)"`, 1)
	wantOutput(t, runDebate(t, d, def, `{"lang":"go"}`), `{"t":"about go"}`)
	def = strings.Replace(def, `"Topic.$":"States.Format('about {}', $.lang)"`, `"TopicPath":"$.missing"`, 1)
	wantError(t, runDebate(t, d, def, `{}`), asl.ErrRuntime, "$.missing")
}

func TestDebateNoConsensusIsCatchable(t *testing.T) {
	d := &debaters{positions: map[string][]string{"A": {"x"}, "B": {"y"}}}
	def := `{"StartAt":"D","States":{"D":{"Type":"Debate","Agents":["A","B"],"Rounds":1,"Topic":"t","Consensus":{"Required":true},
		"Catch":[{"ErrorEquals":["Agent.NoConsensus"],"ResultPath":"$.err","Next":"Done"}],"End":true},
		"Done":{"Type":"Pass","Parameters":{"e.$":"$.err.Error"},"End":true}}}`
	wantOutput(t, runDebate(t, d, def, `{}`), `{"e":"Agent.NoConsensus"}`)
}

// A Retry runs the whole debate again as a new attempt.
func TestDebateRetry(t *testing.T) {
	d := &debaters{positions: map[string][]string{"A": {"x"}, "B": {"x"}}, failAt: 3}
	def := `{"StartAt":"D","States":{"D":{"Type":"Debate","Agents":["A","B"],"Rounds":2,"Topic":"t",
		"Retry":[{"ErrorEquals":["Agent.ModelError"],"IntervalSeconds":1,"MaxAttempts":1}],"Next":"P"},
		"P":{"Type":"Pass","Parameters":{"n.$":"States.ArrayLength($.responses)"},"End":true}}}`
	synctest.Test(t, func(t *testing.T) {
		wantOutput(t, runDebate(t, d, def, `{}`), `{"n":4}`)
	})
	if got := d.order(); got != "A@1 B@1 A@2 A@1 B@1 A@2 B@2" {
		t.Errorf("calls %q", got)
	}
	if d.keys[0] == d.keys[3] {
		t.Errorf("the retry reused the idempotency key %s", d.keys[0])
	}
}

// TestDebateResumesAtTheRound crashes the process during each call of a
// 3-round debate and checks that the resumed execution makes only the
// call in flight again: finished rounds are committed.
func TestDebateResumesAtTheRound(t *testing.T) {
	def := mustParse(t, debateDef(`"Rounds":3,"Consensus":{"Threshold":1}`))
	positions := map[string][]string{"A": {"a", "b", "c"}, "B": {"c"}}
	clean := &debaters{positions: positions}
	want, err := engine.New(engine.Config{Agents: clean.registry(t), Store: store.NewMemory()}).
		Run(context.Background(), def, mustJSON(t, `{}`), engine.StartOptions{ID: "e"})
	if err != nil || want.Status != engine.StatusSucceeded {
		t.Fatalf("clean run: %v %+v", err, want)
	}
	for crash := 1; crash <= 6; crash++ {
		t.Run("crash at call "+itoa(crash), func(t *testing.T) {
			st := store.NewMemory()
			ctx, cancel := context.WithCancel(context.Background())
			d := &debaters{positions: positions, crashAt: crash, cancel: cancel}
			_, err := engine.New(engine.Config{Agents: d.registry(t), Store: st}).Run(ctx, def, mustJSON(t, `{}`), engine.StartOptions{ID: "e"})
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("run: %v, want context.Canceled", err)
			}
			res, err := engine.New(engine.Config{Agents: d.registry(t), Store: st}).Resume(context.Background(), "e", engine.ResumeOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if !jsonvalue.Equal(res.Output, want.Output) {
				t.Fatalf("resumed output %v, want %v", res.Output, want.Output)
			}
			// The calls of the crashed call's round before it are made
			// again (a round is committed whole), earlier rounds never.
			roundStart := (crash-1)/2*2 + 1
			if got, wantCalls := len(d.keys), 6+crash-roundStart+1; got != wantCalls {
				t.Errorf("%d calls, want %d: %v", got, wantCalls, d.keys)
			}
			hist, err := st.History(context.Background(), "e")
			if err != nil {
				t.Fatal(err)
			}
			rounds := 0
			for _, e := range hist {
				if e.Type == engine.EventDebateRound {
					rounds++
				}
			}
			if rounds != 3 {
				t.Errorf("%d %s events, want 3", rounds, engine.EventDebateRound)
			}
		})
	}
}

// TestDebateTranscriptBounded: the transcript is held to the payload limit
// as it grows (the round that passes it fails the state, and no later
// round is run), and the history records each turn once, not the
// transcript again with every call.
func TestDebateTranscriptBounded(t *testing.T) {
	long := strings.Repeat("x", 5000)
	calls := 0
	var mu sync.Mutex
	talker := agents.Func(func(ctx context.Context, req *agents.Request) (any, error) {
		mu.Lock()
		calls++
		mu.Unlock()
		return map[string]any{"position": "same", "argument": long}, nil
	})
	reg := registry(t, talker, "A", "B", "C")
	def := mustParse(t, `{"StartAt":"D","States":{"D":{"Type":"Debate","Agents":["A","B","C"],"Topic":"t","Rounds":100,"End":true}}}`)
	ctx := context.Background()

	// Each round adds about 15 KB: a 40,000-byte limit is passed in round 3.
	st := store.NewMemory()
	x := engine.New(engine.Config{Agents: reg, Store: st, MaxPayloadSize: 40000})
	res, err := x.Run(ctx, def, mustJSON(t, `{}`), engine.StartOptions{ID: "big"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Error != string(asl.ErrDataLimitExceeded) || res.Payload == nil || res.Payload.Limit != 40000 {
		t.Fatalf("result %s %s %+v, want States.DataLimitExceeded with the limit", res.Status, res.Error, res.Payload)
	}
	if calls != 9 {
		t.Errorf("%d calls, want 9: the debate must stop at round 3", calls)
	}

	// Ten rounds under the default limit: every turn is stored once.
	calls = 0
	st = store.NewMemory()
	x = engine.New(engine.Config{Agents: reg, Store: st})
	def10 := mustParse(t, `{"StartAt":"D","States":{"D":{"Type":"Debate","Agents":["A","B","C"],"Topic":"t","Rounds":10,"End":true}}}`)
	if res, err := x.Run(ctx, def10, mustJSON(t, `{}`), engine.StartOptions{ID: "ten"}); err != nil || res.Status != engine.StatusSucceeded {
		t.Fatalf("ten rounds: %+v %v", res, err)
	}
	hist, err := st.History(ctx, "ten")
	if err != nil {
		t.Fatal(err)
	}
	stored := 0
	for _, e := range hist {
		if e.Type == engine.EventExecutionSucceeded {
			continue // the result holds the transcript once
		}
		stored += jsonvalue.Size(e.Input) + jsonvalue.Size(e.Output) + jsonvalue.Size(e.Detail)
	}
	// 30 turns of 5 KB are 150 KB, stored three times: each call's output,
	// its round's DebateRoundCompleted event, the state's output. Sending
	// the transcript with every call would add 30·15·5 KB ≈ 2.3 MB.
	if stored > 500_000 {
		t.Errorf("the history of a 10-round debate holds %d bytes of documents, want the transcript three times (≤ 500,000)", stored)
	}
}
