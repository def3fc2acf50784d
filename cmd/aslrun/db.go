package main

import (
	"crypto/sha256"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/aslrun/aslrun/agents"
	"github.com/aslrun/aslrun/builtin"
	"github.com/aslrun/aslrun/egress"
	"github.com/aslrun/aslrun/engine"
	"github.com/aslrun/aslrun/store"
)

// defaultDB is the database every command uses unless --db says otherwise.
const defaultDB = "aslrun.db"

// lockTimeout is how long one attempt to open the database waits for its
// lock (see open).
const lockTimeout = 250 * time.Millisecond

// envDB names the environment variable that gives --db when it is not
// given.
const envDB = "ASLRUN_DB"

// dbFlag adds --db to fs. Its value is ASLRUN_DB when that is set and
// --db is not given; the help shows the file default regardless, so that
// it never prints a URL's password.
func dbFlag(fs *flag.FlagSet) *string {
	p := fs.String("db", defaultDB, "the database: a bbolt file `PATH`, or a PostgreSQL URL postgres://USER[:PASSWORD]@HOST[:PORT]/DATABASE[?…] ($ASLRUN_DB when --db is not given)")
	if env := os.Getenv(envDB); env != "" {
		*p = env
	}
	return p
}

// mockAgents builds the agents of a mock file's content.
func mockAgents(data []byte, from string) (*agents.Registry, error) {
	mocks, err := agents.ParseMocks(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", from, err)
	}
	reg := agents.NewRegistry()
	if err := mocks.Register(reg); err != nil {
		return nil, fmt.Errorf("%s: %w", from, err)
	}
	return reg, nil
}

// fileAgents builds the agents of an agents file's content; base is the
// directory relative paths are resolved against, and hosts joins the
// file's Hosts (the --allow-host and --only-allowed-hosts flags). The
// content returned, to store with an execution, holds the joined Hosts.
func fileAgents(data []byte, from, base string, hosts egress.Config) (*agents.Registry, []byte, error) {
	f, err := builtin.ParseAgentsFile(data)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", from, err)
	}
	if f, err = f.WithHosts(hosts); err != nil {
		return nil, nil, fmt.Errorf("%s: %w", from, err)
	}
	reg := agents.NewRegistry()
	if err := f.Register(reg, base, slog.Default()); err != nil {
		return nil, nil, fmt.Errorf("%s: %w", from, err)
	}
	resolved, err := f.Resolved(base)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", from, err)
	}
	return reg, resolved, nil
}

// agentFlags are the flags that choose an execution's agents: a mock file
// or an agents file, and, for the commands that take them, the hosts its
// agents may reach beside the file's Hosts.
type agentFlags struct {
	mock, agents *string
	// hosts are --allow-host and --only-allowed-hosts (see hostFlags);
	// nil when the command has no such flags.
	hosts *egress.Config
}

// hostFlags adds --allow-host (repeatable) and --only-allowed-hosts to
// fs: the hosts the llm and http agents may reach, joined to the agents
// file's Hosts (egress.Config.Merge).
func hostFlags(fs *flag.FlagSet) *egress.Config {
	hosts := &egress.Config{}
	fs.Func("allow-host", "let the llm and http agents reach `PATTERN` although it is loopback, private or link-local (with --only-allowed-hosts: reach only the hosts listed): a host name, *.DOMAIN, an IP address or a CIDR block, each with an optional :PORT, like localhost:11434; repeatable; joins the agents file's Hosts", func(s string) error {
		if _, err := egress.ParsePattern(s); err != nil {
			return err
		}
		hosts.Allow = append(hosts.Allow, s)
		return nil
	})
	fs.BoolVar(&hosts.Only, "only-allowed-hosts", false, "let the llm and http agents reach only the hosts --allow-host and the agents file's Hosts list, public ones included")
	return hosts
}

// hostsGiven reports whether hosts holds a pattern or Only.
func hostsGiven(hosts *egress.Config) bool {
	return hosts != nil && (len(hosts.Allow) > 0 || hosts.Only)
}

func newAgentFlags(fs *flag.FlagSet, overriding bool) agentFlags {
	what := ""
	if overriding {
		what = ", instead of the ones the execution was started with"
	}
	return agentFlags{
		mock:   fs.String("mock", "", "mock `FILE` scripting the agents: their answers by invocation number (docs/agents.md)"+what),
		agents: fs.String("agents", "", "agents `FILE` configuring built-in llm, exec and http agents"+what),
	}
}

