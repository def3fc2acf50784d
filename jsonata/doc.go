// Package jsonata evaluates the JSONata expressions of Amazon States
// Language definitions ("{% … %}" strings in JSONata states) as AWS Step
// Functions evaluates them: with $states and the workflow variables bound,
// with the functions Step Functions adds ($partition, $range, $hash,
// $random with a seed, $uuid, $parse), numbers as IEEE doubles, and
// failures worded as AWS words the causes of States.QueryEvaluationError.
//
// Expressions are parsed by github.com/blues/jsonata-go's parser (jparse)
// and evaluated by this package's own evaluator, which uses the library's
// pure functions (jlib) for much of the function library. Every
// evaluation takes a context, which ends it when it is cancelled, and a
// budget (Limits) of steps and of bytes of values built, on with no
// configuration. It holds no package-level mutable state: evaluations run
// in parallel. Values are converted at the boundary: our exact
// json.Number values become doubles going in, and doubles come back
// spelled as JavaScript spells them.
package jsonata
