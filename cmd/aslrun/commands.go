package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/aslrun/aslrun/agents"
	"github.com/aslrun/aslrun/api"
	"github.com/aslrun/aslrun/conformance"
	"github.com/aslrun/aslrun/engine"
	"github.com/aslrun/aslrun/jsonvalue"
	"github.com/aslrun/aslrun/states"
	"github.com/aslrun/aslrun/store"
)

func cmdValidate(ctx context.Context, c *cmdContext, args []string) error {
	fs := flag.NewFlagSet("validate", flag.ContinueOnError)
	db := dbFlag(fs)
	files, err := parseFlags(fs, "validate", args, c.stdout)
	if done, err := handleHelp(err); done || err != nil {
		return err
	}
	if len(files) == 0 {
		return usageErrorf("validate: no FILE given (see \"aslrun validate --help\")")
	}
	// The --db is opened only if a definition imports from its registry.
	reg := &dbRegistry{c: c, db: *db, what: accessRead}
	defer reg.close()
	bad := false
	for _, f := range files {
		problems, err := c.validateFile(ctx, f, reg)
		if err != nil {
			printf(c.stdout, "%s: %s\n", f, err)
			bad = true
			continue
		}
		for _, p := range problems {
			printf(c.stdout, "%s: %s\n", f, p)
			bad = true
		}
		if len(problems) == 0 {
			printf(c.stdout, "%s: valid\n", f)
		}
	}
	if bad {
		return &exitError{code: exitFailed}
	}
	return nil
}

// validateFile returns the validation problems of a definition file, or an
// error when the file cannot be read or is not strict JSON. Its imports
// are read relative to it, and from reg's registry.
func (c *cmdContext) validateFile(ctx context.Context, file string, reg *dbRegistry) ([]*states.ValidationError, error) {
	_, _, err := parseFile(ctx, file, reg)
	var list states.ErrorList
	if errors.As(err, &list) {
		return list, nil
	}
	return nil, err
}

// parseFile reads and validates a definition file, its templates read
// relative to it and from reg's registry (nil: none). It returns the
// definition's text too: the file's content or, when it imports
// templates, the expanded definition. A file that cannot be read returns
// an *fs.PathError.
func parseFile(ctx context.Context, file string, reg *dbRegistry) (*states.Machine, []byte, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, nil, err
	}
	v, err := jsonvalue.Decode(data)
	if err != nil {
		return nil, nil, err
	}
	src := &fileImports{dir: filepath.Dir(file), reg: reg}
	m, err := states.ParseValueWith(ctx, v, states.ParseOptions{Imports: src})
	if err != nil {
		return nil, nil, err
	}
	if top, ok := v.(map[string]any); ok {
		if _, ok := top["Imports"]; ok {
			if data, err = jsonvalue.Marshal(m.Definition); err != nil {
				return nil, nil, err
			}
		}
	}
	return m, data, nil
}

// loadMachine reads and validates a definition (parseFile), or returns a
// usage error naming the file and every problem. It returns the
// definition's text too.
func (c *cmdContext) loadMachine(ctx context.Context, file string, reg *dbRegistry) (*states.Machine, []byte, error) {
	m, data, err := parseFile(ctx, file, reg)
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return nil, nil, usageErrorf("%v", err)
	}
	if err != nil {
		var list states.ErrorList
		if errors.As(err, &list) {
			lines := make([]string, len(list))
			for i, p := range list {
				lines[i] = file + ": " + p.Error()
			}
			return nil, nil, usageErrorf("%s", strings.Join(lines, "\n"))
		}
		return nil, nil, usageErrorf("%s: %v", file, err)
	}
	return m, data, nil
}

