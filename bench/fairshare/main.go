// Command fairshare measures whether one big execution starves the others
// on a server: `aslrun serve`'s handler behind a real HTTP server on
// bbolt (or PostgreSQL with -pg), small executions started one after
// another and waited for by polling GET /v1/executions/{id} (every -poll),
// first alone and then while an inline Map over -items items runs beside
// them. It prints the p50, p99 and largest of a small execution's
// start→end (its own startedAt and stoppedAt) and of a GET, in both
// phases, with the date and the machine; -json prints the rows as JSON.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/aslrun/aslrun/api"
	"github.com/aslrun/aslrun/engine"
	"github.com/aslrun/aslrun/server"
	"github.com/aslrun/aslrun/store"
	"github.com/aslrun/aslrun/store/postgres"
)

// small is the small execution: three states, one a Task whose agent is
// mocked.
const small = `{"StartAt":"In","States":{
 "In":{"Type":"Pass","Next":"Work"},
 "Work":{"Type":"Task","Agent":"Work","ResultPath":"$.work","Next":"Out"},
 "Out":{"Type":"Pass","End":true}}}`

// big is the Map beside it: every item a Task whose agent is mocked, the
// results thrown away, as many at once as the engine allows.
const big = `{"StartAt":"Each","States":{"Each":{"Type":"Map","ItemsPath":"$.items","MaxConcurrency":CONCURRENCY,
 "ItemProcessor":{"StartAt":"Item","States":{"Item":{"Type":"Task","Agent":"Item","End":true}}},
 "ResultPath":null,"End":true}}}`

const mocks = `{"Work":{"0-999999999":{"Return":{"done":true}}},"Item":{"0-999999999":{"Return":{"done":true}}}}`

// row is one phase's figures.
type row struct {
	Phase      string  `json:"phase"`
	Executions int     `json:"executions"`
	RunP50     float64 `json:"runP50Millis"`
	RunP99     float64 `json:"runP99Millis"`
	RunMax     float64 `json:"runMaxMillis"`
	Gets       int     `json:"gets"`
	GetP50     float64 `json:"getP50Millis"`
	GetP99     float64 `json:"getP99Millis"`
	GetMax     float64 `json:"getMaxMillis"`
	// MapSeconds is how long the Map took, from its start's answer to
	// the first GET that saw it ended.
	MapSeconds float64 `json:"mapSeconds,omitempty"`
}

func main() {
	items := flag.Int("items", 1_000_000, "items of the Map beside the small executions")
	n := flag.Int("small", 100, "small executions in each phase, one after another")
	poll := flag.Duration("poll", 20*time.Millisecond, "how often a small execution is polled")
	conc := flag.Int("concurrency", 0, "the Map's MaxConcurrency (0: as many at once as the engine allows, 256)")
	keep := flag.Bool("keep", false, "keep the Map's results (its ResultPath $.results) instead of throwing them away")
	pg := flag.String("pg", "", `a PostgreSQL URL to run on instead of bbolt (a database of its own: its tables are made), or "memory" for the memory store`)
	profile := flag.String("cpuprofile", "", "write a CPU profile of the phase beside the Map to this file")
	asJSON := flag.Bool("json", false, "print the rows as JSON")
	flag.Parse()
	rows, kind, err := run(*items, *conc, *n, *poll, *keep, *pg, *profile)
	if err == nil {
		err = report(os.Stdout, rows, kind, *poll, *asJSON)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "fairshare:", err)
		os.Exit(1)
	}
}

