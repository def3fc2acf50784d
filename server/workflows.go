package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"

	"github.com/aslrun/aslrun/api"
	"github.com/aslrun/aslrun/engine"
	"github.com/aslrun/aslrun/jsonvalue"
	"github.com/aslrun/aslrun/states"
	"github.com/aslrun/aslrun/states/include"
	"github.com/aslrun/aslrun/store"
	"github.com/aslrun/aslrun/workflowdiff"
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
	def, err := s.registrable(r.Context(), &req)
	if err != nil {
		return err
	}
	text, err := jsonvalue.Marshal(def)
	if err != nil {
		return err
	}
	hash, err := jsonvalue.CanonicalHash(def)
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
// latest, or ?version=REF (a number, an alias, a semver label or
// constraint: store.ParseRef), with the aliases that point to it.
func (s *Server) getWorkflow(w http.ResponseWriter, r *http.Request) error {
	name := r.PathValue("name")
	v, err := s.resolveQuery(r, name, "version")
	if err != nil {
		return err
	}
	aliases, err := s.st.WorkflowAliases(r.Context(), name)
	if err != nil {
		return err
	}
	out := workflowOf(v)
	out.Aliases = aliasesAt(aliases, v.Version)
	writeJSON(w, http.StatusOK, out)
	return nil
}

// resolveQuery resolves the workflow reference in the query parameter
// param (absent: the latest); a reference that does not parse is a 400
// naming the parameter.
func (s *Server) resolveQuery(r *http.Request, name, param string) (store.WorkflowVersion, error) {
	ref := r.URL.Query().Get(param)
	v, err := s.st.ResolveWorkflow(r.Context(), name, ref)
	if errors.Is(err, store.ErrInvalidRef) {
		return v, badRequest("", "query parameter %s: %v", param, err)
	}
	return v, err
}

// aliasesAt returns the aliases of list that point to version v.
func aliasesAt(list []store.WorkflowAlias, v int) []string {
	var out []string
	for _, a := range list {
		if a.Version == v {
			out = append(out, a.Alias)
		}
	}
	return out
}

func (s *Server) workflowVersions(w http.ResponseWriter, r *http.Request) error {
	name := r.PathValue("name")
	list, err := s.st.WorkflowVersions(r.Context(), name)
	if err != nil {
		return err
	}
	aliases, err := s.st.WorkflowAliases(r.Context(), name)
	if err != nil {
		return err
	}
	out := api.WorkflowList{Workflows: []api.Workflow{}}
	for _, v := range list {
		a := workflowOf(v)
		a.Aliases = aliasesAt(aliases, v.Version)
		out.Workflows = append(out.Workflows, a)
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

func (s *Server) listAliases(w http.ResponseWriter, r *http.Request) error {
	list, err := s.st.WorkflowAliases(r.Context(), r.PathValue("name"))
	if err != nil {
		return err
	}
	out := api.AliasList{Aliases: []api.WorkflowAlias{}}
	for _, a := range list {
		out.Aliases = append(out.Aliases, aliasOf(a))
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// setAlias makes an alias or moves it to a version; executions already
// started keep theirs.
func (s *Server) setAlias(w http.ResponseWriter, r *http.Request) error {
	var req api.SetAlias
	if err := decodeBody(r, &req); err != nil {
		return err
	}
	if req.Version < 1 {
		return badRequest("/version", "version must be a version number from 1, not %d", req.Version)
	}
	alias := r.PathValue("alias")
	if err := store.CheckAlias(alias); err != nil {
		return badRequest("", "%v", err)
	}
	a, err := s.st.SetWorkflowAlias(r.Context(), r.PathValue("name"), alias, req.Version)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, aliasOf(a))
	return nil
}

func (s *Server) deleteAlias(w http.ResponseWriter, r *http.Request) error {
	alias := r.PathValue("alias")
	if err := store.CheckAlias(alias); err != nil {
		return badRequest("", "%v", err)
	}
	if err := s.st.DeleteWorkflowAlias(r.Context(), r.PathValue("name"), alias); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func aliasOf(a store.WorkflowAlias) api.WorkflowAlias {
	return api.WorkflowAlias{Name: a.Name, Alias: a.Alias, Version: a.Version, UpdatedAt: a.UpdatedAt}
}

// diffWorkflow answers what changed from ?from=REF to ?to=REF (both
// required).
func (s *Server) diffWorkflow(w http.ResponseWriter, r *http.Request) error {
	d, err := s.workflowDiff(r, r.PathValue("name"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, d)
	return nil
}

// workflowDiff resolves ?from and ?to and compares the two versions.
func (s *Server) workflowDiff(r *http.Request, name string) (api.WorkflowDiff, error) {
	var vs [2]store.WorkflowVersion
	for i, param := range []string{"from", "to"} {
		if r.URL.Query().Get(param) == "" {
			return api.WorkflowDiff{}, badRequest("", "query parameter %s is required: a version of %s (a number, an alias, a semver label or constraint)", param, name)
		}
		v, err := s.resolveQuery(r, name, param)
		if err != nil {
			return api.WorkflowDiff{}, err
		}
		vs[i] = v
	}
	d, err := workflowdiff.Diff(vs[0].Definition, vs[1].Definition)
	if err != nil {
		return api.WorkflowDiff{}, fmt.Errorf("workflow %s versions %d and %d: %w", name, vs[0].Version, vs[1].Version, err)
	}
	d.Name, d.From, d.To, d.FromLabel, d.ToLabel = name, vs[0].Version, vs[1].Version, vs[0].Label, vs[1].Label
	return d, nil
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

// registrable checks a definition to register and returns what is stored:
// a workflow's, with its templates expanded (the versions they resolved to
// go to req.Lock unless it gives one); or a template's — a definition with
// top-level Parameters, which other workflows import as
// registry://name@constraint — as written, once it validates with sample
// arguments.
func (s *Server) registrable(ctx context.Context, req *api.RegisterWorkflow) (any, error) {
	problem := func(err error) error {
		var list states.ErrorList
		if errors.As(err, &list) {
			return invalidDefinition(list, "/definition")
		}
		return badRequest("/definition", "%v", err)
	}
	v, err := jsonvalue.Decode(req.Definition)
	if err != nil {
		return nil, problem(err)
	}
	if obj, ok := v.(map[string]any); ok {
		if _, isTemplate := obj["Parameters"]; isTemplate {
			if err := states.ParseTemplate(ctx, req.Definition, states.ParseOptions{Imports: include.RegistryFunc(s.templateOf)}); err != nil {
				return nil, problem(err)
			}
			return v, nil
		}
	}
	m, err := s.parseDefinition(ctx, req.Definition)
	if err != nil {
		return nil, problem(err)
	}
	if err := localFolders(m, "/definition"); err != nil {
		return nil, err
	}
	if req.Lock == nil {
		req.Lock = m.Lock
	}
	return m.Definition, nil
}
