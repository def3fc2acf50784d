package graph

import (
	"bytes"
	"encoding/xml"
	"errors"
	"flag"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aslrun/aslrun/states"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata")

func parse(t testing.TB, def string) *states.Machine {
	t.Helper()
	m, err := states.Parse([]byte(def))
	if err != nil {
		t.Fatalf("parse: %v", err)
	}
	return m
}

// checkXML fails unless svg decodes as XML from start to end.
func checkXML(t testing.TB, svg []byte) {
	t.Helper()
	d := xml.NewDecoder(bytes.NewReader(svg))
	for {
		_, err := d.Token()
		if errors.Is(err, io.EOF) {
			return
		}
		if err != nil {
			t.Fatalf("invalid XML: %v\n%s", err, svg)
		}
	}
}

const (
	chain = `{"StartAt":"A","States":{
		"A":{"Type":"Pass","Next":"B"},
		"B":{"Type":"Pass","Next":"C"},
		"C":{"Type":"Pass","End":true}}}`
	join = `{"StartAt":"Pick","States":{
		"Pick":{"Type":"Choice","Choices":[{"Variable":"$.x","NumericEquals":1,"Next":"Left"}],"Default":"Right"},
		"Left":{"Type":"Pass","Next":"Join"},
		"Right":{"Type":"Pass","Next":"Join"},
		"Join":{"Type":"Succeed"}}}`
	loop = `{"StartAt":"A","States":{
		"A":{"Type":"Pass","Next":"B"},
		"B":{"Type":"Choice","Choices":[{"Variable":"$.again","BooleanEquals":true,"Next":"A"}],"Default":"Done"},
		"Done":{"Type":"Succeed"}}}`
	mapped = `{"StartAt":"Each","States":{
		"Each":{"Type":"Map","ItemProcessor":{"StartAt":"One","States":{
			"One":{"Type":"Pass","Next":"Two"},
			"Two":{"Type":"Pass","End":true}}},"Next":"After"},
		"After":{"Type":"Succeed"}}}`
	parallel = `{"StartAt":"Both","States":{
		"Both":{"Type":"Parallel","Branches":[
			{"StartAt":"L1","States":{"L1":{"Type":"Pass","Next":"L2"},"L2":{"Type":"Pass","End":true}}},
			{"StartAt":"R1","States":{"R1":{"Type":"Pass","End":true}}}],"End":true}}}`
	caught = `{"StartAt":"Work","States":{
		"Work":{"Type":"Task","Agent":"a","Catch":[{"ErrorEquals":["States.ALL"],"Next":"Handle"}],"End":true},
		"Handle":{"Type":"Fail","Error":"E"}}}`
)

func overlap(a, b rect) bool {
	return a.x < b.x+b.w && b.x < a.x+a.w && a.y < b.y+b.h && b.y < a.y+a.h
}

// onBorder reports whether p lies on r's outline.
func onBorder(p point, r rect) bool {
	const eps = 0.01
	in := p.x >= r.x-eps && p.x <= r.x+r.w+eps && p.y >= r.y-eps && p.y <= r.y+r.h+eps
	near := func(a, b float64) bool { return a-b < eps && b-a < eps }
	return in && (near(p.x, r.x) || near(p.x, r.x+r.w) || near(p.y, r.y) || near(p.y, r.y+r.h))
}

