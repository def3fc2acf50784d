package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/url"
	"runtime/debug"
	"slices"
	"strings"
	"time"

	"github.com/aslrun/aslrun/api"
	"github.com/aslrun/aslrun/engine"
	"github.com/aslrun/aslrun/jsonvalue"
	"github.com/aslrun/aslrun/states"
	"github.com/aslrun/aslrun/store"
)

// problem is an error a handler answers with: an RFC 9457 document.
type problem struct {
	status int
	kind   string
	title  string
	detail string
	errors []api.FieldError
}

func (p *problem) Error() string { return p.title + ": " + p.detail }

func writeProblem(w http.ResponseWriter, p *problem) {
	w.Header().Set("Content-Type", "application/problem+json")
	w.WriteHeader(p.status)
	json.NewEncoder(w).Encode(api.Problem{Type: api.ProblemType + p.kind, Title: p.title, Status: p.status, Detail: p.detail, Errors: p.errors})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

// problemOf maps an error of the engine or the store to its problem.
func problemOf(err error) *problem {
	var p *problem
	var ge *engine.GovernanceError
	var list states.ErrorList
	switch {
	case errors.As(err, &p):
		return p
	case errors.As(err, &list):
		return invalidDefinition(list, "/definition")
	case errors.As(err, &ge):
		return &problem{status: http.StatusUnprocessableEntity, kind: "governance", title: "refused by the workflow's governance", detail: err.Error()}
	case errors.Is(err, engine.ErrNotFound):
		return &problem{status: http.StatusNotFound, kind: "not-found", title: "not found", detail: err.Error()}
	case errors.Is(err, engine.ErrDecisionRefused):
		return &problem{status: http.StatusConflict, kind: "decision-refused", title: "decision refused", detail: err.Error()}
	case errors.Is(err, engine.ErrExists):
		return &problem{status: http.StatusConflict, kind: "exists", title: "the name is taken", detail: err.Error()}
	case errors.Is(err, engine.ErrTaskTokenInvalid):
		return &problem{status: http.StatusBadRequest, kind: "task-token-invalid", title: "task token is not valid", detail: err.Error(),
			errors: []api.FieldError{{Pointer: "/token", Detail: err.Error()}}}
	case errors.Is(err, engine.ErrBusy):
		return &problem{status: http.StatusConflict, kind: "busy", title: "the execution is running", detail: err.Error()}
	case errors.Is(err, engine.ErrEnded):
		return &problem{status: http.StatusConflict, kind: "ended", title: "the execution has ended", detail: err.Error()}
	case errors.Is(err, engine.ErrInvalidInput):
		return &problem{status: http.StatusUnprocessableEntity, kind: "invalid-input", title: "invalid input", detail: err.Error(),
			errors: []api.FieldError{{Pointer: "/input", Detail: err.Error()}}}
	case errors.Is(err, store.ErrTampered):
		return &problem{status: http.StatusConflict, kind: "tampered", title: "the history does not verify", detail: err.Error()}
	}
	return &problem{status: http.StatusInternalServerError, kind: "internal", title: "internal error", detail: err.Error()}
}

// invalidDefinition lists a definition's problems, their pointers under
// prefix (where the definition sits in the request body).
func invalidDefinition(list states.ErrorList, prefix string) *problem {
	p := &problem{status: http.StatusUnprocessableEntity, kind: "invalid-definition", title: "invalid definition", detail: fmt.Sprintf("%d problem(s) in the definition", len(list))}
	for _, e := range list {
		p.errors = append(p.errors, api.FieldError{Pointer: prefix + e.Pointer, State: e.State, Detail: e.Msg})
	}
	return p
}

// checkQuery refuses a query parameter that is not one of known, or is
// given more than once (the first such, by name).
func checkQuery(q url.Values, known []string) error {
	for _, name := range slices.Sorted(maps.Keys(q)) {
		switch {
		case !slices.Contains(known, name):
			return badRequest("", "query parameter %q is not one of %s", name, strings.Join(known, ", "))
		case len(q[name]) > 1:
			return badRequest("", "%s is given %d times; give it once", name, len(q[name]))
		}
	}
	return nil
}

// badRequest is a problem of the request itself at a pointer.
func badRequest(pointer, format string, args ...any) *problem {
	msg := fmt.Sprintf(format, args...)
	return &problem{status: http.StatusBadRequest, kind: "bad-request", title: "bad request", detail: msg, errors: []api.FieldError{{Pointer: pointer, Detail: msg}}}
}

// decodeBody reads a request body into v: strict JSON whose member names
// are exactly v's fields' (checkFields), none unknown.
func decodeBody(r *http.Request, v any) error {
	data, err := io.ReadAll(r.Body)
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			return &problem{status: http.StatusRequestEntityTooLarge, kind: "too-large", title: "request body too large", detail: fmt.Sprintf("the body passes the server's limit of %d bytes", tooBig.Limit)}
		}
		return badRequest("", "read the body: %v", err)
	}
	// The strict decoder first: duplicate keys, NaN, … named with their
	// place; then every member name must be exactly a field's.
	doc, err := jsonvalue.Decode(data)
	if err != nil {
		return badRequest("", "the body is not strict JSON: %v", err)
	}
	if err := checkBody(doc, v); err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return badRequest("/"+strings.ReplaceAll(te.Field, ".", "/"), "%s must be %s, not %s", te.Field, te.Type, te.Value)
		}
		return badRequest("", "%v", err)
	}
	return nil
}

