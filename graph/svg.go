package graph

import (
	"encoding/xml"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"
)

// SVGOptions decorates an SVG drawing. The zero value draws the plain graph.
type SVGOptions struct {
	// Status maps a node's qualified state name (as Build names them) to
	// "visited", "current", "failed" or "stopped" (where an operator
	// stopped the execution); other values and missing names leave the
	// node plain.
	Status map[string]string
	// Unstyled leaves the picture's <style> element out, for a page whose
	// own stylesheet styles the classes (node, visited, current, failed,
	// stopped, cluster, note, edge, dashed): a Content-Security-Policy
	// without 'unsafe-inline' refuses an inline style. False: the picture
	// stands alone, styled.
	Unstyled bool
	// Link returns the href of a state's node, "" for none. Nil: no links.
	Link func(state string) string
	// Focusable makes each state's node a control a page's script opens
	// the state with: inside the node's <g class="node …">, after its
	// title, a <g class="state"> holds the drawing, with data-state (the
	// qualified name), tabindex 0, role button and an aria-label naming
	// the state, its type and status; a link inside it leaves the tab
	// order (the node takes the focus once). The picture is then a group named
	// "Workflow graph", not an image, so that its nodes are reachable.
	Focusable bool
	// Notes maps a Map or Parallel state's qualified name to a note drawn
	// after the label of its clusters, like "128 items, 2 failed": a Map's
	// iterations are one cluster, whatever their number.
	Notes map[string]string
}

// Layout sizes, in pixels.
const (
	charW      = 7.0  // estimated width of a character at fontSize
	lineH      = 15.0 // height of a text line
	fontSize   = 12
	padX       = 12.0 // text padding inside a box
	padY       = 8.0
	itemGap    = 30.0 // between items of a layer
	layerGap   = 40.0 // between layers
	clusterPad = 12.0
	clusterTop = 22.0 // room for a cluster's label
	laneGap    = 14.0 // between the lanes of back edges
	margin     = 10.0
	dummyW     = 10.0 // width of a long edge's bend point
)

type point struct{ x, y float64 }

type rect struct{ x, y, w, h float64 }

func (r rect) topMid() point    { return point{r.x + r.w/2, r.y} }
func (r rect) bottomMid() point { return point{r.x + r.w/2, r.y + r.h} }

// route is an edge's drawing: a polyline, and where its label goes.
type route struct {
	pts    []point
	label  point
	anchor string // text-anchor of the label
}

// block is the layout of one machine (the top level or a cluster), in
// coordinates relative to its own top-left corner.
type block struct {
	w, h     float64
	boxes    map[string]rect
	clusters map[int]rect
	routes   map[int]route // by index in Graph.edges
	// crossings counts the edges that cross between adjacent layers, in
	// this block and the blocks nested in it (back edges, drawn in lanes,
	// left out).
	crossings int
}

func (b *block) shift(dx, dy float64, into *block) {
	for id, r := range b.boxes {
		into.boxes[id] = rect{r.x + dx, r.y + dy, r.w, r.h}
	}
	for c, r := range b.clusters {
		into.clusters[c] = rect{r.x + dx, r.y + dy, r.w, r.h}
	}
	for e, rt := range b.routes {
		pts := make([]point, len(rt.pts))
		for i, p := range rt.pts {
			pts[i] = point{p.x + dx, p.y + dy}
		}
		into.routes[e] = route{pts: pts, label: point{rt.label.x + dx, rt.label.y + dy}, anchor: rt.anchor}
	}
}

// item is what a layer holds: a node, a nested cluster (as one block) or
// a bend point of an edge crossing the layer.
type item struct {
	node    string // node id, or ""
	cluster int    // cluster index, or -1
	w, h    float64
	layer   int
	pos     float64 // order within the layer, for sorting
	x, y    float64 // top-left, relative to the block
	sub     *block  // the cluster's layout
}

// levelEdge is an edge of g as the items of one block see it.
type levelEdge struct {
	index    int // in Graph.edges
	from, to int // item indices
	back     bool
	bends    []int // items of the bend points, one per layer crossed
}

func textWidth(s string) float64 {
	w := 0
	for _, l := range strings.Split(s, "\n") {
		w = max(w, utf8.RuneCountInString(l))
	}
	return float64(w) * charW
}