func TestLayout(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, def string
		// above lists pairs of states whose first must be drawn higher.
		above [][2]string
	}{
		{"chain", chain, [][2]string{{"A", "B"}, {"B", "C"}}},
		{"choice that joins", join, [][2]string{{"Pick", "Left"}, {"Pick", "Right"}, {"Left", "Join"}, {"Right", "Join"}}},
		{"loop", loop, [][2]string{{"A", "B"}, {"B", "Done"}}},
		{"map", mapped, [][2]string{{"Each", "Each/*/One"}, {"Each/*/One", "Each/*/Two"}, {"Each", "After"}}},
		{"parallel", parallel, [][2]string{{"Both", "Both/0/L1"}, {"Both/0/L1", "Both/0/L2"}, {"Both", "Both/1/R1"}}},
		{"catch", caught, [][2]string{{"Work", "Handle"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := Build(parse(t, tc.def))
			l := g.layoutAll()
			byName := map[string]rect{}
			for _, n := range g.nodes {
				r, ok := l.boxes[n.id]
				if !ok || r.w <= 0 || r.h <= 0 {
					t.Errorf("node %s (%q): box %v, present %v", n.id, n.name, r, ok)
				}
				if r.x < 0 || r.y < 0 || r.x+r.w > l.w || r.y+r.h > l.h {
					t.Errorf("node %q: box %v outside the picture %vx%v", n.name, r, l.w, l.h)
				}
				byName[n.name] = r
			}
			// Within a block, nodes and child clusters do not overlap.
			type thing struct {
				what string
				r    rect
			}
			blocks := map[int][]thing{}
			for _, n := range g.nodes {
				blocks[n.cluster] = append(blocks[n.cluster], thing{n.id, l.boxes[n.id]})
			}
			for c, cl := range g.clusters {
				blocks[cl.parent] = append(blocks[cl.parent], thing{cl.id, l.clusters[c]})
				for _, n := range g.nodes {
					if n.cluster == c && !overlap(l.boxes[n.id], l.clusters[c]) {
						t.Errorf("node %q outside its cluster %s", n.name, cl.id)
					}
				}
			}
			for b, things := range blocks {
				for i := range things {
					for j := i + 1; j < len(things); j++ {
						if overlap(things[i].r, things[j].r) {
							t.Errorf("block %d: %s %v overlaps %s %v", b, things[i].what, things[i].r, things[j].what, things[j].r)
						}
					}
				}
			}
			for i, e := range g.edges {
				rt, ok := l.routes[i]
				if !ok || len(rt.pts) < 2 {
					t.Errorf("edge %s->%s: route %v", e.from, e.to, rt.pts)
					continue
				}
				if first := rt.pts[0]; !onBorder(first, l.boxes[e.from]) {
					t.Errorf("edge %s->%s starts at %v, not on %v", e.from, e.to, first, l.boxes[e.from])
				}
				if last := rt.pts[len(rt.pts)-1]; !onBorder(last, l.boxes[e.to]) {
					t.Errorf("edge %s->%s ends at %v, not on %v", e.from, e.to, last, l.boxes[e.to])
				}
			}
			for _, p := range tc.above {
				a, b := byName[p[0]], byName[p[1]]
				if a.y+a.h > b.y {
					t.Errorf("%s (bottom %v) is not above %s (top %v)", p[0], a.y+a.h, p[1], b.y)
				}
			}
			var buf bytes.Buffer
			if err := g.WriteSVG(&buf, SVGOptions{}); err != nil {
				t.Fatal(err)
			}
			checkXML(t, buf.Bytes())
		})
	}
}

func TestLoopIsBackEdge(t *testing.T) {
	t.Parallel()
	g := Build(parse(t, loop))
	l := g.layoutAll()
	for i, e := range g.edges {
		if e.label == "" || !strings.HasPrefix(e.label, "1:") {
			continue
		}
		// B -> A goes back up, along the right of both boxes.
		rt := l.routes[i]
		from, to := l.boxes[e.from], l.boxes[e.to]
		if rt.pts[0].y <= rt.pts[len(rt.pts)-1].y {
			t.Errorf("back edge runs %v, want it to climb", rt.pts)
		}
		for _, p := range rt.pts[1 : len(rt.pts)-1] {
			if p.x < max(from.x+from.w, to.x+to.w) {
				t.Errorf("back edge bend %v left of its boxes' right sides", p)
			}
		}
		return
	}
	t.Fatal("no rule edge in the loop")
}

func TestSVGEscapes(t *testing.T) {
	t.Parallel()
	def := `{"StartAt":"a<b&c\"d","States":{
		"a<b&c\"d":{"Type":"Choice","Choices":[{"Variable":"$.x","StringEquals":"<&\">","Next":"e'f"}],"Default":"e'f"},
		"e'f":{"Type":"Succeed"}}}`
	g := Build(parse(t, def))
	var buf bytes.Buffer
	opts := SVGOptions{
		Status: map[string]string{"a<b&c\"d": "current"},
		Link:   func(s string) string { return "/states?name=" + s + "&x=<1>" },
	}
	if err := g.WriteSVG(&buf, opts); err != nil {
		t.Fatal(err)
	}
	checkXML(t, buf.Bytes())
	// The decoded text holds the names as they are.
	d := xml.NewDecoder(bytes.NewReader(buf.Bytes()))
	var texts []string
	var hrefs []string
	for {
		tok, err := d.Token()
		if err != nil {
			break
		}
		switch tok := tok.(type) {
		case xml.CharData:
			texts = append(texts, string(tok))
		case xml.StartElement:
			for _, a := range tok.Attr {
				if a.Name.Local == "href" {
					hrefs = append(hrefs, a.Value)
				}
			}
		}
	}
	all := strings.Join(texts, "\n")
	for _, want := range []string{`a<b&c"d (Choice)`, `a<b&c"d`, `$.x StringEquals "<&\">"`, `e'f (Succeed)`} {
		if !strings.Contains(all, want) {
			t.Errorf("text %q missing from the decoded SVG:\n%s", want, all)
		}
	}
	if len(hrefs) != 2 || hrefs[0] != "/states?name=a<b&c\"d&x=<1>" {
		t.Errorf("hrefs %q, want the two states' links", hrefs)
	}
	if !bytes.Contains(buf.Bytes(), []byte(`<g class="node current"><title>a&lt;b&amp;c&#34;d (Choice)</title>`)) {
		t.Errorf("the current node is not marked:\n%s", buf.Bytes())
	}
}

