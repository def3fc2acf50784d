package engine_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	asl "github.com/aslrun/aslrun"
	"github.com/aslrun/aslrun/engine"
	"github.com/aslrun/aslrun/store"
)

// tickets are past support tickets, written to semantic memory one per
// execution.
var tickets = []string{
	"I was charged twice for my subscription, please refund the double charge",
	"The app crashes when I upload a photo from my phone",
	"How do I change the email address on my account?",
	"My password reset link never arrives in my inbox",
	"Shipping to Canada takes more than three weeks",
}

// semanticStores are the stores the semantic memory tests run on: none
// (the executor's own memory), the memory store and bbolt.
func semanticStores(t *testing.T) map[string]func() engine.Store {
	return map[string]func() engine.Store{
		"none":   func() engine.Store { return nil },
		"memory": func() engine.Store { return store.NewMemory() },
		"bbolt": func() engine.Store {
			st, err := store.OpenBolt(filepath.Join(t.TempDir(), "sem.db"), store.BoltOptions{})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { st.Close() })
			return st
		},
	}
}

// TestSemanticMemoryRecallsByMeaning: tickets written to a collection are
// recalled by meaning with the offline embedder: the query's nearest
// ticket first, TopK of them, none under MinScore; the history records
// the matches (not the vectors); another namespace holds none of them.
func TestSemanticMemoryRecallsByMeaning(t *testing.T) {
	write := `{"StartAt":"Save","States":{"Save":{"Type":"Pass","Parameters":{"ticket.$":"$.text","id.$":"$.id"},
		"Memory":{"Type":"semantic","Namespace":"support","Write":{"Collection":"tickets","Key.$":"$.id","Text.$":"$.ticket","Value.$":"$"}},"End":true}}}`
	recall := `{"StartAt":"Recall","States":{"Recall":{"Type":"Pass",
		"Memory":{"Type":"semantic","Namespace":"support","Read":{"Collection":"tickets","Query.$":"$.question","TopK":2,"MinScore":0.1,"InjectAt":"$.similar"}},
		"End":true}}}`
	for name, open := range semanticStores(t) {
		t.Run(name, func(t *testing.T) {
			st := open()
			x := engine.New(engine.Config{Store: st})
			for i, text := range tickets {
				runOn(t, x, write, fmt.Sprintf(`{"id":"T-%d","text":%q}`, i+1, text))
			}
			res := runOn(t, x, recall, `{"question":"refund for a double charge on my card"}`)
			out := res.Output.(map[string]any)
			similar := out["similar"].([]any)
			if len(similar) == 0 || len(similar) > 2 {
				t.Fatalf("recalled %d tickets: %v", len(similar), similar)
			}
			first := similar[0].(map[string]any)
			if first["text"] != tickets[0] || first["key"] != "T-1" || first["value"].(map[string]any)["id"] != "T-1" {
				t.Errorf("nearest ticket %v, want T-1", first)
			}
			for _, m := range similar {
				score, _ := m.(map[string]any)["score"].(json.Number).Float64()
				if score < 0.1 {
					t.Errorf("a match under MinScore: %v", m)
				}
			}
			// Another namespace: nothing.
			other := strings.Replace(recall, `"Namespace":"support"`, `"Namespace":"sales"`, 1)
			if got := runOn(t, x, other, `{"question":"refund"}`).Output.(map[string]any)["similar"]; len(got.([]any)) != 0 {
				t.Errorf("another namespace recalled %v", got)
			}
			if st == nil {
				return
			}
			hist, err := st.(interface {
				History(context.Context, string) ([]engine.Event, error)
			}).History(context.Background(), res.ID)
			if err != nil {
				t.Fatal(err)
			}
			var detail map[string]any
			for _, e := range hist {
				if e.Type == engine.EventMemoryRead {
					detail = e.Detail.(map[string]any)
				}
			}
			if detail["type"] != "semantic" || detail["collection"] != "tickets" || len(detail["matches"].([]any)) != len(similar) {
				t.Errorf("MemoryRead detail %v", detail)
			}
		})
	}
}

