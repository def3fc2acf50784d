package agents_test

import (
	"errors"
	"path"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aslrun/aslrun/agents"
)

func TestFileLimitsCheck(t *testing.T) {
	notes := &agents.FileLimits{AllowedPaths: []string{"notes/**"}}
	md := &agents.FileLimits{AllowedPaths: []string{"**/*.md"}}
	denied := &agents.FileLimits{DeniedPaths: []string{"secrets/**", "*.pem", "private"}}
	both := &agents.FileLimits{AllowedPaths: []string{"notes/**"}, DeniedPaths: []string{"notes/private/**"}}
	exts := &agents.FileLimits{AllowedExtensions: []string{".md", ".txt"}}
	deep := &agents.FileLimits{AllowedPaths: []string{"notes/*/a.md"}}
	rootDenied := &agents.FileLimits{DeniedPaths: []string{"**"}}
	slashGlob := &agents.FileLimits{DeniedPaths: []string{"/secrets/"}}
	badAllowed := &agents.FileLimits{AllowedPaths: []string{"notes/[a"}}
	badDenied := &agents.FileLimits{DeniedPaths: []string{"x/[", "notes/**"}}
	manyStars := &agents.FileLimits{AllowedPaths: []string{strings.Repeat("**/", 40) + "z"}}

	tests := []struct {
		name   string
		limits *agents.FileLimits
		rel    string
		dir    bool
		rule   string // "" when allowed
		glob   string
	}{
		{"nil allows a file", nil, "a/b.txt", false, "", ""},
		{"nil allows the root", nil, ".", true, "", ""},
		{"nil cleans", nil, "a/./b/../c.txt", false, "", ""},
		{"empty", nil, "", false, "Path", ""},
		{"absolute", nil, "/etc/passwd", false, "Path", ""},
		{"dotdot", nil, "..", true, "Path", ""},
		{"escape", nil, "../x", false, "Path", ""},
		{"escape after cleaning", nil, "a/../../x", false, "Path", ""},
		{"nul", nil, "a\x00b", false, "Path", ""},
		{"dotdot inside stays inside", nil, "a/../b", false, "", ""},
		{"limits refuse absolute too", notes, "/notes/a.md", false, "Path", ""},

		{"allowed file", notes, "notes/a.md", false, "", ""},
		{"allowed deep file", notes, "notes/x/y.md", false, "", ""},
		{"allowed folder itself", notes, "notes", true, "", ""},
		{"root listable as prefix", notes, ".", true, "", ""},
		{"root not a file", notes, ".", false, "AllowedPaths", ""},
		{"outside allowed", notes, "other/a.md", false, "AllowedPaths", ""},
		{"outside allowed folder", notes, "other", true, "AllowedPaths", ""},
		{"similar name", notes, "notesx/a.md", false, "AllowedPaths", ""},
		{"double star zero segments", md, "a.md", false, "", ""},
		{"double star many segments", md, "x/y/a.md", false, "", ""},
		{"double star wrong ext", md, "x/y/a.txt", false, "AllowedPaths", ""},
		{"double star folder prefix", md, "x/y", true, "", ""},
		{"prefix folder", deep, "notes/x", true, "", ""},
		{"prefix is for folders only", deep, "notes/x", false, "AllowedPaths", ""},
		{"deeper than the glob", deep, "notes/x/a.md/z", true, "AllowedPaths", ""},
		{"many double stars", manyStars, strings.Repeat("a/", 60) + "z", false, "", ""},
		{"many double stars miss", manyStars, strings.Repeat("a/", 60) + "y", false, "AllowedPaths", ""},

		{"denied", denied, "secrets/k.pem", false, "DeniedPaths", "secrets/**"},
		{"denied folder", denied, "secrets", true, "DeniedPaths", "secrets/**"},
		{"denied by extension glob", denied, "k.pem", false, "DeniedPaths", "*.pem"},
		{"star stays in one segment", denied, "x/k.pem", false, "", ""},
		{"denied folder denies its content", denied, "private/a/b.txt", false, "DeniedPaths", "private"},
		{"denied glob after cleaning", denied, "a/../secrets/k", false, "DeniedPaths", "secrets/**"},
		{"not denied", denied, "public/a.txt", false, "", ""},
		{"denied wins over allowed", both, "notes/private/a.md", false, "DeniedPaths", "notes/private/**"},
		{"allowed beside denied", both, "notes/a.md", false, "", ""},
		{"root denied by double star", rootDenied, ".", true, "DeniedPaths", "**"},
		{"glob cleaned", slashGlob, "secrets/a", false, "DeniedPaths", "/secrets/"},

		{"extension", exts, "a/b.md", false, "", ""},
		{"extension case", exts, "a/B.TXT", false, "", ""},
		{"extension refused", exts, "a/b.exe", false, "AllowedExtensions", ""},
		{"no extension", exts, "a/Makefile", false, "AllowedExtensions", ""},
		{"last extension only", exts, "a/b.md.exe", false, "AllowedExtensions", ""},
		{"extensions not for folders", exts, "a", true, "", ""},

		{"malformed allowed glob", badAllowed, "notes/a", false, "AllowedPaths", "notes/[a"},
		{"malformed denied glob", badDenied, "y", false, "DeniedPaths", "x/["},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.limits.Check(tt.rel, tt.dir)
			if tt.rule == "" {
				if err != nil {
					t.Fatalf("Check(%q, %v) = %v, want nil", tt.rel, tt.dir, err)
				}
				return
			}
			var fe *agents.FileLimitError
			if !errors.As(err, &fe) {
				t.Fatalf("Check(%q, %v) = %v, want a *FileLimitError", tt.rel, tt.dir, err)
			}
			if fe.Rule != tt.rule || fe.Glob != tt.glob || fe.Path != tt.rel {
				t.Errorf("Check(%q, %v) = {Rule %q, Glob %q, Path %q}, want {%q, %q, %q}", tt.rel, tt.dir, fe.Rule, fe.Glob, fe.Path, tt.rule, tt.glob, tt.rel)
			}
			if !strings.Contains(err.Error(), tt.rule) && tt.rule != "Path" {
				t.Errorf("Check(%q, %v) message %q does not name the rule %s", tt.rel, tt.dir, err, tt.rule)
			}
		})
	}
}

