package conformance

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"testing/synctest"
	"time"

	"github.com/aslrun/aslrun/engine"
	"github.com/aslrun/aslrun/jsonvalue"
)

// awsCases is where the AWS-recorded cases live, beside the project.
const awsCases = "../../shared/conformance/aws"

func loadSkips(t *testing.T) Skips {
	t.Helper()
	data, err := os.ReadFile("skip.txt")
	if err != nil {
		t.Fatalf("read skip file: %v", err)
	}
	s, err := ParseSkips(data)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// runTree runs every case under root in each durability mode. Under
// DurabilityNone a case that needs a store (it could park, or uses agent
// memory) must be refused as such, and is counted; the others must pass.
func runTree(t *testing.T, root string) {
	for _, mode := range []engine.Durability{engine.DurabilityStrict, engine.DurabilityBatched, engine.DurabilityNone} {
		t.Run(string(mode), func(t *testing.T) { runTreeIn(t, root, mode) })
	}
}

func runTreeIn(t *testing.T, root string, mode engine.Durability) {
	runTreeWith(t, root, mode, false)
}

// runTreeWith runs every case under root in mode; packed runs each with
// every array of its input packed (jsonvalue.DecodePacked at bound 1), as
// an execution input's large arrays are, so that the engine is held to
// read packed arrays exactly as it reads []any.
func runTreeWith(t *testing.T, root string, mode engine.Durability, packed bool) {
	files, err := Collect([]string{root})
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatalf("no cases under %s", root)
	}
	skips := loadSkips(t)
	for _, f := range files {
		rel, _ := filepath.Rel(root, f)
		t.Run(filepath.ToSlash(rel), func(t *testing.T) {
			t.Parallel()
			if reason, ok := skips.Reason(f); ok {
				t.Skipf("known gap: %s", reason)
			}
			c, err := Load(f)
			if err != nil {
				t.Fatal(err)
			}
			if packed {
				if c.Input, err = packAll(c.Input); err != nil {
					t.Fatal(err)
				}
			}
			// Each case runs on the fake clock of a synctest bubble: Waits
			// and retry delays take no real time and are measured exactly.
			now := time.Now()
			synctest.Test(t, func(t *testing.T) {
				// The bubble's clock starts in 2000: bring it to the present
				// so that timestamps in cases mean what they say.
				time.Sleep(time.Until(now))
				err := run(context.Background(), c, Options{Durability: mode, exactTime: true})
				if mode == engine.DurabilityNone && errors.Is(err, ErrNeedsStore) {
					t.Skip(err)
				}
				if err != nil {
					t.Error(err)
				}
			})
		})
	}
}

func TestOwnCases(t *testing.T) { runTree(t, "testdata") }

// TestCasesPacked runs our cases and AWS's (strict) with their inputs'
// arrays packed.
func TestCasesPacked(t *testing.T) {
	t.Run("own", func(t *testing.T) { runTreeWith(t, "testdata", engine.DurabilityStrict, true) })
	if _, err := os.Stat(awsCases); err == nil {
		t.Run("aws", func(t *testing.T) { runTreeWith(t, awsCases, engine.DurabilityStrict, true) })
	}
}

// packAll returns v with every non-empty array in it packed.
func packAll(v any) (any, error) {
	data, err := jsonvalue.Marshal(v)
	if err != nil {
		return nil, err
	}
	return jsonvalue.DecodePacked(data, 1)
}

func TestAWSCases(t *testing.T) {
	if _, err := os.Stat(awsCases); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("AWS-recorded cases not found at %s: CI must run them", awsCases)
		}
		t.Skipf("AWS-recorded cases not found at %s (../shared is absent): skipping them", awsCases)
	}
	runTree(t, awsCases)
}