// load builds the agents the flags name: nil when neither is set. It
// returns the content to store with the execution and its kind.
func (f agentFlags) load(c *cmdContext) (*agents.Registry, []byte, string, error) {
	switch {
	case *f.mock != "" && *f.agents != "":
		return nil, nil, "", usageErrorf("--mock and --agents cannot be used together")
	case hostsGiven(f.hosts) && *f.agents == "":
		return nil, nil, "", usageErrorf("--allow-host and --only-allowed-hosts go with --agents FILE: only the agents file's llm and http agents reach hosts")
	case *f.mock != "":
		data, err := os.ReadFile(*f.mock)
		if err != nil {
			return nil, nil, "", usageErrorf("%v", err)
		}
		reg, err := mockAgents(data, *f.mock)
		if err != nil {
			return nil, nil, "", usageErrorf("%v", err)
		}
		return reg, data, "mock", nil
	case *f.agents != "":
		data, err := os.ReadFile(*f.agents)
		if err != nil {
			return nil, nil, "", usageErrorf("%v", err)
		}
		var hosts egress.Config
		if f.hosts != nil {
			hosts = *f.hosts
		}
		reg, resolved, err := fileAgents(data, *f.agents, filepath.Dir(*f.agents), hosts)
		if err != nil {
			return nil, nil, "", usageErrorf("%v", err)
		}
		return reg, resolved, "agents", nil
	}
	return nil, nil, "", nil
}

// agentsOf returns the function that rebuilds the agents an execution
// was started with; the agents of an agents file may reach the hosts
// stored with it (its Hosts, joined with the flags it was started with)
// and those hosts adds (the flags of the process continuing it).
//
// The agents of one agents file are built once per process and shared by
// the executions that were started with it: building them starts the
// file's MCP servers, which then serve every such execution until the
// process ends.
func agentsOf(hosts egress.Config) func(e *engine.Execution) (*agents.Registry, error) {
	var mu sync.Mutex
	built := make(map[[sha256.Size]byte]*agents.Registry)
	return func(e *engine.Execution) (*agents.Registry, error) {
		switch e.AgentsKind {
		case "":
			return agents.NewRegistry(), nil
		case "mock":
			return mockAgents(e.Agents, "the execution's mock file")
		case "agents":
			key := sha256.Sum256(e.Agents)
			mu.Lock()
			defer mu.Unlock()
			if reg, ok := built[key]; ok {
				return reg, nil
			}
			// Stored resolved: every path in it is absolute.
			reg, _, err := fileAgents(e.Agents, "the execution's agents file", "", hosts)
			if err == nil {
				built[key] = reg
			}
			return reg, err
		}
		return nil, fmt.Errorf("execution %s was started with %s agents, which this version cannot rebuild", e.ID, e.AgentsKind)
	}
}

// memoryDB is the --db of durability none: no database at all.
const memoryDB = ":memory:"

// durabilityFlag adds --durability to fs; what says what it chooses.
func durabilityFlag(fs *flag.FlagSet, what string) *string {
	return fs.String("durability", "", "`MODE`: strict (the default: what is acknowledged survives a power cut), batched (commits written together within 10ms: a crash may lose the last window) or none (no database, as --db :memory:); "+what+" (docs/durability.md)")
}

// durabilityOf reads --durability (and --db :memory:, which is none):
// "" when neither chose.
func durabilityOf(fs *flag.FlagSet, cmd, flagValue, db string) (engine.Durability, error) {
	d, err := engine.ParseDurability(flagValue)
	if err != nil {
		return "", usageErrorf("%s: --durability: %v", cmd, err)
	}
	dbSet := false
	fs.Visit(func(f *flag.Flag) { dbSet = dbSet || f.Name == "db" })
	switch {
	case db == memoryDB && flagValue != "" && d != engine.DurabilityNone:
		return "", usageErrorf("%s: --db %s keeps nothing, which is --durability none, not %s", cmd, memoryDB, d)
	case db == memoryDB:
		return engine.DurabilityNone, nil
	case d == engine.DurabilityNone && dbSet:
		return "", usageErrorf("%s: --durability none keeps nothing: drop --db %s (or use --db %s)", cmd, db, memoryDB)
	case flagValue == "":
		return "", nil
	}
	return d, nil
}

// payloadFlag is --max-payload of the commands that continue executions
// (resume, approve, serve, worker): the limit of every state's input,
// result and output for the executions started without a limit of their
// own.
func payloadFlag(fs *flag.FlagSet) *int {
	return fs.Int("max-payload", engine.DefaultMaxPayloadSize, "the largest state input, result or output in `BYTES` for executions started without --max-payload (AWS's limit by default; -1: no limit); the limit an execution was started with wins")
}

// runPayloadFlag is --max-payload of run: the execution's own limit,
// stored with it.
func runPayloadFlag(fs *flag.FlagSet) *int {
	return fs.Int("max-payload", engine.DefaultMaxPayloadSize, "the largest state input, result or output in `BYTES`, stored with the execution: every later resume, approve or serve keeps it (-1: no limit; not given, the execution has none of its own: AWS's limit, or the --max-payload of whatever continues it later)")
}

// ownPayload is the limit run stores with an execution: none (0) unless
// --max-payload was given; -1 for no limit; AWS's for an explicit 0.
func ownPayload(fs *flag.FlagSet, limit int) int {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == "max-payload" })
	switch {
	case !set:
		return 0
	case limit < 0:
		return -1
	case limit == 0:
		return engine.DefaultMaxPayloadSize
	}
	return limit
}

