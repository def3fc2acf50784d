package main

import (
	"flag"
	"fmt"
	"strings"

	"github.com/aslrun/aslrun/engine"
	"github.com/aslrun/aslrun/itemio"
	"github.com/aslrun/aslrun/states"
)

// bucketFlags are the flags that say what the Distributed Maps of a
// command's executions may read and write: --allow-file-buckets (the
// local commands only: run, resume and approve; a server never allows
// file://) and the limits of an ItemReader.
type bucketFlags struct {
	allowFiles   *bool // nil: not offered
	maxItemBytes *int
	maxListed    *int
}

// newBucketFlags defines the bucket flags on fs; local offers
// --allow-file-buckets.
func newBucketFlags(fs *flag.FlagSet, local bool) bucketFlags {
	var f bucketFlags
	if local {
		f.allowFiles = fs.Bool("allow-file-buckets", false, "let Distributed Maps read and write the local folders a workflow names as \"file://DIR\" buckets (without it, only the buckets an agents file's Buckets maps; a server never allows them)")
	}
	f.maxItemBytes = fs.Int("max-item-bytes", itemio.DefaultMaxItemBytes, "the longest CSV row, JSONL line or JSON array item, in `BYTES`, a Distributed Map's ItemReader reads; a longer one fails the Map with States.ItemReaderFailed")
	f.maxListed = fs.Int("max-listed-objects", itemio.DefaultMaxListed, "the most objects (`N`) a listObjectsV2 ItemReader lists; a longer listing fails the Map with States.ItemReaderFailed")
	return f
}

// access returns the executor's BucketAccess the flags give, or a usage
// error when a limit is not positive.
func (f bucketFlags) access(cmd string) (engine.BucketAccess, error) {
	if *f.maxItemBytes <= 0 {
		return engine.BucketAccess{}, usageErrorf("%s: --max-item-bytes must be a positive number of bytes, not %d", cmd, *f.maxItemBytes)
	}
	if *f.maxListed <= 0 {
		return engine.BucketAccess{}, usageErrorf("%s: --max-listed-objects must be a positive number of objects, not %d", cmd, *f.maxListed)
	}
	return engine.BucketAccess{AllowFileURLs: f.allowFiles != nil && *f.allowFiles, MaxItemBytes: *f.maxItemBytes, MaxListedObjects: *f.maxListed}, nil
}

// checkFileBuckets refuses to run the workflow of file when its
// Distributed Maps name local folders as buckets ("file://DIR") and the
// run does not allow them, naming each state and JSON Pointer.
func checkFileBuckets(cmd, file string, m *states.Machine, access engine.BucketAccess) error {
	list := m.FileBuckets()
	if access.AllowFileURLs || len(list) == 0 {
		return nil
	}
	lines := make([]string, 0, len(list)+1)
	for _, e := range list {
		lines = append(lines, fmt.Sprintf("%s: %s: state %s: %s", cmd, file, e.State, e.Pointer))
	}
	lines = append(lines, "a workflow names local folders (file://DIR) as buckets only in a local run that allows it: pass --allow-file-buckets, or name buckets that an agents file maps to folders (\"Buckets\": {\"NAME\": {\"Dir\": \"FOLDER\"}}, with --agents FILE; see docs/distributed-map.md)")
	return usageErrorf("%s", strings.Join(lines, "\n"))
}
