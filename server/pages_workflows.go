package server

import (
	"bytes"
	"errors"
	"fmt"
	"html/template"
	"maps"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/aslrun/aslrun/api"
	"github.com/aslrun/aslrun/engine"
	"github.com/aslrun/aslrun/graph"
	"github.com/aslrun/aslrun/jsonvalue"
	"github.com/aslrun/aslrun/states"
	"github.com/aslrun/aslrun/store"
)

// workflowsPage lists the registered workflows (their latest versions),
// with a form that validates a definition and shows every problem at its
// place.
func (s *Server) workflowsPage(w http.ResponseWriter, r *http.Request) error {
	list, err := s.st.Workflows(r.Context())
	if err != nil {
		return err
	}
	data := struct {
		base
		Workflows  []store.WorkflowVersion
		Definition string
		Checked    bool
		Problems   []api.FieldError
	}{base: baseOf(r, "Workflows"), Workflows: list}
	if r.Method == http.MethodPost {
		data.Definition, data.Checked = r.PostFormValue("definition"), true
		if _, err := states.Parse([]byte(data.Definition)); err != nil {
			var problems states.ErrorList
			if errors.As(err, &problems) {
				data.Problems = invalidDefinition(problems, "").errors
			} else {
				data.Problems = []api.FieldError{{Pointer: "", Detail: err.Error()}}
			}
		}
	}
	return s.render(w, http.StatusOK, "workflows", data)
}

// workflowPage shows a workflow's versions (with their labels and
// aliases) and one version's definition (the latest, or ?version=REF),
// drawn and as text, with a form that starts an execution of it
// (operators) and one that compares two versions: with ?from=REF&to=REF
// the page shows their diff, both graphs with the states added, removed
// and changed marked.
func (s *Server) workflowPage(w http.ResponseWriter, r *http.Request) error {
	name := r.PathValue("name")
	data, err := s.workflowData(r, name, r.URL.Query().Get("version"))
	if err != nil {
		return err
	}
	q := r.URL.Query()
	if q.Get("from") != "" || q.Get("to") != "" {
		d, err := s.workflowDiff(r, name)
		if err != nil {
			return err
		}
		if err := s.diffGraphs(r, data, d); err != nil {
			return err
		}
		data.Diff = &d
	}
	return s.render(w, http.StatusOK, "workflow", data)
}

type workflowData struct {
	base
	Workflow   store.WorkflowVersion
	Versions   []store.WorkflowVersion
	Aliases    map[int][]string // by version
	Definition string
	Graph      template.HTML
	CanStart   bool
	Input      string
	Name       string
	// Diff, with FromGraph and ToGraph, is the comparison the page shows
	// (?from=&to=); nil for none.
	Diff               *api.WorkflowDiff
	FromGraph, ToGraph template.HTML
}

func (s *Server) workflowData(r *http.Request, name, ref string) (*workflowData, error) {
	v, err := s.st.ResolveWorkflow(r.Context(), name, ref)
	if errors.Is(err, store.ErrInvalidRef) {
		return nil, &problem{status: http.StatusBadRequest, kind: "bad-request", title: "bad request", detail: err.Error()}
	}
	if err != nil {
		return nil, err
	}
	versions, err := s.st.WorkflowVersions(r.Context(), name)
	if err != nil {
		return nil, err
	}
	aliases, err := s.st.WorkflowAliases(r.Context(), name)
	if err != nil {
		return nil, err
	}
	data := &workflowData{base: baseOf(r, "Workflow "+name), Workflow: v, Versions: versions, Input: "{}", Aliases: map[int][]string{}}
	for _, a := range aliases {
		data.Aliases[a.Version] = append(data.Aliases[a.Version], a.Alias)
	}
	data.CanStart = data.Principal.Role >= RoleOperator
	if def, err := jsonvalue.Decode(v.Definition); err == nil {
		data.Definition = pretty(def)
	}
	if m, err := states.Parse(v.Definition); err == nil {
		data.Graph, _ = workflowGraph(m)
	}
	return data, nil
}

// diffGraphs draws the two versions d compares: in the first, the states
// removed are marked failed and those changed current; in the second,
// the states added visited and those changed current (the graph's
// classes, which the page's stylesheet colours).
func (s *Server) diffGraphs(r *http.Request, data *workflowData, d api.WorkflowDiff) error {
	changed := map[string]string{}
	for _, c := range d.Changed {
		changed[c.State] = "current"
	}
	for i, v := range []int{d.From, d.To} {
		w, err := s.st.Workflow(r.Context(), d.Name, v)
		if err != nil {
			return err
		}
		m, err := states.Parse(w.Definition)
		if err != nil {
			return fmt.Errorf("workflow %s version %d no longer parses: %w", w.Name, w.Version, err)
		}
		status := maps.Clone(changed)
		mark, names := "failed", d.Removed
		if i == 1 {
			mark, names = "visited", d.Added
		}
		for _, n := range names {
			status[n] = mark
		}
		var buf bytes.Buffer
		if err := graph.Build(m).WriteSVG(&buf, graph.SVGOptions{Unstyled: true, Status: status}); err != nil {
			return err
		}
		if i == 0 {
			data.FromGraph = template.HTML(buf.String())
		} else {
			data.ToGraph = template.HTML(buf.String())
		}
	}
	return nil
}

// startPage starts an execution of a workflow version from the form and
// goes to its page; a refused input shows the workflow page again with
// the reason.
func (s *Server) startPage(w http.ResponseWriter, r *http.Request) error {
	name := r.PathValue("name")
	version, err := strconv.Atoi(r.PostFormValue("version"))
	if err != nil || version < 1 {
		return &problem{status: http.StatusBadRequest, kind: "bad-request", title: "bad request", detail: "the form names no version"}
	}
	data, err := s.workflowData(r, name, strconv.Itoa(version))
	if err != nil {
		return err
	}
	data.Input, data.Name = r.PostFormValue("input"), strings.TrimSpace(r.PostFormValue("name"))
	refuse := func(status int, format string, args ...any) error {
		data.Error = fmt.Sprintf(format, args...)
		return s.render(w, status, "workflow", data)
	}
	input, err := jsonvalue.Decode([]byte(data.Input))
	if err != nil {
		return refuse(http.StatusBadRequest, "the input is not JSON: %v", err)
	}
	if p := checkExecutionID(data.Name); p != nil {
		return refuse(http.StatusBadRequest, "%v", p)
	}
	m, err := states.Parse(data.Workflow.Definition)
	if err != nil {
		return err
	}
	if p := missingAgents(m, s.agents); p != nil {
		var msgs []string
		for _, e := range p.errors {
			msgs = append(msgs, e.State+": "+e.Detail)
		}
		return refuse(http.StatusUnprocessableEntity, "%s", strings.Join(msgs, "; "))
	}
	opts := engine.StartOptions{ID: data.Name, MachineName: name, Registry: fmt.Sprintf("%s@%d", name, version), Agents: s.agents}
	if s.agentsFile != nil {
		opts.AgentsFile, opts.AgentsKind = s.agentsFile, "agents"
	}
	id, err := s.startRun(r.Context(), m, input, opts)
	if err != nil {
		p := problemOf(err)
		return refuse(p.status, "%s", p.detail)
	}
	http.Redirect(w, r, "/executions/"+url.PathEscape(id), http.StatusSeeOther)
	return nil
}