// executor returns an executor on st; reg, when set, overrides the agents
// stored with executions. maxPayload is --max-payload.
func executor(st store.Store, reg *agents.Registry, maxPayload int) (*engine.Executor, error) {
	cfg, err := executorConfig(st, reg, maxPayload)
	if err != nil {
		return nil, err
	}
	return engine.New(cfg), nil
}

// executorConfig is the configuration of executor, for a command that
// sets more of it (run, resume and approve: their bucket flags).
func executorConfig(st store.Store, reg *agents.Registry, maxPayload int) (engine.Config, error) {
	cfg := engine.Config{Store: st, AgentsFor: agentsOf(egress.Config{}), MaxPayloadSize: maxPayload, Workflows: store.WorkflowSource(st)}
	if reg != nil {
		cfg.Agents, cfg.AgentsFor = reg, nil
	}
	key, err := redactKey(os.Getenv(envRedactKey))
	cfg.RedactKey = key
	return cfg, err
}

// envRedactKey names the file of the owner's redaction key (Audit.Redact,
// docs/security.md), for every command that runs executions.
const envRedactKey = "ASLRUN_REDACT_KEY_FILE"

// redactKey reads the redaction key file path names; none for "".
func redactKey(path string) ([]byte, error) {
	if path == "" {
		return nil, nil
	}
	key, err := engine.ReadRedactKey(path)
	if err != nil {
		return nil, usageErrorf("%s: %v", envRedactKey, err)
	}
	return key, nil
}

// printResult prints where an execution stands as run, resume and approve
// do, and returns the exit code's error: 0 succeeded, 1 failed, 3 waiting.
func printResult(c *cmdContext, res *engine.Result) error {
	switch res.Status {
	case engine.StatusSucceeded:
		return writeJSON(c.stdout, res.Output)
	case engine.StatusWaiting:
		w := map[string]any{"id": res.ID, "status": string(res.Status), "state": res.State, "waitingFor": res.WaitingFor}
		if !res.WakeAt.IsZero() {
			w["wakeAt"] = res.WakeAt.UTC().Format(time.RFC3339)
		}
		w["approvals"] = approvalsJSON(res.Approvals)
		if err := writeJSON(c.stdout, w); err != nil {
			return err
		}
		if len(res.Approvals) > 0 {
			for _, pa := range res.Approvals {
				which := ""
				if len(res.Approvals) > 1 {
					which = " --approval " + pa.ID
				}
				printf(c.stderr, "execution %s waits for a decision at %s; decide with `aslrun approve %s%s --decision %s`\n",
					res.ID, pa.State, res.ID, which, strings.Join(pa.Options, "|"))
			}
		} else if res.WaitingFor == engine.WaitingForActivity {
			printf(c.stderr, "execution %s waits at %s for a worker of its activity; a worker takes the task with `aslrun activity-poll NAME` (or `aslrun serve`'s POST /v1/activities/NAME/poll) and answers with `aslrun task-success TOKEN --output JSON` or `aslrun task-failure TOKEN`\n", res.ID, res.State)
		} else if res.WaitingFor == engine.WaitingForTaskToken {
			printf(c.stderr, "execution %s waits at %s for its task token (the agent has it); answer with `aslrun task-success TOKEN --output JSON` or `aslrun task-failure TOKEN`\n", res.ID, res.State)
		} else {
			printf(c.stderr, "execution %s is waiting (%s at %s); `aslrun serve` wakes it, or `aslrun resume %s`\n", res.ID, res.WaitingFor, res.State, res.ID)
		}
		return &exitError{code: exitWaiting}
	default:
		failure := map[string]any{}
		if res.Error != "" {
			failure["Error"] = res.Error
		}
		if res.Cause != "" {
			failure["Cause"] = res.Cause
		}
		if err := writeJSON(c.stdout, failure); err != nil {
			return err
		}
		if p := res.Payload; p != nil {
			printf(c.stderr, "%v; raise the limit with --max-payload BYTES (of run: an execution started with a limit keeps it)\n", p)
		}
		return &exitError{code: exitFailed}
	}
}

// engineError turns an executor error into the exit it deserves.
func engineError(err error) error {
	switch {
	case errors.As(err, new(*engine.PayloadError)):
		return &exitError{code: exitUsage, msg: err.Error() + "; raise the limit with --max-payload BYTES"}
	case errors.Is(err, engine.ErrInvalidInput), errors.Is(err, engine.ErrExists),
		errors.Is(err, engine.ErrNotFound), errors.Is(err, engine.ErrEnded), errors.Is(err, engine.ErrBusy),
		errors.Is(err, engine.ErrDecisionRefused):
		return &exitError{code: exitUsage, msg: err.Error()}
	}
	return err
}
