// Package jsonata evaluates the JSONata expressions of Amazon States
// Language definitions ("{% … %}" strings in JSONata states) as AWS Step
// Functions evaluates them: with $states and the workflow variables bound,
// with the functions Step Functions adds ($partition, $range, $hash,
// $random with a seed, $uuid, $parse), numbers as IEEE doubles, and
// failures worded as AWS words the causes of States.QueryEvaluationError.
//
// The language itself is github.com/blues/jsonata-go (docs/jsonata.md says
// why that implementation); this package converts values at the boundary
// (our exact json.Number values become doubles going in, and doubles come
// back spelled as JavaScript spells them), adapts what AWS does
// differently, and keeps the library's shared state from being raced on.
package jsonata
