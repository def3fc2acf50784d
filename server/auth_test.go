package server

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

func TestRoleOrder(t *testing.T) {
	order := []Role{RoleViewer, RoleApprover, RoleOperator, RoleAdmin}
	for i := 1; i < len(order); i++ {
		if !(order[i-1] < order[i]) {
			t.Errorf("%v < %v is false, want true", order[i-1], order[i])
		}
	}
	for _, r := range order {
		got, err := ParseRole(r.String())
		if err != nil || got != r {
			t.Errorf("ParseRole(%q) = %v, %v, want %v, nil", r.String(), got, err, r)
		}
	}
}

func TestParseRole(t *testing.T) {
	tests := []struct {
		in   string
		want Role
		ok   bool
	}{
		{"worker", RoleWorker, true},
		{"viewer", RoleViewer, true},
		{"approver", RoleApprover, true},
		{"operator", RoleOperator, true},
		{"admin", RoleAdmin, true},
		{"", 0, false},
		{"Admin", 0, false},
		{" viewer", 0, false},
		{"root", 0, false},
		{"Role(1)", 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParseRole(tt.in)
			if (err == nil) != tt.ok || got != tt.want {
				t.Errorf("ParseRole(%q) = %v, %v, want %v and ok %v", tt.in, got, err, tt.want, tt.ok)
			}
		})
	}
	for _, r := range []Role{0, -2, RoleAdmin + 1} {
		if _, err := ParseRole(r.String()); err == nil {
			t.Errorf("ParseRole(%v.String()) = nil error, want an error for an invalid role", int(r))
		}
	}
}

// tokensPath returns a tokens file path in a new temporary directory.
func tokensPath(t *testing.T) string {
	t.Helper()
	return filepath.Join(t.TempDir(), "aslrun.tokens")
}

// writeTokens writes a tokens file with mode 0600.
func writeTokens(t *testing.T, content string) string {
	t.Helper()
	path := tokensPath(t)
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestCreateLoadAuthenticate(t *testing.T) {
	path := tokensPath(t)
	created := map[string]Principal{}
	for _, p := range []Principal{{"viewer-1", RoleViewer, false}, {"approver@x", RoleApprover, false}, {"ci.deploy", RoleOperator, false}, {"Admin_2", RoleAdmin, false}} {
		tok, err := CreateToken(path, p.Name, p.Role)
		if err != nil {
			t.Fatalf("CreateToken(%q, %v): %v", p.Name, p.Role, err)
		}
		if !strings.HasPrefix(tok, tokenPrefix) || len(tok) != len(tokenPrefix)+43 {
			t.Errorf("CreateToken(%q) = %q, want %q and 43 base64url characters", p.Name, tok, tokenPrefix)
		}
		created[tok] = p
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("tokens file mode = %04o, want 0600", fi.Mode().Perm())
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	ts, err := LoadTokens(path)
	if err != nil {
		t.Fatalf("LoadTokens: %v", err)
	}
	for tok, want := range created {
		if strings.Contains(string(data), tok[len(tokenPrefix):]) {
			t.Errorf("tokens file holds the token %q", tok)
		}
		got, ok := ts.Authenticate(tok)
		if !ok || got != want {
			t.Errorf("Authenticate(token of %q) = %+v, %v, want %+v, true", want.Name, got, ok, want)
		}
		tampered := tok[:len(tok)-1] + string(tok[len(tok)-1]^1)
		if got, ok := ts.Authenticate(tampered); ok {
			t.Errorf("Authenticate(a changed token of %q) = %+v, true, want false", want.Name, got)
		}
	}
	for _, bearer := range []string{"", tokenPrefix, "aslrun_x", "Bearer x"} {
		if got, ok := ts.Authenticate(bearer); ok {
			t.Errorf("Authenticate(%q) = %+v, true, want false", bearer, got)
		}
	}
}

func TestCreateTokenRefuses(t *testing.T) {
	path := tokensPath(t)
	if _, err := CreateToken(path, "ci", RoleOperator); err != nil {
		t.Fatal(err)
	}
	before, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		tok  string
		role Role
		is   error
	}{
		{"duplicate", "ci", RoleViewer, ErrDuplicateName},
		{"empty name", "", RoleViewer, nil},
		{"space", "c i", RoleViewer, nil},
		{"leading dot", ".ci", RoleViewer, nil},
		{"too long", strings.Repeat("a", 65), RoleViewer, nil},
		{"newline", "a\nb", RoleViewer, nil},
		{"zero role", "x", 0, nil},
		{"role past admin", "x", RoleAdmin + 1, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tok, err := CreateToken(path, tt.tok, tt.role)
			if err == nil {
				t.Fatalf("CreateToken(%q, %v) = %q, nil, want an error", tt.tok, tt.role, tok)
			}
			if tt.is != nil && !errors.Is(err, tt.is) {
				t.Errorf("CreateToken(%q, %v) = %v, want %v", tt.tok, tt.role, err, tt.is)
			}
		})
	}
	after, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if string(after) != string(before) {
		t.Errorf("tokens file changed by refused creations:\n%s\nwant\n%s", after, before)
	}
}

