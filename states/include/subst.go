package include

import (
	"fmt"
	"strings"

	"github.com/aslrun/aslrun/jsonvalue"
)

// A placeholder is one {{name | filter …}} in a template string.
type placeholder struct {
	start, end int // byte offsets of "{{" and just past "}}"
	name       string
	filters    []filter
}

// A filter is one of the three filters: default (with its text), upper or
// json.
type filter struct {
	name string // "default", "upper" or "json"
	arg  string // default's text
}

// SyntaxError is a placeholder that does not parse: where it starts in
// the string and what is wrong.
type SyntaxError struct {
	// Offset is the byte offset of the placeholder's "{{".
	Offset int
	// Msg says what is wrong.
	Msg string
}

// Error returns "placeholder at offset N: msg".
func (e *SyntaxError) Error() string {
	return fmt.Sprintf("placeholder at offset %d: %s", e.Offset, e.Msg)
}

// placeholders returns the {{…}} placeholders of s in order. "{{$…}}"
// (runtime interpolation) is not a placeholder and is left alone, as is
// text without "{{".
func placeholders(s string) ([]placeholder, error) {
	var out []placeholder
	i := 0
	for {
		j := strings.Index(s[i:], "{{")
		if j < 0 {
			return out, nil
		}
		start := i + j
		body := start + 2
		k := body
		for k < len(s) && s[k] == ' ' {
			k++
		}
		if k < len(s) && s[k] == '$' {
			// Runtime interpolation: skip to its end, or past "{{".
			if e := strings.Index(s[k:], "}}"); e >= 0 {
				i = k + e + 2
			} else {
				i = body
			}
			continue
		}
		ph, err := parsePlaceholder(s, start)
		if err != nil {
			return nil, err
		}
		out = append(out, ph)
		i = ph.end
	}
}

// parsePlaceholder parses the placeholder starting at s[start:] ("{{").
func parsePlaceholder(s string, start int) (placeholder, error) {
	ph := placeholder{start: start}
	i := start + 2
	fail := func(format string, args ...any) (placeholder, error) {
		return placeholder{}, &SyntaxError{Offset: start, Msg: fmt.Sprintf(format, args...)}
	}
	skip := func() {
		for i < len(s) && s[i] == ' ' {
			i++
		}
	}
	word := func() string {
		j := i
		for i < len(s) && isNameByte(s[i], i == j) {
			i++
		}
		return s[j:i]
	}
	skip()
	ph.name = word()
	if ph.name == "" {
		return fail("want a parameter name after \"{{\"")
	}
	for {
		skip()
		if strings.HasPrefix(s[i:], "}}") {
			ph.end = i + 2
			return ph, nil
		}
		if i >= len(s) {
			return fail("missing \"}}\"")
		}
		if s[i] != '|' {
			return fail("unexpected %q after %q: want \"|\" and a filter, or \"}}\"", s[i], s[start:i])
		}
		i++
		skip()
		f := filter{name: word()}
		switch f.name {
		case "upper", "json":
		case "default":
			skip()
			if i >= len(s) || s[i] != ':' {
				return fail("default takes a value: | default: 'text'")
			}
			i++
			skip()
			if i >= len(s) || s[i] != '\'' {
				return fail("default's value is text in single quotes: | default: 'text'")
			}
			end := strings.IndexByte(s[i+1:], '\'')
			if end < 0 {
				return fail("default's value has no closing single quote")
			}
			f.arg = s[i+1 : i+1+end]
			i += end + 2
		case "":
			return fail("want a filter after \"|\" (default, upper or json)")
		default:
			return fail("unknown filter %q: the filters are default, upper and json", f.name)
		}
		ph.filters = append(ph.filters, f)
	}
}

func isNameByte(c byte, first bool) bool {
	switch {
	case c == '_', 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z':
		return true
	case '0' <= c && c <= '9', c == '-':
		return !first
	}
	return false
}

// substitute replaces the placeholders of s with parameter values. A
// string that is exactly one placeholder of a non-string value, or one
// ending in the json filter, becomes that value itself; otherwise values
// are written into the text (non-strings as JSON text). lookup returns a
// parameter's value, and whether it is declared and has one.
func substitute(s string, lookup func(name string) (v any, declared, set bool)) (any, error) {
	phs, err := placeholders(s)
	if err != nil || len(phs) == 0 {
		return s, err
	}
	whole := len(phs) == 1 && phs[0].start == 0 && phs[0].end == len(s)
	var b strings.Builder
	last := 0
	for _, ph := range phs {
		v, asJSON, err := ph.value(lookup)
		if err != nil {
			return nil, err
		}
		if whole {
			if _, ok := v.(string); !ok || asJSON {
				return v, nil
			}
		}
		b.WriteString(s[last:ph.start])
		if str, ok := v.(string); ok && !asJSON {
			b.WriteString(str)
		} else {
			text, err := jsonvalue.Marshal(v)
			if err != nil {
				return nil, fmt.Errorf("{{%s}}: %w", ph.name, err)
			}
			b.Write(text)
		}
		last = ph.end
	}
	b.WriteString(s[last:])
	return b.String(), nil
}

// value applies the placeholder's filters to its parameter's value. asJSON
// reports a json filter last.
func (ph placeholder) value(lookup func(string) (any, bool, bool)) (v any, asJSON bool, err error) {
	v, declared, set := lookup(ph.name)
	if !declared {
		return nil, false, fmt.Errorf("{{%s}}: unknown parameter %q: the template's Parameters do not declare it", ph.name, ph.name)
	}
	for _, f := range ph.filters {
		switch f.name {
		case "default":
			if !set {
				v, set = f.arg, true
			}
		case "upper":
			if !set {
				break
			}
			str, ok := v.(string)
			if !ok {
				return nil, false, fmt.Errorf("{{%s}}: upper applies to strings, and the value is %s", ph.name, jsonvalue.TypeName(v))
			}
			v = strings.ToUpper(str)
			asJSON = false
		case "json":
			asJSON = true
		}
	}
	if !set {
		return nil, false, fmt.Errorf("{{%s}}: parameter %q has no value: the Include gives none, it has no Default and no default filter", ph.name, ph.name)
	}
	return v, asJSON, nil
}