func nodeSize(n gnode) (w, h float64) {
	if n.shape == "circle" || n.shape == "doublecircle" {
		d := max(40, textWidth(n.label)+12)
		return d, d
	}
	lines := float64(strings.Count(n.label, "\n") + 1)
	w, h = textWidth(n.label)+2*padX, lines*lineH+2*padY
	switch n.shape {
	case "diamond":
		w, h = w*1.4, h*1.4
	case "hexagon":
		w += 2 * padX
	}
	return w, h
}

// layoutAll lays the whole graph out, in absolute coordinates, each
// cluster at least as wide as its label.
func (g *Graph) layoutAll() *block {
	return g.layoutLabelled(g.labels(nil))
}

// labels are the clusters' labels, each followed by its owner's note.
func (g *Graph) labels(notes map[string]string) []string {
	owner := map[string]string{}
	for _, n := range g.nodes {
		owner[n.id] = n.name
	}
	out := make([]string, len(g.clusters))
	for i, c := range g.clusters {
		out[i] = c.label
		if note := notes[owner[c.owner]]; note != "" {
			out[i] += " — " + note
		}
	}
	return out
}

func (g *Graph) layoutLabelled(labels []string) *block {
	b := g.layout(-1, labels)
	out := &block{w: b.w + 2*margin, h: b.h + 2*margin, boxes: map[string]rect{}, clusters: map[int]rect{}, routes: map[int]route{}, crossings: b.crossings}
	b.shift(margin, margin, out)
	return out
}

// ancestor returns the item of block blk that holds a node of cluster c:
// c itself when it is a child of blk, -2 when the node is in blk itself,
// -3 when the node is not inside blk.
func (g *Graph) ancestor(c, blk int) int {
	if c == blk {
		return -2
	}
	for c != -1 {
		if g.clusters[c].parent == blk {
			return c
		}
		c = g.clusters[c].parent
	}
	return -3
}

