package builtin_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/aslrun/aslrun/agents"
	"github.com/aslrun/aslrun/builtin"
)

// TestAgentsFileEmbedder: the file's Embedder is checked field by field,
// with the field named; a file without one leaves the registry without
// an embedder.
func TestAgentsFileEmbedder(t *testing.T) {
	for _, c := range []struct {
		name, file, ptr, msg string
	}{
		{"local", `{"Embedder":{"Type":"local","Dimensions":64}}`, "", ""},
		{"openai", `{"Embedder":{"Type":"openai","Model":"text-embedding-3-small","APIKeyEnv":"OPENAI_API_KEY"}}`, "", ""},
		{"not an object", `{"Embedder":"local"}`, "/Embedder", "must be an object"},
		{"no type", `{"Embedder":{}}`, "/Embedder/Type", "required"},
		{"unknown type", `{"Embedder":{"Type":"word2vec"}}`, "/Embedder/Type", `unknown embedder type "word2vec"`},
		{"unknown field", `{"Embedder":{"Type":"local","Size":3}}`, "/Embedder/Size", "Size"},
		{"local with a model", `{"Embedder":{"Type":"local","Model":"x"}}`, "/Embedder/Model", "not of a local one"},
		{"local too small", `{"Embedder":{"Type":"local","Dimensions":8}}`, "/Embedder/Dimensions", "16"},
		{"openai without model", `{"Embedder":{"Type":"openai"}}`, "/Embedder/Model", "required"},
		{"openai unknown size", `{"Embedder":{"Type":"openai","Model":"my-model"}}`, "/Embedder", "Dimensions"},
		{"literal key", `{"Embedder":{"Type":"openai","Model":"text-embedding-3-small","APIKey":"sk-live-123"}}`, "/Embedder/APIKey", "must not hold the key itself"},
		{"bad base URL", `{"Embedder":{"Type":"openai","Model":"text-embedding-3-small","BaseURL":"ftp://x"}}`, "/Embedder/BaseURL", ""},
		{"batch too big", `{"Embedder":{"Type":"openai","Model":"text-embedding-3-small","BatchSize":100000}}`, "/Embedder/BatchSize", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			f, err := builtin.ParseAgentsFile([]byte(c.file))
			if c.ptr == "" {
				if err != nil {
					t.Fatal(err)
				}
				e, err := f.Embedder()
				if err != nil || e == nil {
					t.Fatalf("embedder %v, %v", e, err)
				}
				return
			}
			var fe *builtin.FileError
			if !errors.As(err, &fe) || fe.Pointer != c.ptr || !strings.Contains(fe.Msg, c.msg) {
				t.Errorf("got %v; want an error at %s saying %q", err, c.ptr, c.msg)
			}
		})
	}
	f, err := builtin.ParseAgentsFile([]byte(`{"A":{"Type":"exec","Command":["true"]}}`))
	if err != nil {
		t.Fatal(err)
	}
	reg := agents.NewRegistry()
	if err := f.Register(reg, t.TempDir(), nil); err != nil {
		t.Fatal(err)
	}
	if reg.Embedder() != nil {
		t.Error("a file without Embedder set one")
	}
}

// TestAgentsFileEmbedderReachesOnlyItsHosts: an openai embedder's
// requests go through the file's Hosts: a local server is refused until
// Hosts allows it, and then gets the /embeddings request the API
// defines; the registry's embedder is the file's, cached.
func TestAgentsFileEmbedderReachesOnlyItsHosts(t *testing.T) {
	calls := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls++
		var req struct {
			Model string   `json:"model"`
			Input []string `json:"input"`
		}
		if r.URL.Path != "/v1/embeddings" || json.NewDecoder(r.Body).Decode(&req) != nil || req.Model != "tiny" {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		data := []any{}
		for i := range req.Input {
			data = append(data, map[string]any{"object": "embedding", "index": i, "embedding": []float64{1, 0, 0}})
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"object": "list", "data": data, "model": "tiny", "usage": map[string]any{"prompt_tokens": 2, "total_tokens": 2}})
	}))
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "http://")
	file := `{"Embedder":{"Type":"openai","Model":"tiny","Dimensions":3,"OmitDimensions":true,"BaseURL":"` + srv.URL + `/v1","MaxRetries":0}}`
	for _, allowed := range []bool{false, true} {
		text := file
		if allowed {
			text = strings.Replace(file, `{"Embedder"`, `{"Hosts":{"Allow":["`+host+`"]},"Embedder"`, 1)
		}
		f, err := builtin.ParseAgentsFile([]byte(text))
		if err != nil {
			t.Fatal(err)
		}
		reg := agents.NewRegistry()
		if err := f.Register(reg, t.TempDir(), nil); err != nil {
			t.Fatal(err)
		}
		e := reg.Embedder()
		vecs, err := e.Embed(context.Background(), []string{"hello", "hello"})
		if !allowed {
			if err == nil || calls != 0 {
				t.Fatalf("a local embedder not in Hosts was reached: %v, %d calls", err, calls)
			}
			continue
		}
		if err != nil || len(vecs) != 2 || vecs[0][0] != 1 {
			t.Fatalf("embed: %v %v", vecs, err)
		}
		if _, err := e.Embed(context.Background(), []string{"hello"}); err != nil || calls != 1 {
			t.Errorf("a cached text was sent again: %d calls, %v", calls, err)
		}
	}
}
