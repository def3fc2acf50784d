package server

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/aslrun/aslrun/api"
	"github.com/aslrun/aslrun/engine"
	"github.com/aslrun/aslrun/store"
)

// An approval's API id is opaque: base64url of its execution's id, a NUL,
// and its id within the execution ("Review#1", "Each#1.0/3/Check#1").

func approvalID(execution, approval string) string {
	return base64.RawURLEncoding.EncodeToString([]byte(execution + "\x00" + approval))
}

func parseApprovalID(id string) (execution, approval string, err error) {
	b, err := base64.RawURLEncoding.DecodeString(id)
	if err == nil {
		var ok bool
		if execution, approval, ok = strings.Cut(string(b), "\x00"); ok && execution != "" && approval != "" {
			return execution, approval, nil
		}
	}
	return "", "", &problem{status: http.StatusNotFound, kind: "not-found", title: "not found", detail: fmt.Sprintf("%q is not an approval id", id)}
}

func approvalOf(execution string, pa engine.PendingApproval) api.Approval {
	options := pa.Options
	if options == nil {
		options = []string{}
	}
	return api.Approval{ID: approvalID(execution, pa.ID), Execution: execution, Approval: pa.ID, State: pa.State, Prompt: raw(pa.Prompt), Options: options,
		Deadline: timePtr(pa.Deadline), EscalatesAt: timePtr(pa.NextEscalation), Digest: pa.Digest, Editable: raw(pa.Editable)}
}

// listApprovals is the inbox: every pending approval, oldest execution
// first; ?execution= and ?state= filter it.
func (s *Server) listApprovals(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	list, err := s.st.List(r.Context(), store.ListOptions{Status: engine.StatusWaiting})
	if err != nil {
		return err
	}
	out := api.ApprovalList{Approvals: []api.Approval{}}
	for i := len(list) - 1; i >= 0; i-- {
		id := list[i].ID
		if x := q.Get("execution"); x != "" && x != id {
			continue
		}
		e, err := s.st.Load(r.Context(), id)
		if errors.Is(err, engine.ErrNotFound) {
			continue
		}
		if err != nil {
			return err
		}
		for _, pa := range engine.PendingOf(e) {
			if st := q.Get("state"); st != "" && st != pa.State {
				continue
			}
			out.Approvals = append(out.Approvals, approvalOf(id, pa))
		}
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// pending finds one pending approval by its API id.
func (s *Server) pending(ctx context.Context, id string) (*engine.Execution, engine.PendingApproval, error) {
	execution, approval, err := parseApprovalID(id)
	if err != nil {
		return nil, engine.PendingApproval{}, err
	}
	e, err := s.st.Load(ctx, execution)
	if err != nil {
		return nil, engine.PendingApproval{}, err
	}
	for _, pa := range engine.PendingOf(e) {
		if pa.ID == approval {
			return e, pa, nil
		}
	}
	return nil, engine.PendingApproval{}, &problem{status: http.StatusNotFound, kind: "not-found", title: "not found",
		detail: fmt.Sprintf("execution %s has no pending approval %s (it may have been decided)", execution, approval)}
}

func (s *Server) getApproval(w http.ResponseWriter, r *http.Request) error {
	e, pa, err := s.pending(r.Context(), r.PathValue("id"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, approvalOf(e.ID, pa))
	return nil
}

// decisionOf reads a decision request: the approver is the caller (or
// someone the local admin decides on behalf of).
func decisionOf(r *http.Request, approval string) (engine.Decision, error) {
	var req api.Decision
	if err := decodeBody(r, &req); err != nil {
		return engine.Decision{}, err
	}
	if req.Option == "" {
		return engine.Decision{}, badRequest("/option", "option is required")
	}
	p, _ := principalOf(r.Context())
	approver := p.Name
	if req.OnBehalfOf != "" {
		if !p.Local {
			return engine.Decision{}, &problem{status: http.StatusForbidden, kind: "forbidden", title: "forbidden",
				detail: "only the local admin on the unix socket may decide on behalf of someone", errors: []api.FieldError{{Pointer: "/onBehalfOf", Detail: "not allowed for " + p.Name}}}
		}
		if err := api.CheckName(req.OnBehalfOf); err != nil {
			return engine.Decision{}, badRequest("/onBehalfOf", "onBehalfOf: %v", err)
		}
		approver = req.OnBehalfOf + " (on behalf, by " + p.Name + ")"
	}
	edit, err := document(req.Edit, "/edit", nil)
	if err != nil {
		return engine.Decision{}, err
	}
	return engine.Decision{Approval: req.Option, Approver: approver, Comment: req.Comment, Edit: edit, ApprovalID: approval, Digest: req.Digest}, nil
}

// decide records a decision and continues the execution in the
// background (202).
func (s *Server) decide(w http.ResponseWriter, r *http.Request) error {
	e, pa, err := s.pending(r.Context(), r.PathValue("id"))
	if err != nil {
		return err
	}
	d, err := decisionOf(r, pa.ID)
	if err != nil {
		return err
	}
	if _, err := s.x.Decide(r.Context(), e.ID, d, engine.ResumeOptions{RecordOnly: true}); err != nil {
		return err
	}
	// The answer shows the execution as recorded, before it runs on.
	id := e.ID
	if e, err = s.st.Load(r.Context(), id); err != nil {
		return err
	}
	s.continueLater("continue after a decision", id)
	writeJSON(w, http.StatusAccepted, executionOf(e))
	return nil
}

// checkDecision is a dry run of a decision against the approval and the
// workflow's governance: nothing is recorded.
func (s *Server) checkDecision(w http.ResponseWriter, r *http.Request) error {
	e, pa, err := s.pending(r.Context(), r.PathValue("id"))
	if err != nil {
		return err
	}
	d, err := decisionOf(r, pa.ID)
	if err != nil {
		return err
	}
	out := api.Check{OK: true, Execution: e.ID}
	err = s.x.CheckDecision(r.Context(), e.ID, d)
	var ge *engine.GovernanceError
	switch {
	case err == nil:
	case errors.As(err, &ge):
		out.OK, out.Error, out.Cause = false, string(ge.Violation.Name), ge.Violation.Cause
		out.Rule, out.Path = ge.Violation.Detail.Rule, ge.Violation.Detail.Path
	case errors.Is(err, engine.ErrDecisionRefused):
		out.OK, out.Refused = false, err.Error()
	default:
		return err
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}
