package engine_test

import (
	"context"
	"strings"
	"testing"

	"github.com/aslrun/aslrun/agents"
	"github.com/aslrun/aslrun/engine"
)

// TestDebateSimultaneousLargeAnswers: the agents of a simultaneous round
// answer together with answers large enough to be measured against the
// payload limit and remembered by the scope's size cache; the round must
// not race (run under -race) and every answer is kept.
func TestDebateSimultaneousLargeAnswers(t *testing.T) {
	reg := agents.NewRegistry()
	names := []string{"A", "B", "C", "D"}
	for _, n := range names {
		reg.Register(n, agents.DirectFunc(func(_ context.Context, req *agents.Request) (any, error) {
			return map[string]any{"position": "same", "argument": strings.Repeat(n, 600), "more": map[string]any{"text": strings.Repeat("x", 400)}}, nil
		}))
	}
	def := `{"StartAt":"D","States":{"D":{"Type":"Debate","Agents":["A","B","C","D"],"Rounds":3,"Topic":"t",
		"Communication":{"Style":"simultaneous"},"Consensus":{"Threshold":1},"ResultPath":"$.r","End":true}}}`
	for range 5 {
		x := engine.New(engine.Config{Agents: reg, MaxPayloadSize: 1 << 20})
		res, err := x.Run(context.Background(), mustParse(t, def), mustJSON(t, `{}`), engine.StartOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if res.Status != engine.StatusSucceeded {
			t.Fatalf("%s %s %s", res.Status, res.Error, res.Cause)
		}
		r := res.Output.(map[string]any)["r"].(map[string]any)
		if got := len(r["responses"].([]any)); got != 12 || r["decision"] != "same" {
			t.Fatalf("%d responses, decision %v", got, r["decision"])
		}
	}
}
