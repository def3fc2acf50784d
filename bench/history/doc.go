// Package history measures reading an execution's history: the last
// page of a long history against a short one (GET …/history reads by
// range, store.Store.HistoryRange), on bbolt and on PostgreSQL, and an
// execution's event stream followed by 200 viewers at once. It has only
// benchmarks; docs/performance.md says how to run them and what they
// gave.
package history