// TestSemanticMemoryKeysReplace: a write with a Key replaces the entry of
// that key (the index follows), a write without one adds an entry per
// execution, and entries expire with their TTL.
func TestSemanticMemoryKeysReplace(t *testing.T) {
	def := `{"StartAt":"Save","States":{"Save":{"Type":"Pass",
		"Memory":{"Type":"semantic","Write":{"Collection":"notes","Key":"fact","Value.$":"$.fact"}},"Next":"Recall"},
		"Recall":{"Type":"Pass","Memory":{"Type":"semantic","Read":{"Collection":"notes","Query.$":"$.fact","TopK":5}},"End":true}}}`
	st := store.NewMemory()
	x := engine.New(engine.Config{Store: st})
	runOn(t, x, def, `{"fact":"the office opens at nine"}`)
	res := runOn(t, x, def, `{"fact":"parking is free on weekends"}`)
	got := res.Output.(map[string]any)["_memory"].([]any)
	if len(got) != 1 || got[0].(map[string]any)["text"] != "parking is free on weekends" || got[0].(map[string]any)["key"] != "fact" {
		t.Errorf("after replacing the key: %v", got)
	}
}

// TestSemanticMemoryRefusesOtherModels: a collection written with one
// embedding model and read with another is an error naming both, not a
// silent comparison of vectors of two spaces.
func TestSemanticMemoryRefusesOtherModels(t *testing.T) {
	st := store.NewMemory()
	write := `{"StartAt":"S","States":{"S":{"Type":"Pass","Memory":{"Type":"semantic","Write":{"Collection":"c","Value":"hello there"}},"End":true}}}`
	read := `{"StartAt":"R","States":{"R":{"Type":"Pass","Memory":{"Type":"semantic","Read":{"Collection":"c","Query":"hello"}},"End":true}}}`
	runOn(t, engine.New(engine.Config{Store: st}), write, `{}`)
	x := engine.New(engine.Config{Store: st, Embedder: fixedEmbedder{dims: 8}})
	res, err := x.Run(context.Background(), mustParse(t, read), map[string]any{}, engine.StartOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != engine.StatusFailed || res.Error != string(asl.ErrRuntime) || !strings.Contains(res.Cause, "local-ngram") || !strings.Contains(res.Cause, "fixed@8") {
		t.Errorf("reading another model's vectors: %s %s: %s", res.Status, res.Error, res.Cause)
	}
}

// TestSemanticMemoryEmbedderFails: an embedder's failure is the state's
// error, catchable, with the embedder named.
func TestSemanticMemoryEmbedderFails(t *testing.T) {
	x := engine.New(engine.Config{Embedder: fixedEmbedder{dims: 8, fail: asl.Errorf(asl.ErrRateLimitExceeded, "slow down")}})
	def := `{"StartAt":"R","States":{"R":{"Type":"Pass","Memory":{"Type":"semantic","Read":{"Collection":"c","Query":"hello"}},"End":true}}}`
	res, err := x.Run(context.Background(), mustParse(t, def), map[string]any{}, engine.StartOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Error != string(asl.ErrRateLimitExceeded) {
		t.Errorf("an embedder's failure: %s: %s", res.Error, res.Cause)
	}
}

// fixedEmbedder embeds every text as the same vector, or fails.
type fixedEmbedder struct {
	dims int
	fail error
}

func (f fixedEmbedder) Model() string   { return fmt.Sprintf("fixed@%d", f.dims) }
func (f fixedEmbedder) Dimensions() int { return f.dims }
func (f fixedEmbedder) Embed(_ context.Context, texts []string) ([][]float32, error) {
	if f.fail != nil {
		return nil, f.fail
	}
	out := make([][]float32, len(texts))
	for i := range out {
		out[i] = make([]float32, f.dims)
		out[i][0] = 1
	}
	return out, nil
}

// TestEpisodicMemoryFiltersAndOrders: events are appended per namespace
// and collection in time order; a read filters them by fields (fixed
// or from the input), newest first by default or oldest first, at most
// Limit; and events expire with their TTL.
func TestEpisodicMemoryFiltersAndOrders(t *testing.T) {
	write := `{"StartAt":"Log","States":{"Log":{"Type":"Pass",
		"Memory":{"Type":"episodic","Namespace":"user_{{$.user}}","Write":{"Value.$":"$.event"}},"End":true}}}`
	read := `{"StartAt":"Recall","States":{"Recall":{"Type":"Pass",
		"Memory":{"Type":"episodic","Namespace":"user_{{$.user}}","Read":{"Filter":{"kind.$":"$.kind"},"Limit":2,"InjectAt":"$.events"}},"End":true}}}`
	for name, open := range semanticStores(t) {
		t.Run(name, func(t *testing.T) {
			x := engine.New(engine.Config{Store: open()})
			for i, kind := range []string{"login", "purchase", "login", "login", "purchase"} {
				runOn(t, x, write, fmt.Sprintf(`{"user":"u1","event":{"kind":%q,"n":%d}}`, kind, i))
			}
			runOn(t, x, write, `{"user":"u2","event":{"kind":"login","n":99}}`)
			got := runOn(t, x, read, `{"user":"u1","kind":"login"}`).Output.(map[string]any)["events"].([]any)
			var ns []string
			for _, e := range got {
				ev := e.(map[string]any)["event"].(map[string]any)
				ns = append(ns, fmt.Sprint(ev["n"]))
			}
			if strings.Join(ns, ",") != "3,2" {
				t.Errorf("newest logins of u1: %v, want 3,2", ns)
			}
			asc := strings.Replace(read, `"Limit":2`, `"Limit":10,"Order":"asc"`, 1)
			asc = strings.Replace(asc, `{"kind.$":"$.kind"}`, `{"kind":"purchase"}`, 1)
			got = runOn(t, x, asc, `{"user":"u1"}`).Output.(map[string]any)["events"].([]any)
			ns = ns[:0]
			for _, e := range got {
				ns = append(ns, fmt.Sprint(e.(map[string]any)["event"].(map[string]any)["n"]))
			}
			if strings.Join(ns, ",") != "1,4" {
				t.Errorf("purchases of u1, oldest first: %v, want 1,4", ns)
			}
		})
	}
}

// TestEpisodicMemoryOnceAcrossCrashes: an event written by a state that
// completed before a crash is not written again when the execution
// resumes.
func TestEpisodicMemoryOnceAcrossCrashes(t *testing.T) {
	def := mustParse(t, `{"StartAt":"A","States":{
		"A":{"Type":"Task","Agent":"Worker","ResultPath":"$.a","Memory":{"Type":"episodic","Write":{"Value":"a"}},"Next":"B"},
		"B":{"Type":"Task","Agent":"Worker","ResultPath":"$.b","Memory":{"Type":"semantic","Write":{"Collection":"c","Value":"b"}},"End":true}}}`)
	read := `{"StartAt":"R","States":{"R":{"Type":"Pass","Memory":{"Type":"episodic","Read":{"Limit":100}},"End":true}}}`
	for crash := 1; crash <= 2; crash++ {
		st := store.NewMemory()
		ctx, cancel := context.WithCancel(context.Background())
		c := &calls{crashAt: crash, cancel: cancel}
		_, err := engine.New(engine.Config{Agents: registry(t, c.agent(), "Worker"), Store: st}).Run(ctx, def, mustJSON(t, `{}`), engine.StartOptions{ID: "e"})
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("crash at %d: %v", crash, err)
		}
		x := engine.New(engine.Config{Agents: registry(t, c.agent(), "Worker"), Store: st})
		if res, err := x.Resume(context.Background(), "e", engine.ResumeOptions{}); err != nil || res.Status != engine.StatusSucceeded {
			t.Fatalf("resume: %v %+v", err, res)
		}
		events := runOn(t, x, read, `{}`).Output.(map[string]any)["_memory"].([]any)
		if len(events) != 1 {
			t.Errorf("crash at call %d: %d events, want 1", crash, len(events))
		}
		list, err := st.ListMemory(context.Background(), "", time.Now())
		if err != nil {
			t.Fatal(err)
		}
		semantic := 0
		for _, e := range list {
			if _, kind, _, ok := engine.SplitMemoryNamespace(e.Namespace); ok && kind == "semantic" {
				semantic++
			}
		}
		if semantic != 1 {
			t.Errorf("crash at call %d: %d semantic entries, want 1", crash, semantic)
		}
	}
}

// TestMemoryNamespaceSeparatorRefused: a namespace holding U+001F (the
// separator of collections) is refused where it is computed.
func TestMemoryNamespaceSeparatorRefused(t *testing.T) {
	def := `{"StartAt":"S","States":{"S":{"Type":"Pass","Memory":{"Namespace.$":"$.ns","Write":{"Key":"k","Value":1}},"End":true}}}`
	res, err := engine.New(engine.Config{}).Run(context.Background(), mustParse(t, def), map[string]any{"ns": "a\x1fsemantic\x1fb"}, engine.StartOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != engine.StatusFailed || !strings.Contains(res.Cause, "U+001F") {
		t.Errorf("%s: %s", res.Status, res.Cause)
	}
}

// TestSemanticAndEpisodicMemoryTTL: entries written with a TTL are not
// recalled once it passed, by meaning or in time.
func TestSemanticAndEpisodicMemoryTTL(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		x := engine.New(engine.Config{Store: store.NewMemory()})
		write := `{"StartAt":"W","States":{"W":{"Type":"Pass","Memory":{"Type":"semantic","Write":{"Collection":"c","Value.$":"$.v","TTL":"1h"}},"Next":"E"},
			"E":{"Type":"Pass","Memory":{"Type":"episodic","Write":{"Value.$":"$.v","TTL":"1h"}},"End":true}}}`
		read := `{"StartAt":"R","States":{"R":{"Type":"Pass","Memory":{"Type":"semantic","Read":{"Collection":"c","Query":"apples","InjectAt":"$.similar"}},"Next":"E"},
			"E":{"Type":"Pass","Memory":{"Type":"episodic","Read":{"InjectAt":"$.events"}},"End":true}}}`
		runOn(t, x, write, `{"v":"green apples"}`)
		count := func() (int, int) {
			out := runOn(t, x, read, `{}`).Output.(map[string]any)
			return len(out["similar"].([]any)), len(out["events"].([]any))
		}
		if s, e := count(); s != 1 || e != 1 {
			t.Fatalf("before the TTL: %d similar, %d events", s, e)
		}
		time.Sleep(time.Hour + time.Second)
		if s, e := count(); s != 0 || e != 0 {
			t.Errorf("after the TTL: %d similar, %d events", s, e)
		}
	})
}

