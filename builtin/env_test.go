package builtin

import (
	"errors"
	"strings"
	"testing"
)

func TestExpand(t *testing.T) {
	vars := map[string]string{"TOKEN": "t0k", "EMPTY": "", "A_1": "a", "DOLLAR": "${TOKEN}"}
	lookup := func(name string) (string, bool) {
		v, ok := vars[name]
		return v, ok
	}
	tests := []struct {
		in      string
		want    string
		wantErr bool
	}{
		{"", "", false},
		{"plain", "plain", false},
		{"Bearer ${TOKEN}", "Bearer t0k", false},
		{"${TOKEN}${A_1}-${TOKEN}", "t0ka-t0k", false},
		{"[${EMPTY}]", "[]", false},
		{"pa$$word $TOKEN $", "pa$$word $TOKEN $", false},
		{"${DOLLAR}", "${TOKEN}", false}, // values are not expanded again
		{"$${TOKEN}", "$t0k", false},
		{"${UNSET}", "", true},
		{"${TOKEN", "", true},
		{"${}", "", true},
		{"${1A}", "", true},
		{"${A-B}", "", true},
		{"${ TOKEN}", "", true},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := expand(tt.in, lookup)
			if got != tt.want || (err != nil) != tt.wantErr {
				t.Errorf("expand(%q) = %q, %v, want %q, error %t", tt.in, got, err, tt.want, tt.wantErr)
			}
			if err := checkTemplate(tt.in); (err != nil) != (tt.wantErr && tt.in != "${UNSET}") {
				t.Errorf("checkTemplate(%q) = %v", tt.in, err)
			}
		})
	}
}

// TestExpandErrorHidesValues checks that an error names a variable, never
// the value of another one.
func TestExpandErrorHidesValues(t *testing.T) {
	lookup := func(name string) (string, bool) {
		if name == "SECRET" {
			return "s3cr3t", true
		}
		return "", false
	}
	_, err := expand("${SECRET}:${MISSING}", lookup)
	var ue *UnsetEnvError
	if !errors.As(err, &ue) || ue.Name != "MISSING" || ue.Empty {
		t.Errorf("expand error = %v, want an *UnsetEnvError naming MISSING", err)
	}
	// Only the text can show that the value stays out of it.
	if err != nil && strings.Contains(err.Error(), "s3cr3t") {
		t.Errorf("expand error = %v, want it without the value of SECRET", err)
	}
}

func TestValidEnvName(t *testing.T) {
	for name, want := range map[string]bool{
		"A": true, "_": true, "a_1": true, "OPENAI_API_KEY": true,
		"": false, "1A": false, "A-B": false, "A B": false, "É": false, "A=": false,
	} {
		if got := validEnvName(name); got != want {
			t.Errorf("validEnvName(%q) = %t, want %t", name, got, want)
		}
	}
}

func FuzzExpand(f *testing.F) {
	for _, s := range []string{"", "a", "${A}", "x${A}y${B}", "${", "${}", "$${A}}", "${A${B}}", "${é}"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, err := expand(s, func(name string) (string, bool) { return "<" + name + ">", true })
		if cerr := checkTemplate(s); (cerr != nil) != (err != nil) {
			t.Fatalf("expand(%q) error %v but checkTemplate error %v", s, err, cerr)
		}
		if err != nil {
			return
		}
		if !strings.Contains(s, "${") && got != s {
			t.Fatalf("expand(%q) = %q, want it unchanged", s, got)
		}
		if strings.Contains(got, "${") {
			// Replacements hold no "$", and every "${" of s is a reference.
			t.Fatalf("expand(%q) = %q still holds a reference", s, got)
		}
	})
}

func TestSecretName(t *testing.T) {
	for name, want := range map[string]bool{
		"Authorization": true, "proxy-authorization": true, "X-Api-Key": true, "Api-Key": true, "Cookie": true,
		"X-Auth-Token": true, "X-Client-Secret": true, "OPENAI_API_KEY": true, "GITHUB_TOKEN": true, "DB_PASSWORD": true,
		"PGPASSWD": true, "GOOGLE_APPLICATION_CREDENTIALS": true, "my_auth": true,
		"Content-Type": false, "Accept": false, "User-Agent": false, "X-Request-Id": false, "MODE": false, "PATH": false,
	} {
		if got := secretName(name); got != want {
			t.Errorf("secretName(%q) = %t, want %t", name, got, want)
		}
	}
}

func TestRefersToSecret(t *testing.T) {
	long := strings.Repeat("a", maxSchemeWord)
	for value, want := range map[string]bool{
		"${TOKEN}":                              true,
		"Bearer ${TOKEN}":                       true,
		"Token token=${T}":                      true,
		"session=${S}; csrftoken=${C}":          true,
		"${USER}:${PASSWORD}":                   true,
		"__Host-session.id=${S}":                true,
		long + " ${T}":                          true,
		long + "a ${T}":                         false, // a word longer than any scheme
		"":                                      false,
		"Bearer sk-123":                         false, // no reference
		"letters only":                          false,
		"${USER}:hunter2":                       false, // a digit
		"Bearer sk/abc+def ${T}":                false, // base64 characters
		"session=${S}; csrf=a1b2":               false,
		"${T}\"x\"":                             false,
		"Bearer ${TOKEN} éé":                    false,
		"Basic ${B64}" + strings.Repeat("=", 3): true,
	} {
		if got := refersToSecret(value); got != want {
			t.Errorf("refersToSecret(%q) = %t, want %t", value, got, want)
		}
	}
}

func TestSingleReference(t *testing.T) {
	tests := []struct {
		in, want string
		ok       bool
	}{
		{"${OPENAI_API_KEY}", "OPENAI_API_KEY", true},
		{"${K}", "K", true},
		{"sk-123", "", false},
		{"${K}${L}", "", false},
		{"Bearer ${K}", "", false},
		{"${K} ", "", false},
		{"${1K}", "", false},
		{"${}", "", false},
	}
	for _, tt := range tests {
		got, ok := singleReference(tt.in)
		if got != tt.want || ok != tt.ok {
			t.Errorf("singleReference(%q) = %q, %t, want %q, %t", tt.in, got, ok, tt.want, tt.ok)
		}
	}
}