// layout lays out the block of cluster blk (-1: the top level) as a
// simplified Sugiyama drawing: layers by longest path, bend points for
// long edges, barycenter ordering, centered rows, back edges in lanes
// on the right.
func (g *Graph) layout(blk int, labels []string) *block {
	b := &block{boxes: map[string]rect{}, clusters: map[int]rect{}, routes: map[int]route{}}
	var items []*item
	nodeItem := map[string]int{}
	clusterItem := map[int]int{}
	for _, n := range g.nodes {
		if n.cluster == blk {
			w, h := nodeSize(n)
			nodeItem[n.id] = len(items)
			items = append(items, &item{node: n.id, cluster: -1, w: w, h: h})
		}
	}
	for c := range g.clusters {
		if g.clusters[c].parent == blk {
			sub := g.layout(c, labels)
			clusterItem[c] = len(items)
			items = append(items, &item{cluster: c, w: sub.w, h: sub.h, sub: sub})
		}
	}
	nodeCluster := map[string]int{}
	for _, n := range g.nodes {
		nodeCluster[n.id] = n.cluster
	}
	itemOf := func(id string) int {
		c, ok := nodeCluster[id]
		if !ok {
			return -1
		}
		switch a := g.ancestor(c, blk); a {
		case -2:
			return nodeItem[id]
		case -3:
			return -1
		default:
			return clusterItem[a]
		}
	}

	// The edges between items of this block.
	var edges []*levelEdge
	out := make([][]*levelEdge, len(items))
	for i, e := range g.edges {
		f, t := itemOf(e.from), itemOf(e.to)
		if f < 0 || t < 0 || (f == t && e.from != e.to) {
			continue
		}
		le := &levelEdge{index: i, from: f, to: t}
		edges = append(edges, le)
		out[f] = append(out[f], le)
	}

	// Back edges: those DFS finds going to a node on its stack. The block's
	// entry goes first: Start at the top level, the StartAt in a cluster.
	const (
		unseen = iota
		onStack
		done
	)
	mark := make([]int, len(items))
	var order []int // reverse postorder: a topological order of the rest
	var found []int // discovery order: the first order within a layer
	var dfs func(int)
	dfs = func(u int) {
		mark[u] = onStack
		found = append(found, u)
		for _, e := range out[u] {
			switch mark[e.to] {
			case unseen:
				dfs(e.to)
			case onStack:
				e.back = true
			}
		}
		mark[u] = done
		order = append(order, u)
	}
	entry := 0
	if blk >= 0 {
		entry = itemOf(g.clusters[blk].start)
	}
	if entry >= 0 && len(items) > 0 {
		dfs(entry)
	}
	for u := range items {
		if mark[u] == unseen {
			dfs(u)
		}
	}
	// Longest path layering; a labelled edge spans two layers, so its
	// label gets a place of its own.
	for i := len(order) - 1; i >= 0; i-- {
		u := order[i]
		for _, e := range out[u] {
			if e.back {
				continue
			}
			span := 1
			if g.edges[e.index].label != "" {
				span = 2
			}
			items[e.to].layer = max(items[e.to].layer, items[u].layer+span)
		}
	}
	// Bend points for edges that cross layers.
	for _, e := range edges {
		if e.back {
			continue
		}
		for l := items[e.from].layer + 1; l < items[e.to].layer; l++ {
			w := dummyW
			if l == items[e.from].layer+1 {
				w += textWidth(g.edges[e.index].label) + 8
			}
			e.bends = append(e.bends, len(items))
			items = append(items, &item{cluster: -1, w: w, h: lineH, layer: l})
		}
	}
	nLayers := 0
	for _, it := range items {
		nLayers = max(nLayers, it.layer+1)
	}
	layers := make([][]int, nLayers)
	// Initial order: the DFS discovery order, entry first; bend points
	// after the rest.
	rank := make([]int, len(items))
	for i := range rank {
		rank[i] = len(items) + i
	}
	for k, u := range found {
		rank[u] = k
	}
	for i, it := range items {
		it.pos = float64(rank[i])
		layers[it.layer] = append(layers[it.layer], i)
	}
	// The chains of each edge, item by item, for the barycenter sweeps.
	var up, down = make([][]int, len(items)), make([][]int, len(items))
	for _, e := range edges {
		if e.back {
			continue
		}
		chain := append(append([]int{e.from}, e.bends...), e.to)
		for k := 1; k < len(chain); k++ {
			down[chain[k-1]] = append(down[chain[k-1]], chain[k])
			up[chain[k]] = append(up[chain[k]], chain[k-1])
		}
	}
	renumber := func(l []int) {
		sort.SliceStable(l, func(a, b int) bool { return items[l[a]].pos < items[l[b]].pos })
		for k, i := range l {
			items[i].pos = float64(k)
		}
	}
	for _, l := range layers {
		renumber(l)
	}
	bary := func(l []int, nb [][]int) {
		for _, i := range l {
			if len(nb[i]) == 0 {
				continue
			}
			s := 0.0
			for _, j := range nb[i] {
				s += items[j].pos
			}
			// Keep a little of the old place, so ties stay stable.
			items[i].pos = s/float64(len(nb[i])) + items[i].pos*1e-3
		}
		renumber(l)
	}
	// Eight rounds of sweeps (fewer when there is no crossing left), each
	// followed by swaps of neighbours that cut crossings further; the
	// best order seen is kept.
	best, bestOrder := crossings(layers, down, items), saveOrder(layers)
	for round := 0; round < 8 && best > 0; round++ {
		for k := 1; k < nLayers; k++ {
			bary(layers[k], up)
		}
		for k := nLayers - 2; k >= 0; k-- {
			bary(layers[k], down)
		}
		transpose(layers, up, down, items)
		if c := crossings(layers, down, items); c < best {
			best, bestOrder = c, saveOrder(layers)
		}
	}
	for k, l := range bestOrder {
		copy(layers[k], l)
		for n, i := range layers[k] {
			items[i].pos = float64(n)
		}
	}
	b.crossings = best
	for _, it := range items {
		if it.sub != nil {
			b.crossings += it.sub.crossings
		}
	}

	// Placement: rows centered on the widest, items centered in their row.
	rowW := make([]float64, nLayers)
	rowH := make([]float64, nLayers)
	for k, l := range layers {
		for n, i := range l {
			if n > 0 {
				rowW[k] += itemGap
			}
			rowW[k] += items[i].w
			rowH[k] = max(rowH[k], items[i].h)
		}
	}
	width := 0.0
	for _, w := range rowW {
		width = max(width, w)
	}
	for k, l := range layers {
		x := (width - rowW[k]) / 2
		for _, i := range l {
			items[i].x = x
			x += items[i].w + itemGap
		}
	}
	// Then pull each item over its neighbours (an edge's line runs at a
	// bend point's left, past its label), pushing the rest of the row
	// right so nothing overlaps.
	anchor := func(i int) float64 {
		if items[i].node == "" && items[i].sub == nil {
			return dummyW / 2
		}
		return items[i].w / 2
	}
	// Packing the row from the left and from the right, and taking the
	// mean of the two, keeps the row in order and free of overlaps
	// without drifting one way.
	pull := func(l []int, nb [][]int) {
		want := make([]float64, len(l))
		for n, i := range l {
			want[n] = items[i].x
			if len(nb[i]) > 0 {
				s := 0.0
				for _, j := range nb[i] {
					s += items[j].x + anchor(j)
				}
				want[n] = s/float64(len(nb[i])) - anchor(i)
			}
		}
		fromLeft := make([]float64, len(l))
		right := math.Inf(-1)
		for n, i := range l {
			fromLeft[n] = max(want[n], right+itemGap)
			right = fromLeft[n] + items[i].w
		}
		left := math.Inf(1)
		for n := len(l) - 1; n >= 0; n-- {
			i := l[n]
			x := min(want[n], left-itemGap-items[i].w)
			left = x
			items[i].x = (x + fromLeft[n]) / 2
		}
	}
	for range 2 {
		for k := 1; k < nLayers; k++ {
			pull(layers[k], up)
		}
		for k := nLayers - 2; k >= 0; k-- {
			pull(layers[k], down)
		}
	}
	left, width := math.Inf(1), 0.0
	for _, it := range items {
		left = min(left, it.x)
	}
	for _, it := range items {
		it.x -= left
		width = max(width, it.x+it.w)
	}
	// A cluster is as wide as its label (drawn 8 from its left), the
	// content centered under it.
	if blk >= 0 {
		if lw := textWidth(labels[blk]) + 16 - 2*clusterPad; lw > width {
			for _, it := range items {
				it.x += (lw - width) / 2
			}
			width = lw
		}
	}
	rowY := make([]float64, nLayers)
	y := 0.0
	for k, l := range layers {
		rowY[k] = y
		for _, i := range l {
			items[i].y = y + (rowH[k]-items[i].h)/2
		}
		y += rowH[k] + layerGap
	}
	height := max(0, y-layerGap)

	for _, it := range items {
		switch {
		case it.node != "":
			b.boxes[it.node] = rect{it.x, it.y, it.w, it.h}
		case it.sub != nil:
			it.sub.shift(it.x, it.y, b)
		}
	}
	if blk >= 0 {
		b.clusters[blk] = rect{0, 0, width + 2*clusterPad, height + 2*clusterPad + clusterTop}
		inner := b
		b = &block{boxes: map[string]rect{}, clusters: map[int]rect{}, routes: map[int]route{}, crossings: inner.crossings}
		inner.shift(clusterPad, clusterPad+clusterTop, b)
		b.clusters[blk] = inner.clusters[blk]
		width, height = width+2*clusterPad, height+2*clusterPad+clusterTop
		for _, it := range items {
			it.x += clusterPad
			it.y += clusterPad + clusterTop
		}
		for k := range rowY {
			rowY[k] += clusterPad + clusterTop
		}
	}

	// Routes.
	lane := width
	for _, e := range edges {
		ge := g.edges[e.index]
		src, dst := b.boxes[ge.from], b.boxes[ge.to]
		var rt route
		if e.back {
			lane += laneGap
			s := point{src.x + src.w, src.y + src.h/2}
			t := point{dst.x + dst.w, dst.y + dst.h/2}
			if ge.from == ge.to {
				s.y, t.y = src.y+src.h/3, src.y+2*src.h/3
			}
			rt.pts = []point{s, {lane, s.y}, {lane, t.y}, t}
			rt.label, rt.anchor = point{lane + 4, (s.y+t.y)/2 + 4}, "start"
			if ge.label != "" {
				lane += textWidth(ge.label) + 8
			}
		} else {
			rt.pts = []point{src.bottomMid()}
			for n, i := range e.bends {
				it := items[i]
				x := it.x + dummyW/2
				rt.pts = append(rt.pts, point{x, rowY[it.layer]}, point{x, rowY[it.layer] + rowH[it.layer]})
				if n == 0 {
					rt.label, rt.anchor = point{x + dummyW, rowY[it.layer] + rowH[it.layer]/2 + 4}, "start"
				}
			}
			rt.pts = append(rt.pts, dst.topMid())
			if len(e.bends) == 0 {
				a, z := rt.pts[0], rt.pts[1]
				rt.label, rt.anchor = point{(a.x+z.x)/2 + 4, (a.y+z.y)/2 + 4}, "start"
			}
		}
		b.routes[e.index] = rt
	}
	if r, ok := b.clusters[blk]; ok && lane > width {
		r.w = lane + clusterPad
		b.clusters[blk] = r
		lane = r.w
	}
	b.w, b.h = lane, height
	return b
}

