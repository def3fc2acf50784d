package main

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// TestGitignoreCoversWalkthroughs: what the README's walkthroughs leave in
// the checkout (databases, their sockets and holder files, the tokens file
// and the tokens) is ignored by git.
func TestGitignoreCoversWalkthroughs(t *testing.T) {
	t.Parallel()
	git, err := exec.LookPath("git")
	if err != nil {
		t.Skip("no git")
	}
	left := []string{"aslrun", "aslrun.db", "aslrun.db.sock", "aslrun.db.holder", "aslrun.db.holder.123.tmp",
		"service.db", "service.db.sock", "service.db.holder", "aslrun.tokens", "ops.token", "ana.token"}
	cmd := exec.Command(git, append([]string{"-C", "../..", "check-ignore", "--no-index"}, left...)...)
	out, err := cmd.Output()
	if err != nil && len(out) == 0 {
		t.Skipf("git check-ignore: %v (not a git checkout?)", err)
	}
	ignored := strings.Fields(string(out))
	for _, f := range left {
		if !slices.Contains(ignored, f) {
			t.Errorf(".gitignore does not cover %s, which the README's walkthrough leaves", f)
		}
	}
}
