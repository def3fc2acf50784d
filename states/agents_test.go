package states_test

import (
	"testing"

	"github.com/aslrun/aslrun/states"
)

func TestAgentRefs(t *testing.T) {
	m, err := states.Parse([]byte(`{"StartAt":"T","States":{
		"T":{"Type":"Task","Agent":"Writer","Next":"D",
			"Context":{"MaxTokens":100,"Summarize":{"Using":"Summarizer"}},
			"Guardrails":{"Input":{"Validator":"InCheck"},"Output":{"Rules":[{"Type":"length","Max":5},{"Type":"custom","Validator":"OutCheck"}]}}},
		"D":{"Type":"Debate","Agents":["A","B"],"Topic":"t","Consensus":{"Arbiter":"Judge"},"Next":"M"},
		"M":{"Type":"Map","ItemProcessor":{"StartAt":"Each","States":{"Each":{"Type":"Task","Agent":"Worker","End":true}}},"Next":"P"},
		"P":{"Type":"Parallel","Branches":[
			{"StartAt":"B0","States":{"B0":{"Type":"Task","Agent":"Left","End":true}}},
			{"StartAt":"B1","States":{"B1":{"Type":"Pass","End":true}}}],"End":true}}}`))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range m.AgentRefs() {
		got = append(got, r.State+" "+r.Field+" "+r.Agent)
	}
	want := []string{
		"D Agents A", "D Agents B", "D Consensus.Arbiter Judge",
		"M/Each Agent Worker",
		"P/0/B0 Agent Left",
		"T Agent Writer", "T Context.Summarize.Using Summarizer",
		"T Guardrails.Input.Validator InCheck", "T Guardrails.Output.Rules[1].Validator OutCheck",
	}
	if len(got) != len(want) {
		t.Fatalf("AgentRefs() = %q, want %q", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("AgentRefs()[%d] = %q, want %q", i, got[i], want[i])
		}
	}
}