// TestMemoryReadsOwnWritesBatched: with batched durability, whose commits
// wait for the batch window, a state reads the memory an earlier state
// of the same execution wrote (key-value, semantic and episodic).
func TestMemoryReadsOwnWritesBatched(t *testing.T) {
	st, err := store.OpenBolt(filepath.Join(t.TempDir(), "b.db"), store.BoltOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	x := engine.New(engine.Config{Store: st, Durability: engine.DurabilityBatched})
	def := `{"StartAt":"W","States":{
		"W":{"Type":"Pass","Memory":{"Write":{"Key":"k","Value":"v"}},"Next":"S"},
		"S":{"Type":"Pass","Memory":{"Type":"semantic","Write":{"Collection":"c","Value":"green apples"}},"Next":"E"},
		"E":{"Type":"Pass","Memory":{"Type":"episodic","Write":{"Value":"e"}},"Next":"R"},
		"R":{"Type":"Pass","Memory":{"Read":{"Keys":["k"],"InjectAt":"$.kv"}},"Next":"RS"},
		"RS":{"Type":"Pass","Memory":{"Type":"semantic","Read":{"Collection":"c","Query":"apples","InjectAt":"$.sem"}},"Next":"RE"},
		"RE":{"Type":"Pass","Memory":{"Type":"episodic","Read":{"InjectAt":"$.ep"}},"End":true}}}`
	out := runOn(t, x, def, `{}`).Output.(map[string]any)
	if out["kv"].(map[string]any)["k"] != "v" || len(out["sem"].([]any)) != 1 || len(out["ep"].([]any)) != 1 {
		t.Errorf("reads after writes, batched: %v", out)
	}
}

// TestSemanticMemoryManyCollections: past the collections a process
// keeps indexes of, the least recently searched is dropped and loaded
// again from the store when searched: every collection still recalls its
// own entry.
func TestSemanticMemoryManyCollections(t *testing.T) {
	x := engine.New(engine.Config{Store: store.NewMemory()})
	def := `{"StartAt":"W","States":{"W":{"Type":"Pass","Memory":{"Type":"semantic","Namespace.$":"$.ns","Write":{"Collection":"c","Value.$":"$.text"}},"Next":"R"},
		"R":{"Type":"Pass","Memory":{"Type":"semantic","Namespace.$":"$.ns","Read":{"Collection":"c","Query.$":"$.text","TopK":1}},"End":true}}}`
	read := `{"StartAt":"R","States":{"R":{"Type":"Pass","Memory":{"Type":"semantic","Namespace.$":"$.ns","Read":{"Collection":"c","Query.$":"$.text","TopK":3}},"End":true}}}`
	const n = 300
	for i := range n {
		runOn(t, x, def, fmt.Sprintf(`{"ns":"user%d","text":"note %d about topic %d"}`, i, i, i))
	}
	for _, i := range []int{0, 150, n - 1} {
		got := runOn(t, x, read, fmt.Sprintf(`{"ns":"user%d","text":"note %d about topic %d"}`, i, i, i)).Output.(map[string]any)["_memory"].([]any)
		if len(got) != 1 || got[0].(map[string]any)["text"] != fmt.Sprintf("note %d about topic %d", i, i) {
			t.Errorf("user%d recalled %v", i, got)
		}
	}
}
