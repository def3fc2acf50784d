package builtin

import (
	"fmt"
	"strings"
)

// expand replaces every ${NAME} in s with the value lookup gives for NAME.
// Only the braced form is expanded, so a lone $ (as in a password) stays as
// it is. An unterminated ${, a name that is not [A-Za-z_][A-Za-z0-9_]*, or a
// variable lookup does not know is an error; the error names the variable,
// never a value.
func expand(s string, lookup func(string) (string, bool)) (string, error) {
	if !strings.Contains(s, "${") {
		return s, nil
	}
	var b strings.Builder
	pos := 0
	for {
		i := strings.Index(s[pos:], "${")
		if i < 0 {
			b.WriteString(s[pos:])
			return b.String(), nil
		}
		i += pos
		b.WriteString(s[pos:i])
		end := strings.IndexByte(s[i:], '}')
		if end < 0 {
			return "", fmt.Errorf("unterminated ${ at byte %d", i)
		}
		name := s[i+2 : i+end]
		if !validEnvName(name) {
			return "", fmt.Errorf("${%s} at byte %d: %q is not a variable name (letters, digits and _, not starting with a digit)", name, i, name)
		}
		v, ok := lookup(name)
		if !ok {
			return "", fmt.Errorf("environment variable %s is not set", name)
		}
		b.WriteString(v)
		pos = i + end + 1
	}
}

// checkTemplate reports a syntax error in the ${VAR} references of s
// without looking any variable up.
func checkTemplate(s string) error {
	_, err := expand(s, func(string) (string, bool) { return "", true })
	return err
}

func validEnvName(name string) bool {
	if name == "" {
		return false
	}
	for i, c := range name {
		switch {
		case c == '_', c >= 'A' && c <= 'Z', c >= 'a' && c <= 'z':
		case c >= '0' && c <= '9' && i > 0:
		default:
			return false
		}
	}
	return true
}
