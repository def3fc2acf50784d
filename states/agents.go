package states

import (
	"maps"
	"slices"
	"strconv"
)

// AgentRef is one place where a machine names an agent.
type AgentRef struct {
	// State is the state's name, qualified by the states that nest it
	// ("Each/Work" for a state of a Map's ItemProcessor).
	State string
	// Field says which field names the agent: "Agent", "Agents",
	// "Consensus.Arbiter", "Context.Summarize.Using",
	// "Guardrails.Input.Validator", "Guardrails.Output.Rules[2].Validator",
	// "Streaming.Callbacks.OnChunk"…
	Field string
	// Agent is the name. For a Resource (Field "Resource") it is the
	// agent the resource runs by default (a Lambda function's name), and
	// may be empty.
	Agent string
	// Resource is the Task's Resource ARN when Field is "Resource", and
	// Function the Lambda function it calls as written (the ARN of a
	// function ARN, lambda:invoke's literal FunctionName), or empty. An
	// agents registry resolves them (agents.Registry.ResolveResource).
	Resource, Function string
}

// AgentRefs lists every agent m names, nested machines included, in the
// order of the states' names, then fields. A Task's Resource is listed too,
// unless it is lambda:invoke with a FunctionName computed at run time
// (which names its agent only then) or an activity (whose workers poll for
// its tasks: no agent is needed).
func (m *Machine) AgentRefs() []AgentRef {
	var out []AgentRef
	m.agentRefs("", &out)
	return out
}

func (m *Machine) agentRefs(prefix string, out *[]AgentRef) {
	for _, name := range slices.Sorted(maps.Keys(m.States)) {
		q := prefix + name
		add := func(field, agent string) {
			if agent != "" {
				*out = append(*out, AgentRef{State: q, Field: field, Agent: agent})
			}
		}
		switch s := m.States[name].(type) {
		case *Task:
			add("Agent", s.Agent)
			if r := s.Resource; r != nil && !r.dynamic() && r.Kind != Activity && !r.StartsExecution() {
				*out = append(*out, AgentRef{State: q, Field: "Resource", Agent: r.AgentName(), Resource: r.ARN, Function: r.Function()})
			}
			if c := s.Context; c != nil && c.Summarize != nil {
				add("Context.Summarize.Using", c.Summarize.Using)
			}
			if t := s.Tools; t != nil {
				if t.Before != nil {
					add("Tools.Hooks.Before.Agent", t.Before.Agent)
				}
				if t.After != nil {
					add("Tools.Hooks.After.Agent", t.After.Agent)
				}
			}
			if g := s.Guardrails; g != nil {
				for _, set := range []struct {
					name string
					s    *GuardrailSet
				}{{"Input", g.Input}, {"Output", g.Output}} {
					if set.s == nil {
						continue
					}
					add("Guardrails."+set.name+".Validator", set.s.Validator)
					for i, r := range set.s.Rules {
						add("Guardrails."+set.name+".Rules["+strconv.Itoa(i)+"].Validator", r.Validator)
					}
				}
			}
			if st := s.Streaming; st != nil {
				add("Streaming.Callbacks.OnChunk", st.OnChunk)
				add("Streaming.Callbacks.OnComplete", st.OnComplete)
				add("Streaming.Callbacks.OnError", st.OnError)
			}
		case *Debate:
			for _, a := range s.Agents {
				add("Agents", a)
			}
			if c := s.Consensus; c != nil {
				add("Consensus.Arbiter", c.Arbiter)
			}
		case *Map:
			if s.Processor != nil {
				s.Processor.agentRefs(q+"/", out)
			}
		case *Parallel:
			for i, b := range s.Branches {
				b.agentRefs(q+"/"+strconv.Itoa(i)+"/", out)
			}
		}
	}
}
