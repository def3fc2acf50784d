package workflows

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/aslrun/aslrun/engine"
	"github.com/aslrun/aslrun/states"
	"github.com/aslrun/aslrun/store"
)

// TestEveryApprovalOption runs every example through every option of every
// Approval it reaches, each with and without the optional fields (a
// comment, an approver and, where the Approval is Editable, an edit of its
// fields as shown), and wants each path to succeed.
func TestEveryApprovalOption(t *testing.T) {
	for _, ex := range examples(t) {
		dir, m := ex.dir, ex.m
		if !hasApproval(m) {
			continue
		}
		t.Run(dir, func(t *testing.T) {
			paths := 0
			explore(t, dir, m, nil, &paths)
			if paths < 2 {
				t.Errorf("explored %d decision paths, want every option of its Approvals", paths)
			}
		})
	}
}

func hasApproval(m *states.Machine) bool {
	for _, st := range m.States {
		switch s := st.(type) {
		case *states.Approval:
			return true
		case *states.Map:
			if hasApproval(s.Processor) {
				return true
			}
		case *states.Parallel:
			for _, b := range s.Branches {
				if hasApproval(b) {
					return true
				}
			}
		}
	}
	return false
}

// explore runs the example deciding its approvals as path says, then, at
// the first approval path does not cover, explores each way to decide it.
func explore(t *testing.T, dir string, m *states.Machine, path []engine.Decision, paths *int) {
	t.Helper()
	var next *engine.PendingApproval
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		quiet := func(context.Context, engine.EscalationNotice) error { return nil }
		x := engine.New(engine.Config{Agents: mockRegistry(t, filepath.Join(dir, "mock.json")), Store: store.NewMemory(), OnEscalation: quiet})
		res, err := x.Run(ctx, m, readJSON(t, filepath.Join(dir, "input.json")), engine.StartOptions{MachineName: dir})
		for i := 0; err == nil && res.Status == engine.StatusWaiting; {
			switch {
			case len(res.Approvals) == 0:
				time.Sleep(time.Until(res.WakeAt))
				res, err = x.Resume(ctx, res.ID, engine.ResumeOptions{})
			case i < len(path):
				res, err = x.Decide(ctx, res.ID, path[i], engine.ResumeOptions{})
				i++
			default:
				pa := res.Approvals[0]
				next = &pa
				return
			}
		}
		if err != nil {
			t.Fatalf("decisions %s: %v", describe(path), err)
		}
		*paths++
		if res.Status != engine.StatusSucceeded {
			t.Errorf("decisions %s: %s %s: %s, want SUCCEEDED", describe(path), res.Status, res.Error, res.Cause)
		}
	})
	if next == nil {
		return
	}
	for _, option := range next.Options {
		variants := []engine.Decision{
			{Approval: option, ApprovalID: next.ID},
			{Approval: option, ApprovalID: next.ID, Approver: "ana", Comment: "looked at it"},
		}
		if next.Editable != nil {
			variants = append(variants, engine.Decision{Approval: option, ApprovalID: next.ID, Edit: next.Editable})
		}
		for _, d := range variants {
			explore(t, dir, m, append(path[:len(path):len(path)], d), paths)
		}
	}
}

func describe(path []engine.Decision) string {
	var parts []string
	for _, d := range path {
		s := d.Approval
		if d.Comment != "" {
			s += "+comment"
		}
		if d.Edit != nil {
			s += "+edit"
		}
		parts = append(parts, fmt.Sprintf("%s=%s", d.ApprovalID, s))
	}
	return "[" + strings.Join(parts, " ") + "]"
}
