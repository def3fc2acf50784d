package main

import (
	"context"
	"flag"

	"github.com/aslrun/aslrun/graph"
)

func cmdGraph(ctx context.Context, c *cmdContext, args []string) error {
	fs := flag.NewFlagSet("graph", flag.ContinueOnError)
	format := fs.String("format", "dot", "output format: dot (Graphviz), mermaid or svg")
	pos, err := parseFlags(fs, "graph", args, c.stdout)
	if done, err := handleHelp(err); done || err != nil {
		return err
	}
	if len(pos) != 1 {
		return usageErrorf("graph: want exactly one FILE, got %d (see \"aslrun graph --help\")", len(pos))
	}
	m, _, err := c.loadMachine(ctx, pos[0], nil)
	if err != nil {
		return err
	}
	g := graph.Build(m)
	switch *format {
	case "dot":
		return g.WriteDOT(c.stdout)
	case "mermaid":
		return g.WriteMermaid(c.stdout)
	case "svg":
		return g.WriteSVG(c.stdout, graph.SVGOptions{})
	default:
		return usageErrorf("graph: --format must be dot, mermaid or svg, not %q", *format)
	}
}
