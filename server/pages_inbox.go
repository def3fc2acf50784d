package server

// The approval inbox: the pending approvals with their decision forms,
// kept current by the approval stream in the page's script, and the dry
// run of a decision the script asks for as an Editable document is
// edited.

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/aslrun/aslrun/engine"
	"github.com/aslrun/aslrun/jsonpath"
	"github.com/aslrun/aslrun/jsonvalue"
	"github.com/aslrun/aslrun/states"
	"github.com/aslrun/aslrun/store"
)

// inboxData is the inbox page's data.
type inboxData struct {
	base
	CanDecide bool
	Approvals []inboxApproval
	// Failed is the approval whose decision was refused, shown with Error.
	Failed string
	// Stream is the URL of the approval stream that resumes after the
	// inbox shown ("" when the server could not read it).
	Stream string
}

// inboxApproval is a pending approval as the inbox shows it: with the
// times of its next escalation and of its deadline (zero: none), which
// the page counts down to.
type inboxApproval struct {
	approvalView
	EscalationTime, DeadlineTime time.Time
	// What the refused form held (Failed only): shown again, not lost.
	Chosen, Comment, EditText string
	// Problems place the refusal in the edited document (Failed only).
	Problems []editProblem
}

// EscalationLeft and DeadlineLeft say how long is left until the
// escalation and the deadline, as the page's script counts it down.
func (a inboxApproval) EscalationLeft() string {
	if left := timeLeft(a.EscalationTime, time.Now()); left != "due now" {
		return "in " + left
	}
	return "escalated"
}

func (a inboxApproval) DeadlineLeft() string {
	if left := timeLeft(a.DeadlineTime, time.Now()); left != "due now" {
		return "in " + left
	}
	return "expired: reload the page"
}

// Edit is the text the editor starts with: what was sent when the
// decision was refused, else the editable values.
func (a inboxApproval) Edit() string {
	if a.EditText != "" {
		return a.EditText
	}
	return a.Editable
}

// editProblem is why a decision's edit is refused, placed in the edited
// document: a JSON syntax error at its line and column, or a governance
// violation at its path in the execution's document and, when that is
// inside the edit, its JSON Pointer in the edited document.
type editProblem struct {
	// Error is the error name (Governance.SchemaViolation, …), or "JSON"
	// for a syntax error.
	Error string `json:"error"`
	Rule  string `json:"rule,omitempty"`
	// Path is where in the execution's document ($.draft.words), or where
	// a syntax error was met.
	Path string `json:"path,omitempty"`
	// InEdit is true when Path lies inside the edit, and Pointer is then
	// its place in the edited document ("" for the edit's root).
	Pointer string `json:"pointer,omitempty"`
	InEdit  bool   `json:"inEdit"`
	// Line and Column (from 1, in characters) place a syntax error.
	Line   int    `json:"line,omitempty"`
	Column int    `json:"column,omitempty"`
	Detail string `json:"detail"`
}

// Where says where the problem is, for the page.
func (p editProblem) Where() string {
	switch {
	case p.Line > 0:
		return fmt.Sprintf("line %d, column %d (%s)", p.Line, p.Column, p.Path)
	case p.InEdit && p.Pointer == "":
		return "the whole edit"
	case p.InEdit:
		return p.Pointer
	}
	return p.Path + " in the document"
}

// editCheck is the answer of the inbox's dry run of a decision.
type editCheck struct {
	OK bool `json:"ok"`
	// Refused says why the decision would be refused; Problems place it
	// in the edit when they can.
	Refused  string        `json:"refused,omitempty"`
	Problems []editProblem `json:"problems"`
	// Gone is true when the approval is no longer pending.
	Gone bool `json:"gone,omitempty"`
}

// cursor is the seq of the inbox's last change.
func (in *inbox) cursor() int64 {
	in.mu.Lock()
	defer in.mu.Unlock()
	return in.head
}

