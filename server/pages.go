package server

// The pages: server-rendered HTML for the people in the loop, behind the
// same authentication as the API (a session cookie from /signin, or the
// unix socket's local admin). Every form that changes something carries
// its session's CSRF token.

import (
	"bytes"
	"context"
	"embed"
	"encoding/json"
	"fmt"
	"html/template"
	"io/fs"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/aslrun/aslrun/engine"
	"github.com/aslrun/aslrun/jsonvalue"
)

//go:embed templates/*.html
var templateFiles embed.FS

//go:embed static/*
var staticFiles embed.FS

// executionsPerPage is how many executions a page of /executions shows.
const executionsPerPage = 50

// pageTemplates are the pages, each parsed with the layout.
var pageTemplates = func() map[string]*template.Template {
	funcs := template.FuncMap{"when": formatTime, "pathEscape": url.PathEscape}
	m := map[string]*template.Template{}
	for _, name := range []string{"signin", "executions", "execution", "inbox", "error", "workflows", "workflow", "confirm", "checkpoint-diff", "deliveries"} {
		m[name] = template.Must(template.New("layout.html").Funcs(funcs).ParseFS(templateFiles, "templates/layout.html", "templates/"+name+".html"))
	}
	return m
}()

// pageRoutes are the pages' routes; the role is the least that may see
// (or, for a POST, do) it.
func (s *Server) pageRoutes() []route {
	return []route{
		{"GET /{$}", RoleViewer, s.home},
		{"GET /signin", 0, s.signinPage},
		{"POST /signin", 0, s.signin},
		{"POST /signout", RoleViewer, s.signout},
		{"GET /executions", RoleViewer, s.executionsPage},
		{"GET /executions/{id}", RoleViewer, s.executionPage},
		{"GET /inbox", RoleViewer, s.inboxPage},
		{"POST /inbox/{approval}/decide", RoleApprover, s.decidePage},
		{"POST /inbox/{approval}/check", RoleApprover, s.checkPage},
		{"GET /static/", 0, s.static},
		{"GET /workflows", RoleViewer, s.workflowsPage},
		{"POST /workflows", RoleViewer, s.workflowsPage},
		{"GET /workflows/{name}", RoleViewer, s.workflowPage},
		{"POST /workflows/{name}/start", RoleOperator, s.startPage},
		// The execution page's checkpoints and operator controls.
		{"GET /executions/{id}/checkpoints/diff", RoleViewer, s.checkpointDiffPage},
		{"GET /executions/{id}/live", RoleViewer, s.executionLive},
		{"GET /executions/{id}/events/{seq}/{field}", RoleViewer, s.rawEvent},
		{"GET /executions/{id}/raw/{field}", RoleViewer, s.rawExecution},
		{"POST /executions/{id}/rollback", RoleOperator, s.rollbackPage},
		{"POST /executions/{id}/fork", RoleOperator, s.forkPage},
		{"POST /executions/{id}/stop", RoleOperator, s.stopPage},
		{"POST /executions/{id}/resume", RoleOperator, s.resumePage},
		{"POST /executions/{id}/redrive", RoleOperator, s.redrivePage},
		{"POST /executions/{id}/feedback", RoleApprover, s.feedbackPage},
		// The webhook deliveries (pages_deliveries.go).
		{"GET /deliveries", RoleViewer, s.deliveriesPage},
		{"POST /deliveries/{id}/retry", RoleOperator, s.retryPage},
	}
}

// isPage tells a page's path from the API's.
func isPage(path string) bool {
	if path == "/" || path == "/signin" || path == "/signout" || path == "/executions" || path == "/inbox" || path == "/workflows" || path == "/deliveries" {
		return true
	}
	for _, p := range []string{"/executions/", "/inbox/", "/static/", "/workflows/", "/deliveries/"} {
		if strings.HasPrefix(path, p) {
			return true
		}
	}
	return false
}

// openPage: the sign-in page and the static files need no caller.
func openPage(r *http.Request) bool {
	return r.URL.Path == "/signin" && (r.Method == http.MethodGet || r.Method == http.MethodPost) ||
		r.Method == http.MethodGet && strings.HasPrefix(r.URL.Path, "/static/")
}

type sessionKey struct{}

