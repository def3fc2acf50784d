// Package fake is a scripted models.Model for tests of the packages that use
// one: it answers each Send with the next scripted Step and records every
// Turn it got.
package fake

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"

	asl "github.com/aslrun/aslrun"
	"github.com/aslrun/aslrun/models"
)

// Step is the answer to one Send: Reply, or Err when it is set.
type Step struct {
	Reply *models.Reply
	// Err is returned as it is (a *models.Error, for a faithful fake).
	Err error
	// Deltas, when set, are what a streaming Send passes to its stream
	// function; without them it passes Reply.Text as one delta (none when
	// the text is empty).
	Deltas []string
}

// Model is the fake Model. It is safe for concurrent use; concurrent Sends
// take the steps in the order they lock it.
type Model struct {
	mu    sync.Mutex
	steps []Step
	turns []models.Turn
}

var _ models.Model = (*Model)(nil)

// New returns a Model that answers its Sends with steps, in order.
func New(steps ...Step) *Model {
	return &Model{steps: slices.Clone(steps)}
}

// Send records a copy of t and answers with the next step: a copy of its
// Reply, or its Err. A Send beyond the steps, or with ctx already done,
// fails with a *models.Error (the latter wrapping ctx's error).
func (m *Model) Send(ctx context.Context, t *models.Turn, stream func(delta string)) (*models.Reply, error) {
	m.mu.Lock()
	n := len(m.turns)
	if t != nil {
		m.turns = append(m.turns, copyTurn(*t))
	} else {
		m.turns = append(m.turns, models.Turn{})
	}
	var step Step
	if n < len(m.steps) {
		step = m.steps[n]
	}
	m.mu.Unlock()

	if err := ctx.Err(); err != nil {
		return nil, &models.Error{Name: asl.ErrAgentModelError, Provider: "fake", Message: "canceled", Err: err}
	}
	if n >= len(m.steps) {
		return nil, &models.Error{Name: asl.ErrAgentModelError, Provider: "fake", Message: fmt.Sprintf("send %d, but only %d steps are scripted", n+1, len(m.steps))}
	}
	if step.Err != nil {
		return nil, step.Err
	}
	if step.Reply == nil {
		return nil, &models.Error{Name: asl.ErrAgentModelError, Provider: "fake", Message: fmt.Sprintf("step %d has neither Reply nor Err", n+1)}
	}
	if stream != nil {
		deltas := step.Deltas
		if deltas == nil && step.Reply.Text != "" {
			deltas = []string{step.Reply.Text}
		}
		for _, d := range deltas {
			stream(d)
		}
	}
	r := *step.Reply
	r.ToolCalls = copyCalls(r.ToolCalls)
	return &r, nil
}

// Sends returns how many times Send was called.
func (m *Model) Sends() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.turns)
}

// Turns returns copies of the turns Send got, in order.
func (m *Model) Turns() []models.Turn {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]models.Turn, len(m.turns))
	for i, t := range m.turns {
		out[i] = copyTurn(t)
	}
	return out
}

// copyTurn returns a deep copy of t.
func copyTurn(t models.Turn) models.Turn {
	t.Messages = slices.Clone(t.Messages)
	for i := range t.Messages {
		t.Messages[i].ToolCalls = copyCalls(t.Messages[i].ToolCalls)
	}
	t.Tools = slices.Clone(t.Tools)
	for i := range t.Tools {
		t.Tools[i].Schema = copyRaw(t.Tools[i].Schema)
	}
	if p := t.Generation.Temperature; p != nil {
		v := *p
		t.Generation.Temperature = &v
	}
	if p := t.Generation.TopP; p != nil {
		v := *p
		t.Generation.TopP = &v
	}
	t.Generation.StopSequences = slices.Clone(t.Generation.StopSequences)
	t.ResultSchema = copyRaw(t.ResultSchema)
	return t
}

func copyCalls(calls []models.ToolCall) []models.ToolCall {
	calls = slices.Clone(calls)
	for i := range calls {
		calls[i].Arguments = copyRaw(calls[i].Arguments)
	}
	return calls
}

func copyRaw(r json.RawMessage) json.RawMessage {
	if r == nil {
		return nil
	}
	return slices.Clone(r)
}
