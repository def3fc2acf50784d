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
