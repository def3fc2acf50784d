package builtin

import (
	"errors"
	"fmt"
	"strings"
)

// ErrLiteralSecret is wrapped by the *FileError of an agents file that
// writes a secret itself where it must refer to an environment variable
// (see AgentsFile).
var ErrLiteralSecret = errors.New("a secret written in the agents file")

// UnsetEnvError reports, when an agent is called, an environment variable
// its configuration refers to that is not set (or, for an API key, that is
// empty). It names the variable, never a value.
type UnsetEnvError struct {
	// Name is the variable's name.
	Name string
	// Empty is true when the variable is set but empty.
	Empty bool
}

// Error returns "environment variable NAME is not set" (or "is empty").
func (e *UnsetEnvError) Error() string {
	if e.Empty {
		return "environment variable " + e.Name + " is empty"
	}
	return "environment variable " + e.Name + " is not set"
}

// expand replaces every ${NAME} in s with the value lookup gives for NAME.
// Only the braced form is expanded, so a lone $ (as in a password) stays as
// it is. An unterminated ${, a name that is not [A-Za-z_][A-Za-z0-9_]*, or a
// variable lookup does not know is an error (an *UnsetEnvError for the
// latter); the error names the variable, never a value.
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
			return "", &UnsetEnvError{Name: name}
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

// maxSchemeWord is the longest word the text beside the references of a
// secret may hold (see plainBeside).
const maxSchemeWord = 32

// secretName reports whether name, a header's or an environment
// variable's, says that its value is a secret: compared without regard to
// case, it holds token, secret, key, auth (Authorization and
// Proxy-Authorization included), password, passwd, credential or cookie.
func secretName(name string) bool {
	n := strings.ToLower(name)
	for _, w := range []string{"token", "secret", "key", "auth", "password", "passwd", "credential", "cookie"} {
		if strings.Contains(n, w) {
			return true
		}
	}
	return false
}

// refersToSecret reports whether value, whose ${VAR} syntax is valid and
// which holds a secret, only refers to the secret: it holds at least one
// ${VAR} reference, and the text beside the references is no more than a
// scheme or names and separators (see plainBeside). "Bearer ${TOKEN}" and
// "session=${SESSION}" refer to their secret; "Bearer sk-123" and
// "${USER}:hunter2" do not.
func refersToSecret(value string) bool {
	if !strings.Contains(value, "${") {
		return false
	}
	beside, err := expand(value, func(string) (string, bool) { return " ", true })
	return err == nil && plainBeside(beside)
}

// plainBeside reports whether s, the text beside a secret's references,
// holds only ASCII letters, '-', '_' and '.' in words of at most
// maxSchemeWord characters, separated by spaces, '=', ';', ',' or ':'. A
// digit or any other character could be part of a credential.
func plainBeside(s string) bool {
	word := 0
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c == '-', c == '_', c == '.':
			word++
			if word > maxSchemeWord {
				return false
			}
		case c == ' ', c == '=', c == ';', c == ',', c == ':':
			word = 0
		default:
			return false
		}
	}
	return true
}

// singleReference returns NAME when value is exactly "${NAME}".
func singleReference(value string) (string, bool) {
	name, ok := strings.CutPrefix(value, "${")
	if !ok {
		return "", false
	}
	name, ok = strings.CutSuffix(name, "}")
	if !ok || !validEnvName(name) {
		return "", false
	}
	return name, true
}
