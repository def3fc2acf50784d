package graph

import (
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"

	"github.com/aslrun/aslrun/jsonvalue"
	"github.com/aslrun/aslrun/states"
)

// Graph is a drawable form of a machine: nodes, edges and nested clusters.
// Build makes one; it is not modified afterwards.
type Graph struct {
	nodes    []gnode
	edges    []gedge
	clusters []gcluster
	next     int
}

type gnode struct {
	id, label, shape string
	// name is the state's qualified name (see Build), "" for Start and End.
	name, typ string
	cluster   int // index in clusters, -1 at top level
}

type gedge struct {
	from, to, label string
	dashed          bool
}

type gcluster struct {
	id, label string
	parent    int
	// owner is the node of the Map or Parallel state, start the node of
	// the nested machine's StartAt.
	owner, start string
}

// Build draws m: a Start and an End node, a node per state, an edge per
// transition (Choice and Approval rules and Default labelled, Catch edges
// dashed and labelled with their errors), and a cluster per Map processor
// and Parallel branch, hanging off its state by a dashed edge.
//
// A node's state name is qualified as the engine qualifies it: a top-level
// state by its name, a state of Parallel branch i (from 0) as
// "Parallel/i/State", and a state of a Map's processor as "Map/*/State"
// (any iteration). WriteSVG's SVGOptions use these names.
func Build(m *states.Machine) *Graph {
	g := &Graph{}
	start := g.node("Start", "circle", "", "Start", -1)
	end := g.node("End", "doublecircle", "", "End", -1)
	ids := g.machine(m, "", -1)
	g.edges = append(g.edges, gedge{from: start, to: ids[m.StartAt]})
	g.terminals(m, ids, end)
	return g
}

func (g *Graph) node(label, shape, name, typ string, cluster int) string {
	id := fmt.Sprintf("n%d", g.next)
	g.next++
	g.nodes = append(g.nodes, gnode{id: id, label: label, shape: shape, name: name, typ: typ, cluster: cluster})
	return id
}

// machine adds the states of m (inside cluster, their names qualified by
// prefix) and their transitions, and returns the node id of each state.
func (g *Graph) machine(m *states.Machine, prefix string, cluster int) map[string]string {
	names := make([]string, 0, len(m.States))
	for n := range m.States {
		names = append(names, n)
	}
	sort.Strings(names)
	ids := make(map[string]string, len(names))
	for _, n := range names {
		st := m.States[n]
		c := st.Base()
		shape := "box"
		switch c.Type {
		case "Choice":
			shape = "diamond"
		case "Succeed", "Fail":
			shape = "oval"
		case "Approval":
			shape = "hexagon"
		}
		ids[n] = g.node(n+"\n("+c.Type+")", shape, prefix+n, c.Type, cluster)
	}
	for _, n := range names {
		st := m.States[n]
		from := ids[n]
		if next := st.Base().Next; next != "" {
			g.edges = append(g.edges, gedge{from: from, to: ids[next]})
		}
		switch s := st.(type) {
		case *states.Choice:
			for i, r := range s.Choices {
				g.edges = append(g.edges, gedge{from: from, to: ids[r.Next], label: fmt.Sprintf("%d: %s", i+1, describe(&r.Condition))})
			}
			if s.Default != "" {
				g.edges = append(g.edges, gedge{from: from, to: ids[s.Default], label: "default"})
			}
		case *states.Approval:
			for i, r := range s.Choices {
				g.edges = append(g.edges, gedge{from: from, to: ids[r.Next], label: fmt.Sprintf("%d: %s", i+1, describe(&r.Condition))})
			}
			if s.Default != "" {
				g.edges = append(g.edges, gedge{from: from, to: ids[s.Default], label: "default"})
			}
		case *states.Map:
			g.nested(from, n+": each item", []*states.Machine{s.Processor}, cluster, func(int) string { return prefix + n + "/*/" })
		case *states.Parallel:
			g.nested(from, n+": branch", s.Branches, cluster, func(i int) string { return prefix + n + "/" + strconv.Itoa(i) + "/" })
		}
		for _, c := range catchersOf(st) {
			g.edges = append(g.edges, gedge{from: from, to: ids[c.Next], label: "catch " + strings.Join(c.ErrorEquals, ", "), dashed: true})
		}
	}
	return ids
}

// nested draws the machines of a Map or Parallel as clusters hanging off
// the state's node.
func (g *Graph) nested(from, label string, ms []*states.Machine, parent int, prefix func(int) string) {
	for i, m := range ms {
		if m == nil {
			continue
		}
		g.clusters = append(g.clusters, gcluster{id: fmt.Sprintf("cluster_%d", len(g.clusters)), label: label, parent: parent})
		ci := len(g.clusters) - 1
		if len(ms) > 1 {
			g.clusters[ci].label = fmt.Sprintf("%s %d", label, i+1)
		}
		ids := g.machine(m, prefix(i), ci)
		g.clusters[ci].owner, g.clusters[ci].start = from, ids[m.StartAt]
		g.edges = append(g.edges, gedge{from: from, to: ids[m.StartAt], dashed: true})
	}
}

// terminals links the states that end the machine to end.
func (g *Graph) terminals(m *states.Machine, ids map[string]string, end string) {
	names := make([]string, 0, len(m.States))
	for n := range m.States {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		st := m.States[n]
		switch st.(type) {
		case *states.Succeed, *states.Fail:
			g.edges = append(g.edges, gedge{from: ids[n], to: end})
			continue
		}
		if st.Base().End {
			g.edges = append(g.edges, gedge{from: ids[n], to: end})
		}
	}
}