func cmdRun(ctx context.Context, c *cmdContext, args []string) error {
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	input := fs.String("input", "", "execution input: JSON text, @FILE, or - for standard input (default {})")
	af := newAgentFlags(fs, false)
	af.hosts = hostFlags(fs)
	bf := newBucketFlags(fs, true)
	name := fs.String("name", "", "execution `ID` (default a new UUIDv7)")
	noPrompt := fs.Bool("no-prompt", false, "at an Approval, exit 3 instead of asking on the terminal")
	follow := fs.Bool("follow", false, "print the text streaming states stream (a Task's Streaming block) as it comes, before the output")
	maxPayload := runPayloadFlag(fs)
	durability := durabilityFlag(fs, "stored with the execution: every later resume, approve or serve keeps it")
	keepChildren := keepChildHistoryFlag(fs)
	db := dbFlag(fs)
	pos, err := parseFlags(fs, "run", args, c.stdout)
	if done, err := handleHelp(err); done || err != nil {
		return err
	}
	if len(pos) != 1 {
		return usageErrorf("run: want exactly one FILE, got %d (see \"aslrun run --help\")", len(pos))
	}
	if err := checkNameFlag("run", "--name", *name); err != nil {
		return err
	}
	mode, err := durabilityOf(fs, "run", *durability, *db)
	if err != nil {
		return err
	}
	// The database is opened here if the definition imports from its
	// registry, else below.
	reg := &dbRegistry{c: c, db: *db, what: accessRun, me: holderInfo{API: apiReads, Socket: socketPath(*db)}}
	defer reg.close()
	m, def, err := c.loadMachine(ctx, pos[0], reg)
	if err != nil {
		return err
	}
	access, err := bf.access("run")
	if err != nil {
		return err
	}
	opts := engine.StartOptions{ID: *name, MaxPayloadSize: ownPayload(fs, *maxPayload)}
	opts.MachineName = strings.TrimSuffix(filepath.Base(pos[0]), filepath.Ext(pos[0]))
	if opts.Agents, opts.AgentsFile, opts.AgentsKind, err = af.load(c); err != nil {
		return err
	}
	opts.Durability = mode
	// The input is read once it is known who runs the execution, and so
	// what limits it: no more of a file than the limit is read.
	localLimit := payloadInputLimit(opts.MaxPayloadSize, *maxPayload)
	if mode == engine.DurabilityNone {
		in, err := c.readInput(*input, localLimit)
		if err != nil {
			return err
		}
		return runInMemory(ctx, c, pos[0], m, in, opts, *maxPayload, access, *follow)
	}
	h, err := reg.handle(ctx)
	if err != nil {
		return err
	}
	if h.api != nil {
		if err := notThroughAPI(h, fs, "run", "agents", "allow-file-buckets", "max-item-bytes", "max-listed-objects", "keep-child-history"); err != nil {
			return err
		}
		var mock []byte
		if opts.AgentsKind == "mock" {
			mock = opts.AgentsFile
		}
		in, err := c.readInput(*input, remoteInputLimit(opts.MaxPayloadSize))
		if err != nil {
			return err
		}
		req := api.StartExecution{Definition: def, Name: *name, Mock: mock, MaxPayload: opts.MaxPayloadSize, Durability: string(mode)}
		if store.CheckWorkflowName(opts.MachineName) == nil {
			// Named by its file, as a local run names it (a file name
			// the server would refuse leaves it "StateMachine").
			req.MachineName = opts.MachineName
		}
		return runRemote(ctx, c, h, req, in, *noPrompt, *follow)
	}
	in, err := c.readInput(*input, localLimit)
	if err != nil {
		return err
	}
	if opts.Agents == nil {
		// Without a mock or agents file only registered agents serve.
		opts.Agents = agents.NewRegistry()
	}
	if err := checkAgents(pos[0], m, opts.Agents); err != nil {
		return err
	}
	if err := checkFileBuckets("run", pos[0], m, access); err != nil {
		return err
	}
	cfg, err := executorConfig(h.st, nil, *maxPayload)
	if err != nil {
		return err
	}
	cfg.Buckets = access
	cfg.KeepChildHistory = *keepChildren
	x := engine.New(cfg)
	// Children started without waiting (states:startExecution) run
	// on before the command exits.
	defer x.WaitDetached()
	reads := c.startReads(h.st, x, socketPath(*db))
	defer reads.stop(ctx)
	// The id is printed once the execution exists, and only then.
	var id string
	opts.Created = func(created string) {
		id = created
		printf(c.stderr, "execution: %s\n", id)
	}
	stopFollow := followRun(c, x, &opts, *follow)
	defer stopFollow()
	res, err := x.Run(ctx, m, in, opts)
	if err != nil {
		stopFollow()
		if err := interrupted(ctx, id); err != nil {
			return err
		}
		return engineError(err)
	}
	if len(res.Approvals) > 0 && !*noPrompt && isTerminal(c.stdin) {
		decide := func(d engine.Decision) (*engine.Result, error) {
			return x.Decide(ctx, res.ID, d, engine.ResumeOptions{})
		}
		if res, err = decideInteractively(c, res, decide); err != nil {
			stopFollow()
			if err := interrupted(ctx, id); err != nil {
				return err
			}
			return engineError(err)
		}
	}
	stopFollow()
	return printResult(c, res)
}