// document decodes a document field strictly; empty gives def.
func document(raw json.RawMessage, pointer string, def any) (any, error) {
	if len(raw) == 0 {
		return def, nil
	}
	v, err := jsonvalue.Decode(raw)
	if err != nil {
		return nil, badRequest(pointer, "%v", err)
	}
	return v, nil
}

// inputDocument decodes an execution input as document does ({} when
// empty), its large arrays kept packed (jsonvalue.DecodePacked), as
// `aslrun run` and the stores keep them.
func inputDocument(raw json.RawMessage, pointer string) (any, error) {
	if len(raw) == 0 {
		return map[string]any{}, nil
	}
	v, err := jsonvalue.DecodePacked(raw, jsonvalue.PackFrom)
	if err != nil {
		return nil, badRequest(pointer, "%v", err)
	}
	return v, nil
}

// raw encodes a document for the wire; nil stays absent.
func raw(v any) json.RawMessage {
	if v == nil {
		return nil
	}
	b, err := jsonvalue.Marshal(v)
	if err != nil {
		return nil
	}
	return b
}

// handler wraps a route: the caller must hold role; an error becomes
// its problem.
func (s *Server) handler(role Role, h func(w http.ResponseWriter, r *http.Request) error) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p, _ := principalOf(r.Context())
		noteRequest(r, p)
		if role != 0 && !p.Role.allows(role) {
			writeProblem(w, &problem{status: http.StatusForbidden, kind: "forbidden", title: "forbidden",
				detail: forbiddenDetail(p, r.Pattern, role)})
			return
		}
		if err := h(w, r); err != nil {
			writeProblem(w, problemOf(err))
		}
	})
}

// forbiddenDetail says why p may not call the route pattern ("POST
// /v1/executions"), which needs role.
func forbiddenDetail(p Principal, pattern string, role Role) string {
	need := role.String()
	if role == RoleWorker {
		need = "worker, operator or admin"
	}
	return fmt.Sprintf("%s has the role %s; %s needs %s", p.Name, p.Role, pattern, need)
}

