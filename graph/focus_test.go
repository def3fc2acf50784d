package graph

import (
	"bytes"
	"strings"
	"testing"
)

// TestSVGFocusable: with Focusable, each state's node is a named button
// holding its qualified name (escaped), a link inside leaves the tab
// order, Start and End stay plain, and the picture is a group.
func TestSVGFocusable(t *testing.T) {
	t.Parallel()
	m := parse(t, `{"StartAt":"A<&\"","States":{"A<&\"":{"Type":"Pass","Next":"Each"},
		"Each":{"Type":"Map","ItemProcessor":{"StartAt":"W","States":{"W":{"Type":"Pass","End":true}}},"End":true}}}`)
	for _, tc := range []struct {
		name      string
		opts      SVGOptions
		want, not []string
	}{
		{"focusable", SVGOptions{Focusable: true, Status: map[string]string{"Each": "failed"}, Link: func(s string) string { return "#" + s }},
			[]string{`role="group" aria-label="Workflow graph"`,
				`<g class="node"><title>A&lt;&amp;&#34; (Pass)</title><g class="state" data-state="A&lt;&amp;&#34;" tabindex="0" role="button" aria-label="A&lt;&amp;&#34; (Pass)">`,
				`<g class="node failed"><title>Each (Map)</title><g class="state" data-state="Each" tabindex="0" role="button" aria-label="Each (Map), failed"><a href="#Each" tabindex="-1">`,
				`data-state="Each/*/W"`, `<g class="node"><title>Start</title><circle`},
			[]string{`role="img"`}},
		{"plain", SVGOptions{Link: func(s string) string { return "#" + s }},
			[]string{`role="img"`, `<a href="#Each">`},
			[]string{"data-state", "tabindex"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			if err := Build(m).WriteSVG(&buf, tc.opts); err != nil {
				t.Fatal(err)
			}
			checkXML(t, buf.Bytes())
			for _, w := range tc.want {
				if !strings.Contains(buf.String(), w) {
					t.Errorf("the SVG has no %s:\n%s", w, buf.String())
				}
			}
			for _, n := range tc.not {
				if strings.Contains(buf.String(), n) {
					t.Errorf("the SVG has %s:\n%s", n, buf.String())
				}
			}
		})
	}
}
