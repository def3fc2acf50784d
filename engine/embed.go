package engine

import (
	"context"
	"errors"
	"fmt"

	asl "github.com/aslrun/aslrun"
	"github.com/aslrun/aslrun/models"
	"github.com/aslrun/aslrun/models/localembed"
)

// Embedder turns texts into unit vectors, one per text, in order
// (models.Embedder is one). Vectors of different Models are never
// compared: semantic memory records the model of each vector it stores.
type Embedder interface {
	Model() string
	Dimensions() int
	Embed(ctx context.Context, texts []string) ([][]float32, error)
}

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
	vecs, err := h.r.x.embedder.Embed(ctx, texts)
	if err != nil {
		var ae *asl.Error
		if errors.As(err, &ae) {
			return nil, ae
		}
		return nil, asl.Errorf(asl.ErrAgentModelError, "state %s: %s: embedding with %s: %v", h.name(), what, h.r.x.embedder.Model(), err)
	}
	if len(vecs) != len(texts) {
		return nil, asl.Errorf(asl.ErrAgentModelError, "state %s: %s: the embedder %s gave %d vectors for %d texts", h.name(), what, h.r.x.embedder.Model(), len(vecs), len(texts))
	}
	return vecs, nil
}

// Embed embeds texts with the executor's embedder (for Go code sharing
// it: the server's API, tests).
func (x *Executor) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	vecs, err := x.embedder.Embed(ctx, texts)
	if err != nil {
		return nil, fmt.Errorf("embedding with %s: %w", x.embedder.Model(), err)
	}
	return vecs, nil
}

// EmbedderModel names the executor's embedding model.
func (x *Executor) EmbedderModel() string { return x.embedder.Model() }

// brokenEmbedder is an embedder that could not be made.
type brokenEmbedder struct{ err error }

func (b brokenEmbedder) Model() string   { return "none" }
func (b brokenEmbedder) Dimensions() int { return 0 }
func (b brokenEmbedder) Embed(context.Context, []string) ([][]float32, error) {
	return nil, b.err
}
