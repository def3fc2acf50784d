package engine

import (
	"context"
	"errors"

	asl "github.com/aslrun/aslrun"
	"github.com/aslrun/aslrun/agents"
	"github.com/aslrun/aslrun/models"
	"github.com/aslrun/aslrun/models/localembed"
)

// Embedder turns texts into unit vectors (agents.Embedder): the
// executor's default (Config.Embedder), or an execution's own (its agents
// registry's, as an agents file's Embedder sets it).
type Embedder = agents.Embedder

// embedCache bounds the vectors an executor keeps of texts it embedded.
const embedCache = 10000

// newEmbedder returns e, or the offline embedder, behind a cache.
func newEmbedder(e Embedder) Embedder {
	if e == nil {
		local, err := localembed.New(localembed.Config{})
		if err != nil {
			// Its defaults are valid: this is a bug, told at each use.
			return brokenEmbedder{err}
		}
		e = local
	}
	return models.NewCachedEmbedder(e, embedCache)
}

// embed embeds texts for state (what names the use, for errors): an error
// of the embedder is the state's, named as the embedder named it (an
// *asl.Error keeps its name) or Agent.ModelError.
func (h *stateRun) embed(ctx context.Context, what string, texts []string) ([][]float32, error) {
	e := h.r.embedder()
	vecs, err := e.Embed(ctx, texts)
	if err != nil {
		var ae *asl.Error
		if errors.As(err, &ae) {
			return nil, ae
		}
		return nil, asl.Errorf(asl.ErrAgentModelError, "state %s: %s: embedding with %s: %v", h.name(), what, e.Model(), err)
	}
	if len(vecs) != len(texts) {
		return nil, asl.Errorf(asl.ErrAgentModelError, "state %s: %s: the embedder %s gave %d vectors for %d texts", h.name(), what, e.Model(), len(vecs), len(texts))
	}
	return vecs, nil
}

// embedder is the execution's embedder: its agents registry's, else the
// executor's.
func (r *run) embedder() Embedder {
	if r.agents != nil {
		if e := r.agents.Embedder(); e != nil {
			return e
		}
	}
	return r.x.embedder
}

// brokenEmbedder is an embedder that could not be made.
type brokenEmbedder struct{ err error }

func (b brokenEmbedder) Model() string   { return "none" }
func (b brokenEmbedder) Dimensions() int { return 0 }
func (b brokenEmbedder) Embed(context.Context, []string) ([][]float32, error) {
	return nil, b.err
}
