package engine

import "testing"

// TestMergeCommitKeepsDropHistory: a merged commit drops the history when
// either of its parts did (a failed write's commit kept for the next).
func TestMergeCommitKeepsDropHistory(t *testing.T) {
	cases := []struct {
		pending, c, want bool
	}{
		{false, false, false},
		{true, false, true},
		{false, true, true},
		{true, true, true},
	}
	for _, tc := range cases {
		got := mergeCommit(&Commit{DropHistory: tc.pending}, &Commit{DropHistory: tc.c, Status: StatusFailed}).DropHistory
		if got != tc.want {
			t.Errorf("mergeCommit(DropHistory %v, DropHistory %v).DropHistory = %v, want %v", tc.pending, tc.c, got, tc.want)
		}
	}
}

// TestDropsHistory: which commits of which executions drop their history.
func TestDropsHistory(t *testing.T) {
	child := ChildID("p/Each#1.0", 3)
	cases := []struct {
		name   string
		exec   Execution
		keep   bool
		status Status
		want   bool
	}{
		{"standard child succeeds", Execution{ID: child, Parent: "p"}, false, StatusSucceeded, true},
		{"standard child step", Execution{ID: child, Parent: "p"}, false, "", false},
		{"standard child fails", Execution{ID: child, Parent: "p"}, false, StatusFailed, false},
		{"standard child waits", Execution{ID: child, Parent: "p"}, false, StatusWaiting, false},
		{"express child step", Execution{ID: child, Parent: "p", HistoryDropped: true}, false, "", true},
		{"express child fails", Execution{ID: child, Parent: "p", HistoryDropped: true}, false, StatusFailed, true},
		{"kept child succeeds", Execution{ID: child, Parent: "p"}, true, StatusSucceeded, false},
		{"kept express child", Execution{ID: child, Parent: "p", HistoryDropped: true}, true, "", false},
		{"top-level execution", Execution{ID: "p"}, false, StatusSucceeded, false},
		{"workflow child", Execution{ID: ChildWorkflowID("p", "Research#1", 0), Parent: "p"}, false, StatusSucceeded, false},
		{"fork", Execution{ID: "f", Parent: "p"}, false, StatusSucceeded, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := &run{x: New(Config{KeepChildHistory: tc.keep}), exec: &tc.exec}
			if got := r.dropsHistory(&Commit{Status: tc.status}); got != tc.want {
				t.Errorf("dropsHistory(%s) = %v, want %v", tc.status, got, tc.want)
			}
		})
	}
}