// saveOrder copies the order of each layer.
func saveOrder(layers [][]int) [][]int {
	out := make([][]int, len(layers))
	for k, l := range layers {
		out[k] = append([]int(nil), l...)
	}
	return out
}

// transpose swaps neighbours of a layer when that cuts the crossings of
// their edges (with the layers above and below), until no swap does.
func transpose(layers [][]int, up, down [][]int, items []*item) {
	// cross counts the crossings of u's edges with v's when u is left of v.
	cross := func(u, v int, nb [][]int) int {
		n := 0
		for _, a := range nb[u] {
			for _, b := range nb[v] {
				if items[a].pos > items[b].pos {
					n++
				}
			}
		}
		return n
	}
	for improved, rounds := true, 0; improved && rounds < 10; rounds++ {
		improved = false
		for _, l := range layers {
			for n := 0; n+1 < len(l); n++ {
				u, v := l[n], l[n+1]
				if cross(u, v, up)+cross(u, v, down) > cross(v, u, up)+cross(v, u, down) {
					l[n], l[n+1] = v, u
					items[u].pos, items[v].pos = float64(n+1), float64(n)
					improved = true
				}
			}
		}
	}
}

// crossings counts the pairs of edge segments that cross between each
// two adjacent layers, from the items' order (pos) in their layers; down
// lists each item's neighbours in the layer below.
func crossings(layers [][]int, down [][]int, items []*item) int {
	n := 0
	for _, l := range layers {
		type seg struct{ a, b float64 }
		var segs []seg
		for _, u := range l {
			for _, v := range down[u] {
				segs = append(segs, seg{items[u].pos, items[v].pos})
			}
		}
		for i := range segs {
			for j := i + 1; j < len(segs); j++ {
				s, t := segs[i], segs[j]
				if (s.a-t.a)*(s.b-t.b) < 0 {
					n++
				}
			}
		}
	}
	return n
}