func TestCreateTokenRefusesBadFile(t *testing.T) {
	t.Run("world-readable", func(t *testing.T) {
		path := tokensPath(t)
		if err := os.WriteFile(path, nil, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(path, 0o644); err != nil { // whatever the umask
			t.Fatal(err)
		}
		if _, err := CreateToken(path, "ci", RoleViewer); !errors.Is(err, ErrFileMode) {
			t.Errorf("CreateToken on a 0644 file = %v, want %v", err, ErrFileMode)
		}
	})
	t.Run("malformed", func(t *testing.T) {
		path := writeTokens(t, "# tokens\n{\"name\":\"x\"\n")
		_, err := CreateToken(path, "ci", RoleViewer)
		var fe *TokensFileError
		if !errors.As(err, &fe) || fe.Line != 2 {
			t.Errorf("CreateToken on a malformed file = %v, want a *TokensFileError at line 2", err)
		}
	})
	t.Run("no final newline", func(t *testing.T) {
		path := tokensPath(t)
		if _, err := CreateToken(path, "a", RoleViewer); err != nil {
			t.Fatal(err)
		}
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, data[:len(data)-1], 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := CreateToken(path, "b", RoleViewer); err != nil {
			t.Fatal(err)
		}
		ts, err := LoadTokens(path)
		if err != nil {
			t.Fatalf("LoadTokens after appending to a file with no final newline: %v", err)
		}
		if len(ts.list) != 2 {
			t.Errorf("LoadTokens found %d tokens, want 2", len(ts.list))
		}
	})
}

func TestCreateTokenConcurrent(t *testing.T) {
	path := tokensPath(t)
	const n = 8
	toks := make([]string, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			toks[i], errs[i] = CreateToken(path, fmt.Sprintf("t%d", i), RoleViewer)
		})
	}
	wg.Wait()
	ts, err := LoadTokens(path)
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		if errs[i] != nil {
			t.Errorf("CreateToken(t%d): %v", i, errs[i])
			continue
		}
		if p, ok := ts.Authenticate(toks[i]); !ok || p.Name != fmt.Sprintf("t%d", i) {
			t.Errorf("Authenticate(token of t%d) = %+v, %v, want t%d", i, p, ok, i)
		}
	}
}

// tokensLine is a well-formed tokens file line for name, with hash of tok.
func tokensLine(name, role, tok string) string {
	sum := sha256.Sum256([]byte(tok))
	return fmt.Sprintf(`{"name":%q,"role":%q,"hash":"sha256:%s","created":"2026-01-02T15:04:05Z"}`, name, role, hex.EncodeToString(sum[:]))
}

func TestLoadTokens(t *testing.T) {
	content := "# aslrun tokens\n\n" + tokensLine("ci", "operator", "tok-ci") + "\r\n  \n" + tokensLine("bob", "viewer", "tok-bob")
	ts, err := LoadTokens(writeTokens(t, content))
	if err != nil {
		t.Fatalf("LoadTokens: %v", err)
	}
	tests := []struct {
		bearer string
		want   Principal
		ok     bool
	}{
		{"tok-ci", Principal{Name: "ci", Role: RoleOperator}, true},
		{"tok-bob", Principal{Name: "bob", Role: RoleViewer}, true},
		{"tok-eve", Principal{}, false},
		{"", Principal{}, false},
	}
	for _, tt := range tests {
		got, ok := ts.Authenticate(tt.bearer)
		if got != tt.want || ok != tt.ok {
			t.Errorf("Authenticate(%q) = %+v, %v, want %+v, %v", tt.bearer, got, ok, tt.want, tt.ok)
		}
	}
}

