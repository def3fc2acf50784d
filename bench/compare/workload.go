package main

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/aslrun/aslrun/jsonvalue"
)

// A workload is one workflow of the workflows folder with its input, run
// the same way by every runner.
type workload struct {
	// name identifies the workload on the command line and to a child
	// process.
	name string
	// file is the definition, a file of the workflows folder.
	file string
	// n is the loop's turns or the Map's items.
	n int
	// executions run at once, each on the same input.
	executions int
	// input is the execution input as JSON.
	input []byte
	// want is what each execution must return.
	want any
	// states is the number of state transitions (states run to their end)
	// of one execution, tasks the number of them that are Task states.
	states, tasks int
}

// The workloads. Every execution of the loop runs n turns of five states
// and the final Succeed; a Map runs itself and one Task per item.
const (
	wLoop         = "loop"
	wPeers        = "loop-peers"
	wMap          = "map"
	wMapDiscard   = "map-discard"
	wConcurrent1  = "concurrent-1"
	wConcurrentN  = "concurrent-n"
	loopStates    = 5
	loopWorkflow  = "loop.json"
	mockFile      = "mock.json"
	documentFile  = "document.json"
	itemTitle     = "document"
	reviewPayload = `{"approved":true,"by":"reviewer"}`
)

// newWorkload builds the workload called name from the files in dir: n
// turns or items, and executions at once (concurrent-n; the others run
// one).
func newWorkload(dir, name string, n, executions int) (*workload, error) {
	if n < 1 {
		return nil, fmt.Errorf("workload %s: n must be at least 1, not %d", name, n)
	}
	w := &workload{name: name, n: n, executions: 1}
	switch name {
	case wLoop, wPeers, wConcurrent1, wConcurrentN:
		if name == wConcurrentN {
			if executions < 1 {
				return nil, fmt.Errorf("workload %s: executions must be at least 1, not %d", name, executions)
			}
			w.executions = executions
		}
		w.file = loopWorkflow
		if err := w.loop(dir); err != nil {
			return nil, err
		}
	case wMap, wMapDiscard:
		w.file = "map.json"
		if name == wMapDiscard {
			w.file = "map-discard.json"
		}
		if err := w.mapItems(dir); err != nil {
			return nil, err
		}
	default:
		return nil, fmt.Errorf("unknown workload %q (want %s, %s, %s, %s, %s or %s)", name, wLoop, wPeers, wMap, wMapDiscard, wConcurrent1, wConcurrentN)
	}
	return w, nil
}

// loop builds the input {"doc", "i": 0, "n"} and the output the loop ends
// with: the document, the mocked Work result, the review and i = n.
func (w *workload) loop(dir string) error {
	doc, err := readJSON(filepath.Join(dir, documentFile))
	if err != nil {
		return err
	}
	work, err := mockedResult(dir, "Work")
	if err != nil {
		return err
	}
	review, err := jsonvalue.Decode([]byte(reviewPayload))
	if err != nil {
		return err
	}
	n := jsonvalue.IntNumber(int64(w.n))
	if w.input, err = jsonvalue.Marshal(map[string]any{"doc": doc, "i": jsonvalue.IntNumber(0), "n": n}); err != nil {
		return err
	}
	w.want = map[string]any{"doc": doc, "work": work, "review": review, "n": n, "i": n}
	w.states, w.tasks = loopStates*w.n+1, w.n
	return nil
}

// mapItems builds the input {"items": [{"id", "title"}…], "summary":
// {"items": n}} and the output: every item's mocked result, or (the
// results discarded) the summary.
func (w *workload) mapItems(dir string) error {
	done, err := mockedResult(dir, "Item")
	if err != nil {
		return err
	}
	items := make([]any, w.n)
	for i := range items {
		items[i] = map[string]any{"id": jsonvalue.IntNumber(int64(i)), "title": itemTitle}
	}
	summary := map[string]any{"items": jsonvalue.IntNumber(int64(w.n))}
	if w.input, err = jsonvalue.Marshal(map[string]any{"items": items, "summary": summary}); err != nil {
		return err
	}
	if w.name == wMapDiscard {
		w.want = summary
	} else {
		results := make([]any, w.n)
		for i := range results {
			results[i] = done
		}
		w.want = results
	}
	w.states, w.tasks = w.n+1, w.n
	return nil
}

// check reports whether outputs, one per execution, are all the expected
// one.
func (w *workload) check(outputs []any) error {
	if len(outputs) != w.executions {
		return fmt.Errorf("%s: %d outputs, want %d", w.name, len(outputs), w.executions)
	}
	for i, out := range outputs {
		if !jsonvalue.Equal(out, w.want) {
			got, _ := jsonvalue.Marshal(out)
			if len(got) > 300 {
				got = append(got[:300], "…"...)
			}
			return fmt.Errorf("%s: execution %d returned %s, not the expected output", w.name, i, got)
		}
	}
	return nil
}

// readJSON decodes a JSON file strictly.
func readJSON(path string) (any, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	v, err := jsonvalue.Decode(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return v, nil
}

// mockedResult is what the mock file's first response of agent returns,
// the result every call of it gets.
func mockedResult(dir, agent string) (any, error) {
	path := filepath.Join(dir, mockFile)
	v, err := readJSON(path)
	if err != nil {
		return nil, err
	}
	top, _ := v.(map[string]any)
	responses, _ := top[agent].(map[string]any)
	if len(responses) != 1 {
		return nil, fmt.Errorf("%s: agent %s must have exactly one response, for every invocation", path, agent)
	}
	var key string
	for key = range responses {
	}
	r, _ := responses[key].(map[string]any)
	res, ok := r["Return"]
	if !ok {
		return nil, fmt.Errorf("%s: /%s/%s must Return a result", path, agent, key)
	}
	return res, nil
}