// inbox gathers the pending approvals, oldest execution first.
func (s *Server) inbox(r *http.Request) (inboxData, error) {
	data := inboxData{base: baseOf(r, "Inbox")}
	data.CanDecide = data.Principal.Role >= RoleApprover
	// The stream's cursor is read before the inbox: what changes between
	// the two comes again on the stream, and the page applies it once.
	in := &s.streams.inbox
	if err := in.refresh(r.Context(), s.st); err != nil {
		s.log.Warn("follow the inbox for its page", "error", err)
	} else {
		data.Stream = "/v1/approvals/events?" + url.Values{"after": {strconv.FormatInt(in.cursor(), 10)}}.Encode()
	}
	list, err := s.st.List(r.Context(), store.ListOptions{Status: engine.StatusWaiting})
	if err != nil {
		return data, err
	}
	now := time.Now()
	for i := len(list) - 1; i >= 0; i-- {
		e, err := s.st.Load(r.Context(), list[i].ID)
		if errors.Is(err, engine.ErrNotFound) {
			continue
		}
		if err != nil {
			return data, err
		}
		for _, pa := range engine.PendingOf(e) {
			data.Approvals = append(data.Approvals, inboxApproval{approvalView: approvalViewOf(e.ID, pa, now),
				EscalationTime: pa.NextEscalation, DeadlineTime: pa.Deadline})
		}
	}
	return data, nil
}

func (s *Server) inboxPage(w http.ResponseWriter, r *http.Request) error {
	data, err := s.inbox(r)
	if err != nil {
		return err
	}
	return s.render(w, http.StatusOK, "inbox", data)
}

// formRefusal is why a decision from the inbox's form is refused: the
// status the page answers with, the message and its places in the edit.
type formRefusal struct {
	status   int
	msg      string
	problems []editProblem
}

// formDecision reads the inbox's decision form as the signed-in caller
// and checks it as Decide would, recording nothing. dryRun takes the
// first option when none is chosen yet (the check runs as the document
// is edited, before an option is picked).
func (s *Server) formDecision(r *http.Request, e *engine.Execution, pa engine.PendingApproval, dryRun bool) (engine.Decision, *formRefusal, error) {
	p, _ := principalOf(r.Context())
	d := engine.Decision{Approval: r.PostFormValue("option"), Approver: p.Name, Comment: r.PostFormValue("comment"), ApprovalID: pa.ID, Digest: r.PostFormValue("digest")}
	if text := r.PostFormValue("edit"); strings.TrimSpace(text) != "" && pa.Editable != nil {
		v, err := jsonvalue.Decode([]byte(text))
		if err != nil {
			pr := syntaxProblem(text, err)
			return d, &formRefusal{http.StatusBadRequest, fmt.Sprintf("the edited document is not JSON: %s: %s", pr.Where(), pr.Detail), []editProblem{pr}}, nil
		}
		d.Edit = v
	}
	if d.Approval == "" && dryRun && len(pa.Options) > 0 {
		d.Approval = pa.Options[0]
	}
	if d.Approval == "" {
		return d, &formRefusal{status: http.StatusBadRequest, msg: "choose one of the options"}, nil
	}
	// The workflow's governance checks the decision's write first: a
	// refused edit is shown, not recorded (Decide checks again).
	err := s.x.CheckDecision(r.Context(), e.ID, d)
	var ge *engine.GovernanceError
	switch {
	case err == nil:
		return d, nil, nil
	case errors.As(err, &ge):
		v := ge.Violation
		pr := editProblem{Error: string(v.Name), Rule: v.Detail.Rule, Path: v.Detail.Path, Detail: v.Cause}
		pr.Pointer, pr.InEdit = editPointer(v.Detail.Path, e, pa.State)
		return d, &formRefusal{http.StatusUnprocessableEntity, fmt.Sprintf("refused by the workflow's governance: %s: %s", v.Name, v.Cause), []editProblem{pr}}, nil
	case errors.Is(err, engine.ErrDecisionRefused):
		return d, &formRefusal{status: http.StatusConflict, msg: "decision refused: " + err.Error()}, nil
	}
	return d, nil, err
}

