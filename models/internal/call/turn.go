package call

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/aslrun/aslrun/jsonvalue"
	"github.com/aslrun/aslrun/models"
)

// Check reports the first problem of t that no provider could send: an
// unknown role, a tool message without ToolCallID, a tool call without ID or
// Name or with arguments that are not a JSON object, a tool without a name
// or named twice, a schema that is not a JSON object.
func Check(t *models.Turn) error {
	if t == nil {
		return errors.New("no turn")
	}
	for i, m := range t.Messages {
		switch m.Role {
		case models.RoleSystem, models.RoleUser, models.RoleAssistant:
			if m.ToolCallID != "" {
				return fmt.Errorf("messages[%d]: a %s message has no ToolCallID", i, m.Role)
			}
		case models.RoleTool:
			if m.ToolCallID == "" {
				return fmt.Errorf("messages[%d]: a tool message needs the ToolCallID it answers", i)
			}
		default:
			return fmt.Errorf("messages[%d]: unknown role %q", i, m.Role)
		}
		if len(m.ToolCalls) > 0 && m.Role != models.RoleAssistant {
			return fmt.Errorf("messages[%d]: only an assistant message makes tool calls", i)
		}
		for j, c := range m.ToolCalls {
			switch {
			case c.ID == "":
				return fmt.Errorf("messages[%d].ToolCalls[%d]: no ID", i, j)
			case c.Name == "":
				return fmt.Errorf("messages[%d].ToolCalls[%d]: no Name", i, j)
			}
			if _, err := Arguments(string(c.Arguments)); err != nil {
				return fmt.Errorf("messages[%d].ToolCalls[%d]: %w", i, j, err)
			}
		}
	}
	seen := make(map[string]bool, len(t.Tools))
	for i, s := range t.Tools {
		if s.Name == "" {
			return fmt.Errorf("tools[%d]: no Name", i)
		}
		if seen[s.Name] {
			return fmt.Errorf("tools[%d]: the name %q is used twice", i, s.Name)
		}
		seen[s.Name] = true
		if _, err := Schema(s.Schema); err != nil {
			return fmt.Errorf("tools[%d] (%s): %w", i, s.Name, err)
		}
	}
	if t.ResultSchema != nil {
		if _, err := Schema(t.ResultSchema); err != nil {
			return fmt.Errorf("ResultSchema: %w", err)
		}
	}
	if t.Generation.MaxTokens < 0 {
		return fmt.Errorf("Generation.MaxTokens: %d is negative", t.Generation.MaxTokens)
	}
	return nil
}

// Arguments checks the arguments of a tool call: empty means {}; anything
// else must be one JSON object. It returns them as JSON.
func Arguments(s string) (json.RawMessage, error) {
	if s == "" {
		return json.RawMessage("{}"), nil
	}
	v, err := jsonvalue.Decode([]byte(s))
	if err != nil {
		return nil, fmt.Errorf("arguments are not JSON: %w", err)
	}
	if _, ok := v.(map[string]any); !ok {
		return nil, errors.New("arguments are not a JSON object")
	}
	return json.RawMessage(s), nil
}

// Schema decodes a JSON Schema object into its members, each kept as its
// JSON text; nil is {"type": "object"}.
func Schema(s json.RawMessage) (map[string]any, error) {
	if s == nil {
		return map[string]any{"type": "object"}, nil
	}
	if _, err := jsonvalue.Decode(s); err != nil {
		return nil, fmt.Errorf("the schema is not JSON: %w", err)
	}
	var members map[string]json.RawMessage
	if err := json.Unmarshal(s, &members); err != nil || members == nil {
		return nil, errors.New("the schema is not a JSON object")
	}
	out := make(map[string]any, len(members))
	for k, v := range members {
		out[k] = v
	}
	return out, nil
}
