package agents

import "context"

// Embedder turns texts into unit vectors, one per text, in order, for
// semantic memory and semantic context (models.Embedder is one). Model
// names the model: vectors of different models are never compared.
type Embedder interface {
	Model() string
	Dimensions() int
	Embed(ctx context.Context, texts []string) ([][]float32, error)
}

// SetEmbedder makes e the embedder of the executions that run with this
// registry's agents (an agents file's Embedder); nil leaves the
// executor's own.
func (r *Registry) SetEmbedder(e Embedder) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.embedder = e
}

// Embedder returns the registry's embedder; nil when it has none.
func (r *Registry) Embedder() Embedder {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.embedder
}
