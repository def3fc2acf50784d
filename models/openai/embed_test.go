package openai_test

import (
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	asl "github.com/aslrun/aslrun"
	"github.com/aslrun/aslrun/models"
	"github.com/aslrun/aslrun/models/internal/wiretest"
	"github.com/aslrun/aslrun/models/openai"
)

// newEmbedder returns an Embedder of text-embedding-3-small shortened to 3
// dimensions, talking to srv with the key in OPENAI_TEST_KEY.
func newEmbedder(t *testing.T, srv *wiretest.Server, edit ...func(*openai.EmbedConfig)) models.UsageEmbedder {
	t.Helper()
	t.Setenv("OPENAI_TEST_KEY", testKey)
	cfg := openai.EmbedConfig{Model: "text-embedding-3-small", BaseURL: srv.URL + "/v1", APIKeyEnv: "OPENAI_TEST_KEY", Dimensions: 3}
	for _, e := range edit {
		e(&cfg)
	}
	e, err := openai.NewEmbedder(cfg, srv.Client())
	if err != nil {
		t.Fatalf("NewEmbedder: %v", err)
	}
	return e
}

// item is one element of an answer's data.
type item struct {
	index int
	vec   any // []float64, or a string of base64
}

// embeddings returns an answer of the /embeddings wire shape.
func embeddings(tokens int, items ...item) string {
	data := make([]map[string]any, len(items))
	for i, it := range items {
		data[i] = map[string]any{"object": "embedding", "index": it.index, "embedding": it.vec}
	}
	b, _ := json.Marshal(map[string]any{
		"object": "list",
		"data":   data,
		"model":  "text-embedding-3-small",
		"usage":  map[string]any{"prompt_tokens": tokens, "total_tokens": tokens},
	})
	return string(b)
}

// b64 encodes v as the API's base64: little-endian float32s.
func b64(v ...float32) string {
	b := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
	}
	return base64.StdEncoding.EncodeToString(b)
}

func TestEmbedWire(t *testing.T) {
	// The server answers out of order and with vectors not of unit
	// length.
	srv := wiretest.New(t, wiretest.JSON(200, embeddings(7,
		item{1, []float64{0, 0, 2}},
		item{0, []float64{3, 4, 0}},
	)))
	e := newEmbedder(t, srv)
	if got, want := e.Model(), "text-embedding-3-small@3"; got != want {
		t.Errorf("Model() = %q, want %q", got, want)
	}
	if e.Dimensions() != 3 {
		t.Errorf("Dimensions() = %d, want 3", e.Dimensions())
	}
	vecs, usage, err := e.EmbedWithUsage(t.Context(), []string{"refund please", "where is my parcel"})
	if err != nil {
		t.Fatalf("Embed: %v", err)
	}
	want := [][]float32{{0.6, 0.8, 0}, {0, 0, 1}}
	if !slices.EqualFunc(vecs, want, slices.Equal) {
		t.Errorf("vectors = %v, want %v", vecs, want)
	}
	if usage.Tokens != 7 {
		t.Errorf("usage = %+v, want 7 tokens", usage)
	}
	reqs := srv.Requests()
	if len(reqs) != 1 {
		t.Fatalf("%d requests, want 1", len(reqs))
	}
	r := reqs[0]
	if r.Method != http.MethodPost || r.Path != "/v1/embeddings" {
		t.Errorf("request = %s %s, want POST /v1/embeddings", r.Method, r.Path)
	}
	if got := r.Header.Get("Authorization"); got != "Bearer "+testKey {
		t.Errorf("Authorization = %q, want Bearer and the key", got)
	}
	wantBody := `{"dimensions":3,"encoding_format":"float","input":["refund please","where is my parcel"],"model":"text-embedding-3-small"}`
	if got := wiretest.Compact(r.Body); got != wantBody {
		t.Errorf("body = %s, want %s", got, wantBody)
	}
}

