package builtin

import (
	"fmt"

	"github.com/aslrun/aslrun/egress"
	"github.com/aslrun/aslrun/jsonvalue"
	"github.com/aslrun/aslrun/models"
	"github.com/aslrun/aslrun/models/localembed"
	"github.com/aslrun/aslrun/models/openai"
)

// EmbedderKey is the agents file's reserved key naming the embedder of
// semantic memory and semantic context (engine.Config.Embedder):
//
//	"Embedder": {"Type": "openai", "Model": "text-embedding-3-small", "APIKeyEnv": "OPENAI_API_KEY"}
//	"Embedder": {"Type": "local", "Dimensions": 384}
//
// "openai" is any server of OpenAI's /embeddings API (BaseURL, Model,
// APIKeyEnv or APIKey as a reference, Dimensions, OmitDimensions,
// BatchSize, TimeoutSeconds, MaxRetries), reached through the file's
// Hosts like its models; "local" is the offline n-gram embedder of
// package models/localembed (Dimensions, 16 to 4096, default 384). A file
// without it leaves the executor's default, the local embedder.
const EmbedderKey = "Embedder"

// embedderFields are the fields an Embedder may have.
const embedderFields = "Type, Comment, Model, BaseURL, APIKey, APIKeyEnv, Dimensions, OmitDimensions, BatchSize, TimeoutSeconds, MaxRetries"

// embedderConfig is the file's Embedder.
type embedderConfig struct {
	local  *localembed.Config
	openai *openai.EmbedConfig
}

// parseEmbedder checks the file's Embedder.
func parseEmbedder(ptr string, v any) (*embedderConfig, error) {
	m, ok := v.(map[string]any)
	if !ok {
		return nil, fileErrorf(ptr, "Embedder must be an object with a Type (openai or local), not %s", jsonvalue.TypeName(v))
	}
	p := &fieldParser{ptr: ptr, obj: m}
	p.unknown("embedder", embedderFields)
	if c, ok := m["Comment"]; ok {
		if _, isStr := c.(string); !isStr {
			p.fail("Comment", "Comment must be a string, not %s", jsonvalue.TypeName(c))
		}
	}
	typ := p.str("Type", true)
	if p.err != nil {
		return nil, p.err
	}
	switch typ {
	case "local":
		for _, f := range []string{"Model", "BaseURL", "APIKey", "APIKeyEnv", "OmitDimensions", "BatchSize", "TimeoutSeconds", "MaxRetries"} {
			if _, ok := m[f]; ok {
				return nil, fileErrorf(ptr+"/"+f, "%s is a field of an openai embedder, not of a local one", f)
			}
		}
		cfg := &localembed.Config{}
		if _, ok := m["Dimensions"]; ok {
			cfg.Dimensions = p.integer("Dimensions", localembed.MinDimensions, localembed.MaxDimensions)
		}
		if p.err != nil {
			return nil, p.err
		}
		return &embedderConfig{local: cfg}, nil
	case "openai":
		cfg := &openai.EmbedConfig{
			Model:          p.str("Model", true),
			BaseURL:        p.str("BaseURL", false),
			APIKeyEnv:      p.str("APIKeyEnv", false),
			OmitDimensions: p.boolean("OmitDimensions"),
			Timeout:        p.seconds("TimeoutSeconds"),
			MaxRetries:     defaultModelRetries,
		}
		if _, ok := m["Dimensions"]; ok {
			cfg.Dimensions = p.integer("Dimensions", 1, 65536)
		}
		if _, ok := m["BatchSize"]; ok {
			cfg.BatchSize = p.integer("BatchSize", 1, openai.MaxEmbedBatchSize)
		}
		if _, ok := m["MaxRetries"]; ok {
			cfg.MaxRetries = p.integer("MaxRetries", 0, 10)
		}
		p.apiKeyRef(&cfg.APIKeyEnv, "OPENAI_API_KEY")
		if cfg.APIKeyEnv != "" && !validEnvName(cfg.APIKeyEnv) && p.err == nil {
			p.fail("APIKeyEnv", "%q is not an environment variable name", cfg.APIKeyEnv)
		}
		if cfg.BaseURL != "" && p.err == nil {
			if _, err := checkURL(cfg.BaseURL); err != nil {
				p.fail("BaseURL", "%v", err)
			}
		}
		if p.err != nil {
			return nil, p.err
		}
		// Build it once to check what only the model knows (its size).
		if _, err := openai.NewEmbedder(*cfg, nil); err != nil {
			return nil, fileErrorf(ptr, "%v", err)
		}
		return &embedderConfig{openai: cfg}, nil
	}
	return nil, fileErrorf(ptr+"/Type", "unknown embedder type %q: openai (any /embeddings server) or local", typ)
}

// Embedder returns the embedder the file's Embedder names, its requests
// confined to the file's Hosts (merged with what WithHosts added); nil
// when the file names none.
func (f *AgentsFile) Embedder() (models.Embedder, error) {
	switch {
	case f.embedder == nil:
		return nil, nil
	case f.embedder.local != nil:
		return localembed.New(*f.embedder.local)
	}
	hosts, err := egress.New(f.hosts)
	if err != nil {
		return nil, fmt.Errorf("agents file: %s: %w", HostsKey, err)
	}
	client := *policyClient(hosts)
	client.Transport = noteDenied{base: client.Transport}
	e, err := openai.NewEmbedder(*f.embedder.openai, &client)
	if err != nil {
		return nil, fmt.Errorf("agents file: %s: %w", EmbedderKey, err)
	}
	return e, nil
}