// run runs both phases and returns their rows and the store's kind.
func run(items, conc, n int, poll time.Duration, keep bool, pg, profile string) (_ []row, kind string, _ error) {
	dir, err := os.MkdirTemp("", "fairshare")
	if err != nil {
		return nil, "", err
	}
	defer os.RemoveAll(dir)
	var st store.Store
	kind = "bbolt"
	switch {
	case pg == "memory":
		st, kind = store.NewMemory(), "memory"
	case pg != "":
		if _, err := postgres.Migrate(context.Background(), pg, postgres.Options{}); err != nil {
			return nil, "", err
		}
		p, err := postgres.Open(context.Background(), pg, postgres.Options{})
		if err != nil {
			return nil, "", err
		}
		defer p.Close()
		st, kind = p, "PostgreSQL"
	default:
		b, err := store.OpenBolt(filepath.Join(dir, "bench.db"), store.BoltOptions{})
		if err != nil {
			return nil, "", err
		}
		defer b.Close()
		st = b
	}
	tokensFile := filepath.Join(dir, "tokens")
	token, err := server.CreateToken(tokensFile, "bench", server.RoleAdmin)
	if err != nil {
		return nil, "", err
	}
	toks, err := server.LoadTokens(tokensFile)
	if err != nil {
		return nil, "", err
	}
	srv, err := server.New(server.Config{Store: st, Executor: engine.New(engine.Config{Store: st}), Tokens: toks,
		MaxBody: 64 << 20, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		return nil, "", err
	}
	hs := httptest.NewServer(srv.Handler())
	defer hs.Close()
	defer srv.Close()
	c := &client{base: hs.URL, token: token, http: &http.Client{Timeout: 5 * time.Minute}}

	alone, err := phase(c, "alone", n, poll, nil)
	if err != nil {
		return nil, "", err
	}
	var body bytes.Buffer
	body.WriteString(`{"items":[`)
	for i := range items {
		if i > 0 {
			body.WriteByte(',')
		}
		body.WriteString(strconv.Itoa(i))
	}
	body.WriteString(`]}`)
	def := strings.Replace(big, "CONCURRENCY", strconv.Itoa(conc), 1)
	if keep {
		def = strings.Replace(def, `"ResultPath":null`, `"ResultPath":"$.results"`, 1)
	}
	mapID, err := c.start(def, body.Bytes(), -1)
	if err != nil {
		return nil, "", fmt.Errorf("the Map: %w", err)
	}
	if profile != "" {
		f, err := os.Create(profile)
		if err != nil {
			return nil, "", err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return nil, "", err
		}
		defer pprof.StopCPUProfile()
	}
	// The small executions go on until the Map has ended.
	mapStart := time.Now()
	var mapTook time.Duration
	mapEnded := make(chan error, 1)
	go func() {
		for {
			e, err := c.get(mapID)
			if err == nil && e.StoppedAt == nil {
				time.Sleep(time.Second)
				continue
			}
			if err == nil && e.Status != "SUCCEEDED" {
				err = fmt.Errorf("the Map: %s %s %s", e.Status, e.Error, e.Cause)
			}
			mapTook = time.Since(mapStart)
			mapEnded <- err
			return
		}
	}()
	beside, err := phase(c, fmt.Sprintf("beside a Map of %d items", items), n, poll, mapEnded)
	if err != nil {
		return nil, "", err
	}
	beside.MapSeconds = mapTook.Seconds()
	return []row{alone, beside}, kind, nil
}

// report prints the rows, as a table or as JSON.
func report(w io.Writer, rows []row, kind string, poll time.Duration, asJSON bool) error {
	if asJSON {
		return json.NewEncoder(w).Encode(rows)
	}
	fmt.Fprintf(w, "date: %s\n", time.Now().UTC().Format("2006-01-02T15:04Z"))
	fmt.Fprintf(w, "machine: %d cores, %s, %s, %s store\n", runtime.NumCPU(), runtime.GOARCH, runtime.Version(), kind)
	fmt.Fprintf(w, "small executions one after another, polled every %s; beside the Map until it ended\n", poll)
	fmt.Fprintf(w, "%-32s %6s %22s %6s %22s %10s\n", "phase", "runs", "start→end p50/p99/max", "GETs", "GET p50/p99/max", "Map took")
	for _, r := range rows {
		fmt.Fprintf(w, "%-32s %6d %22s %6d %22s %9.1fs\n", r.Phase, r.Executions,
			fmt.Sprintf("%.1f/%.1f/%.1f ms", r.RunP50, r.RunP99, r.RunMax), r.Gets,
			fmt.Sprintf("%.1f/%.1f/%.1f ms", r.GetP50, r.GetP99, r.GetMax), r.MapSeconds)
	}
	return nil
}

// phase runs n small executions one after another, each polled until it
// ends, and then more until until ends (a nil until: none).
func phase(c *client, name string, n int, poll time.Duration, until <-chan error) (row, error) {
	var runs, gets []time.Duration
	for i := 0; ; i++ {
		if i >= n {
			if until == nil {
				break
			}
			select {
			case err := <-until:
				if err != nil {
					return row{}, err
				}
				until = nil
				continue
			default:
			}
		}
		id, err := c.start(small, []byte(`{"ticket":"T-1"}`), 0)
		if err != nil {
			return row{}, err
		}
		for {
			t0 := time.Now()
			e, err := c.get(id)
			gets = append(gets, time.Since(t0))
			if err != nil {
				return row{}, err
			}
			if e.StoppedAt != nil {
				if e.Status != "SUCCEEDED" {
					return row{}, fmt.Errorf("%s: %s %s %s", id, e.Status, e.Error, e.Cause)
				}
				runs = append(runs, e.StoppedAt.Sub(e.StartedAt))
				break
			}
			time.Sleep(poll)
		}
	}
	r := row{Phase: name, Executions: len(runs), Gets: len(gets)}
	r.RunP50, r.RunP99, r.RunMax = quantiles(runs)
	r.GetP50, r.GetP99, r.GetMax = quantiles(gets)
	return r, nil
}

// quantiles returns the p50, p99 and largest of ds in milliseconds.
func quantiles(ds []time.Duration) (p50, p99, most float64) {
	slices.Sort(ds)
	at := func(q float64) float64 {
		return float64(ds[int(q*float64(len(ds)-1))]) / 1e6
	}
	return at(0.50), at(0.99), at(1)
}

// client calls the server's API.
type client struct {
	base, token string
	http        *http.Client
}

func (c *client) do(method, path string, body []byte, out any) error {
	req, err := http.NewRequest(method, c.base+path, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.http.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode >= 300 {
		return fmt.Errorf("%s %s: %s: %s", method, path, resp.Status, data)
	}
	return json.Unmarshal(data, out)
}

// start starts an inline definition with a mock and returns its id.
func (c *client) start(def string, input []byte, maxPayload int) (string, error) {
	body, err := json.Marshal(api.StartExecution{Definition: json.RawMessage(def), Input: input,
		Mock: json.RawMessage(mocks), MaxPayload: maxPayload})
	if err != nil {
		return "", err
	}
	var e api.Execution
	if err := c.do("POST", "/v1/executions", body, &e); err != nil {
		return "", err
	}
	return e.ID, nil
}

func (c *client) get(id string) (*api.Execution, error) {
	var e api.Execution
	return &e, c.do("GET", "/v1/executions/"+id, nil, &e)
}
