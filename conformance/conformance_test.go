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

func TestAWSCases(t *testing.T) {
	if _, err := os.Stat(awsCases); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("AWS-recorded cases not found at %s: CI must run them", awsCases)
		}
		t.Skipf("AWS-recorded cases not found at %s (../shared is absent): skipping them", awsCases)
	}
	runTree(t, awsCases)
}
