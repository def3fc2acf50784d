// Package loop measures what aslrun adds to a model loop: a loop of 4
// model turns and 3 tool calls against a fake Chat Completions server that
// answers at once, written with the OpenAI SDK alone (the bare loop), and
// run by aslrun (a Task whose agent is agentloop on models/openai, every
// turn and tool call a durable step) without a store, on the memory store
// and on bbolt, batched and strict. It has only benchmarks;
// docs/performance.md says how to run them and what they gave.
package loop
