package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// The user docs, relative to this package.
const (
	readmeFile = "../../README.md"
	docsDir    = "../../docs"
	cliDoc     = "../../docs/cli.md"
)

// commandHelp is what `aslrun CMD --help` prints, parsed.
type commandHelp struct {
	// usage is the synopsis after "Usage: aslrun ".
	usage string
	// usageFlags are the flags the synopsis names.
	usageFlags []string
	// defined are the flags the Flags section lists: every flag of the
	// command's FlagSet (flag.PrintDefaults).
	defined []string
}

var (
	longFlag    = regexp.MustCompile(`--([a-z][a-z0-9-]*)`)
	definedFlag = regexp.MustCompile(`^  -([a-z][a-z0-9-]*)`)
)

// helpOf runs `aslrun cmd --help` and parses what it prints.
func helpOf(t *testing.T, cmd string) commandHelp {
	t.Helper()
	var stdout, stderr bytes.Buffer
	if err := run(context.Background(), []string{cmd, "--help"}, strings.NewReader(""), &stdout, &stderr); err != nil {
		t.Fatalf("%s --help: %v (stderr %q)", cmd, err, stderr.String())
	}
	first, rest, _ := strings.Cut(stdout.String(), "\n")
	usage, ok := strings.CutPrefix(first, "Usage: aslrun ")
	if !ok {
		t.Fatalf("%s --help: first line %q, want it to start with \"Usage: aslrun \"", cmd, first)
	}
	h := commandHelp{usage: usage, usageFlags: flagsIn(usage)}
	_, section, _ := strings.Cut(rest, "\nFlags:\n")
	for line := range strings.SplitSeq(section, "\n") {
		if m := definedFlag.FindStringSubmatch(line); m != nil {
			h.defined = append(h.defined, m[1])
		}
	}
	slices.Sort(h.defined)
	return h
}

// flagsIn returns the --flags named in s, sorted and without repeats.
func flagsIn(s string) []string {
	var fs []string
	for _, m := range longFlag.FindAllStringSubmatch(s, -1) {
		fs = append(fs, m[1])
	}
	slices.Sort(fs)
	return slices.Compact(fs)
}

// cliSection is the section of docs/cli.md about one command.
type cliSection struct {
	// synopsis is the first line of the section's code block, without
	// "aslrun ".
	synopsis string
	// flags are the flags of its list items "- `--flag …`: …".
	flags []string
}

var (
	cliHeading  = regexp.MustCompile("^## `aslrun ([a-z]+(?:-[a-z]+)*)`$")
	cliFlagItem = regexp.MustCompile("^- `--([a-z][a-z0-9-]*)")
)

// cliSections parses docs/cli.md: one "## `aslrun CMD`" section per
// command, with its synopsis in a code block and one list item per flag.
func cliSections(t *testing.T) map[string]*cliSection {
	t.Helper()
	data, err := os.ReadFile(cliDoc)
	if err != nil {
		t.Fatal(err)
	}
	sections := map[string]*cliSection{}
	var cur *cliSection
	inCode := false
	for line := range strings.SplitSeq(string(data), "\n") {
		switch {
		case strings.HasPrefix(line, "```"):
			inCode = !inCode
		case inCode:
			if s, ok := strings.CutPrefix(line, "aslrun "); ok && cur != nil && cur.synopsis == "" {
				cur.synopsis = s
			}
		case strings.HasPrefix(line, "## "):
			cur = nil
			if m := cliHeading.FindStringSubmatch(line); m != nil {
				if sections[m[1]] != nil {
					t.Errorf("%s: two sections for %s", cliDoc, m[1])
				}
				cur = &cliSection{}
				sections[m[1]] = cur
			}
		case cur != nil:
			if m := cliFlagItem.FindStringSubmatch(line); m != nil {
				cur.flags = append(cur.flags, m[1])
			}
		}
	}
	for _, s := range sections {
		slices.Sort(s.flags)
		s.flags = slices.Compact(s.flags)
	}
	return sections
}

// docCommand is an aslrun command line written in the user docs.
type docCommand struct {
	where string // file and line
	cmd   string
	flags []string
}

var (
	fencedLine = regexp.MustCompile("^\\s*```")
	codeSpan   = regexp.MustCompile("`([^`]+)`")
	// aslrunCall finds "aslrun CMD", also as "./aslrun CMD" or
	// "go run ./cmd/aslrun CMD", but not "aslrun.db" or "aslrun COMMAND".
	aslrunCall = regexp.MustCompile(`(?:^|[\s/(])aslrun ([a-z]+(?:-[a-z]+)*)\b`)
)

// docCommands returns every aslrun command line in the code of a
// Markdown file: its fenced blocks (with "\" continuations joined) and its
// code spans. A line's flags are those after the command, up to a " #"
// comment or the next aslrun command.
func docCommands(t *testing.T, file string) []docCommand {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	type codeText struct {
		line int
		text string
	}
	var code []codeText
	var prose strings.Builder
	inFence, joined, joinedAt := false, "", 0
	for i, line := range strings.Split(string(data), "\n") {
		n := i + 1
		if fencedLine.MatchString(line) {
			inFence = !inFence
			prose.WriteString("\n")
			continue
		}
		if !inFence {
			prose.WriteString(line + "\n")
			continue
		}
		prose.WriteString("\n")
		if joined == "" {
			joinedAt = n
		}
		if s, ok := strings.CutSuffix(strings.TrimRight(line, " "), "\\"); ok {
			joined += s + " "
			continue
		}
		code = append(code, codeText{joinedAt, joined + line})
		joined = ""
	}
	// Code spans may run over a line break; count lines to say where.
	text := prose.String()
	for _, loc := range codeSpan.FindAllStringSubmatchIndex(text, -1) {
		code = append(code, codeText{1 + strings.Count(text[:loc[0]], "\n"), text[loc[2]:loc[3]]})
	}
	var out []docCommand
	for _, c := range code {
		if before, _, ok := strings.Cut(c.text, " #"); ok {
			c.text = before
		}
		calls := aslrunCall.FindAllStringSubmatchIndex(c.text, -1)
		for i, loc := range calls {
			end := len(c.text)
			if i+1 < len(calls) {
				end = calls[i+1][0]
			}
			out = append(out, docCommand{
				where: filepath.Base(file) + ":" + strconv.Itoa(c.line),
				cmd:   c.text[loc[2]:loc[3]],
				flags: flagsIn(c.text[loc[3]:end]),
			})
		}
	}
	return out
}

