package fake_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	asl "github.com/aslrun/aslrun"
	"github.com/aslrun/aslrun/models"
	"github.com/aslrun/aslrun/models/fake"
)

func Example() {
	m := fake.New(
		fake.Step{Reply: &models.Reply{ToolCalls: []models.ToolCall{{ID: "c1", Name: "add", Arguments: json.RawMessage(`{"a":1,"b":2}`)}}}},
		fake.Step{Reply: &models.Reply{Text: "1 + 2 = 3"}, Deltas: []string{"1 + 2", " = 3"}},
	)
	ctx := context.Background()
	turn := &models.Turn{Messages: []models.Message{{Role: models.RoleUser, Content: "1 + 2?"}}}
	r, _ := m.Send(ctx, turn, nil)
	fmt.Println(r.ToolCalls[0].Name, string(r.ToolCalls[0].Arguments))

	turn.Messages = append(turn.Messages,
		models.Message{Role: models.RoleAssistant, ToolCalls: r.ToolCalls},
		models.Message{Role: models.RoleTool, ToolCallID: "c1", Content: "3"})
	r, _ = m.Send(ctx, turn, func(d string) { fmt.Printf("delta %q\n", d) })
	fmt.Println(r.Text)

	_, err := m.Send(ctx, turn, nil)
	fmt.Println(err)
	fmt.Println(m.Sends(), len(m.Turns()[1].Messages))
	// Output:
	// add {"a":1,"b":2}
	// delta "1 + 2"
	// delta " = 3"
	// 1 + 2 = 3
	// Agent.ModelError: fake: send 3, but only 2 steps are scripted
	// 3 3
}

func TestFakeRecordsDeepCopies(t *testing.T) {
	m := fake.New(fake.Step{Reply: &models.Reply{Text: "ok", ToolCalls: []models.ToolCall{{ID: "c", Name: "n", Arguments: json.RawMessage(`{}`)}}}})
	temp := 0.5
	turn := &models.Turn{
		Messages:   []models.Message{{Role: models.RoleAssistant, ToolCalls: []models.ToolCall{{ID: "a", Name: "x", Arguments: json.RawMessage(`{"k":1}`)}}}},
		Tools:      []models.ToolSpec{{Name: "x", Schema: json.RawMessage(`{"type":"object"}`)}},
		Generation: models.Generation{Temperature: &temp, StopSequences: []string{"S"}},
	}
	r, err := m.Send(t.Context(), turn, nil)
	if err != nil {
		t.Fatalf("Send: %v", err)
	}
	// Changing what was sent and what came back changes nothing recorded.
	turn.Messages[0].ToolCalls[0].Arguments[2] = 'X'
	turn.Tools[0].Schema[2] = 'X'
	temp = 9
	turn.Generation.StopSequences[0] = "X"
	r.ToolCalls[0].Arguments[0] = 'X'

	got := m.Turns()[0]
	if s := string(got.Messages[0].ToolCalls[0].Arguments); s != `{"k":1}` {
		t.Errorf("recorded arguments = %s, want {\"k\":1}", s)
	}
	if s := string(got.Tools[0].Schema); s != `{"type":"object"}` {
		t.Errorf("recorded schema = %s", s)
	}
	if *got.Generation.Temperature != 0.5 || got.Generation.StopSequences[0] != "S" {
		t.Errorf("recorded generation = %+v", got.Generation)
	}
}

func TestFakeRepliesAreCopies(t *testing.T) {
	step := fake.Step{Reply: &models.Reply{ToolCalls: []models.ToolCall{{ID: "c", Name: "n", Arguments: json.RawMessage(`{}`)}}}}
	m := fake.New(step, step)
	first, _ := m.Send(t.Context(), &models.Turn{}, nil)
	first.ToolCalls[0].Arguments[0] = 'X'
	first.ToolCalls[0].Name = "changed"
	second, _ := m.Send(t.Context(), &models.Turn{}, nil)
	if got := second.ToolCalls[0]; string(got.Arguments) != "{}" || got.Name != "n" {
		t.Errorf("second reply = %+v, want the scripted one unchanged", got)
	}
}

func TestFakeErrors(t *testing.T) {
	scripted := &models.Error{Name: asl.ErrRateLimitExceeded, Provider: "fake", Status: 429}
	m := fake.New(fake.Step{Err: scripted}, fake.Step{Reply: &models.Reply{Text: "x"}})
	if _, err := m.Send(t.Context(), &models.Turn{}, nil); !errors.Is(err, scripted) {
		t.Errorf("Send = %v, want the scripted error", err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	_, err := m.Send(ctx, &models.Turn{}, nil)
	var me *models.Error
	if !errors.Is(err, context.Canceled) || !errors.As(err, &me) {
		t.Errorf("Send with a done context = %v, want a *models.Error wrapping context.Canceled", err)
	}
	_, err = m.Send(t.Context(), &models.Turn{}, nil)
	if !errors.As(err, &me) || !strings.Contains(me.Message, "only 2 steps") {
		t.Errorf("Send beyond the script = %v, want a *models.Error", err)
	}
	if got := m.Sends(); got != 3 {
		t.Errorf("Sends() = %d, want 3", got)
	}
}
