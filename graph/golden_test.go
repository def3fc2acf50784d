package graph

import (
	"bytes"
	"encoding/xml"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// golden compares got with testdata/name, which -update rewrites.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (go test ./graph -update writes it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("output differs from %s (go test ./graph -update rewrites it):\n%s", path, got)
	}
}

// nestedMap is a Map inside a Parallel branch: its processor is one
// cluster inside the branch's.
const nestedMap = `{"StartAt":"Both","States":{
	"Both":{"Type":"Parallel","Branches":[
		{"StartAt":"Each","States":{"Each":{"Type":"Map","ItemProcessor":{"StartAt":"Work","States":{
			"Work":{"Type":"Task","Agent":"w","End":true}}},"End":true}}},
		{"StartAt":"Side","States":{"Side":{"Type":"Pass","End":true}}}],"Next":"Done"},
	"Done":{"Type":"Succeed"}}}`

// TestTextGolden: the DOT and Mermaid drawings of Map and Parallel
// states: one cluster per Map processor and per Parallel branch, labelled
// as WriteSVG labels them, hanging off its state by a dashed edge.
func TestTextGolden(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, def string }{
		{"map", mapped},
		{"parallel", parallel},
		{"nested-map", nestedMap},
	} {
		g := Build(parse(t, tc.def))
		t.Run(tc.name+".dot", func(t *testing.T) {
			var buf bytes.Buffer
			if err := g.WriteDOT(&buf); err != nil {
				t.Fatal(err)
			}
			golden(t, tc.name+".dot", buf.Bytes())
		})
		t.Run(tc.name+".mmd", func(t *testing.T) {
			var buf bytes.Buffer
			if err := g.WriteMermaid(&buf); err != nil {
				t.Fatal(err)
			}
			golden(t, tc.name+".mmd", buf.Bytes())
		})
	}
}

// clusterTexts returns the text of each cluster of an SVG drawing, and
// the width of its box.
func clusterTexts(t *testing.T, svg []byte) (texts []string, widths []string) {
	t.Helper()
	type text struct {
		Chars string `xml:",chardata"`
		Note  string `xml:"tspan"`
	}
	type cluster struct {
		Class string `xml:"class,attr"`
		Rect  struct {
			W string `xml:"width,attr"`
		} `xml:"rect"`
		Text text `xml:"text"`
	}
	var doc struct {
		G []cluster `xml:"g"`
	}
	if err := xml.Unmarshal(svg, &doc); err != nil {
		t.Fatal(err)
	}
	for _, g := range doc.G {
		if g.Class == "cluster" {
			texts = append(texts, strings.TrimSpace(g.Text.Chars+g.Text.Note))
			widths = append(widths, g.Rect.W)
		}
	}
	return texts, widths
}

// TestSVGNotes: a Map's note follows the label of its one cluster (not a
// cluster per iteration); a Parallel's follows each branch's; a note
// longer than the cluster's content widens the cluster.
func TestSVGNotes(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, def string
		notes     map[string]string
		want      []string
	}{
		{"map", mapped, map[string]string{"Each": "128 items, 2 failed"}, []string{"Each: each item — 128 items, 2 failed"}},
		{"parallel", parallel, map[string]string{"Both": "ran"}, []string{"Both: branch 1 — ran", "Both: branch 2 — ran"}},
		{"nested map", nestedMap, map[string]string{"Both/0/Each": "3 items", "Side": "not a cluster's owner"},
			[]string{"Both: branch 1", "Each: each item — 3 items", "Both: branch 2"}},
		{"unknown state", mapped, map[string]string{"Nope": "x"}, []string{"Each: each item"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := Build(parse(t, tc.def))
			var buf bytes.Buffer
			if err := g.WriteSVG(&buf, SVGOptions{Notes: tc.notes}); err != nil {
				t.Fatal(err)
			}
			checkXML(t, buf.Bytes())
			got, _ := clusterTexts(t, buf.Bytes())
			if strings.Join(got, "|") != strings.Join(tc.want, "|") {
				t.Errorf("cluster labels %q, want %q", got, tc.want)
			}
		})
	}
	g := Build(parse(t, mapped))
	widthWith := func(note string) float64 {
		l := g.layoutLabelled(g.labels(map[string]string{"Each": note}))
		return l.clusters[0].w
	}
	short, long := widthWith(""), widthWith(strings.Repeat("many items ", 8))
	if want := textWidth("Each: each item — "+strings.Repeat("many items ", 8)) + 16; long < want || short >= long {
		t.Errorf("cluster width %v without a note, %v with a long one, want at least %v", short, long, want)
	}
}

func TestSVGNotesGolden(t *testing.T) {
	t.Parallel()
	g := Build(parse(t, nestedMap))
	var buf bytes.Buffer
	opts := SVGOptions{
		Status: map[string]string{"Both": "visited", "Both/0/Each": "failed", "Both/0/Each/*/Work": "failed", "Both/1/Side": "visited"},
		Notes:  map[string]string{"Both/0/Each": "128 items, 2 failed"},
	}
	if err := g.WriteSVG(&buf, opts); err != nil {
		t.Fatal(err)
	}
	checkXML(t, buf.Bytes())
	golden(t, "nested-map-notes.svg", buf.Bytes())
}
