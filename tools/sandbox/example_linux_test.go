package sandbox_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/aslrun/aslrun/agents"
	"github.com/aslrun/aslrun/tools/sandbox"
)

// A command runs with a bucket's folder mounted read-write at /work,
// no network, 256 MiB of address space, 5 seconds of CPU and a
// 10-second timeout. (It needs bubblewrap: see Available.)
func ExampleCommand() {
	bucket, err := os.MkdirTemp("", "bucket")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(bucket)

	spec := sandbox.Spec{
		Limits: agents.SandboxLimits{
			Memory:  256 << 20,
			CPU:     5 * time.Second,
			Timeout: 10 * time.Second,
			Mounts:  []agents.Mount{{Target: "/work", Dir: bucket, Bucket: "reports"}},
		},
		Env: []string{"PATH=/usr/bin:/bin", "NAME=report"},
	}
	cmd, err := sandbox.Command(context.Background(), spec,
		[]string{"sh", "-c", `echo "$NAME in $(pwd)" | tee out.txt; ls /work`})
	if err != nil {
		fmt.Println(err)
		return
	}
	out, err := cmd.Output()
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Print(string(out))
	written, _ := os.ReadFile(filepath.Join(bucket, "out.txt"))
	fmt.Print("on the host: ", string(written))
	// Output:
	// report in /work
	// out.txt
	// on the host: report in /work
}
