package jsonpath

// Env gives a path or template what lies outside the document it reads: the
// context object ("$$") and the execution's variables ("$name").
//
// The engine implements Env per state; implementations need not be safe for
// concurrent use unless the caller shares one across goroutines.
type Env interface {
	// Context returns the context object, the value of "$$". It is only
	// called when an expression refers to "$$".
	Context() any
	// Variable returns the value of the variable name (without the "$") and
	// whether it is defined.
	Variable(name string) (any, bool)
}

// Chance is implemented by an Env that wants to know when an expression
// drew a value that differs from one evaluation to the next: States.UUID,
// and States.MathRandom without a seed. (The engine commits a state that
// did at once, so that running it again after a crash cannot draw another.)
type Chance interface {
	Drew()
}

// drew tells env, when it asks, that an expression drew a random value.
func drew(env Env) {
	if c, ok := env.(Chance); ok {
		c.Drew()
	}
}

// Bounds are how much work one evaluation may do, so that no path or
// intrinsic function a definition holds can take the process's memory or
// time, whatever input it is given.
type Bounds struct {
	// PathSteps is how many values one evaluation of an indefinite path
	// (wildcards, unions, slices, deep scans, filters) may visit, the walks
	// of its filters' own paths included; past it the path fails with a
	// *PathError. Default DefaultPathSteps.
	PathSteps int
	// IntrinsicBytes is how many bytes of strings and array or object
	// members one evaluation of an intrinsic function call, nested calls
	// included, may build; past it the call fails with an *IntrinsicError.
	// Default DefaultIntrinsicBytes.
	IntrinsicBytes int
}

// The bounds of an evaluation whose Env sets none: ten million steps
// (under a second on one core) and 64 MiB.
const (
	DefaultPathSteps      = 10_000_000
	DefaultIntrinsicBytes = 64 << 20
)

// Bounded is implemented by an Env that sets the bounds of the evaluations
// it is given to; a zero field keeps its default.
type Bounded interface {
	Bounds() Bounds
}

// boundsOf returns the bounds env sets, defaults filled in.
func boundsOf(env Env) Bounds {
	b := Bounds{PathSteps: DefaultPathSteps, IntrinsicBytes: DefaultIntrinsicBytes}
	if e, ok := env.(Bounded); ok {
		set := e.Bounds()
		if set.PathSteps > 0 {
			b.PathSteps = set.PathSteps
		}
		if set.IntrinsicBytes > 0 {
			b.IntrinsicBytes = set.IntrinsicBytes
		}
	}
	return b
}