// page wraps a page's route: the caller must hold role, a POST (but the
// sign-in's) must carry its session's CSRF token, and an error becomes an
// error page.
func (s *Server) page(role Role, h func(w http.ResponseWriter, r *http.Request) error) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p, _ := principalOf(r.Context())
		noteRequest(r, p)
		w.Header().Set("Content-Security-Policy", "default-src 'self'; frame-ancestors 'none'; form-action 'self'")
		w.Header().Set("X-Content-Type-Options", "nosniff")
		w.Header().Set("Referrer-Policy", "same-origin")
		if r.Method == http.MethodPost {
			// A form posted from another site (its Origin, or the
			// browser's Sec-Fetch-Site, says so) is refused before
			// anything else: the sign-in too, which has no session yet.
			if err := s.crossOrigin.Check(r); err != nil {
				s.errorPage(w, r, http.StatusForbidden, "a form posted from another site is refused")
				return
			}
		}
		if role > 0 {
			sess, _ := r.Context().Value(sessionKey{}).(*session)
			if sess == nil && p.Local {
				// The unix socket's local admin is signed in without a form.
				if old, ok := s.sessions.of(r); ok && old.principal == p {
					sess = old
				} else {
					sess = s.sessions.start(p)
					setSessionCookie(w, r, sess)
				}
				r = r.WithContext(context.WithValue(r.Context(), sessionKey{}, sess))
			}
			if p.Role < role {
				s.errorPage(w, r, http.StatusForbidden, fmt.Sprintf("%s has the role %s; this needs %s", p.Name, p.Role, role))
				return
			}
			if r.Method == http.MethodPost && !sess.validCSRF(r.PostFormValue("csrf")) {
				s.errorPage(w, r, http.StatusForbidden, "the form is not one this server gave your session (reload the page and try again)")
				return
			}
		}
		if err := h(w, r); err != nil {
			pr := problemOf(err)
			s.errorPage(w, r, pr.status, pr.detail)
		}
	})
}

// base is what every page shows: who is signed in, and the CSRF token
// its forms carry.
type base struct {
	Title     string
	Principal Principal
	SignedIn  bool
	CSRF      string
	Error     string
}

func baseOf(r *http.Request, title string) base {
	b := base{Title: title}
	b.Principal, b.SignedIn = principalOf(r.Context())
	if sess, ok := r.Context().Value(sessionKey{}).(*session); ok {
		b.CSRF = sess.csrf
	}
	return b
}

