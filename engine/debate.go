package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"

	"golang.org/x/sync/errgroup"

	asl "github.com/aslrun/aslrun"
	"github.com/aslrun/aslrun/jsonvalue"
	"github.com/aslrun/aslrun/states"
)

// EventDebateRound is the own history event recorded when a Debate round
// ends (its turns are committed with it).
const EventDebateRound = "DebateRoundCompleted"

// turn is one debater's answer in one round.
type turn struct {
	round    int64
	agent    string
	response any
}

func (t turn) value() map[string]any {
	return map[string]any{"round": jsonvalue.IntNumber(t.round), "agent": t.agent, "response": t.response}
}

// debate runs one attempt of a Debate (DESIGN.md §3): the debaters answer
// round after round, in order (turn_based: each sees the turns before it)
// or all at once (simultaneous: each sees the earlier rounds), each seeing
// the history VisibleHistory allows; then the final positions are
// compared for consensus, and an Arbiter decides when it is not reached.
// Each finished round is committed: a resumed execution goes on with the
// next round.
func (h *stateRun) debate(ctx context.Context, s *states.Debate, raw any) (stepResult, error) {
	input, err := h.inputPath(raw)
	if err != nil {
		return stepResult{}, err
	}
	topic, err := h.topic(s, input)
	if err != nil {
		return stepResult{}, err
	}
	var params any
	if s.Parameters != nil {
		if params, _, err = h.template(s.Parameters, input, h.inSize); err != nil {
			return stepResult{}, err
		}
	}
	order := s.Communication.Order
	if len(order) == 0 {
		order = s.Agents
	}
	rounds := s.Rounds
	if rounds <= 0 {
		rounds = 3
	}
	turns, err := h.debateProgress()
	if err != nil {
		return stepResult{}, err
	}
	// The transcript is held to the payload limit as it grows: the round
	// that passes it fails the state.
	transcript := 2
	for _, t := range turns {
		transcript += jsonvalue.Size(t.value()) + 1
	}
	h.drop = append(h.drop, h.nestedPrefix())
	for round := int64(len(turns)/len(order)) + 1; round <= rounds; round++ {
		var next []turn
		if s.Communication.Style == "simultaneous" {
			next, err = h.simultaneousRound(ctx, s, order, topic, params, round, turns)
		} else {
			next, err = h.turnBasedRound(ctx, s, order, topic, params, round, turns)
		}
		if err != nil {
			return stepResult{}, err
		}
		turns = append(turns, next...)
		value := turnsValue(next)
		for _, v := range value {
			transcript += jsonvalue.Size(v) + 1
		}
		if limit := h.r.maxPayload; limit >= 0 && transcript > limit {
			return stepResult{}, h.dataLimitError(turnsValue(turns))
		}
		h.r.ownEvent(Event{Type: EventDebateRound, State: h.name(), Scope: h.sc.prefix, Document: raw,
			Detail: map[string]any{"round": jsonvalue.IntNumber(round), "turns": value}})
		if h.r.x.durable {
			// Each round's turns are committed once, under a key of their
			// own: a resumed execution goes on with the next round.
			c := &Commit{Scopes: map[string]*Scope{h.roundKey(round): {Done: true, Output: value}}}
			if err := h.r.commit(ctx, nil, h.sc.settle(c)); err != nil {
				return stepResult{}, err
			}
		}
	}
	result, err := h.debateResult(ctx, s, order, topic, params, rounds, turns)
	if err != nil {
		return stepResult{}, err
	}
	size, err := h.fits(result, unknownSize)
	if err != nil {
		return stepResult{}, err
	}
	return h.finish(raw, result, size, s.ResultPath)
}

// topic is the Debate's topic: Topic, or TopicPath / Topic.$ on the input.
func (h *stateRun) topic(s *states.Debate, input any) (any, error) {
	if s.TopicExpr == nil {
		return s.Topic, nil
	}
	v, err := s.TopicExpr.Eval(input, h.env)
	if err != nil {
		return nil, h.pathError(err)
	}
	return v, nil
}

// roundKey is the scope key under which a round's turns are committed.
func (h *stateRun) roundKey(round int64) string {
	return h.nestedKey() + "round-" + strconv.FormatInt(round, 10)
}

// debateProgress returns the turns committed before the execution was
// resumed in the middle of this Debate: each round's under its key (or, as
// executions stored before rounds had keys of their own, the whole list in
// the state's progress).
func (h *stateRun) debateProgress() ([]turn, error) {
	var list []any
	if p := h.progress; p != nil && p.Debate != nil {
		l, ok := p.Debate.([]any)
		if !ok {
			return nil, fmt.Errorf("state %s: stored debate progress is %s, not a list of turns", h.name(), jsonvalue.TypeName(p.Debate))
		}
		list = l
	}
	for round := int64(1); ; round++ {
		sc := h.r.loaded[h.roundKey(round)]
		if sc == nil {
			break
		}
		l, ok := sc.Output.([]any)
		if !ok {
			return nil, fmt.Errorf("state %s: stored debate round %d is %s, not a list of turns", h.name(), round, jsonvalue.TypeName(sc.Output))
		}
		list = append(list, l...)
	}
	turns := make([]turn, 0, len(list))
	for i, v := range list {
		obj, _ := v.(map[string]any)
		n, _ := obj["round"].(json.Number)
		round, okRound := jsonvalue.Int64(n)
		agent, okAgent := obj["agent"].(string)
		if !okRound || !okAgent {
			return nil, fmt.Errorf("state %s: stored debate turn %d is not {round, agent, response}", h.name(), i)
		}
		turns = append(turns, turn{round: round, agent: agent, response: obj["response"]})
	}
	return turns, nil
}