// style is the picture's own stylesheet; a page that includes the picture
// (SVGOptions.Unstyled) has the same rules in its own.
const style = `<style>
.node .shape { fill: #ffffff; stroke: #333333; stroke-width: 1.2; }
.node.visited .shape { fill: #c8eec8; }
.node.current .shape { fill: #fff176; stroke-width: 3.5; }
.node.failed .shape { fill: #f28b82; }
.node.stopped .shape { fill: #fbc98e; stroke: #b42318; stroke-width: 3.5; stroke-dasharray: 6 3; }
.node text { fill: #111111; }
.cluster rect { fill: #f5f7fa; stroke: #8895a7; }
.cluster text { fill: #445066; font-style: italic; }
.cluster .note { font-style: normal; font-weight: bold; }
.edge path { fill: none; stroke: #555555; stroke-width: 1.2; }
.edge.dashed path { stroke-dasharray: 5 4; }
.edge text { fill: #333333; font-size: 10px; }
a .shape { cursor: pointer; }
</style>
`

// WriteSVG draws the graph as a standalone SVG picture, laid out top to
// bottom by the package itself.
func (g *Graph) WriteSVG(w io.Writer, opts SVGOptions) error {
	l := g.layoutLabelled(g.labels(opts.Notes))
	owner := map[string]string{}
	for _, n := range g.nodes {
		owner[n.id] = n.name
	}
	ew := &errWriter{w: w}
	p := func(ss ...string) {
		for _, s := range ss {
			io.WriteString(ew, s)
		}
	}
	role := `role="img"`
	if opts.Focusable {
		role = `role="group" aria-label="Workflow graph"`
	}
	p(`<svg xmlns="http://www.w3.org/2000/svg" width="`, num(l.w), `" height="`, num(l.h), `" viewBox="0 0 `, num(l.w), " ", num(l.h),
		`" font-family="Helvetica, Arial, sans-serif" font-size="`, strconv.Itoa(fontSize), `" `, role, `>`, "\n")
	if !opts.Unstyled {
		p(style)
	}
	p(`<defs><marker id="arrow" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="8" markerHeight="8" orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" fill="#555555"/></marker></defs>
`)
	for c, cl := range g.clusters {
		r := l.clusters[c]
		p(`<g class="cluster"><rect x="`, num(r.x), `" y="`, num(r.y), `" width="`, num(r.w), `" height="`, num(r.h), `" rx="8"/>`,
			`<text x="`, num(r.x+8), `" y="`, num(r.y+16), `">`, esc(cl.label))
		if note := opts.Notes[owner[cl.owner]]; note != "" {
			p(` — <tspan class="note">`, esc(note), `</tspan>`)
		}
		p("</text></g>\n")
	}
	for i, e := range g.edges {
		rt, ok := l.routes[i]
		if !ok {
			continue
		}
		class := "edge"
		if e.dashed {
			class += " dashed"
		}
		p(`<g class="`, class, `"><path d="`)
		for k, pt := range rt.pts {
			if k == 0 {
				p("M")
			} else {
				p(" L")
			}
			p(num(pt.x), ",", num(pt.y))
		}
		p(`" marker-end="url(#arrow)"/>`)
		if e.label != "" {
			p(`<text x="`, num(rt.label.x), `" y="`, num(rt.label.y), `" text-anchor="`, rt.anchor, `">`, esc(e.label), "</text>")
		}
		p("</g>\n")
	}
	for _, n := range g.nodes {
		r := l.boxes[n.id]
		class, status := "node", ""
		switch s := opts.Status[n.name]; {
		case n.name == "":
		case s == "visited", s == "current", s == "failed", s == "stopped":
			class += " " + s
			status = ", " + s
		}
		title := n.typ
		if n.name != "" {
			title = n.name + " (" + n.typ + ")"
		}
		focusable := opts.Focusable && n.name != ""
		p(`<g class="`, class, `"><title>`, esc(title), "</title>")
		if focusable {
			p(`<g class="state" data-state="`, esc(n.name), `" tabindex="0" role="button" aria-label="`, esc(title+status), `">`)
		}
		href := ""
		if opts.Link != nil && n.name != "" {
			href = opts.Link(n.name)
		}
		if href != "" && focusable {
			p(`<a href="`, esc(href), `" tabindex="-1">`)
		} else if href != "" {
			p(`<a href="`, esc(href), `">`)
		}
		p(shape(n.shape, r))
		lines := strings.Split(n.label, "\n")
		y0 := r.y + r.h/2 - float64(len(lines)-1)*lineH/2 + 4
		for k, line := range lines {
			p(`<text x="`, num(r.x+r.w/2), `" y="`, num(y0+float64(k)*lineH), `" text-anchor="middle">`, esc(line), "</text>")
		}
		if href != "" {
			p("</a>")
		}
		if focusable {
			p("</g>")
		}
		p("</g>\n")
	}
	p("</svg>\n")
	return ew.err
}