func TestFileLimitErrorMessages(t *testing.T) {
	tests := []struct {
		err  error
		want string
	}{
		{(&agents.FileLimits{DeniedPaths: []string{"secrets/**"}}).Check("secrets/k.pem", false),
			`path "secrets/k.pem" matches the FileSystem.DeniedPaths glob "secrets/**"`},
		{(&agents.FileLimits{AllowedPaths: []string{"a"}}).Check("b", false),
			`path "b" matches no FileSystem.AllowedPaths glob`},
		{(&agents.FileLimits{AllowedExtensions: []string{".md"}}).Check("b.exe", false),
			`path "b.exe": extension ".exe" is not one of the FileSystem.AllowedExtensions`},
		{(&agents.FileLimits{AllowedExtensions: []string{".md"}}).Check("b", false),
			`path "b" has no extension, and FileSystem.AllowedExtensions requires one`},
		{(&agents.FileLimits{DeniedPaths: []string{"["}}).Check("b", false),
			`path "b": the FileSystem.DeniedPaths glob "[" is malformed`},
		{(*agents.FileLimits)(nil).Check("../x", false),
			`path "../x" escapes the tool's root`},
		{(&agents.FileLimits{MaxFileSize: 10}).CheckSize(11),
			`size 11 bytes exceeds the FileSystem.MaxFileSize of 10 bytes`},
	}
	for _, tt := range tests {
		if tt.err == nil {
			t.Errorf("got no error, want %q", tt.want)
			continue
		}
		if got := tt.err.Error(); got != tt.want {
			t.Errorf("Error() = %q, want %q", got, tt.want)
		}
	}
}

func TestFileLimitsCheckSize(t *testing.T) {
	tests := []struct {
		limits *agents.FileLimits
		n      int64
		ok     bool
	}{
		{nil, 1 << 40, true},
		{&agents.FileLimits{}, 1 << 40, true},
		{&agents.FileLimits{MaxFileSize: 10}, 10, true},
		{&agents.FileLimits{MaxFileSize: 10}, 0, true},
		{&agents.FileLimits{MaxFileSize: 10}, 11, false},
	}
	for _, tt := range tests {
		err := tt.limits.CheckSize(tt.n)
		if (err == nil) != tt.ok {
			t.Errorf("%+v.CheckSize(%d) = %v, want ok %v", tt.limits, tt.n, err, tt.ok)
			continue
		}
		var fe *agents.FileLimitError
		if err != nil && (!errors.As(err, &fe) || fe.Rule != "MaxFileSize" || fe.Size != tt.n || fe.Max != tt.limits.MaxFileSize) {
			t.Errorf("CheckSize(%d) = %#v, want a MaxFileSize *FileLimitError", tt.n, err)
		}
	}
}

func FuzzFileLimitsCheck(f *testing.F) {
	f.Add("notes/a.md", "notes/**", "secrets/**", ".md", false)
	f.Add("../x", "**", "", "", true)
	f.Add(".", "**/*.md", "*", "", true)
	f.Add("a/../../b", "a/[", "\\", ".MD", false)
	f.Add("/etc/passwd", "/**", "", "", false)
	f.Fuzz(func(t *testing.T, rel, allowed, denied, ext string, dir bool) {
		l := &agents.FileLimits{}
		if allowed != "" {
			l.AllowedPaths = strings.Split(allowed, ",")
		}
		if denied != "" {
			l.DeniedPaths = strings.Split(denied, ",")
		}
		if ext != "" {
			l.AllowedExtensions = []string{ext}
		}
		for _, lim := range []*agents.FileLimits{nil, l} {
			if lim.Check(rel, dir) != nil {
				continue
			}
			clean := path.Clean(rel)
			if clean == ".." || strings.HasPrefix(clean, "../") || path.IsAbs(clean) || strings.ContainsRune(clean, 0) {
				t.Fatalf("Check(%q) accepted a path that escapes the root (%q)", rel, clean)
			}
			if clean != "." && !filepath.IsLocal(filepath.FromSlash(clean)) {
				t.Fatalf("Check(%q) accepted a path that is not local (%q)", rel, clean)
			}
		}
	})
}