func TestEmbedDimensionsField(t *testing.T) {
	tests := []struct {
		name      string
		edit      func(*openai.EmbedConfig)
		dims      int
		model     string
		sentField bool
	}{
		{"native size", func(c *openai.EmbedConfig) { c.Dimensions = 0 }, 1536, "text-embedding-3-small@1536", false},
		{"large", func(c *openai.EmbedConfig) { c.Dimensions, c.Model = 0, "text-embedding-3-large" }, 3072, "text-embedding-3-large@3072", false},
		{"omitted", func(c *openai.EmbedConfig) { c.Model, c.OmitDimensions = "nomic-embed-text", true }, 3, "nomic-embed-text@3", false},
		{"sent", func(c *openai.EmbedConfig) {}, 3, "text-embedding-3-small@3", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			vec := make([]float64, tt.dims)
			vec[0] = 1
			srv := wiretest.New(t, wiretest.JSON(200, embeddings(1, item{0, vec})))
			e := newEmbedder(t, srv, tt.edit)
			if e.Model() != tt.model || e.Dimensions() != tt.dims {
				t.Errorf("Model, Dimensions = %q, %d; want %q, %d", e.Model(), e.Dimensions(), tt.model, tt.dims)
			}
			if _, err := e.Embed(t.Context(), []string{"hi"}); err != nil {
				t.Fatalf("Embed: %v", err)
			}
			_, sent := srv.Requests()[0].Body["dimensions"]
			if sent != tt.sentField {
				t.Errorf("dimensions sent = %v, want %v", sent, tt.sentField)
			}
		})
	}
}

func TestEmbedBase64(t *testing.T) {
	srv := wiretest.New(t, wiretest.JSON(200, embeddings(2, item{0, b64(0, 0.6, 0.8)}, item{1, b64(-1, 0, 0)})))
	e := newEmbedder(t, srv)
	vecs, err := e.Embed(t.Context(), []string{"a", "b"})
	if err != nil {
		t.Fatalf("Embed: %v", err)
	}
	want := [][]float32{{0, 0.6, 0.8}, {-1, 0, 0}}
	if !slices.EqualFunc(vecs, want, slices.Equal) {
		t.Errorf("vectors = %v, want %v", vecs, want)
	}
}

func TestEmbedBatches(t *testing.T) {
	var steps []http.HandlerFunc
	for _, n := range []int{2, 2, 1} {
		items := make([]item, n)
		for i := range items {
			items[i] = item{i, []float64{1, float64(len(steps)), float64(i)}}
		}
		steps = append(steps, wiretest.JSON(200, embeddings(10, items...)))
	}
	srv := wiretest.New(t, steps...)
	e := newEmbedder(t, srv, func(c *openai.EmbedConfig) { c.BatchSize = 2 })
	texts := []string{"t0", "t1", "t2", "t3", "t4"}
	vecs, usage, err := e.EmbedWithUsage(t.Context(), texts)
	if err != nil {
		t.Fatalf("Embed: %v", err)
	}
	if len(vecs) != 5 || usage.Tokens != 30 {
		t.Fatalf("%d vectors and %d tokens, want 5 and 30", len(vecs), usage.Tokens)
	}
	for i, v := range vecs {
		batch, pos := i/2, i%2
		n := math.Sqrt(float64(1 + batch*batch + pos*pos))
		want := []float32{float32(1 / n), float32(float64(batch) / n), float32(float64(pos) / n)}
		if !slices.Equal(v, want) {
			t.Errorf("vector %d = %v, want %v", i, v, want)
		}
	}
	var inputs []string
	for _, r := range srv.Requests() {
		inputs = append(inputs, wiretest.Compact(r.Body["input"]))
	}
	if want := []string{`["t0","t1"]`, `["t2","t3"]`, `["t4"]`}; !slices.Equal(inputs, want) {
		t.Errorf("inputs = %q, want %q", inputs, want)
	}
}

