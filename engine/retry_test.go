package engine

import (
	"testing"

	"github.com/aslrun/aslrun"
)

func TestErrorMatches(t *testing.T) {
	cases := []struct {
		names []string
		err   asl.ErrorName
		want  bool
	}{
		{[]string{"States.ALL"}, "Custom.Error", true},
		{[]string{"States.ALL"}, asl.ErrTimeout, true},
		{[]string{"States.ALL"}, asl.ErrRuntime, false},
		{[]string{"States.Runtime"}, asl.ErrRuntime, false},
		{[]string{"States.ALL"}, asl.ErrNotImplemented, false},
		{[]string{"States.NotImplemented"}, asl.ErrNotImplemented, false},
		{[]string{"States.ALL"}, asl.ErrDataLimitExceeded, false},
		{[]string{"States.DataLimitExceeded"}, asl.ErrDataLimitExceeded, true},
		{[]string{"States.TaskFailed"}, "Custom.Error", true},
		{[]string{"States.TaskFailed"}, asl.ErrHeartbeatTimeout, true},
		{[]string{"States.TaskFailed"}, asl.ErrTimeout, false},
		{[]string{"States.Timeout"}, asl.ErrTimeout, true},
		{[]string{"RateLimitExceeded"}, asl.ErrRateLimitExceeded, true},
		{[]string{"BudgetExceeded"}, asl.ErrBudgetExceeded, true},
		{[]string{"RateLimitExceeded"}, "RateLimitExceeded", true},
		{[]string{"States.RateLimitExceeded"}, "RateLimitExceeded", false},
		{[]string{"State.ALL"}, "Custom.Error", false},
		{[]string{"State.ALL"}, "State.ALL", true},
		{[]string{"A", "B"}, "B", true},
		{[]string{"A", "B"}, "C", false},
		{[]string{"Agent.ModelError"}, "Agent.Model", false},
		{[]string{"States.ALL"}, "", true},
		{[]string{"Internal Error"}, "", false},
	}
	for _, tc := range cases {
		if got := errorMatches(tc.names, tc.err); got != tc.want {
			t.Errorf("errorMatches(%q, %q) = %v, want %v", tc.names, tc.err, got, tc.want)
		}
	}
}