// keepChildHistoryFlag is --keep-child-history of run and serve
// (engine.Config.KeepChildHistory).
func keepChildHistoryFlag(fs *flag.FlagSet) *bool {
	return fs.Bool("keep-child-history", false, "keep the full history of every Distributed Map child execution (by default a child's history is dropped once it succeeded, and an EXPRESS child keeps none; children that fail keep theirs)")
}

// runInMemory runs an execution without a database (durability none): it
// cannot be resumed, and a workflow that could park is refused at start.
func runInMemory(ctx context.Context, c *cmdContext, file string, m *states.Machine, in any, opts engine.StartOptions, maxPayload int, access engine.BucketAccess, follow bool) error {
	if opts.Agents == nil {
		opts.Agents = agents.NewRegistry()
	}
	if err := checkAgents(file, m, opts.Agents); err != nil {
		return err
	}
	if err := checkFileBuckets("run", file, m, access); err != nil {
		return err
	}
	x := engine.New(engine.Config{MaxPayloadSize: maxPayload, Buckets: access})
	stopFollow := followRun(c, x, &opts, follow)
	res, err := x.Run(ctx, m, in, opts)
	stopFollow()
	if err != nil {
		if errors.Is(err, engine.ErrDurability) {
			return usageErrorf("run: %v", err)
		}
		if err := interrupted(ctx, ""); err != nil {
			return err
		}
		return engineError(err)
	}
	return printResult(c, res)
}

// runRemote starts an execution through the API of the server holding the
// database, waits until it is no longer RUNNING (printing its streamed
// text meanwhile when follow) and prints it as a local run does.
func runRemote(ctx context.Context, c *cmdContext, h *handle, req api.StartExecution, in any, noPrompt, follow bool) error {
	var err error
	if req.Input, err = jsonvalue.Marshal(in); err != nil {
		return err
	}
	e, err := h.api.Start(ctx, req)
	if err != nil {
		if err := interrupted(ctx, ""); err != nil {
			return err
		}
		return remoteError(h, err)
	}
	printf(c.stderr, "execution: %s\n", e.ID)
	if follow {
		return runFollowRemote(ctx, c, h, e.ID, noPrompt)
	}
	return waitAndPrint(ctx, c, h, e.ID, noPrompt)
}

// waitAndPrint waits until the execution id is no longer RUNNING, asks
// the terminal for its decisions unless noPrompt, and prints it as a
// local command does.
func waitAndPrint(ctx context.Context, c *cmdContext, h *handle, id string, noPrompt bool) error {
	res, err := h.wait(ctx, id)
	return decideAndPrint(ctx, c, h, id, res, err, noPrompt)
}

// decideAndPrint asks the terminal for the decisions the execution id
// waits for (res, err: where a wait left it) unless noPrompt, and prints
// it as a local command does.
func decideAndPrint(ctx context.Context, c *cmdContext, h *handle, id string, res *engine.Result, err error, noPrompt bool) error {
	if err == nil && len(res.Approvals) > 0 && !noPrompt && isTerminal(c.stdin) {
		decide := func(d engine.Decision) (*engine.Result, error) { return remoteDecide(ctx, h, id, d) }
		res, err = decideInteractively(c, res, decide)
	}
	if err != nil {
		if err := remoteInterrupted(ctx, id); err != nil {
			return err
		}
		return engineError(err)
	}
	return printResult(c, res)
}

