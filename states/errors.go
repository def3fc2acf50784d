package states

import (
	"fmt"
	"strings"
)

// ValidationError is one problem found in a definition: where it is (a JSON
// Pointer into the definition and, when inside a state, the state's name)
// and what is wrong.
type ValidationError struct {
	// Pointer is the RFC 6901 JSON Pointer of the offending value, like
	// /States/Review/Retry/0/MaxAttempts.
	Pointer string
	// State is the name of the innermost state the problem is in, or "".
	State string
	// Msg says what is wrong.
	Msg string
}

// Error returns "/pointer (State): message".
func (e *ValidationError) Error() string {
	ptr := e.Pointer
	if ptr == "" {
		ptr = "/"
	}
	if e.State != "" {
		return fmt.Sprintf("%s (%s): %s", ptr, e.State, e.Msg)
	}
	return fmt.Sprintf("%s: %s", ptr, e.Msg)
}

// ErrorList is every problem found in a definition, in document order.
type ErrorList []*ValidationError

// Error joins the problems, one per line.
func (l ErrorList) Error() string {
	lines := make([]string, len(l))
	for i, e := range l {
		lines[i] = e.Error()
	}
	return strings.Join(lines, "\n")
}

// Err returns the list as an error, or nil when it is empty.
func (l ErrorList) Err() error {
	if len(l) == 0 {
		return nil
	}
	return l
}