// userDocs returns README.md and docs/*.md.
func userDocs(t *testing.T) []string {
	t.Helper()
	docs, err := filepath.Glob(filepath.Join(docsDir, "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	if len(docs) == 0 {
		t.Fatalf("no docs under %s", docsDir)
	}
	return append([]string{readmeFile}, docs...)
}

// TestHelpListsEveryFlag checks, for every command, that the synopsis
// --help prints names every flag of the command's FlagSet and no other,
// and that docs/cli.md documents exactly those flags, with the same
// synopsis.
func TestHelpListsEveryFlag(t *testing.T) {
	sections := cliSections(t)
	for _, c := range commands() {
		t.Run(c.name, func(t *testing.T) {
			h := helpOf(t, c.name)
			if missing := minus(h.defined, h.usageFlags); len(missing) > 0 {
				t.Errorf("%s --help: usage %q does not name the flags %v its FlagSet defines", c.name, h.usage, missing)
			}
			if extra := minus(h.usageFlags, h.defined); len(extra) > 0 {
				t.Errorf("%s --help: usage %q names flags %v its FlagSet does not define", c.name, h.usage, extra)
			}
			s := sections[c.name]
			if s == nil {
				t.Fatalf("%s has no \"## `aslrun %s`\" section", cliDoc, c.name)
			}
			if s.synopsis != h.usage {
				t.Errorf("%s, %s: synopsis %q, want the usage --help prints, %q", cliDoc, c.name, s.synopsis, h.usage)
			}
			if missing := minus(h.defined, s.flags); len(missing) > 0 {
				t.Errorf("%s, %s: flags %v are not documented (want a \"- `--flag …`: …\" item each)", cliDoc, c.name, missing)
			}
			if extra := minus(s.flags, h.defined); len(extra) > 0 {
				t.Errorf("%s, %s: documents flags %v that %s --help does not list", cliDoc, c.name, extra, c.name)
			}
		})
	}
	for name := range sections {
		if !slices.ContainsFunc(commands(), func(c *command) bool { return c.name == name }) {
			t.Errorf("%s documents a command %q that aslrun does not have", cliDoc, name)
		}
	}
}

// TestDocCommandLines checks every aslrun command line in README.md and
// docs/*.md: the command exists and --help lists each flag it uses.
func TestDocCommandLines(t *testing.T) {
	helps := map[string]commandHelp{}
	for _, c := range commands() {
		helps[c.name] = helpOf(t, c.name)
	}
	inReadme := map[string]bool{}
	for _, file := range userDocs(t) {
		for _, dc := range docCommands(t, file) {
			if dc.cmd == "help" {
				continue
			}
			h, ok := helps[dc.cmd]
			if !ok {
				t.Errorf("%s: aslrun %s: no such command", dc.where, dc.cmd)
				continue
			}
			if file == readmeFile {
				inReadme[dc.cmd] = true
			}
			for _, f := range dc.flags {
				if f != "help" && !slices.Contains(h.defined, f) {
					t.Errorf("%s: aslrun %s --%s: %s --help does not list --%s", dc.where, dc.cmd, f, dc.cmd, f)
				}
			}
		}
	}
	for _, c := range commands() {
		if !inReadme[c.name] {
			t.Errorf("%s does not show the command %q", readmeFile, c.name)
		}
	}
}

// TestDocCommandLinesParse checks the parser the doc tests rely on.
func TestDocCommandLinesParse(t *testing.T) {
	md := "Run `aslrun run x.json --name a` or\n`go run ./cmd/aslrun approve ID\n--decision ok`; not `aslrun.db` nor `aslrun COMMAND --help`.\n\n" +
		"```sh\ngo run ./cmd/aslrun resume r --from-checkpoint c \\\n    --fork   # a comment --not-a-flag\n" +
		"aslrun worker &   aslrun status x --json\n```\n"
	file := filepath.Join(t.TempDir(), "x.md")
	if err := os.WriteFile(file, []byte(md), 0o644); err != nil {
		t.Fatal(err)
	}
	got := docCommands(t, file)
	want := []docCommand{
		{"x.md:6", "resume", []string{"fork", "from-checkpoint"}},
		{"x.md:8", "worker", nil},
		{"x.md:8", "status", []string{"json"}},
		{"x.md:1", "run", []string{"name"}},
		{"x.md:2", "approve", []string{"decision"}},
	}
	if len(got) != len(want) {
		t.Fatalf("docCommands = %v, want %v", got, want)
	}
	for i := range want {
		if got[i].where != want[i].where || got[i].cmd != want[i].cmd || !slices.Equal(got[i].flags, want[i].flags) {
			t.Errorf("docCommands[%d] = %v, want %v", i, got[i], want[i])
		}
	}
}

// minus returns the elements of a that b lacks.
func minus(a, b []string) []string {
	var out []string
	for _, x := range a {
		if !slices.Contains(b, x) {
			out = append(out, x)
		}
	}
	return out
}