func catchersOf(st states.State) []states.Catcher {
	switch s := st.(type) {
	case *states.Task:
		return s.Catch
	case *states.Map:
		return s.Catch
	case *states.Parallel:
		return s.Catch
	case *states.Approval:
		return s.Catch
	case *states.Debate:
		return s.Catch
	}
	return nil
}

// describe renders a choice condition briefly, for an edge label.
func describe(c *states.Condition) string {
	var s string
	switch {
	case c.Not != nil:
		s = "not (" + describe(c.Not) + ")"
	case c.And != nil || c.Or != nil:
		list, op := c.And, " and "
		if c.Or != nil {
			list, op = c.Or, " or "
		}
		parts := make([]string, len(list))
		for i := range list {
			parts[i] = describe(&list[i])
		}
		s = "(" + strings.Join(parts, op) + ")"
	default:
		operand := ""
		if c.ValuePath != nil {
			operand = c.ValuePath.String()
		} else if b, err := jsonvalue.Marshal(c.Value); err == nil {
			operand = string(b)
		}
		v := ""
		if c.Variable != nil {
			v = c.Variable.String()
		}
		s = v + " " + c.Operator + " " + operand
	}
	if r := []rune(s); len(r) > 60 {
		s = string(r[:59]) + "…"
	}
	return s
}

func dotQuote(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`)
	return `"` + r.Replace(s) + `"`
}

// WriteDOT writes the graph for Graphviz.
func (g *Graph) WriteDOT(w io.Writer) error {
	ew := &errWriter{w: w}
	w = ew
	fmt.Fprintln(w, "digraph workflow {")
	fmt.Fprintln(w, "  rankdir=TB;")
	fmt.Fprintln(w, "  node [shape=box, fontname=\"Helvetica\"];")
	g.dotCluster(w, -1, "  ")
	for _, e := range g.edges {
		attrs := []string{}
		if e.label != "" {
			attrs = append(attrs, "label="+dotQuote(e.label))
		}
		if e.dashed {
			attrs = append(attrs, "style=dashed")
		}
		suffix := ""
		if len(attrs) > 0 {
			suffix = " [" + strings.Join(attrs, ", ") + "]"
		}
		fmt.Fprintf(w, "  %s -> %s%s;\n", e.from, e.to, suffix)
	}
	fmt.Fprintln(w, "}")
	return ew.err
}

func (g *Graph) dotCluster(w io.Writer, cluster int, indent string) {
	for _, n := range g.nodes {
		if n.cluster == cluster {
			fmt.Fprintf(w, "%s%s [label=%s, shape=%s];\n", indent, n.id, dotQuote(n.label), n.shape)
		}
	}
	for i, c := range g.clusters {
		if c.parent == cluster {
			fmt.Fprintf(w, "%ssubgraph %s {\n%s  label=%s;\n%s  style=rounded;\n", indent, c.id, indent, dotQuote(c.label), indent)
			g.dotCluster(w, i, indent+"  ")
			fmt.Fprintf(w, "%s}\n", indent)
		}
	}
}

func mermaidLabel(s string) string {
	r := strings.NewReplacer(`"`, "#quot;", "\n", "<br/>", "|", "#124;")
	return r.Replace(s)
}

// WriteMermaid writes the graph as a Mermaid flowchart.
func (g *Graph) WriteMermaid(w io.Writer) error {
	ew := &errWriter{w: w}
	w = ew
	fmt.Fprintln(w, "flowchart TD")
	g.mermaidCluster(w, -1, "  ")
	for _, e := range g.edges {
		arrow := "-->"
		if e.dashed {
			arrow = "-.->"
		}
		if e.label != "" {
			fmt.Fprintf(w, "  %s %s|\"%s\"| %s\n", e.from, arrow, mermaidLabel(e.label), e.to)
		} else {
			fmt.Fprintf(w, "  %s %s %s\n", e.from, arrow, e.to)
		}
	}
	return ew.err
}

func (g *Graph) mermaidCluster(w io.Writer, cluster int, indent string) {
	for _, n := range g.nodes {
		if n.cluster != cluster {
			continue
		}
		open, close := "[\"", "\"]"
		switch n.shape {
		case "diamond":
			open, close = "{\"", "\"}"
		case "circle":
			open, close = "((\"", "\"))"
		case "doublecircle":
			open, close = "(((\"", "\")))"
		case "oval":
			open, close = "([\"", "\"])"
		case "hexagon":
			open, close = "{{\"", "\"}}"
		}
		fmt.Fprintf(w, "%s%s%s%s%s\n", indent, n.id, open, mermaidLabel(n.label), close)
	}
	for i, c := range g.clusters {
		if c.parent == cluster {
			fmt.Fprintf(w, "%ssubgraph %s [\"%s\"]\n", indent, c.id, mermaidLabel(c.label))
			g.mermaidCluster(w, i, indent+"  ")
			fmt.Fprintf(w, "%send\n", indent)
		}
	}
}

// errWriter keeps the first write error and drops later writes.
type errWriter struct {
	w   io.Writer
	err error
}

func (e *errWriter) Write(p []byte) (int, error) {
	if e.err != nil {
		return 0, e.err
	}
	n, err := e.w.Write(p)
	e.err = err
	return n, err
}
