// Package engine interprets validated state machines (package states): the
// run loop, one file per state kind, Retry and Catch, timers, and the commit
// point through which every change of an execution's document passes.
//
// An Executor is configured once (agents, store) and runs any number of
// executions concurrently. Each execution is driven by its own run struct;
// the *states.Machine is never modified.
package engine
