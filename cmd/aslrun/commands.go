package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/google/uuid"

	"github.com/aslrun/aslrun/agents"
	"github.com/aslrun/aslrun/conformance"
	"github.com/aslrun/aslrun/engine"
	"github.com/aslrun/aslrun/jsonpath"
	"github.com/aslrun/aslrun/states"
)

func cmdValidate(_ context.Context, c *cmdContext, args []string) error {
	fs := flag.NewFlagSet("validate", flag.ContinueOnError)
	files, err := parseFlags(fs, "validate", args, c.stdout)
	if done, err := handleHelp(err); done || err != nil {
		return err
	}
	if len(files) == 0 {
		return usageErrorf("validate: no FILE given (see \"aslrun validate --help\")")
	}
	bad := false
	for _, f := range files {
		problems, err := validateFile(f)
		if err != nil {
			fmt.Fprintf(c.stdout, "%s: %s\n", f, err)
			bad = true
			continue
		}
		for _, p := range problems {
			fmt.Fprintf(c.stdout, "%s: %s\n", f, p)
			bad = true
		}
		if len(problems) == 0 {
			fmt.Fprintf(c.stdout, "%s: valid\n", f)
		}
	}
	if bad {
		return &exitError{code: exitFailed}
	}
	return nil
}

// validateFile returns the validation problems of a definition file, or an
// error when the file cannot be read or is not strict JSON.
func validateFile(file string) ([]*states.ValidationError, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	_, err = states.Parse(data)
	var list states.ErrorList
	if errors.As(err, &list) {
		return list, nil
	}
	return nil, err
}

// loadMachine reads and validates a definition, or returns a usage error
// naming the file and every problem.
func loadMachine(file string) (*states.Machine, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, usageErrorf("%v", err)
	}
	m, err := states.Parse(data)
	if err != nil {
		var list states.ErrorList
		if errors.As(err, &list) {
			lines := make([]string, len(list))
			for i, p := range list {
				lines[i] = file + ": " + p.Error()
			}
			return nil, usageErrorf("%s", strings.Join(lines, "\n"))
		}
		return nil, usageErrorf("%s: %v", file, err)
	}
	return m, nil
}

// readInput reads --input: JSON text, @FILE, or - for standard input.
func readInput(arg string, stdin io.Reader) (any, error) {
	var (
		data []byte
		err  error
		from = "--input"
	)
	switch {
	case arg == "":
		return map[string]any{}, nil
	case arg == "-":
		data, err = io.ReadAll(stdin)
		from = "standard input"
	case strings.HasPrefix(arg, "@"):
		from = arg[1:]
		data, err = os.ReadFile(from)
	default:
		data = []byte(arg)
	}
	if err != nil {
		return nil, usageErrorf("read input: %v", err)
	}
	v, err := jsonpath.Decode(data)
	if err != nil {
		return nil, usageErrorf("input from %s: %v", from, err)
	}
	return v, nil
}

func cmdRun(ctx context.Context, c *cmdContext, args []string) error {
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	input := fs.String("input", "", "execution input: JSON text, @FILE, or - for standard input (default {})")
	mock := fs.String("mock", "", "mock `FILE` scripting the agents (DESIGN.md §7)")
	name := fs.String("name", "", "execution `ID` (default a new UUIDv7)")
	pos, err := parseFlags(fs, "run", args, c.stdout)
	if done, err := handleHelp(err); done || err != nil {
		return err
	}
	if len(pos) != 1 {
		return usageErrorf("run: want exactly one FILE, got %d (see \"aslrun run --help\")", len(pos))
	}
	m, err := loadMachine(pos[0])
	if err != nil {
		return err
	}
	in, err := readInput(*input, c.stdin)
	if err != nil {
		return err
	}
	reg := agents.NewRegistry()
	if *mock != "" {
		data, err := os.ReadFile(*mock)
		if err != nil {
			return usageErrorf("%v", err)
		}
		mocks, err := agents.ParseMocks(data)
		if err != nil {
			return usageErrorf("%s: %v", *mock, err)
		}
		if err := mocks.Register(reg); err != nil {
			return usageErrorf("%s: %v", *mock, err)
		}
	}
	id := *name
	if id == "" {
		u, err := uuid.NewV7()
		if err != nil {
			return err
		}
		id = u.String()
	}
	x := engine.New(engine.Config{Agents: reg})
	base := strings.TrimSuffix(filepath.Base(pos[0]), filepath.Ext(pos[0]))
	fmt.Fprintf(c.stderr, "execution: %s\n", id)
	res, err := x.Run(ctx, m, in, engine.StartOptions{ID: id, MachineName: base})
	if err != nil {
		if errors.Is(err, engine.ErrInvalidInput) {
			return usageErrorf("%v", err)
		}
		return err
	}
	switch res.Status {
	case engine.StatusSucceeded:
		return writeJSON(c.stdout, res.Output)
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
		return &exitError{code: exitFailed}
	}
}

// writeJSON prints v as indented JSON and a newline.
func writeJSON(w io.Writer, v any) error {
	b, err := jsonpath.MarshalIndent(v, "  ")
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