// bearerToken reads the credentials of an Authorization header with
// the Bearer scheme, whose name is case-insensitive (RFC 9110 §11.1):
// "Bearer", "bearer" and "BEARER" all do, followed by one or more
// spaces and the token.
func bearerToken(header string) (string, bool) {
	scheme, token, ok := strings.Cut(header, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	token = strings.TrimLeft(token, " ")
	return token, token != ""
}

type principalKey struct{}

func principalOf(ctx context.Context) (Principal, bool) {
	p, ok := ctx.Value(principalKey{}).(Principal)
	return p, ok
}

// openPaths are the routes anyone may call (role 0 in the table).
var openPaths = map[string]bool{"/healthz": true, "/readyz": true, "/v1/openapi.json": true}

// authenticated lets in the unix socket's local admin, callers with a
// valid bearer token and browsers with a session (pages and API reads);
// everyone else gets 401 (a page: a redirect to /signin), but for the
// open paths and pages.
func (s *Server) authenticated(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet && openPaths[r.URL.Path] || openPage(r) {
			next.ServeHTTP(w, r)
			return
		}
		p, ok := LocalPrincipal(r.Context())
		if !ok {
			if _, isUnix := PeerUID(r.Context()); isUnix {
				writeProblem(w, &problem{status: http.StatusForbidden, kind: "forbidden", title: "forbidden", detail: "the unix socket serves its owner and root only"})
				return
			}
			token, found := bearerToken(r.Header.Get("Authorization"))
			if found && s.tokens != nil {
				p, ok = s.tokens.Authenticate(token)
			}
		}
		// A browser's session: for the pages, and for the API's reads
		// (its event streams); never for the API's writes, which a form
		// on another site could aim at.
		var sess *session
		if !ok && (isPage(r.URL.Path) || r.Method == http.MethodGet) {
			if sess, ok = s.sessions.of(r); ok {
				p = sess.principal
			}
		}
		if !ok && isPage(r.URL.Path) {
			http.Redirect(w, r, "/signin", http.StatusSeeOther)
			return
		}
		if !ok {
			w.Header().Set("WWW-Authenticate", `Bearer realm="aslrun"`)
			writeProblem(w, &problem{status: http.StatusUnauthorized, kind: "unauthenticated", title: "unauthenticated", detail: "send a bearer token (aslrun token create) in the Authorization header"})
			return
		}
		ctx := context.WithValue(r.Context(), principalKey{}, p)
		if sess != nil {
			ctx = context.WithValue(ctx, sessionKey{}, sess)
		}
		next.ServeHTTP(w, r.WithContext(ctx))
	})
}

// limited bounds request bodies.
func (s *Server) limited(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.Body = http.MaxBytesReader(w, r.Body, s.maxBody)
		next.ServeHTTP(w, r)
	})
}

// recovered answers a handler's panic with 500 and logs it.
func (s *Server) recovered(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			if v := recover(); v != nil {
				if v == http.ErrAbortHandler {
					panic(v)
				}
				s.log.Error("handler panicked", "method", r.Method, "path", r.URL.Path, "panic", v, "stack", string(debug.Stack()))
				writeProblem(w, &problem{status: http.StatusInternalServerError, kind: "internal", title: "internal error", detail: "the server failed on this request"})
			}
		}()
		next.ServeHTTP(w, r)
	})
}

type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (s *statusRecorder) WriteHeader(code int) {
	s.status = code
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusRecorder) Flush() {
	if f, ok := s.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// requestInfo is what the request log learns from inside the routing:
// the route, the caller and the execution the request is about.
type requestInfo struct {
	route, caller, execution string
}

type requestInfoKey struct{}

// logged logs every request: method, path, route, status, duration, the
// caller and the execution it is about.
func (s *Server) logged(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		info := &requestInfo{}
		rec := &statusRecorder{ResponseWriter: w, status: http.StatusOK}
		next.ServeHTTP(rec, r.WithContext(context.WithValue(r.Context(), requestInfoKey{}, info)))
		attrs := []any{"method", r.Method, "path", r.URL.Path, "status", rec.status, "duration", time.Since(start)}
		for _, a := range [][2]string{{"route", info.route}, {"caller", info.caller}, {"execution", info.execution}} {
			if a[1] != "" {
				attrs = append(attrs, a[0], a[1])
			}
		}
		s.log.Info("request", attrs...)
	})
}

// noteRequest tells the request log the route, the caller and, when the
// route names one, the execution.
func noteRequest(r *http.Request, p Principal) {
	info, ok := r.Context().Value(requestInfoKey{}).(*requestInfo)
	if !ok {
		return
	}
	info.route, info.caller = r.Pattern, p.Name
	switch {
	case strings.HasPrefix(r.Pattern, "GET /v1/approvals/{id}"), strings.HasPrefix(r.Pattern, "POST /v1/approvals/{id}"):
		if execution, _, err := parseApprovalID(r.PathValue("id")); err == nil {
			info.execution = execution
		}
	case strings.Contains(r.Pattern, "/v1/executions/{id}"):
		info.execution = r.PathValue("id")
	}
}