// render writes a page: into a buffer first, so that a template error
// is an error page and not half a page.
func (s *Server) render(w http.ResponseWriter, status int, name string, data any) error {
	var buf bytes.Buffer
	if err := pageTemplates[name].Execute(&buf, data); err != nil {
		return fmt.Errorf("render the %s page: %w", name, err)
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	// A write fails only when the reader has gone: nothing to tell it
	// (an error page now would be a second header).
	w.Write(buf.Bytes())
	return nil
}

func (s *Server) errorPage(w http.ResponseWriter, r *http.Request, status int, msg string) {
	b := baseOf(r, http.StatusText(status))
	b.Error = msg
	if err := s.render(w, status, "error", b); err != nil {
		http.Error(w, msg, status)
	}
}

func (s *Server) home(w http.ResponseWriter, r *http.Request) error {
	http.Redirect(w, r, "/executions", http.StatusSeeOther)
	return nil
}

func (s *Server) static(w http.ResponseWriter, r *http.Request) error {
	sub, err := fs.Sub(staticFiles, "static")
	if err != nil {
		return err
	}
	http.StripPrefix("/static/", http.FileServerFS(sub)).ServeHTTP(w, r)
	return nil
}

func (s *Server) signinPage(w http.ResponseWriter, r *http.Request) error {
	return s.renderSignin(w, r, http.StatusOK, "")
}

// renderSignin shows the sign-in form with the browser's sign-in token
// (see signinToken), and msg as its error when not empty.
func (s *Server) renderSignin(w http.ResponseWriter, r *http.Request, status int, msg string) error {
	b := baseOf(r, "Sign in")
	b.CSRF, b.Error = signinToken(w, r), msg
	return s.render(w, status, "signin", b)
}

// signin checks a token and opens a session for its holder. The form
// must carry the sign-in token its browser's cookie holds (login CSRF:
// another site cannot sign a browser in under a token of its choice).
func (s *Server) signin(w http.ResponseWriter, r *http.Request) error {
	if !validSigninToken(r, r.PostFormValue("csrf")) {
		return s.renderSignin(w, r, http.StatusForbidden, "the sign-in form was not one this server gave this browser (or it expired): sign in again")
	}
	token := strings.TrimSpace(r.PostFormValue("token"))
	var p Principal
	ok := false
	if s.tokens != nil && token != "" {
		p, ok = s.tokens.Authenticate(token)
	}
	if !ok {
		return s.renderSignin(w, r, http.StatusUnauthorized, "this token is not one the server accepts")
	}
	clearSigninToken(w, r)
	setSessionCookie(w, r, s.sessions.start(p))
	http.Redirect(w, r, "/executions", http.StatusSeeOther)
	return nil
}

func (s *Server) signout(w http.ResponseWriter, r *http.Request) error {
	if sess, ok := r.Context().Value(sessionKey{}).(*session); ok {
		s.sessions.end(sess)
	}
	setSessionCookie(w, r, nil)
	http.Redirect(w, r, "/signin", http.StatusSeeOther)
	return nil
}

func contains[T comparable](list []T, v T) bool {
	for _, x := range list {
		if x == v {
			return true
		}
	}
	return false
}

// approvalView is a pending approval as the pages show it.
type approvalView struct {
	ID, Execution, State string
	// Prompt is a prompt that is a string (or not an object), as it is;
	// a structured prompt shows its Title and Description, and the rest
	// of it (Details and other fields) as indented JSON, "" when none.
	Prompt                   string
	Title, Description, More string
	Options                  []string
	Editable                 string // the editable values as indented JSON; "" when none
	Digest                   string
	RequestedAt              time.Time
	Deadline, EscalatesAt    string // time left; "" when none
}

func approvalViewOf(execution string, pa engine.PendingApproval, now time.Time) approvalView {
	v := approvalView{ID: approvalID(execution, pa.ID), Execution: execution, State: pa.State, Options: pa.Options, Digest: pa.Digest,
		RequestedAt: pa.RequestedAt, Deadline: timeLeft(pa.Deadline, now), EscalatesAt: timeLeft(pa.NextEscalation, now)}
	switch p := pa.Prompt.(type) {
	case string:
		v.Prompt = p
	case map[string]any:
		v.Title, v.Description, v.More = promptParts(p)
	default:
		v.Prompt = pretty(pa.Prompt)
	}
	if pa.Editable != nil {
		v.Editable = pretty(pa.Editable)
	}
	return v
}

// EditableShown is the editable values as the inbox shows them to read,
// cut to maxShown bytes with a link to the approval (whose editable
// values are whole) when longer; the editor holds them whole.
func (v approvalView) EditableShown() payloadView {
	return cut(v.Editable, "/v1/approvals/"+url.PathEscape(v.ID))
}

// promptParts splits a structured prompt into its Title and Description
// (when they are strings) and the rest of it as indented JSON ("" when
// nothing is left).
func promptParts(p map[string]any) (title, description, more string) {
	rest := make(map[string]any, len(p))
	for k, v := range p {
		rest[k] = v
	}
	if s, ok := p["Title"].(string); ok {
		title = s
		delete(rest, "Title")
	}
	if s, ok := p["Description"].(string); ok {
		description = s
		delete(rest, "Description")
	}
	if len(rest) > 0 {
		more = pretty(rest)
	}
	return title, description, more
}

// timeLeft says how long until t; "" for the zero time.
func timeLeft(t, now time.Time) string {
	if t.IsZero() {
		return ""
	}
	d := t.Sub(now).Round(time.Second)
	if d <= 0 {
		return "due now"
	}
	return d.String()
}

// pretty is a document as indented JSON; "" for none.
func pretty(v any) string {
	if v == nil {
		return ""
	}
	b, err := jsonvalue.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	var buf bytes.Buffer
	if json.Indent(&buf, b, "", "  ") != nil {
		return string(b)
	}
	return buf.String()
}

func formatTime(t time.Time) string {
	if t.IsZero() {
		return "—"
	}
	return t.UTC().Format("2006-01-02 15:04:05Z")
}