func TestEmbedErrorStatuses(t *testing.T) {
	apiError := func(msg, typ string) string {
		return fmt.Sprintf(`{"error":{"message":%q,"type":%q,"param":null,"code":null}}`, msg, typ)
	}
	tests := []struct {
		name       string
		step       http.HandlerFunc
		errName    asl.ErrorName
		status     int
		retryAfter time.Duration
	}{
		{"401", wiretest.JSON(401, apiError("Incorrect API key provided: "+testKey, "invalid_request_error")), asl.ErrAgentModelError, 401, 0},
		{"429", wiretest.JSON(429, apiError("Rate limit reached", "requests"), "Retry-After", "20"), asl.ErrRateLimitExceeded, 429, 20 * time.Second},
		{"500", wiretest.JSON(500, apiError("The server had an error", "server_error")), asl.ErrAgentModelError, 500, 0},
		{"400", wiretest.JSON(400, apiError("'$.input' is invalid", "invalid_request_error")), asl.ErrAgentModelError, 400, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := wiretest.New(t, tt.step)
			e := newEmbedder(t, srv)
			_, err := e.Embed(t.Context(), []string{"hi"})
			me := modelError(t, err)
			if me.Name != tt.errName || me.Status != tt.status || me.RetryAfter != tt.retryAfter || me.Model != "text-embedding-3-small" || me.Message == "" {
				t.Errorf("error = %+v, want %s, status %d, retry after %s", me, tt.errName, tt.status, tt.retryAfter)
			}
			if n := len(srv.Requests()); n != 1 {
				t.Errorf("%d requests, want 1 (no retries configured)", n)
			}
		})
	}
}

func TestEmbedRetries(t *testing.T) {
	srv := wiretest.New(t,
		wiretest.JSON(500, `{"error":{"message":"try again","type":"server_error"}}`, "Retry-After-Ms", "0"),
		wiretest.JSON(429, `{"error":{"message":"slow down","type":"requests"}}`, "Retry-After-Ms", "0"),
		wiretest.JSON(200, embeddings(1, item{0, []float64{1, 0, 0}})),
	)
	e := newEmbedder(t, srv, func(c *openai.EmbedConfig) { c.MaxRetries = 2 })
	vecs, err := e.Embed(t.Context(), []string{"hi"})
	if err != nil {
		t.Fatalf("Embed: %v", err)
	}
	if len(vecs) != 1 || len(srv.Requests()) != 3 {
		t.Errorf("%d vectors after %d requests, want 1 after 3", len(vecs), len(srv.Requests()))
	}
}

func TestEmbedMalformedAnswers(t *testing.T) {
	tests := []struct {
		name  string
		texts int
		body  string
		index int // of the *models.EmbedError, in the Embed's texts
	}{
		{"wrong dimensions", 2, embeddings(1, item{0, []float64{1, 0, 0}}, item{1, []float64{1, 0}}), 1},
		{"too few vectors", 2, embeddings(1, item{0, []float64{1, 0, 0}}), -1},
		{"too many vectors", 1, embeddings(1, item{0, []float64{1, 0, 0}}, item{1, []float64{1, 0, 0}}), -1},
		{"repeated index", 2, embeddings(1, item{1, []float64{1, 0, 0}}, item{1, []float64{1, 0, 0}}), 1},
		{"index out of range", 2, embeddings(1, item{0, []float64{1, 0, 0}}, item{2, []float64{1, 0, 0}}), -1},
		{"negative index", 1, embeddings(1, item{-1, []float64{1, 0, 0}}), -1},
		{"zero vector", 1, embeddings(1, item{0, []float64{0, 0, 0}}), 0},
		{"NaN", 2, embeddings(1, item{0, []float64{1, 0, 0}}, item{1, b64(1, float32(math.NaN()), 0)}), 1},
		{"infinity", 1, embeddings(1, item{0, b64(float32(math.Inf(1)), 0, 0)}), 0},
		{"bad base64", 1, embeddings(1, item{0, "not base64!"}), 0},
		{"empty vector", 1, embeddings(1, item{0, []float64{}}), 0},
		{"null", 1, "null", -1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := wiretest.New(t, wiretest.JSON(200, tt.body))
			e := newEmbedder(t, srv, func(c *openai.EmbedConfig) { c.MaxRetries = 3 })
			texts := make([]string, tt.texts)
			for i := range texts {
				texts[i] = fmt.Sprint("text ", i)
			}
			_, err := e.Embed(t.Context(), texts)
			me := modelError(t, err)
			if me.Name != asl.ErrAgentModelError {
				t.Errorf("error name = %s, want %s", me.Name, asl.ErrAgentModelError)
			}
			var ee *models.EmbedError
			if !errors.As(err, &ee) || ee.Index != tt.index || ee.Model != "text-embedding-3-small@3" {
				t.Errorf("error = %v, want an *EmbedError of text-embedding-3-small@3 for index %d", err, tt.index)
			}
			if n := len(srv.Requests()); n != 1 {
				t.Errorf("%d requests, want 1 (a malformed answer is not retried)", n)
			}
		})
	}
}

