package main

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"unicode/utf8"

	"github.com/aslrun/aslrun/api"
)

// The plain-text output of what callers chose (names, errors, causes,
// comments, prompts, state names) goes through termSafe, so that nothing
// stored reaches a terminal as a control sequence, a line break or a
// reordering of the text: a name "a\nb\x1b[31m" prints as those
// characters, escaped. Tables write their cells through table.row, which
// escapes every cell.

// termSafe returns s with every character a terminal could interpret
// written as an escape: \n, \r and \t; \xHH for the other C0 controls,
// DEL (\x7f) and bytes that are not UTF-8; \uHHHH for the C1 controls,
// the bidirectional formatting characters and the line and paragraph
// separators. Anything else, backslashes included, is left as it is.
func termSafe(s string) string {
	i := 0
	for i < len(s) {
		r, n := utf8.DecodeRuneInString(s[i:])
		if needsEscape(r, n) {
			break
		}
		i += n
	}
	if i == len(s) {
		return s
	}
	var b strings.Builder
	b.WriteString(s[:i])
	for i < len(s) {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case !needsEscape(r, n):
			b.WriteString(s[i : i+n])
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r == utf8.RuneError && n == 1, r < 0x20, r == 0x7f:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		default:
			fmt.Fprintf(&b, `\u%04x`, r)
		}
		i += n
	}
	return b.String()
}

// termSafeLines is termSafe but for the line breaks (\n), which it
// keeps: for text of several lines, such as an approval's prompt.
func termSafeLines(s string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = termSafe(l)
	}
	return strings.Join(lines, "\n")
}

// needsEscape reports whether the rune r, n bytes long in its text, is
// one termSafe escapes.
func needsEscape(r rune, n int) bool {
	return r < 0x20 || r >= 0x7f && r < 0xa0 || r == utf8.RuneError && n == 1 || api.IsBidiControl(r) || r == '\u2028' || r == '\u2029'
}

// table writes aligned columns, each cell through termSafe (a tab or a
// line break in a cell cannot shift the columns or add a row).
type table struct {
	tw *tabwriter.Writer
}

func newTable(w io.Writer) *table {
	return &table{tw: tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)}
}

// row writes one row of cells.
func (t *table) row(cells ...string) {
	for i, c := range cells {
		if i > 0 {
			io.WriteString(t.tw, "\t")
		}
		io.WriteString(t.tw, termSafe(c))
	}
	io.WriteString(t.tw, "\n")
}

// flush writes the table out.
func (t *table) flush() error { return t.tw.Flush() }

// printf is fmt.Fprintf with every string argument through termSafe:
// for the plain-text lines that show what callers chose.
func printf(w io.Writer, format string, args ...any) {
	for i, a := range args {
		switch v := a.(type) {
		case string:
			args[i] = termSafe(v)
		case []byte:
			args[i] = termSafe(string(v))
		case error:
			args[i] = termSafe(v.Error())
		case fmt.Stringer:
			args[i] = termSafe(v.String())
		}
	}
	fmt.Fprintf(w, format, args...)
}

// checkNameFlag refuses a name given on the command line (--name,
// --by) that the API would refuse (api.CheckName): the same names go
// into a local database as through a server. Empty is no name.
func checkNameFlag(cmd, flagName, v string) error {
	if v == "" {
		return nil
	}
	if err := api.CheckName(v); err != nil {
		return usageErrorf("%s: %s: %s", cmd, flagName, termSafe(err.Error()))
	}
	return nil
}
