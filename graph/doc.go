// Package graph draws a state machine: Build turns a *states.Machine into
// nodes, labelled edges and nested clusters, which WriteDOT (Graphviz),
// WriteMermaid and WriteSVG render.
//
// WriteSVG lays the graph out itself, with no Graphviz, as a simplified
// Sugiyama drawing from top to bottom:
//
//   - Each Map processor and Parallel branch is laid out first, on its own,
//     and then placed as one block in the machine around it (recursively).
//     A Map's processor is one cluster whatever the number of its
//     iterations (SVGOptions.Notes may say how many ran); a cluster is at
//     least as wide as its label and note.
//   - A depth-first search from Start (or a nested machine's StartAt)
//     finds the back edges of loops; the other edges set the layers, by
//     longest path. A labelled edge spans two layers, the middle one
//     holding its label.
//   - An edge that spans layers gets a bend point in each layer it
//     crosses, so it runs between boxes rather than through them.
//   - Rounds of barycenter sweeps (down, then up), each followed by swaps
//     of neighbours that cut crossings, order each layer; the order with
//     the fewest crossings seen is kept. Two more sweeps pull each item
//     over its neighbours, packing every row from both sides so nothing
//     overlaps.
//   - Back edges climb in lanes on the right of their block.
//
// What it does not do: it cuts crossings but does not promise their
// minimum, long edges bend at every layer they cross, a back edge's first
// leg can cross boxes on its source's row, an edge into a cluster crosses the
// cluster's border (and sometimes its label), and text widths are
// estimated from the label's length, not measured.
package graph