// checkAgents refuses a run whose machine names an agent that is neither
// mocked, nor in the agents file, nor registered, naming every such state
// and agent.
func checkAgents(file string, m *states.Machine, reg *agents.Registry) error {
	var lines []string
	for _, ref := range m.AgentRefs() {
		if ref.Resource != "" {
			if name, ok := reg.ResolveResource(ref.Resource, ref.Function, ref.Agent); !ok {
				lines = append(lines, fmt.Sprintf("%s: state %s: Resource %s %s", file, ref.State, ref.Resource, unresolved(ref, name)))
			}
			continue
		}
		if _, ok := reg.Lookup(ref.Agent); !ok {
			lines = append(lines, fmt.Sprintf("%s: state %s: %s names agent %q, which is not mocked, in the agents file or registered", file, ref.State, ref.Field, ref.Agent))
		}
	}
	if len(lines) > 0 {
		lines = append(lines, "give the agents with --mock FILE or --agents FILE (see docs/agents.md)")
		return usageErrorf("%s", strings.Join(lines, "\n"))
	}
	return nil
}

// unresolved says why a Task's Resource resolves to no agent; name is
// the agent its resources map names, if any.
func unresolved(ref states.AgentRef, name string) string {
	switch {
	case name != "":
		return fmt.Sprintf("is mapped to agent %q, which is not mocked, in the agents file or registered", name)
	case ref.Agent != "":
		return fmt.Sprintf("resolves to no agent: give an agent named %q or map the resource in the agents file's Resources", ref.Agent)
	}
	return "resolves to no agent: map it to one in the agents file's Resources"
}

func cmdResume(ctx context.Context, c *cmdContext, args []string) error {
	fs := flag.NewFlagSet("resume", flag.ContinueOnError)
	from := fs.String("from-checkpoint", "", "roll the execution back to checkpoint `NAME` (or fork it from there with --fork)")
	fork := fs.Bool("fork", false, "with --from-checkpoint: start a new execution from the checkpoint instead of rolling back")
	restore := fs.String("restore", "both", "with --from-checkpoint: what to restore: document, memory or both")
	name := fs.String("name", "", "with --fork: the new execution's `ID` (default a new UUIDv7)")
	af := newAgentFlags(fs, true)
	bf := newBucketFlags(fs, true)
	maxPayload := payloadFlag(fs)
	db := dbFlag(fs)
	pos, err := parseFlags(fs, "resume", args, c.stdout)
	if done, err := handleHelp(err); done || err != nil {
		return err
	}
	if len(pos) != 1 {
		return usageErrorf("resume: want exactly one execution ID, got %d (see \"aslrun resume --help\")", len(pos))
	}
	if (*fork || *name != "" || *restore != "both") && *from == "" {
		return usageErrorf("resume: --fork, --name and --restore go with --from-checkpoint")
	}
	if err := checkNameFlag("resume", "--name", *name); err != nil {
		return err
	}
	what, err := engine.ParseRestore(*restore)
	if err != nil {
		return usageErrorf("resume: %v", err)
	}
	access, err := bf.access("resume")
	if err != nil {
		return err
	}
	reg, _, _, err := af.load(c)
	if err != nil {
		return err
	}
	h, err := c.open(ctx, *db, accessContinue, holderInfo{API: apiReads, Socket: socketPath(*db)})
	if err != nil {
		return err
	}
	defer h.close()
	if h.api != nil {
		if err := notThroughAPI(h, fs, "resume", "mock", "agents", "max-payload", "allow-file-buckets", "max-item-bytes", "max-listed-objects"); err != nil {
			return err
		}
		if *from != "" {
			return rollbackRemote(ctx, c, h, pos[0], *from, *fork, *name, what)
		}
		e, err := h.api.Resume(ctx, pos[0])
		if err != nil {
			if err := interrupted(ctx, ""); err != nil {
				return err
			}
			return remoteError(h, err)
		}
		printf(c.stderr, "execution: %s\n", e.ID)
		return waitAndPrint(ctx, c, h, e.ID, true)
	}
	cfg, err := executorConfig(h.st, nil, *maxPayload)
	if err != nil {
		return err
	}
	cfg.Buckets = access
	x := engine.New(cfg)
	// Children started without waiting (states:startExecution) run
	// on before the command exits.
	defer x.WaitDetached()
	reads := c.startReads(h.st, x, socketPath(*db))
	defer reads.stop(ctx)
	id := pos[0]
	opts := engine.ResumeOptions{Agents: reg, Restore: what, ForkID: *name}
	var res *engine.Result
	switch {
	case *from == "":
		res, err = x.Resume(ctx, id, opts)
	case *fork:
		opts.Created = func(created string) {
			id = created
			printf(c.stderr, "execution: %s (forked from %s at %s)\n", created, pos[0], *from)
		}
		res, err = x.Fork(ctx, pos[0], *from, opts)
	default:
		res, err = x.Rollback(ctx, id, *from, opts)
	}
	if err != nil {
		if *fork && id == pos[0] {
			id = "" // no fork was created
		}
		if err := interrupted(ctx, id); err != nil {
			return err
		}
		return engineError(err)
	}
	if !*fork {
		printf(c.stderr, "execution: %s\n", res.ID)
	}
	return printResult(c, res)
}

