package openai

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	sdk "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/packages/param"

	asl "github.com/aslrun/aslrun"
	"github.com/aslrun/aslrun/models"
	"github.com/aslrun/aslrun/models/internal/call"
)

const (
	// DefaultEmbedBatchSize is EmbedConfig.BatchSize when it is zero.
	DefaultEmbedBatchSize = 512
	// MaxEmbedBatchSize is the most texts OpenAI takes in one request.
	MaxEmbedBatchSize = 2048
	// maxEmbedDimensions bounds EmbedConfig.Dimensions.
	maxEmbedDimensions = 65536
)

// EmbedConfig names an embedding model of OpenAI's Embeddings API, or of
// another server that speaks it (Ollama, vLLM, …).
type EmbedConfig struct {
	// BaseURL is the API's address; default DefaultBaseURL. Requests go
	// to BaseURL + "/embeddings".
	BaseURL string
	// Model is the provider's name of the model, like
	// "text-embedding-3-small". Required.
	Model string
	// APIKeyEnv names the environment variable that holds the API key,
	// read at every Embed and sent as "Authorization: Bearer": a variable
	// that is unset or empty fails the Embed. Empty means no key is sent.
	APIKeyEnv string
	// Dimensions is the size of the vectors. When positive it is sent as
	// "dimensions" (models that can shorten their vectors, such as
	// text-embedding-3-small, then return vectors of that size). Zero
	// means the model's own size, known for text-embedding-3-small (1536),
	// text-embedding-3-large (3072) and text-embedding-ada-002 (1536) and
	// required for any other model.
	Dimensions int
	// OmitDimensions keeps Dimensions out of the request, for a server
	// that refuses the field; Dimensions is then only checked against the
	// answer.
	OmitDimensions bool
	// BatchSize is the most texts sent in one request; an Embed of more
	// sends several requests, one after the other. Zero means
	// DefaultEmbedBatchSize; at most MaxEmbedBatchSize.
	BatchSize int
	// Timeout bounds each attempt of a request, as models.Config.Timeout
	// does. Zero means 10 minutes.
	Timeout time.Duration
	// MaxRetries is how many times a request that got a 429, a 5xx or a
	// network failure is tried again, as models.Config.MaxRetries says.
	// Zero means no retries.
	MaxRetries int
}

// nativeDimensions returns the vector size of OpenAI's embedding model
// name, 0 when it is not one of them.
func nativeDimensions(name string) int {
	switch name {
	case sdk.EmbeddingModelTextEmbedding3Small, sdk.EmbeddingModelTextEmbeddingAda002:
		return 1536
	case sdk.EmbeddingModelTextEmbedding3Large:
		return 3072
	}
	return 0
}

// embedder is the Embedder NewEmbedder returns. It is immutable after
// NewEmbedder.
type embedder struct {
	target call.Target
	svc    sdk.EmbeddingService
	name   string // Model's answer
	dims   int
	send   bool // whether dims is sent as "dimensions"
	batch  int
}

var _ models.UsageEmbedder = (*embedder)(nil)