func TestSVGGolden(t *testing.T) {
	t.Parallel()
	data, err := os.ReadFile(filepath.Join("..", "workflows", "code-review", "workflow.json"))
	if err != nil {
		t.Fatal(err)
	}
	g := Build(parse(t, string(data)))
	for _, tc := range []struct {
		file string
		opts SVGOptions
	}{
		{"code-review.svg", SVGOptions{}},
		{"code-review-status.svg", SVGOptions{
			Status: map[string]string{
				"Reviews": "visited", "Reviews/0/SecurityReview": "visited", "Reviews/1/PerformanceReview": "failed",
				"Reviews/2/StyleReview": "visited", "NeedsHumanReview": "current", "Summarize": "bogus",
			},
			Link: func(s string) string { return "/executions/e1/states/" + s },
		}},
	} {
		t.Run(tc.file, func(t *testing.T) {
			var buf bytes.Buffer
			if err := g.WriteSVG(&buf, tc.opts); err != nil {
				t.Fatal(err)
			}
			checkXML(t, buf.Bytes())
			golden := filepath.Join("testdata", tc.file)
			if *update {
				if err := os.WriteFile(golden, buf.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run go test ./graph -update)", err)
			}
			if !bytes.Equal(buf.Bytes(), want) {
				t.Errorf("WriteSVG differs from %s (go test ./graph -update rewrites it):\n%s", golden, buf.Bytes())
			}
		})
	}
}

type failWriter struct{}

var errFull = errors.New("disk full")

func (failWriter) Write([]byte) (int, error) { return 0, errFull }

func TestWriteErrors(t *testing.T) {
	t.Parallel()
	g := Build(parse(t, chain))
	for name, write := range map[string]func(io.Writer) error{
		"dot":     g.WriteDOT,
		"mermaid": g.WriteMermaid,
		"svg":     func(w io.Writer) error { return g.WriteSVG(w, SVGOptions{}) },
	} {
		if err := write(failWriter{}); !errors.Is(err, errFull) {
			t.Errorf("%s: error %v, want %v", name, err, errFull)
		}
	}
}

func FuzzSVG(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("..", "workflows", "*", "workflow.json"))
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	for _, def := range []string{chain, join, loop, mapped, parallel, caught} {
		f.Add([]byte(def))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := states.Parse(data)
		if err != nil {
			return
		}
		var buf bytes.Buffer
		if err := Build(m).WriteSVG(&buf, SVGOptions{}); err != nil {
			t.Fatal(err)
		}
		checkXML(t, buf.Bytes())
	})
}

// TestSVGUnstyled: Unstyled leaves the <style> element out (for a page
// whose Content-Security-Policy refuses inline styles) and keeps the
// classes a stylesheet needs, "stopped" among them; the zero value
// stands alone, styled.
func TestSVGUnstyled(t *testing.T) {
	t.Parallel()
	g := Build(parse(t, chain))
	for _, tc := range []struct {
		unstyled bool
		style    bool
	}{{false, true}, {true, false}} {
		var buf bytes.Buffer
		if err := g.WriteSVG(&buf, SVGOptions{Unstyled: tc.unstyled, Status: map[string]string{"A": "visited", "B": "stopped"}}); err != nil {
			t.Fatal(err)
		}
		checkXML(t, buf.Bytes())
		svg := buf.String()
		if got := strings.Contains(svg, "<style>"); got != tc.style {
			t.Errorf("Unstyled %v: <style> present %v, want %v", tc.unstyled, got, tc.style)
		}
		if tc.style && !strings.Contains(svg, ".node.stopped .shape") {
			t.Errorf("the picture's style has no rule for a stopped node:\n%s", svg)
		}
		for _, want := range []string{`<g class="node visited"><title>A (`, `<g class="node stopped"><title>B (`} {
			if !strings.Contains(svg, want) {
				t.Errorf("Unstyled %v: no %s in\n%s", tc.unstyled, want, svg)
			}
		}
	}
}