// syntaxProblem places a JSON syntax error of text at its line and
// column.
func syntaxProblem(text string, err error) editProblem {
	pr := editProblem{Error: "JSON", Detail: err.Error()}
	var je *jsonvalue.JSONError
	if !errors.As(err, &je) {
		return pr
	}
	pr.Path, pr.Detail = je.Path, je.Msg
	off := min(max(je.Offset, 0), len(text))
	before := text[:off]
	pr.Line = strings.Count(before, "\n") + 1
	pr.Column = utf8.RuneCountInString(before[strings.LastIndexByte(before, '\n')+1:]) + 1
	return pr
}

// editPointer turns a path in the execution's document into a JSON
// Pointer in the edited document, when it lies inside the edit: under
// the Editable's ResultPath of the (top-level) state. ok is false when
// it does not, or cannot be told.
func editPointer(path string, e *engine.Execution, state string) (pointer string, ok bool) {
	p, err := jsonpath.Compile(path)
	if err != nil {
		return "", false
	}
	loc, ok := p.Steps()
	if !ok || strings.Contains(state, "/") {
		return "", false
	}
	m, err := states.Parse(e.Definition)
	if err != nil {
		return "", false
	}
	a, ok := m.States[state].(*states.Approval)
	if !ok || a.Editable == nil {
		return "", false
	}
	place, ok := a.Editable.ResultPath.Steps()
	if !ok || len(loc) < len(place) {
		return "", false
	}
	for i := range place {
		if loc[i] != place[i] {
			return "", false
		}
	}
	var b strings.Builder
	for _, st := range loc[len(place):] {
		b.WriteByte('/')
		if st.IsIndex {
			b.WriteString(strconv.Itoa(st.Index))
		} else {
			b.WriteString(jsonvalue.EscapePointer(st.Key))
		}
	}
	return b.String(), true
}

// decidePage records a decision from the inbox as the signed-in caller
// and continues the execution in the background; a refused decision
// shows the inbox again with the reason, placed in the edit when it can
// be, and what the form held.
func (s *Server) decidePage(w http.ResponseWriter, r *http.Request) error {
	e, pa, err := s.pending(r.Context(), r.PathValue("approval"))
	if err != nil {
		return err
	}
	d, refusal, err := s.formDecision(r, e, pa, false)
	if err != nil {
		return err
	}
	if refusal == nil {
		_, err = s.x.Decide(r.Context(), e.ID, d, engine.ResumeOptions{RecordOnly: true})
		switch {
		case err == nil:
			s.continueLater("continue after a decision", e.ID)
			seeExecution(w, r, e.ID)
			return nil
		case errors.Is(err, engine.ErrDecisionRefused):
			refusal = &formRefusal{status: http.StatusConflict, msg: "decision refused: " + err.Error()}
		default:
			return err
		}
	}
	data, err := s.inbox(r)
	if err != nil {
		return err
	}
	data.Error, data.Failed = refusal.msg, approvalID(e.ID, pa.ID)
	for i := range data.Approvals {
		if a := &data.Approvals[i]; a.ID == data.Failed {
			a.Chosen, a.Comment, a.EditText, a.Problems = d.Approval, d.Comment, r.PostFormValue("edit"), refusal.problems
		}
	}
	return s.render(w, refusal.status, "inbox", data)
}

// checkPage is the inbox's dry run of a decision, for its script: the
// form as it stands, checked as the decision would be, nothing recorded.
// It answers JSON (an editCheck) with the status the decision would get.
func (s *Server) checkPage(w http.ResponseWriter, r *http.Request) error {
	e, pa, err := s.pending(r.Context(), r.PathValue("approval"))
	if err != nil {
		if pr := problemOf(err); pr.status == http.StatusNotFound {
			writeJSON(w, http.StatusNotFound, editCheck{Gone: true, Refused: pr.detail, Problems: []editProblem{}})
			return nil
		}
		return err
	}
	_, refusal, err := s.formDecision(r, e, pa, true)
	if err != nil {
		return err
	}
	if refusal == nil {
		writeJSON(w, http.StatusOK, editCheck{OK: true, Problems: []editProblem{}})
		return nil
	}
	out := editCheck{Refused: refusal.msg, Problems: refusal.problems}
	if out.Problems == nil {
		out.Problems = []editProblem{}
	}
	writeJSON(w, refusal.status, out)
	return nil
}
