package storetest

import (
	"testing"
	"time"

	"github.com/aslrun/aslrun/engine"
)

// CheckpointedRun returns the commits of execution id, started at ts, that
// tests of checkpoint verification write and then tamper with: checkpoint
// "a" saved (event 3), "b" saved (event 5), "a" saved again (event 7),
// then the execution succeeds (event 8). Its input is input.
func CheckpointedRun(t *testing.T, id string, ts time.Time) (input any, commits []*engine.Commit) {
	t.Helper()
	d1, d2, d3 := Doc(t, `{"step":1}`), Doc(t, `{"step":2}`), Doc(t, `{"step":3}`)
	save := func(seq, eventID, own int64, state, name string, d any, at, expires time.Time) *engine.Commit {
		return &engine.Commit{
			Execution: id, Seq: seq, Status: engine.StatusRunning, LastEvent: eventID, LastOwnEvent: own,
			Scopes: map[string]*engine.Scope{"": {Next: "After", Doc: d}},
			Events: []engine.Event{
				{ID: eventID, Type: "CheckpointStateEntered", State: state, Timestamp: at, Input: d, Document: d},
				{Own: own, Type: engine.EventCheckpointSaved, State: state, Timestamp: at, Document: d, Detail: map[string]any{"name": name}},
			},
			Checkpoint: &engine.Checkpoint{Name: name, State: state, Next: "After", Document: d, CreatedAt: at, ExpiresAt: expires},
		}
	}
	first := save(1, 2, 1, "SaveA", "a", d1, ts, ts.Add(time.Hour))
	first.Events = append([]engine.Event{{ID: 1, Type: engine.EventExecutionStarted, Timestamp: ts, Input: d1, Document: d1}}, first.Events...)
	return d1, []*engine.Commit{
		first,
		save(2, 3, 2, "SaveB", "b", d2, ts.Add(time.Minute), time.Time{}),
		save(3, 4, 3, "SaveA", "a", d3, ts.Add(2*time.Minute), ts.Add(time.Hour)),
		{
			Execution: id, Seq: 4, Status: engine.StatusSucceeded, Output: d3, StoppedAt: ts.Add(3 * time.Minute), LastEvent: 5, LastOwnEvent: 3,
			Events: []engine.Event{{ID: 5, Type: engine.EventExecutionSucceeded, Timestamp: ts.Add(3 * time.Minute), Output: d3, Document: d3}},
		},
	}
}

// TwoCheckpoints is a workflow that saves checkpoints "first" and
// "second" between Pass states.
const TwoCheckpoints = `{"StartAt":"One","States":{
	"One":{"Type":"Pass","Result":1,"ResultPath":"$.one","Next":"First"},
	"First":{"Type":"Checkpoint","Name":"first","Next":"Two"},
	"Two":{"Type":"Pass","Result":2,"ResultPath":"$.two","Next":"Second"},
	"Second":{"Type":"Checkpoint","Name":"second","Next":"Done"},
	"Done":{"Type":"Pass","End":true}}}`