// rollbackRemote rolls execution id back to checkpoint from, or forks it
// from there (fork, named name), through the API of the server holding
// the database; it waits until the execution (or the fork) is no longer
// RUNNING and prints it as a local resume does.
func rollbackRemote(ctx context.Context, c *cmdContext, h *handle, id, from string, fork bool, name string, what engine.Restore) error {
	var (
		e   api.Execution
		err error
	)
	if fork {
		e, err = h.api.Fork(ctx, id, api.Fork{Checkpoint: from, Restore: what.String(), Name: name})
	} else {
		e, err = h.api.Rollback(ctx, id, api.Rollback{Checkpoint: from, Restore: what.String()})
	}
	if err != nil {
		if err := interrupted(ctx, ""); err != nil {
			return err
		}
		return remoteError(h, err)
	}
	if fork {
		printf(c.stderr, "execution: %s (forked from %s at %s)\n", e.ID, id, from)
	} else {
		printf(c.stderr, "execution: %s\n", e.ID)
	}
	return waitAndPrint(ctx, c, h, e.ID, true)
}

// writeJSON prints v as indented JSON and a newline.
func writeJSON(w io.Writer, v any) error {
	b, err := jsonvalue.MarshalIndent(v, "  ")
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(w, "%s\n", b)
	return err
}

func cmdConformance(ctx context.Context, c *cmdContext, args []string) error {
	fs := flag.NewFlagSet("conformance", flag.ContinueOnError)
	skipFile := fs.String("skip", "", "skip `FILE` listing known gaps, one \"path reason\" per line (default: the list built into aslrun)")
	paths, err := parseFlags(fs, "conformance", args, c.stdout)
	if done, err := handleHelp(err); done || err != nil {
		return err
	}
	if len(paths) == 0 {
		return usageErrorf("conformance: no PATH given (see \"aslrun conformance --help\")")
	}
	skips := conformance.DefaultSkips()
	if *skipFile != "" {
		data, err := os.ReadFile(*skipFile)
		if err != nil {
			return usageErrorf("%v", err)
		}
		if skips, err = conformance.ParseSkips(data); err != nil {
			return usageErrorf("%s: %v", *skipFile, err)
		}
	}
	_, failed, err := conformance.Report(ctx, paths, skips, c.stdout)
	if err != nil {
		return usageErrorf("conformance: %v", err)
	}
	if failed > 0 {
		return &exitError{code: exitFailed}
	}
	return nil
}
