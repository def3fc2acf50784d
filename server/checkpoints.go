package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/aslrun/aslrun/api"
	"github.com/aslrun/aslrun/engine"
	"github.com/aslrun/aslrun/jsonvalue"
)

// Checkpoints, rollback, fork and agent memory.

// maxExecutionID bounds an execution id the API accepts (the stores' own
// bound on a key part).
const maxExecutionID = api.MaxName

func (s *Server) listCheckpoints(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("id")
	list, err := s.st.ListCheckpoints(r.Context(), id)
	if err != nil {
		return err
	}
	now := time.Now()
	out := api.CheckpointList{Execution: id, Checkpoints: []api.Checkpoint{}}
	for _, cp := range list {
		out.Checkpoints = append(out.Checkpoints, checkpointOf(cp, now))
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

func (s *Server) getCheckpoint(w http.ResponseWriter, r *http.Request) error {
	cp, err := s.checkpoint(r.Context(), r.PathValue("id"), r.PathValue("name"), false, "")
	if err != nil {
		return err
	}
	out := checkpointOf(cp, time.Now())
	out.Document = rawOrNull(cp.Document)
	if len(cp.Variables) > 0 {
		out.Variables = raw(cp.Variables)
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// diffCheckpoints answers the JSON Patch that turns the document of
// checkpoint {name} into that of ?to=.
func (s *Server) diffCheckpoints(w http.ResponseWriter, r *http.Request) error {
	id, to := r.PathValue("id"), r.URL.Query().Get("to")
	if to == "" {
		return badRequest("", "to is required: ?to= names the checkpoint to compare with")
	}
	from, err := s.checkpoint(r.Context(), id, r.PathValue("name"), false, "")
	if err != nil {
		return err
	}
	other, err := s.checkpoint(r.Context(), id, to, false, "")
	if err != nil {
		return err
	}
	w.Header().Set("Content-Type", "application/json-patch+json")
	w.WriteHeader(http.StatusOK)
	return json.NewEncoder(w).Encode(jsonPatch(from.Document, other.Document))
}

// checkpoint loads an execution's named checkpoint; live refuses one that
// has expired. One that is not there is a 404 naming those there are (at
// pointer in the request body, when given).
func (s *Server) checkpoint(ctx context.Context, id, name string, live bool, pointer string) (*engine.Checkpoint, error) {
	cp, err := s.st.Checkpoint(ctx, id, name)
	now := time.Now()
	if err == nil && (!live || !expired(cp, now)) {
		return cp, nil
	}
	if err != nil && !errors.Is(err, engine.ErrNotFound) {
		return nil, err
	}
	list, lerr := s.st.ListCheckpoints(ctx, id)
	if lerr != nil {
		return nil, lerr // the execution is not there
	}
	there := engine.CheckpointNames(list, now)
	detail := fmt.Sprintf("execution %s has no checkpoint %q; checkpoints: %s", id, name, there)
	if err == nil {
		detail = fmt.Sprintf("checkpoint %q of execution %s expired at %s; checkpoints: %s", name, id, cp.ExpiresAt.UTC().Format(time.RFC3339), there)
	}
	p := &problem{status: http.StatusNotFound, kind: "not-found", title: "no such checkpoint", detail: detail}
	if pointer != "" {
		p.errors = []api.FieldError{{Pointer: pointer, Detail: detail}}
	}
	return nil, p
}

func expired(cp *engine.Checkpoint, now time.Time) bool {
	return !cp.ExpiresAt.IsZero() && !cp.ExpiresAt.After(now)
}

func checkpointOf(cp *engine.Checkpoint, now time.Time) api.Checkpoint {
	return api.Checkpoint{Name: cp.Name, State: cp.State, Next: cp.Next, CreatedAt: cp.CreatedAt.UTC(), ExpiresAt: timePtr(cp.ExpiresAt), Expired: expired(cp, now)}
}

// rawOrNull encodes a document for the wire; nil is null.
func rawOrNull(v any) json.RawMessage {
	if b := raw(v); b != nil {
		return b
	}
	return json.RawMessage("null")
}

// jsonPatch returns the RFC 6902 patch that turns a into b: objects are
// compared key by key, arrays index by index (the common part, then adds
// or removes at the end, last index first); any other difference replaces
// the value. Keys are in sorted order, so the patch is deterministic.
func jsonPatch(a, b any) []api.PatchOp {
	ops := []api.PatchOp{}
	diffInto(&ops, "", a, b)
	return ops
}

func diffInto(ops *[]api.PatchOp, path string, a, b any) {
	switch av := a.(type) {
	case map[string]any:
		bv, ok := b.(map[string]any)
		if !ok {
			break
		}
		for _, k := range slices.Sorted(maps.Keys(av)) {
			p := path + "/" + jsonvalue.EscapePointer(k)
			if bx, ok := bv[k]; ok {
				diffInto(ops, p, av[k], bx)
			} else {
				*ops = append(*ops, api.PatchOp{Op: "remove", Path: p})
			}
		}
		for _, k := range slices.Sorted(maps.Keys(bv)) {
			if _, ok := av[k]; !ok {
				*ops = append(*ops, api.PatchOp{Op: "add", Path: path + "/" + jsonvalue.EscapePointer(k), Value: rawOrNull(bv[k])})
			}
		}
		return
	case []any:
		bv, ok := b.([]any)
		if !ok {
			break
		}
		n := min(len(av), len(bv))
		for i := range n {
			diffInto(ops, path+"/"+strconv.Itoa(i), av[i], bv[i])
		}
		for i := n; i < len(bv); i++ {
			*ops = append(*ops, api.PatchOp{Op: "add", Path: path + "/" + strconv.Itoa(i), Value: rawOrNull(bv[i])})
		}
		for i := len(av) - 1; i >= n; i-- {
			*ops = append(*ops, api.PatchOp{Op: "remove", Path: path + "/" + strconv.Itoa(i)})
		}
		return
	}
	if !jsonvalue.Equal(a, b) {
		*ops = append(*ops, api.PatchOp{Op: "replace", Path: path, Value: rawOrNull(b)})
	}
}

// checkpointRequest checks a rollback's or fork's checkpoint name and
// reads its restore.
func checkpointRequest(checkpoint, restore string) (engine.Restore, error) {
	if checkpoint == "" {
		return 0, badRequest("/checkpoint", "checkpoint is required")
	}
	return restoreOf(restore)
}

// restoreOf reads a request's restore field.
func restoreOf(v string) (engine.Restore, error) {
	restore, err := engine.ParseRestore(v)
	if err != nil {
		return 0, badRequest("/restore", "restore %q must be both, document or memory", v)
	}
	return restore, nil
}

// rollback moves an execution back to a checkpoint, in place, and
// continues it in the background (202, with the execution as it stood).
func (s *Server) rollback(w http.ResponseWriter, r *http.Request) error {
	var req api.Rollback
	if err := decodeBody(r, &req); err != nil {
		return err
	}
	restore, err := checkpointRequest(req.Checkpoint, req.Restore)
	if err != nil {
		return err
	}
	id := r.PathValue("id")
	e, err := s.st.Load(r.Context(), id)
	if err != nil {
		return err
	}
	if _, err := s.checkpoint(r.Context(), id, req.Checkpoint, true, "/checkpoint"); err != nil {
		return err
	}
	if err := s.rollbackNow(r.Context(), e, req.Checkpoint, restore); err != nil {
		return err
	}
	if e, err = s.st.Load(r.Context(), id); err != nil {
		return err
	}
	writeJSON(w, http.StatusAccepted, executionOf(e))
	return nil
}

// rollbackNow commits a rollback of e to a checkpoint (or refuses it) and
// continues the execution in the background.
func (s *Server) rollbackNow(ctx context.Context, e *engine.Execution, checkpoint string, restore engine.Restore) error {
	switch {
	case e.Status == engine.StatusRunning:
		// In a server a RUNNING execution runs (those a crash left are
		// recovered when it starts): the rollback would find it busy.
		return fmt.Errorf("execution %s: %w: roll it back once it waits or has ended", e.ID, engine.ErrBusy)
	case restore == engine.RestoreMemory && e.Status.Ended():
		return &problem{status: http.StatusConflict, kind: "ended", title: "the execution has ended",
			detail: fmt.Sprintf("execution %s has ended (%s): restoring the memory alone leaves nothing to run; restore the document too", e.ID, e.Status),
			errors: []api.FieldError{{Pointer: "/restore", Detail: "memory alone needs an execution that has not ended"}}}
	}
	if _, err := s.x.Rollback(ctx, e.ID, checkpoint, engine.ResumeOptions{Restore: restore, RecordOnly: true}); err != nil {
		return err
	}
	s.continueLater("continue after a rollback", e.ID)
	return nil
}

// startFork launches a fork of execution id from a checkpoint (see
// launch); a taken name is nameTaken.
func (s *Server) startFork(ctx context.Context, id, checkpoint string, restore engine.Restore, name string) (string, error) {
	child, err := s.launch(ctx, "fork", id, func(ctx context.Context, created func(string)) (*engine.Result, error) {
		return s.x.Fork(ctx, id, checkpoint, engine.ResumeOptions{Restore: restore, ForkID: name, Created: created})
	})
	if errors.Is(err, engine.ErrExists) {
		return "", nameTaken(name)
	}
	return child, err
}

// fork starts a new execution from a checkpoint of another and answers
// once it exists (201); it runs in the background.
func (s *Server) fork(w http.ResponseWriter, r *http.Request) error {
	var req api.Fork
	if err := decodeBody(r, &req); err != nil {
		return err
	}
	restore, err := checkpointRequest(req.Checkpoint, req.Restore)
	if err != nil {
		return err
	}
	if err := checkExecutionID(req.Name); err != nil {
		return err
	}
	id := r.PathValue("id")
	if _, err := s.checkpoint(r.Context(), id, req.Checkpoint, true, "/checkpoint"); err != nil {
		return err
	}
	if req.Name != "" {
		if _, err := s.st.Load(r.Context(), req.Name); err == nil {
			return nameTaken(req.Name)
		} else if !errors.Is(err, engine.ErrNotFound) {
			return err
		}
	}
	child, err := s.startFork(r.Context(), id, req.Checkpoint, restore, req.Name)
	var ge *engine.GovernanceError
	switch {
	case err == nil:
		e, err := s.st.Load(r.Context(), child)
		if err != nil {
			return err
		}
		w.Header().Set("Location", "/v1/executions/"+child)
		writeJSON(w, http.StatusCreated, executionOf(e))
		return nil
	case errors.As(err, &ge):
		return &problem{status: http.StatusUnprocessableEntity, kind: "governance", title: "refused by the workflow's governance", detail: err.Error(),
			errors: []api.FieldError{{Pointer: "/checkpoint", Detail: fmt.Sprintf("%s: %s", ge.Violation.Name, ge.Violation.Cause)}}}
	}
	return err
}

func nameTaken(name string) *problem {
	detail := fmt.Sprintf("execution %s exists: a name is used once", name)
	return &problem{status: http.StatusConflict, kind: "exists", title: "the name is taken", detail: detail,
		errors: []api.FieldError{{Pointer: "/name", Detail: detail}}}
}

// checkExecutionID checks a new execution's id from a request body: empty
// (a new UUIDv7), or a name api.CheckName accepts (no "/", which would
// leave the API's paths, no control or bidirectional formatting
// character, which would reach a terminal or a page).
func checkExecutionID(id string) error {
	if id == "" {
		return nil
	}
	if err := api.CheckName(id); err != nil {
		return badRequest("/name", "%v", err)
	}
	return nil
}

// listNamespaces lists the agent memory namespaces that have live
// entries.
func (s *Server) listNamespaces(w http.ResponseWriter, r *http.Request) error {
	list, err := s.st.ListMemory(r.Context(), "", time.Now())
	if err != nil {
		return err
	}
	out := api.MemoryNamespaceList{Namespaces: []api.MemoryNamespace{}}
	for _, e := range list { // by namespace and key
		n := len(out.Namespaces)
		if n == 0 || out.Namespaces[n-1].Namespace != e.Namespace {
			ns := api.MemoryNamespace{Namespace: e.Namespace}
			if of, kind, coll, ok := engine.SplitMemoryNamespace(e.Namespace); ok {
				ns.Of, ns.Type, ns.Collection = of, kind, coll
			}
			out.Namespaces = append(out.Namespaces, ns)
			n++
		}
		ns := &out.Namespaces[n-1]
		ns.Keys++
		if u := e.UpdatedAt.UTC(); u.After(ns.UpdatedAt) {
			ns.UpdatedAt = u
		}
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// listMemory lists a namespace's live entries (none: an empty list).
func (s *Server) listMemory(w http.ResponseWriter, r *http.Request) error {
	ns := r.PathValue("namespace")
	if err := engine.CheckMemoryName("namespace", ns); err != nil {
		return badRequest("", "%v", err)
	}
	list, err := s.st.ListMemory(r.Context(), ns, time.Now())
	if err != nil {
		return err
	}
	out := api.MemoryEntryList{Namespace: ns, Entries: []api.MemoryEntry{}}
	for _, e := range list {
		out.Entries = append(out.Entries, api.MemoryEntry{Key: e.Key, Value: rawOrNull(e.Value), UpdatedAt: e.UpdatedAt.UTC(),
			ExpiresAt: timePtr(e.ExpiresAt), Execution: e.Execution})
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}