func TestLoadTokensRefuses(t *testing.T) {
	good := tokensLine("ci", "operator", "a")
	hashA := good[strings.Index(good, "sha256:") : strings.Index(good, "sha256:")+71]
	tests := []struct {
		name    string
		content string
		line    int
		is      error
	}{
		{"not JSON", "ci operator\n", 1, nil},
		{"array", "[]\n", 1, nil},
		{"truncated", good + "\n" + good[:40] + "\n", 2, nil},
		{"unknown field", `{"name":"ci","role":"admin","hash":"` + hashA + `","created":"2026-01-02T15:04:05Z","token":"x"}`, 1, nil},
		{"missing created", `{"name":"ci","role":"admin","hash":"` + hashA + `"}`, 1, nil},
		{"repeated role", `{"name":"ci","role":"viewer","role":"admin","hash":"` + hashA + `","created":"2026-01-02T15:04:05Z"}`, 1, nil},
		{"number role", `{"name":"ci","role":4,"hash":"` + hashA + `","created":"2026-01-02T15:04:05Z"}`, 1, nil},
		{"text after", good + " x", 1, nil},
		{"two objects", good + good, 1, nil},
		{"bad role", tokensLine("ci", "root", "a"), 1, nil},
		{"bad name", "\n" + tokensLine("c i", "viewer", "a"), 2, nil},
		{"hash without prefix", strings.Replace(good, "sha256:", "", 1), 1, nil},
		{"hash upper case", strings.Replace(good, hashA, strings.ToUpper(hashA[:7])+strings.ToUpper(hashA[7:]), 1), 1, nil},
		{"hash short", strings.Replace(good, hashA, hashA[:70], 1), 1, nil},
		{"hash not hex", strings.Replace(good, hashA, hashA[:70]+"g", 1), 1, nil},
		{"bad created", strings.Replace(good, "2026-01-02T15:04:05Z", "yesterday", 1), 1, nil},
		{"duplicate name", good + "\n" + tokensLine("ci", "viewer", "b") + "\n", 2, ErrDuplicateName},
		{"duplicate hash", good + "\n# x\n" + tokensLine("cd", "viewer", "a") + "\n", 3, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := writeTokens(t, tt.content)
			_, err := LoadTokens(path)
			var fe *TokensFileError
			if !errors.As(err, &fe) {
				t.Fatalf("LoadTokens = %v, want a *TokensFileError", err)
			}
			if fe.Path != path || fe.Line != tt.line {
				t.Errorf("LoadTokens error at %s:%d, want %s:%d (%v)", fe.Path, fe.Line, path, tt.line, err)
			}
			if tt.is != nil && !errors.Is(err, tt.is) {
				t.Errorf("LoadTokens = %v, want %v", err, tt.is)
			}
		})
	}
}

func TestLoadTokensFileMode(t *testing.T) {
	tests := []struct {
		mode os.FileMode
		ok   bool
	}{
		{0o600, true},
		{0o400, true},
		{0o644, false},
		{0o640, false},
		{0o604, false},
		{0o620, false},
		{0o602, false},
		{0o666, false},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%04o", tt.mode), func(t *testing.T) {
			path := writeTokens(t, tokensLine("ci", "admin", "a")+"\n")
			if err := os.Chmod(path, tt.mode); err != nil {
				t.Fatal(err)
			}
			_, err := LoadTokens(path)
			if tt.ok && err != nil {
				t.Errorf("LoadTokens(mode %04o) = %v, want nil", tt.mode, err)
			}
			if !tt.ok && !errors.Is(err, ErrFileMode) {
				t.Errorf("LoadTokens(mode %04o) = %v, want %v", tt.mode, err, ErrFileMode)
			}
		})
	}
}