func TestEmbedMalformedIndexCountsEarlierBatches(t *testing.T) {
	srv := wiretest.New(t,
		wiretest.JSON(200, embeddings(1, item{0, []float64{1, 0, 0}}, item{1, []float64{1, 0, 0}})),
		wiretest.JSON(200, embeddings(1, item{0, []float64{1, 0, 0}}, item{1, []float64{1, 0, 0, 0}})),
	)
	e := newEmbedder(t, srv, func(c *openai.EmbedConfig) { c.BatchSize = 2 })
	_, err := e.Embed(t.Context(), []string{"a", "b", "c", "d"})
	var ee *models.EmbedError
	if !errors.As(err, &ee) || ee.Index != 3 {
		t.Errorf("error = %v, want an *EmbedError for text 3", err)
	}
}

func TestEmbedRefusesBadInput(t *testing.T) {
	srv := wiretest.New(t)
	e := newEmbedder(t, srv)
	_, err := e.Embed(t.Context(), []string{"fine", ""})
	me := modelError(t, err)
	var ee *models.EmbedError
	if me.Name != asl.ErrAgentModelError || !errors.As(err, &ee) || ee.Index != 1 {
		t.Errorf("error = %v, want %s wrapping an *EmbedError for text 1", err, asl.ErrAgentModelError)
	}
	for _, texts := range [][]string{nil, {}} {
		vecs, err := e.Embed(t.Context(), texts)
		if err != nil || vecs == nil || len(vecs) != 0 {
			t.Errorf("Embed(%q) = %v, %v; want an empty result", texts, vecs, err)
		}
	}
	t.Setenv("OPENAI_TEST_KEY", "")
	_, err = e.Embed(t.Context(), []string{"hi"})
	if me := modelError(t, err); !strings.Contains(me.Message, "OPENAI_TEST_KEY") {
		t.Errorf("error = %v, want one naming the unset variable", err)
	}
	if n := len(srv.Requests()); n != 0 {
		t.Errorf("%d requests, want none", n)
	}
}

func TestEmbedCanceled(t *testing.T) {
	started := make(chan struct{})
	srv := wiretest.New(t, func(w http.ResponseWriter, r *http.Request) {
		close(started)
		<-r.Context().Done()
	})
	e := newEmbedder(t, srv, func(c *openai.EmbedConfig) { c.MaxRetries = 3 })
	ctx, cancel := context.WithCancel(t.Context())
	go func() {
		<-started
		cancel()
	}()
	_, err := e.Embed(ctx, []string{"hi"})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("Embed = %v, want one wrapping context.Canceled", err)
	}
	modelError(t, err)
}

