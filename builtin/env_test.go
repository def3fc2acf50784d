package builtin

import (
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
	if err == nil || !strings.Contains(err.Error(), "MISSING") || strings.Contains(err.Error(), "s3cr3t") {
		t.Errorf("expand error = %v, want one naming MISSING without the value of SECRET", err)
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
