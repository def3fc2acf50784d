package server

import (
	"context"
	"errors"
	"net/http"
	"strconv"

	"github.com/aslrun/aslrun/api"
	"github.com/aslrun/aslrun/engine"
	"github.com/aslrun/aslrun/jsonvalue"
	"github.com/aslrun/aslrun/states"
	"github.com/aslrun/aslrun/store"
)

// registerWorkflow stores a valid definition as the next version of a
// workflow (201), or answers the latest version when it has the same
// definition (200).
func (s *Server) registerWorkflow(w http.ResponseWriter, r *http.Request) error {
	var req api.RegisterWorkflow
	if err := decodeBody(r, &req); err != nil {
		return err
	}
	if req.Name == "" {
		return badRequest("/name", "name is required")
	}
	if len(req.Definition) == 0 {
		return badRequest("/definition", "definition is required")
	}
	if req.Label != "" {
		if err := store.CheckLabel(req.Label); err != nil {
			return badRequest("/label", "%v", err)
		}
	}
	if err := store.CheckLock(req.Lock); err != nil {
		return badRequest("/lock", "%v", err)
	}
	m, err := states.Parse(req.Definition)
	if err != nil {
		var list states.ErrorList
		if errors.As(err, &list) {
			return invalidDefinition(list, "/definition")
		}
		return badRequest("/definition", "%v", err)
	}
	if err := localFolders(m, "/definition"); err != nil {
		return err
	}
	text, err := jsonvalue.Marshal(m.Definition)
	if err != nil {
		return err
	}
	hash, err := jsonvalue.CanonicalHash(m.Definition)
	if err != nil {
		return err
	}
	latest, err := s.st.Workflow(r.Context(), req.Name, 0)
	existed := err == nil
	v, err := s.st.RegisterWorkflow(r.Context(), req.Name, text, hash, store.VersionMeta{Label: req.Label, Lock: req.Lock})
	switch {
	case errors.Is(err, store.ErrInvalidName):
		return badRequest("/name", "%v", err)
	case errors.Is(err, engine.ErrExists):
		return &problem{status: http.StatusConflict, kind: "exists", title: "the label is taken", detail: err.Error(),
			errors: []api.FieldError{{Pointer: "/label", Detail: err.Error()}}}
	case err != nil:
		return err
	}
	status := http.StatusCreated
	if existed && v.Version == latest.Version {
		status = http.StatusOK
	}
	w.Header().Set("Location", "/v1/workflows/"+v.Name+"?version="+strconv.Itoa(v.Version))
	writeJSON(w, status, workflowOf(v))
	return nil
}

func (s *Server) listWorkflows(w http.ResponseWriter, r *http.Request) error {
	list, err := s.st.Workflows(r.Context())
	if err != nil {
		return err
	}
	out := api.WorkflowList{Workflows: []api.Workflow{}}
	for _, v := range list {
		out.Workflows = append(out.Workflows, workflowOf(v))
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// getWorkflow answers a version of a workflow with its definition: the
// latest, or ?version=N.
func (s *Server) getWorkflow(w http.ResponseWriter, r *http.Request) error {
	version := 0
	if q := r.URL.Query().Get("version"); q != "" {
		n, err := strconv.Atoi(q)
		if err != nil || n < 1 {
			return badRequest("", "version %q must be a number from 1", q)
		}
		version = n
	}
	v, err := s.st.Workflow(r.Context(), r.PathValue("name"), version)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, workflowOf(v))
	return nil
}

func (s *Server) workflowVersions(w http.ResponseWriter, r *http.Request) error {
	list, err := s.st.WorkflowVersions(r.Context(), r.PathValue("name"))
	if err != nil {
		return err
	}
	out := api.WorkflowList{Workflows: []api.Workflow{}}
	for _, v := range list {
		out.Workflows = append(out.Workflows, workflowOf(v))
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

func workflowOf(v store.WorkflowVersion) api.Workflow {
	out := api.Workflow{Name: v.Name, Version: v.Version, Hash: v.Hash, CreatedAt: v.CreatedAt, Label: v.Label, Lock: v.Lock}
	if v.Definition != nil {
		out.Definition = v.Definition
	}
	return out
}

// localFolders refuses a definition whose Distributed Maps name a local
// folder ("file://DIR") as their Bucket: a 400 naming each Bucket's
// pointer under at. A server opens no path a definition writes; its
// owner maps bucket names to folders (the agents file's Buckets).
func localFolders(m *states.Machine, at string) error {
	list := m.FileBuckets()
	if len(list) == 0 {
		return nil
	}
	p := &problem{status: http.StatusBadRequest, kind: "bad-request", title: "bad request",
		detail: "the definition names a local folder (file://) as a bucket, which a server never opens: name a bucket of the server's agents file (Buckets)"}
	for _, e := range list {
		p.errors = append(p.errors, api.FieldError{Pointer: at + e.Pointer, State: e.State, Detail: e.Msg})
	}
	return p
}

// resolveStart resolves the registered workflow a start names: its
// version, alias or ref (at most one), through the store's
// ResolveWorkflow.
func (s *Server) resolveStart(ctx context.Context, req api.StartExecution) (store.WorkflowVersion, error) {
	ref, at := "", ""
	given := 0
	if req.Version != 0 {
		if req.Version < 0 {
			return store.WorkflowVersion{}, badRequest("/version", "version must be 0 (the latest) or more")
		}
		ref, at, given = strconv.Itoa(req.Version), "/version", given+1
	}
	if req.Alias != "" {
		if err := store.CheckAlias(req.Alias); err != nil {
			return store.WorkflowVersion{}, badRequest("/alias", "%v", err)
		}
		ref, at, given = req.Alias, "/alias", given+1
	}
	if req.Ref != "" {
		ref, at, given = req.Ref, "/ref", given+1
	}
	if given > 1 {
		return store.WorkflowVersion{}, badRequest(at, "give at most one of version, alias and ref")
	}
	v, err := s.st.ResolveWorkflow(ctx, req.Workflow, ref)
	switch {
	case errors.Is(err, store.ErrInvalidRef):
		return v, badRequest(at, "%v", err)
	case errors.Is(err, engine.ErrNotFound):
		return v, &problem{status: http.StatusNotFound, kind: "not-found", title: "no such workflow", detail: err.Error(),
			errors: []api.FieldError{{Pointer: "/workflow", Detail: err.Error()}}}
	}
	return v, err
}