func turnsValue(turns []turn) []any {
	out := make([]any, len(turns))
	for i, t := range turns {
		out[i] = t.value()
	}
	return out
}

// visible is the history one debater sees before answering.
func visible(style string, turns []turn, agent string) []any {
	out := []any{}
	switch style {
	case "none":
		return out
	case "own", "own_only":
		for _, t := range turns {
			if t.agent == agent {
				out = append(out, t.value())
			}
		}
		return out
	}
	return turnsValue(turns)
}

// debateCall asks one debater for its turn. The history records the call's
// input with the number of turns it saw in place of the turns themselves,
// which the DebateRoundCompleted events hold: a transcript is stored once,
// not again with every call.
func (h *stateRun) debateCall(ctx context.Context, agent string, topic, params any, round int64, history []any) (any, error) {
	input := map[string]any{"topic": topic, "round": jsonvalue.IntNumber(round), "history": history, "parameters": params}
	logged := map[string]any{"topic": topic, "round": jsonvalue.IntNumber(round), "historyTurns": jsonvalue.IntNumber(int64(len(history))), "parameters": params}
	out, _, err := h.callAgent(ctx, &states.Task{Agent: agent}, "round-"+strconv.FormatInt(round, 10)+"/"+agent, input, logged, 0, 0)
	return out, err
}

func (h *stateRun) turnBasedRound(ctx context.Context, s *states.Debate, order []string, topic, params any, round int64, turns []turn) ([]turn, error) {
	var next []turn
	for _, agent := range order {
		all := append(turns[:len(turns):len(turns)], next...)
		resp, err := h.debateCall(ctx, agent, topic, params, round, visible(s.Communication.VisibleHistory, all, agent))
		if err != nil {
			return nil, err
		}
		next = append(next, turn{round: round, agent: agent, response: resp})
	}
	return next, nil
}

func (h *stateRun) simultaneousRound(ctx context.Context, s *states.Debate, order []string, topic, params any, round int64, turns []turn) ([]turn, error) {
	next := make([]turn, len(order))
	g, gctx := errgroup.WithContext(ctx)
	for i, agent := range order {
		history := visible(s.Communication.VisibleHistory, turns, agent)
		g.Go(func() error {
			resp, err := h.debateCall(gctx, agent, topic, params, round, history)
			if err != nil {
				return err
			}
			next[i] = turn{round: round, agent: agent, response: resp}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	return next, nil
}

// position is what a debater's answer stands for: its "position" (or
// "decision") field when it is an object, else the answer itself.
func position(resp any) any {
	if obj, ok := resp.(map[string]any); ok {
		if p, ok := obj["position"]; ok {
			return p
		}
		if d, ok := obj["decision"]; ok {
			return d
		}
	}
	return resp
}

// debateResult builds the Debate's result: the final positions' agreement
// (the largest share of debaters holding the same position), consensus
// when it reaches Threshold, and the decision: the agreed position, else
// the Arbiter's, else none (Agent.NoConsensus when consensus is Required).
func (h *stateRun) debateResult(ctx context.Context, s *states.Debate, order []string, topic, params any, rounds int64, turns []turn) (any, error) {
	final := turns[len(turns)-len(order):]
	best, bestCount := any(nil), 0
	for _, t := range final {
		p, count := position(t.response), 0
		for _, u := range final {
			if jsonvalue.Equal(p, position(u.response)) {
				count++
			}
		}
		if count > bestCount {
			best, bestCount = p, count
		}
	}
	agreement := float64(bestCount) / float64(len(final))
	result := map[string]any{
		"topic": topic, "rounds": jsonvalue.IntNumber(rounds), "participants": stringsJSON(order),
		"responses": turnsValue(turns), "agreement": jsonvalue.FloatNumber(agreement),
		"decision": nil, "consensus": nil,
	}
	c := s.Consensus
	if c == nil {
		return result, nil
	}
	threshold := c.Threshold
	if threshold <= 0 {
		threshold = 1
	}
	consensus := agreement >= threshold
	result["consensus"] = consensus
	switch {
	case consensus:
		result["decision"] = best
	case c.Arbiter != "":
		resp, err := h.debateCall(ctx, c.Arbiter, topic, params, rounds+1, turnsValue(turns))
		if err != nil {
			return nil, err
		}
		result["decision"] = position(resp)
		result["arbiter"] = c.Arbiter
	case c.Required:
		return nil, asl.Errorf(asl.ErrAgentNoConsensus, "the debate reached %.0f%% agreement after %d rounds, short of the %.0f%% its Consensus requires, and has no Arbiter",
			agreement*100, rounds, threshold*100)
	}
	return result, nil
}