func TestNewEmbedderConfig(t *testing.T) {
	tests := []struct {
		name   string
		cfg    openai.EmbedConfig
		fields []string
	}{
		{"known model", openai.EmbedConfig{Model: "text-embedding-ada-002"}, nil},
		{"unknown model with size", openai.EmbedConfig{Model: "nomic-embed-text", Dimensions: 768, BatchSize: openai.MaxEmbedBatchSize}, nil},
		{"no model", openai.EmbedConfig{}, []string{"Model"}},
		{"unknown model", openai.EmbedConfig{Model: "bge-m3"}, []string{"Dimensions"}},
		{"negative size", openai.EmbedConfig{Model: "text-embedding-3-small", Dimensions: -1}, []string{"Dimensions"}},
		{"batch too big", openai.EmbedConfig{Model: "text-embedding-3-small", BatchSize: openai.MaxEmbedBatchSize + 1}, []string{"BatchSize"}},
		{"everything", openai.EmbedConfig{Model: "x", BaseURL: "ftp://h", APIKeyEnv: "1BAD", BatchSize: -1, MaxRetries: -1, Timeout: -1},
			[]string{"BaseURL", "APIKeyEnv", "Timeout", "MaxRetries", "Dimensions", "BatchSize"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, err := openai.NewEmbedder(tt.cfg, nil)
			var fields []string
			for _, u := range unjoin(err) {
				var ce *models.ConfigError
				if !errors.As(u, &ce) {
					t.Fatalf("error %v (%T) is not a *models.ConfigError", u, u)
				}
				fields = append(fields, ce.Field)
			}
			slices.Sort(fields)
			want := slices.Sorted(slices.Values(tt.fields))
			if !slices.Equal(fields, want) {
				t.Errorf("NewEmbedder fields = %q, want %q (err %v)", fields, want, err)
			}
			if (e == nil) == (err == nil) {
				t.Errorf("NewEmbedder = %v, %v; want exactly one", e, err)
			}
		})
	}
}

// unjoin flattens errors.Join trees into their leaves.
func unjoin(err error) []error {
	if err == nil {
		return nil
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		var out []error
		for _, e := range j.Unwrap() {
			out = append(out, unjoin(e)...)
		}
		return out
	}
	return []error{err}
}

// FuzzEmbedAnswer sends any answer body to an Embed of two texts: it never
// panics, and gives either two unit vectors of 3 dimensions or a
// *models.Error.
func FuzzEmbedAnswer(f *testing.F) {
	for _, s := range []string{
		embeddings(3, item{1, []float64{0, 0, 2}}, item{0, []float64{3, 4, 0}}),
		embeddings(3, item{0, b64(0, 0.6, 0.8)}, item{1, b64(1, 0, 0)}),
		embeddings(3, item{0, []float64{1, 0, 0}}),
		embeddings(3, item{0, []float64{1e308, 1e308, 0}}, item{1, []float64{1e-45, 0, 0}}),
		`{"object":"list","data":null}`,
		`{"data":[{"index":"0","embedding":{}}]}`,
		`[]`, `null`, ``, `{`,
	} {
		f.Add(s)
	}
	var body atomic.Value
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, body.Load().(string))
	}))
	f.Cleanup(srv.Close)
	e, err := openai.NewEmbedder(openai.EmbedConfig{Model: "m", Dimensions: 3, BaseURL: srv.URL}, srv.Client())
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, answer string) {
		body.Store(answer)
		vecs, err := e.Embed(context.Background(), []string{"a", "b"})
		if err != nil {
			var me *models.Error
			if !errors.As(err, &me) {
				t.Fatalf("Embed = %v (%T), want a *models.Error", err, err)
			}
			return
		}
		if len(vecs) != 2 {
			t.Fatalf("Embed = %d vectors, want 2", len(vecs))
		}
		for i, v := range vecs {
			var n float64
			for _, x := range v {
				n += float64(x) * float64(x)
			}
			if len(v) != 3 || math.Abs(math.Sqrt(n)-1) > 1e-5 {
				t.Fatalf("vector %d = %v, want a unit vector of 3 dimensions", i, v)
			}
		}
	})
}