func TestLoadTokensNotAFile(t *testing.T) {
	dir := t.TempDir()
	if _, err := LoadTokens(filepath.Join(dir, "missing")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("LoadTokens(missing) = %v, want %v", err, fs.ErrNotExist)
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	var fe *TokensFileError
	if _, err := LoadTokens(dir); !errors.As(err, &fe) {
		t.Errorf("LoadTokens(a directory) = %v, want a *TokensFileError", err)
	}
	big := writeTokens(t, strings.Repeat("#\n", maxTokensFile/2+1))
	if _, err := LoadTokens(big); !errors.As(err, &fe) || fe.Line != 0 {
		t.Errorf("LoadTokens(a file over %d bytes) = %v, want a *TokensFileError for the whole file", maxTokensFile, err)
	}
}

// TestAuthenticateConstantTime checks, in the source, that Authenticate
// compares hashes with subtle.ConstantTimeCompare and in no other way (no
// bytes.Equal, no map lookup by hash, no == on hashes), so its timing does
// not leak how much of a hash matched.
func TestAuthenticateConstantTime(t *testing.T) {
	f, err := parser.ParseFile(token.NewFileSet(), "auth.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var fn *ast.FuncDecl
	for _, d := range f.Decls {
		if d, ok := d.(*ast.FuncDecl); ok && d.Name.Name == "Authenticate" {
			fn = d
		}
	}
	if fn == nil {
		t.Fatal("auth.go has no Authenticate")
	}
	constantTime := false
	ast.Inspect(fn.Body, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.SelectorExpr:
			if x, ok := n.X.(*ast.Ident); ok {
				switch x.Name + "." + n.Sel.Name {
				case "subtle.ConstantTimeCompare":
					constantTime = true
				case "bytes.Equal", "bytes.Compare", "strings.Compare", "strings.EqualFold", "slices.Equal":
					t.Errorf("Authenticate calls %s.%s, want only subtle.ConstantTimeCompare", x.Name, n.Sel.Name)
				}
			}
		case *ast.BinaryExpr:
			if n.Op == token.EQL || n.Op == token.NEQ {
				if mentionsHash(n.X) || mentionsHash(n.Y) {
					t.Errorf("Authenticate compares a hash with %v, want subtle.ConstantTimeCompare", n.Op)
				}
			}
		case *ast.IndexExpr:
			if mentionsHash(n.Index) {
				t.Error("Authenticate looks a hash up by index, want subtle.ConstantTimeCompare over every entry")
			}
		}
		return true
	})
	if !constantTime {
		t.Error("Authenticate does not call subtle.ConstantTimeCompare")
	}
}

// mentionsHash reports whether e involves the bearer's sum or a stored
// hash, other than as arguments of a call (whose result is no hash).
func mentionsHash(e ast.Expr) bool {
	found := false
	ast.Inspect(e, func(n ast.Node) bool {
		if _, ok := n.(*ast.CallExpr); ok {
			return false
		}
		if id, ok := n.(*ast.Ident); ok && (id.Name == "sum" || id.Name == "hash") {
			found = true
		}
		return !found
	})
	return found
}

// FuzzLoadTokens checks that LoadTokens never panics, refuses bad input
// with a *TokensFileError naming a line of the file, and that what it
// accepts has valid, unique names and roles.
func FuzzLoadTokens(f *testing.F) {
	f.Add([]byte(tokensLine("ci", "operator", "a") + "\n" + tokensLine("bob", "viewer", "b") + "\n"))
	f.Add([]byte("# comment\n\n" + tokensLine("x", "admin", "c")))
	f.Add([]byte(`{"name":"ci","role":"viewer","role":"admin"}`))
	f.Add([]byte("{\"name\":\"\xff\"}\n[1,2]\n{}\n"))
	f.Add([]byte(`{"name":"a","role":"viewer","hash":"sha256:00","created":"x"}`))
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte) {
		path := filepath.Join(dir, "fuzz.tokens")
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		ts, err := LoadTokens(path)
		if err != nil {
			var fe *TokensFileError
			if !errors.As(err, &fe) {
				t.Fatalf("LoadTokens = %v, want a *TokensFileError", err)
			}
			if lines := strings.Count(string(data), "\n") + 1; fe.Line < 1 || fe.Line > lines {
				t.Fatalf("LoadTokens error at line %d of a %d-line file: %v", fe.Line, lines, err)
			}
			return
		}
		names := map[string]bool{}
		for _, tk := range ts.list {
			if !tk.role.valid() || checkTokenName(tk.name) != nil || names[tk.name] {
				t.Fatalf("LoadTokens accepted %+v", tk)
			}
			names[tk.name] = true
		}
	})
}