// shape draws a node's outline in r.
func shape(kind string, r rect) string {
	cx, cy := r.x+r.w/2, r.y+r.h/2
	switch kind {
	case "circle":
		return `<circle class="shape" cx="` + num(cx) + `" cy="` + num(cy) + `" r="` + num(r.w/2) + `"/>`
	case "doublecircle":
		return `<circle class="shape" cx="` + num(cx) + `" cy="` + num(cy) + `" r="` + num(r.w/2) + `"/>` +
			`<circle class="shape" cx="` + num(cx) + `" cy="` + num(cy) + `" r="` + num(r.w/2-4) + `"/>`
	case "diamond":
		return polygon(point{cx, r.y}, point{r.x + r.w, cy}, point{cx, r.y + r.h}, point{r.x, cy})
	case "hexagon":
		d := min(padX*2, r.w/4)
		return polygon(point{r.x + d, r.y}, point{r.x + r.w - d, r.y}, point{r.x + r.w, cy},
			point{r.x + r.w - d, r.y + r.h}, point{r.x + d, r.y + r.h}, point{r.x, cy})
	}
	rx := "4"
	if kind == "oval" {
		rx = num(r.h / 2)
	}
	return `<rect class="shape" x="` + num(r.x) + `" y="` + num(r.y) + `" width="` + num(r.w) + `" height="` + num(r.h) + `" rx="` + rx + `"/>`
}

func polygon(pts ...point) string {
	s := make([]string, len(pts))
	for i, pt := range pts {
		s[i] = num(pt.x) + "," + num(pt.y)
	}
	return `<polygon class="shape" points="` + strings.Join(s, " ") + `"/>`
}

// num formats a coordinate with at most one decimal, the same on every
// machine.
func num(v float64) string {
	v = math.Round(v*10) / 10
	if v == 0 {
		v = 0 // no "-0"
	}
	return strconv.FormatFloat(v, 'f', -1, 64)
}

// esc escapes s for XML text and attribute values; characters XML cannot
// hold become U+FFFD.
func esc(s string) string {
	var sb strings.Builder
	xml.EscapeText(&sb, []byte(s))
	return sb.String()
}
