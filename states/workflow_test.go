package states

import (
	"fmt"
	"testing"
	"time"
)

// TestWorkflowState: the accepted forms of a Workflow state's WorkflowId
// and Timeout.
func TestChildExecutionStateParse(t *testing.T) {
	for _, tc := range []struct {
		fields, name, ref string
		timeout           time.Duration
	}{
		{`"WorkflowId":"research"`, "research", "", 0},
		{`"WorkflowId":"research@3"`, "research", "3", 0},
		{`"WorkflowId":"research@prod","Timeout":90`, "research", "prod", 90 * time.Second},
		{`"WorkflowId":"re.search_2-x@^1.2.0","Timeout":"2h"`, "re.search_2-x", "^1.2.0", 2 * time.Hour},
		{`"WorkflowId":"research@>=1.0.0","Timeout":"30m"`, "research", ">=1.0.0", 30 * time.Minute},
	} {
		m, err := Parse(fmt.Appendf(nil, `{"StartAt":"W","States":{"W":{"Type":"Workflow",%s,"End":true}}}`, tc.fields))
		if err != nil {
			t.Errorf("Parse(%s): %v", tc.fields, err)
			continue
		}
		w := m.States["W"].(*Workflow)
		if w.Name != tc.name || w.Ref != tc.ref || w.Timeout != tc.timeout {
			t.Errorf("Parse(%s) = name %q ref %q timeout %s, want %q %q %s", tc.fields, w.Name, w.Ref, w.Timeout, tc.name, tc.ref, tc.timeout)
		}
	}
}