// NewEmbedder returns the embedding model cfg names, sending its requests
// with client (nil means a new http.Client) to cfg.BaseURL + "/embeddings".
// As New, it turns the SDK's retries off and reads no environment variable
// but the one APIKeyEnv names. It returns every problem of cfg, each a
// *models.ConfigError naming its field.
//
// A request holds model, input (the texts, as an array of strings),
// encoding_format "float" and, unless OmitDimensions, dimensions. The
// answer's vectors are put in the order of their index (a server may send
// them in any order), decoded from base64 when the server sends them so,
// checked and scaled to unit length.
//
// Every error Embed returns is a *models.Error, named as those of a
// models.Model are. An empty text is refused before anything is sent; an
// answer with a vector of the wrong size, a NaN, a missing or repeated
// index is asl.ErrAgentModelError and is not retried. Both wrap a
// *models.EmbedError that names the text's index in the Embed's texts.
func NewEmbedder(cfg EmbedConfig, client *http.Client) (models.UsageEmbedder, error) {
	var errs []error
	bad := func(field, format string, args ...any) {
		errs = append(errs, &models.ConfigError{Field: field, Msg: fmt.Sprintf(format, args...)})
	}
	mc := models.Config{
		Provider:   "openai",
		Model:      cfg.Model,
		BaseURL:    cfg.BaseURL,
		APIKeyEnv:  cfg.APIKeyEnv,
		Timeout:    cfg.Timeout,
		MaxRetries: cfg.MaxRetries,
	}
	if err := models.Validate(mc); err != nil {
		errs = append(errs, err)
	}
	dims := cfg.Dimensions
	switch {
	case dims < 0 || dims > maxEmbedDimensions:
		bad("Dimensions", "%d is not between 0 and %d", dims, maxEmbedDimensions)
	case dims == 0:
		dims = nativeDimensions(cfg.Model)
		if dims == 0 && cfg.Model != "" {
			bad("Dimensions", "is required for model %q, whose vector size is not known", cfg.Model)
		}
	}
	batch := cfg.BatchSize
	switch {
	case batch < 0 || batch > MaxEmbedBatchSize:
		bad("BatchSize", "%d is not between 0 and %d", batch, MaxEmbedBatchSize)
	case batch == 0:
		batch = DefaultEmbedBatchSize
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	base := cfg.BaseURL
	if base == "" {
		base = DefaultBaseURL
	}
	if client == nil {
		client = &http.Client{}
	}
	// NewEmbeddingService, unlike NewClient, reads no environment
	// variable.
	svc := sdk.NewEmbeddingService(
		option.WithHTTPClient(client),
		option.WithBaseURL(base),
		option.WithMaxRetries(0),
	)
	return &embedder{
		target: call.Target{Provider: "openai", Config: mc},
		svc:    svc,
		name:   cfg.Model + "@" + strconv.Itoa(dims),
		dims:   dims,
		send:   cfg.Dimensions > 0 && !cfg.OmitDimensions,
		batch:  batch,
	}, nil
}

// Model returns the configured model and its vector size, as
// "text-embedding-3-small@1536".
func (e *embedder) Model() string { return e.name }

// Dimensions returns the size of the vectors.
func (e *embedder) Dimensions() int { return e.dims }

// Embed returns the vectors of texts; see NewEmbedder.
func (e *embedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	vecs, _, err := e.EmbedWithUsage(ctx, texts)
	return vecs, err
}

// EmbedWithUsage returns the vectors of texts and the tokens of every
// request it sent; see NewEmbedder.
func (e *embedder) EmbedWithUsage(ctx context.Context, texts []string) ([][]float32, models.EmbedUsage, error) {
	var usage models.EmbedUsage
	for i, t := range texts {
		if t == "" {
			ee := &models.EmbedError{Model: e.name, Index: i, Msg: "empty text"}
			return nil, usage, e.invalid(ee)
		}
	}
	if len(texts) == 0 {
		return [][]float32{}, usage, nil
	}
	key, kerr := e.target.Key()
	if kerr != nil {
		return nil, usage, kerr
	}
	var opts []option.RequestOption
	if key != "" {
		opts = append(opts, option.WithAPIKey(key))
	}
	out := make([][]float32, 0, len(texts))
	for start := 0; start < len(texts); start += e.batch {
		chunk := texts[start:min(start+e.batch, len(texts))]
		var (
			vecs   [][]float32
			tokens int64
		)
		err := e.target.Do(ctx, func(ctx context.Context) *call.Failure {
			var f *call.Failure
			vecs, tokens, f = e.request(ctx, chunk, start, opts, key)
			return f
		})
		if err != nil {
			return nil, usage, err
		}
		out = append(out, vecs...)
		usage.Tokens += tokens
	}
	return out, usage, nil
}

// request makes one attempt at embedding chunk, the texts of an Embed from
// index start.
func (e *embedder) request(ctx context.Context, chunk []string, start int, opts []option.RequestOption, key string) ([][]float32, int64, *call.Failure) {
	p := sdk.EmbeddingNewParams{
		Model:          e.target.Config.Model,
		Input:          sdk.EmbeddingNewParamsInputUnion{OfArrayOfStrings: chunk},
		EncodingFormat: sdk.EmbeddingNewParamsEncodingFormatFloat,
	}
	if e.send {
		p.Dimensions = param.NewOpt(int64(e.dims))
	}
	resp, err := e.svc.New(ctx, p, opts...)
	if err != nil {
		// An error of the Embeddings API is classified as one of Chat
		// Completions is.
		return nil, 0, (&model{target: e.target}).failure(ctx, err, key)
	}
	if resp == nil { // a body of null
		return nil, 0, e.malformed(&models.EmbedError{Model: e.name, Index: -1, Msg: "no answer"}, key)
	}
	vecs := make([][]float32, len(chunk))
	if len(resp.Data) != len(chunk) {
		return nil, 0, e.malformed(&models.EmbedError{Model: e.name, Index: -1, Msg: fmt.Sprintf("%d vectors for %d texts", len(resp.Data), len(chunk))}, key)
	}
	for _, d := range resp.Data {
		i := d.Index
		if i < 0 || i >= int64(len(chunk)) {
			return nil, 0, e.malformed(&models.EmbedError{Model: e.name, Index: -1, Msg: fmt.Sprintf("a vector has index %d, not one of the %d texts sent", i, len(chunk))}, key)
		}
		if vecs[i] != nil {
			return nil, 0, e.malformed(&models.EmbedError{Model: e.name, Index: start + int(i), Msg: "two vectors"}, key)
		}
		v := make([]float32, len(d.Embedding))
		for j, x := range d.Embedding {
			v[j] = float32(x)
		}
		vecs[i] = v
	}
	if err := models.NormalizeEmbeddings(e.name, e.dims, len(chunk), vecs); err != nil {
		var ee *models.EmbedError
		if errors.As(err, &ee) && ee.Index >= 0 {
			ee.Index += start
		}
		return nil, 0, e.malformed(err, key)
	}
	tokens := resp.Usage.PromptTokens
	if tokens == 0 {
		tokens = resp.Usage.TotalTokens
	}
	return vecs, tokens, nil
}

// invalid is the failure of texts no request is sent for.
func (e *embedder) invalid(err error) *models.Error {
	me := e.target.Error(asl.ErrAgentModelError, 0, "invalid input: "+err.Error(), "")
	me.Err = err
	return me
}

// malformed is the failure of an answer that is not what Embedder
// promises: not retried.
func (e *embedder) malformed(err error, key string) *call.Failure {
	me := e.target.Error(asl.ErrAgentModelError, 0, "malformed answer: "+err.Error(), key)
	me.Err = err
	return &call.Failure{Err: me}
}
