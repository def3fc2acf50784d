package engine_test

import (
	"context"
	"strings"
	"testing"

	asl "github.com/aslrun/aslrun"
	"github.com/aslrun/aslrun/agents"
	"github.com/aslrun/aslrun/engine"
	"github.com/aslrun/aslrun/jsonpath"
)

// TestJSONPathBounds: a path or intrinsic call past the executor's bounds
// fails its state with States.Runtime naming the state and the bound, and
// the same workflow succeeds under larger bounds.
func TestJSONPathBounds(t *testing.T) {
	doubling := "$.s"
	for range 10 {
		doubling = "States.Format('{}{}', " + doubling + ", " + doubling + ")"
	}
	tests := []struct {
		name      string
		field     string
		small     jsonpath.Bounds
		causePart string
	}{
		{"deep scans", `"v.$": "$..*..*..*"`, jsonpath.Bounds{PathSteps: 50}, "visits more than 50 values"},
		{"nested Format", `"v.$": "` + doubling + `"`, jsonpath.Bounds{IntrinsicBytes: 64 << 10}, "build more than 65536 bytes"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			def := `{"StartAt": "Shape", "States": {"Shape": {"Type": "Pass", "Parameters": {` + tc.field + `}, "End": true}}}`
			input := `{"s": "` + strings.Repeat("x", 100) + `", "t": [[[[1, 2], [3, 4]], [[5, 6]]], {"a": {"b": {"c": [7, 8, 9]}}}]}`
			run := func(b jsonpath.Bounds) *engine.Result {
				x := engine.New(engine.Config{Agents: agents.NewRegistry(), JSONPathBounds: b})
				res, err := x.Run(context.Background(), mustParse(t, def), mustJSON(t, input), engine.StartOptions{})
				if err != nil {
					t.Fatalf("run: %v", err)
				}
				return res
			}
			wantError(t, run(tc.small), asl.ErrRuntime, "'Shape'")
			wantError(t, run(tc.small), asl.ErrRuntime, tc.causePart)
			if res := run(jsonpath.Bounds{}); res.Status != engine.StatusSucceeded {
				t.Errorf("with the default bounds: %s (%s: %s), want SUCCEEDED", res.Status, res.Error, res.Cause)
			}
		})
	}
}
