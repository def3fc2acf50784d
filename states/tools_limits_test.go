package states

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"
)

// toolsTask is a definition whose only state is a Task with tools as its
// Tools block.
func toolsTask(tools string) []byte {
	return fmt.Appendf(nil, `{"StartAt": "T", "States": {"T": {"Type": "Task", "Agent": "A", "Tools": %s, "End": true}}}`, tools)
}

// limits is the part of a ToolsConfig this file parses.
type limits struct {
	Domains    *DomainsConfig
	FileSystem *FileSystemConfig
	Sandboxed  bool
	Sandbox    *SandboxConfig
}

func limitsOf(t *ToolsConfig) limits {
	return limits{t.Domains, t.FileSystem, t.Sandboxed, t.Sandbox}
}

func TestToolLimitsAccepted(t *testing.T) {
	const mounts = "/States/T/Tools/Sandbox/Mounts/"
	process := &SandboxConfig{Environment: "process"}
	tests := []struct {
		name, tools string
		want        limits
	}{
		{"none", `{"Allowed": ["x"]}`, limits{}},
		{"domains allowed", `{"Domains": {"Allowed": ["api.example.com", "*.example.org:443", "10.0.0.0/8", "[::1]:8080"]}}`,
			limits{Domains: &DomainsConfig{Allowed: []string{"api.example.com", "*.example.org:443", "10.0.0.0/8", "[::1]:8080"}, HasAllowed: true}}},
		{"domains allowed empty means none", `{"Domains": {"Allowed": []}}`,
			limits{Domains: &DomainsConfig{Allowed: []string{}, HasAllowed: true}}},
		{"domains denied only", `{"Domains": {"Denied": ["evil.example.com"]}}`,
			limits{Domains: &DomainsConfig{Denied: []string{"evil.example.com"}}}},
		{"domains both", `{"Domains": {"Allowed": ["*"], "Denied": ["169.254.169.254"]}}`,
			limits{Domains: &DomainsConfig{Allowed: []string{"*"}, HasAllowed: true, Denied: []string{"169.254.169.254"}}}},
		{"filesystem all", `{"FileSystem": {"AllowedPaths": ["notes/**", "*.md", "a/[bc]?/d"], "DeniedPaths": ["**/secret*", "notes/private"], "AllowedExtensions": ["md", ".TXT", ".tar.gz"], "MaxFileSize": "1MB"}}`,
			limits{FileSystem: &FileSystemConfig{AllowedPaths: []string{"notes/**", "*.md", "a/[bc]?/d"}, DeniedPaths: []string{"**/secret*", "notes/private"}, AllowedExtensions: []string{".md", ".txt", ".tar.gz"}, MaxFileSize: 1 << 20}}},
		{"filesystem size in bytes", `{"FileSystem": {"MaxFileSize": 4096}}`, limits{FileSystem: &FileSystemConfig{MaxFileSize: 4096}}},
		{"filesystem size 256K", `{"FileSystem": {"MaxFileSize": "256K"}}`, limits{FileSystem: &FileSystemConfig{MaxFileSize: 256 << 10}}},
		{"filesystem denied empty", `{"FileSystem": {"DeniedPaths": []}}`, limits{FileSystem: &FileSystemConfig{}}},
		{"sandboxed alone", `{"Sandboxed": true}`, limits{Sandboxed: true, Sandbox: process}},
		{"sandboxed false", `{"Sandboxed": false}`, limits{}},
		{"sandbox empty", `{"Sandbox": {}}`, limits{Sandboxed: true, Sandbox: process}},
		{"sandbox with sandboxed true", `{"Sandboxed": true, "Sandbox": {"Environment": "process", "ReadOnlyFS": true}}`, limits{Sandboxed: true, Sandbox: process}},
		{"sandbox full", `{"Sandbox": {"Network": true, "Memory": "256M", "CPU": 2, "Timeout": "30s", "Mounts": {
			"/out": {"Source": "results"},
			"/data": {"Source": "corpus", "ReadOnly": true}}}}`,
			limits{Sandboxed: true, Sandbox: &SandboxConfig{Environment: "process", Network: true, Memory: 256 << 20, CPU: 2 * time.Second, Timeout: 30 * time.Second,
				Mounts: []SandboxMount{
					{Target: "/data", Bucket: "corpus", ReadOnly: true, Pointer: mounts + "~1data"},
					{Target: "/out", Bucket: "results", Pointer: mounts + "~1out"},
				}}}},
		{"sandbox cpu fraction", `{"Sandbox": {"CPU": 0.5}}`, limits{Sandboxed: true, Sandbox: &SandboxConfig{Environment: "process", CPU: 500 * time.Millisecond}}},
		{"sandbox cpu duration", `{"Sandbox": {"CPU": "2m"}}`, limits{Sandboxed: true, Sandbox: &SandboxConfig{Environment: "process", CPU: 2 * time.Minute}}},
		{"sandbox memory 1M", `{"Sandbox": {"Memory": 1048576}}`, limits{Sandboxed: true, Sandbox: &SandboxConfig{Environment: "process", Memory: 1 << 20}}},
		{"sandbox nested mount", `{"Sandbox": {"Mounts": {"/work/in": {"Source": "in"}}}}`,
			limits{Sandboxed: true, Sandbox: &SandboxConfig{Environment: "process", Mounts: []SandboxMount{{Target: "/work/in", Bucket: "in", Pointer: mounts + "~1work~1in"}}}}},
		{"sandbox mount under proc-like name", `{"Sandbox": {"Mounts": {"/process": {"Source": "p"}}}}`,
			limits{Sandboxed: true, Sandbox: &SandboxConfig{Environment: "process", Mounts: []SandboxMount{{Target: "/process", Bucket: "p", Pointer: mounts + "~1process"}}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := Parse(toolsTask(tt.tools))
			if err != nil {
				t.Fatalf("Parse(%s) = %v", tt.tools, err)
			}
			got := limitsOf(state[*Task](t, m, "T").Tools)
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Parse(%s) limits = %s, want %s", tt.tools, showLimits(got), showLimits(tt.want))
			}
		})
	}
}

func showLimits(l limits) string {
	s := fmt.Sprintf("Sandboxed %v", l.Sandboxed)
	if l.Domains != nil {
		s += fmt.Sprintf(" Domains %+v", *l.Domains)
	}
	if l.FileSystem != nil {
		s += fmt.Sprintf(" FileSystem %+v", *l.FileSystem)
	}
	if l.Sandbox != nil {
		s += fmt.Sprintf(" Sandbox %+v", *l.Sandbox)
	}
	return s
}

func TestToolLimitsRefused(t *testing.T) {
	const at = "/States/T/Tools"
	tests := []struct {
		name, tools string
		want        []string // "pointer: message", in order
	}{
		{"network", `{"Network": {"Allowed": ["x"]}}`, []string{at + `/Network: Network is not supported in Tools: it appears only in a tutorial, with no defined shape; use Domains for the hosts tools may reach, or Sandbox.Network for a sandboxed process's network`}},
		{"audit", `{"Audit": {}}`, []string{at + `/Audit: Audit is not supported in Tools: it appears only in a tutorial, with no defined shape; a Task's tool calls are recorded in the execution's history; an Audit block of the Task is planned`}},

		{"domains not object", `{"Domains": ["x"]}`, []string{at + `/Domains: Domains must be an object, not array`}},
		{"domains empty", `{"Domains": {}}`, []string{at + `/Domains: Domains needs Allowed or Denied (arrays of host patterns)`}},
		{"domains unknown field", `{"Domains": {"Denied": [], "Blocked": []}}`, []string{at + `/Domains/Blocked: unknown field "Blocked" in Domains`}},
		{"domains allowed string", `{"Domains": {"Allowed": "x.com"}}`, []string{at + `/Domains/Allowed: Allowed must be an array of host patterns, not string`}},
		{"domains entry not string", `{"Domains": {"Denied": ["a.com", 3]}}`, []string{at + `/Domains/Denied/1: Denied[1] must be a string, not number`}},
		{"domains url", `{"Domains": {"Allowed": ["a.com", "b.com", "c.com", "https://d.com"]}}`,
			[]string{at + `/Domains/Allowed/3: Allowed[3] is not a host pattern: host pattern "https://d.com": is a URL: write only the host, like api.example.com or localhost:11434`}},
		{"domains empty pattern", `{"Domains": {"Denied": [""]}}`,
			[]string{at + `/Domains/Denied/0: Denied[0] is not a host pattern: host pattern "": empty: want a host name, an IP address or a CIDR block, optionally with :PORT`}},

		{"filesystem not object", `{"FileSystem": "ro"}`, []string{at + `/FileSystem: FileSystem must be an object, not string`}},
		{"filesystem empty", `{"FileSystem": {}}`, []string{at + `/FileSystem: FileSystem needs at least one of AllowedPaths, DeniedPaths, AllowedExtensions or MaxFileSize`}},
		{"filesystem unknown only", `{"FileSystem": {"ReadOnly": true}}`, []string{
			at + `/FileSystem: FileSystem needs at least one of AllowedPaths, DeniedPaths, AllowedExtensions or MaxFileSize`,
			at + `/FileSystem/ReadOnly: unknown field "ReadOnly" in FileSystem`}},
		{"filesystem allowed empty", `{"FileSystem": {"AllowedPaths": []}}`, []string{at + `/FileSystem/AllowedPaths: AllowedPaths must list at least one glob (leave it out to allow every path under the tool's root)`}},
		{"filesystem bad globs", `{"FileSystem": {"AllowedPaths": ["/etc/*", "a//b", "a/", "./a", "a/../b", "a**", "x/**.md", "[a", "b\\", "", "ok", "ok"]}}`, []string{
			at + `/FileSystem/AllowedPaths/9: AllowedPaths[9] must not be empty`,
			at + `/FileSystem/AllowedPaths/11: AllowedPaths lists "ok" more than once`,
			at + `/FileSystem/AllowedPaths/0: AllowedPaths[0] "/etc/*" must be relative to the tool's root (no leading "/")`,
			at + `/FileSystem/AllowedPaths/1: AllowedPaths[1] "a//b" has an empty segment ("//" or a trailing "/")`,
			at + `/FileSystem/AllowedPaths/2: AllowedPaths[2] "a/" has an empty segment ("//" or a trailing "/")`,
			at + `/FileSystem/AllowedPaths/3: AllowedPaths[3] "./a" must not have a "." segment`,
			at + `/FileSystem/AllowedPaths/4: AllowedPaths[4] "a/../b" must not have a ".." segment`,
			at + `/FileSystem/AllowedPaths/5: AllowedPaths[5] "a**" has "**" inside the segment "a**": "**" must be a whole segment`,
			at + `/FileSystem/AllowedPaths/6: AllowedPaths[6] "x/**.md" has "**" inside the segment "**.md": "**" must be a whole segment`,
			at + `/FileSystem/AllowedPaths/7: AllowedPaths[7] "[a" is not a valid glob (an unclosed "[" or a trailing "\")`,
			at + `/FileSystem/AllowedPaths/8: AllowedPaths[8] "b\\" is not a valid glob (an unclosed "[" or a trailing "\")`,
		}},
		{"filesystem denied not array", `{"FileSystem": {"DeniedPaths": "secrets/**"}}`, []string{at + `/FileSystem/DeniedPaths: DeniedPaths must be an array of strings, not string`}},
		{"filesystem denied bad", `{"FileSystem": {"DeniedPaths": ["..", 7]}}`, []string{
			at + `/FileSystem/DeniedPaths/1: DeniedPaths[1] must be a string, not number`}},
		{"filesystem denied dot dot", `{"FileSystem": {"DeniedPaths": ["a", ".."]}}`, []string{
			at + `/FileSystem/DeniedPaths/1: DeniedPaths[1] ".." must not have a ".." segment`}},
		{"filesystem extensions", `{"FileSystem": {"AllowedExtensions": ["md", ".MD", ".", "a/b", "", "c\\d"]}}`, []string{
			at + `/FileSystem/AllowedExtensions/4: AllowedExtensions[4] must not be empty`,
			at + `/FileSystem/AllowedExtensions/1: AllowedExtensions lists ".md" more than once`,
			at + `/FileSystem/AllowedExtensions/2: AllowedExtensions[2] "." names no extension`,
			at + `/FileSystem/AllowedExtensions/3: AllowedExtensions[3] "a/b" must be an extension like "md" or ".md", not a path`,
			at + `/FileSystem/AllowedExtensions/5: AllowedExtensions[5] "c\\d" must be an extension like "md" or ".md", not a path`,
		}},
		{"filesystem extensions empty", `{"FileSystem": {"AllowedExtensions": []}}`, []string{at + `/FileSystem/AllowedExtensions: AllowedExtensions must list at least one extension (leave it out to allow every extension)`}},
		{"filesystem size zero", `{"FileSystem": {"MaxFileSize": 0}}`, []string{at + `/FileSystem/MaxFileSize: MaxFileSize must be a size in bytes: a positive whole number, or a string like "256K" or "1MB"`}},
		{"filesystem size words", `{"FileSystem": {"MaxFileSize": "big"}}`, []string{at + `/FileSystem/MaxFileSize: MaxFileSize must be a size in bytes: a positive whole number, or a string like "256K" or "1MB"`}},

		{"sandboxed not bool", `{"Sandboxed": "yes"}`, []string{at + `/Sandboxed: Sandboxed must be a boolean, not string`}},
		{"sandbox contradicts sandboxed", `{"Sandboxed": false, "Sandbox": {}}`, []string{at + `/Sandboxed: Sandboxed is false but Sandbox is set: a Sandbox block means the tools run sandboxed (leave Sandboxed out or set it to true)`}},
		{"sandbox not object", `{"Sandbox": true}`, []string{at + `/Sandbox: Sandbox must be an object, not boolean`}},
		{"sandbox docker", `{"Sandbox": {"Environment": "docker", "Image": "python:3.12"}}`, []string{
			at + `/Sandbox/Environment: Environment "docker" is not supported: aslrun sandboxes processes with bubblewrap ("process"); containers, WebAssembly runtimes and virtual machines are not supported`,
			at + `/Sandbox/Image: Image is not supported: it is only for Environment "docker", and aslrun runs sandboxed tools as processes over the machine's own read-only root`}},
		{"sandbox wasm", `{"Sandbox": {"Environment": "wasm"}}`, []string{at + `/Sandbox/Environment: Environment "wasm" is not supported: aslrun sandboxes processes with bubblewrap ("process"); containers, WebAssembly runtimes and virtual machines are not supported`}},
		{"sandbox vm", `{"Sandbox": {"Environment": "vm"}}`, []string{at + `/Sandbox/Environment: Environment "vm" is not supported: aslrun sandboxes processes with bubblewrap ("process"); containers, WebAssembly runtimes and virtual machines are not supported`}},
		{"sandbox unknown environment", `{"Sandbox": {"Environment": "jail"}}`, []string{at + `/Sandbox/Environment: Environment must be "process", not "jail"`}},
		{"sandbox environment type", `{"Sandbox": {"Environment": 1}}`, []string{at + `/Sandbox/Environment: Environment must be a string, not number`}},
		{"sandbox writable root", `{"Sandbox": {"ReadOnlyFS": false}}`, []string{at + `/Sandbox/ReadOnlyFS: ReadOnlyFS cannot be false: the root filesystem of a sandbox is always read-only; mount a bucket to write`}},
		{"sandbox network type", `{"Sandbox": {"Network": "on"}}`, []string{at + `/Sandbox/Network: Network must be a boolean, not string`}},
		{"sandbox memory small", `{"Sandbox": {"Memory": "512K"}}`, []string{at + `/Sandbox/Memory: Memory must be at least 1M (1048576 bytes), not 524288 bytes`}},
		{"sandbox memory bad", `{"Sandbox": {"Memory": "lots"}}`, []string{at + `/Sandbox/Memory: Memory must be a size in bytes: a positive whole number, or a string like "256K" or "1MB"`}},
		{"sandbox cpu zero", `{"Sandbox": {"CPU": 0}}`, []string{at + `/Sandbox/CPU: CPU must be a positive number of CPU seconds, or a duration like "30s", not 0`}},
		{"sandbox cpu huge", `{"Sandbox": {"CPU": 1e300}}`, []string{at + `/Sandbox/CPU: CPU must be a positive number of CPU seconds, or a duration like "30s", not 1e300`}},
		{"sandbox cpu bool", `{"Sandbox": {"CPU": true}}`, []string{at + `/Sandbox/CPU: CPU must be a positive number of CPU seconds, or a duration like "30s", not boolean`}},
		{"sandbox cpu text", `{"Sandbox": {"CPU": "half"}}`, []string{at + `/Sandbox/CPU: CPU must be a duration (bare seconds, or a whole number followed by ms, s, m, h, d or w, like "30m" or "7d", or a number of CPU seconds), not "half"`}},
		{"sandbox timeout", `{"Sandbox": {"Timeout": "0s"}}`, []string{at + `/Sandbox/Timeout: Timeout must be greater than zero, not "0s"`}},
		{"sandbox unknown field", `{"Sandbox": {"Cores": 2}}`, []string{at + `/Sandbox/Cores: unknown field "Cores" in Sandbox`}},
		{"mounts not object", `{"Sandbox": {"Mounts": ["/data"]}}`, []string{at + `/Sandbox/Mounts: Mounts (an object of target paths to mounts) must be an object, not array`}},
		{"mount targets", `{"Sandbox": {"Mounts": {"data": {"Source": "a"}, "/a/../b": {"Source": "a"}, "/": {"Source": "a"}, "/proc": {"Source": "a"}, "/dev/shm": {"Source": "a"}, "/x/": {"Source": "a"}}}}`, []string{
			at + `/Sandbox/Mounts/~1: the mount target "/" must not be the root: the root of a sandbox is the machine's, read-only`,
			at + `/Sandbox/Mounts/~1a~1..~1b: the mount target "/a/../b" must be a clean path ("/b")`,
			at + `/Sandbox/Mounts/~1dev~1shm: the mount target "/dev/shm" must not be /dev or under it: the sandbox has its own`,
			at + `/Sandbox/Mounts/~1proc: the mount target "/proc" must not be /proc or under it: the sandbox has its own`,
			at + `/Sandbox/Mounts/~1x~1: the mount target "/x/" must be a clean path ("/x")`,
			at + `/Sandbox/Mounts/data: the mount target "data" must be an absolute path inside the sandbox`,
		}},
		{"mount not object", `{"Sandbox": {"Mounts": {"/data": "corpus"}}}`, []string{at + `/Sandbox/Mounts/~1data: a mount must be an object, not string`}},
		{"mount without source", `{"Sandbox": {"Mounts": {"/data": {"ReadOnly": true}}}}`, []string{at + `/Sandbox/Mounts/~1data: missing required field Source`}},
		{"mount empty source", `{"Sandbox": {"Mounts": {"/data": {"Source": ""}}}}`, []string{at + `/Sandbox/Mounts/~1data/Source: Source must not be empty`}},
		{"mount file source", `{"Sandbox": {"Mounts": {"/data": {"Source": "file:///srv/data"}}}}`, []string{at + `/Sandbox/Mounts/~1data/Source: Source "file:///srv/data" names a local folder: a definition names a bucket, which the server's owner maps to a folder (the agents file's Buckets)`}},
		{"mount url source", `{"Sandbox": {"Mounts": {"/data": {"Source": "s3://b"}}}}`, []string{at + `/Sandbox/Mounts/~1data/Source: Source must be the name of a bucket, not "s3://b"`}},
		{"mount fields", `{"Sandbox": {"Mounts": {"/data": {"Source": "c", "ReadOnly": "yes", "Type": "bind"}}}}`, []string{
			at + `/Sandbox/Mounts/~1data/ReadOnly: ReadOnly must be a boolean, not string`,
			at + `/Sandbox/Mounts/~1data/Type: unknown field "Type" in a mount`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := Parse(toolsTask(tt.tools))
			var list ErrorList
			if !errors.As(err, &list) {
				t.Fatalf("Parse(%s) = %v, %v; want an ErrorList", tt.tools, m, err)
			}
			var got []string
			for _, e := range list {
				if e.State != "T" {
					t.Errorf("error %v names state %q, want T", e, e.State)
				}
				got = append(got, e.Pointer+": "+e.Msg)
			}
			if strings.Join(got, "\n") != strings.Join(tt.want, "\n") {
				t.Errorf("Parse(%s) errors:\n%s\nwant:\n%s", tt.tools, strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}
		})
	}
}

func TestToolLimitsInDefaultTools(t *testing.T) {
	m, err := Parse([]byte(`{"StartAt": "T", "DefaultTools": {"Network": {}, "Sandbox": {"Environment": "vm"}},
	  "States": {"T": {"Type": "Task", "Agent": "A", "End": true}}}`))
	var list ErrorList
	if !errors.As(err, &list) || len(list) != 2 {
		t.Fatalf("Parse = %v, %v; want two errors", m, err)
	}
	if got := list[0].Error(); !strings.HasPrefix(got, "/DefaultTools/Network: Network is not supported in DefaultTools: ") {
		t.Errorf("first error = %q, want Network refused in DefaultTools", got)
	}
	if got := list[1].Pointer; got != "/DefaultTools/Sandbox/Environment" {
		t.Errorf("second error at %q, want /DefaultTools/Sandbox/Environment", got)
	}
}

func TestSandboxes(t *testing.T) {
	m := mustParse(t, `{
	  "StartAt": "Own",
	  "DefaultTools": {"Sandboxed": true},
	  "States": {
	    "Own":       {"Type": "Task", "Agent": "A", "Tools": {"Sandbox": {"Mounts": {"/in": {"Source": "corpus"}}}}, "Next": "Inherits"},
	    "Inherits":  {"Type": "Task", "Agent": "A", "Next": "Plain"},
	    "Plain":     {"Type": "Task", "Agent": "A", "Tools": {"Allowed": ["x"]}, "Next": "Fan"},
	    "Fan": {"Type": "Map", "ItemProcessor": {"StartAt": "Inner", "States": {
	      "Inner": {"Type": "Task", "Agent": "A", "Tools": {"Sandboxed": true, "Domains": {"Allowed": []}}, "End": true}}}, "Next": "Both"},
	    "Both": {"Type": "Parallel", "Branches": [{"StartAt": "B", "States": {
	      "B": {"Type": "Task", "Agent": "A", "Tools": {"Sandboxed": false}, "End": true}}}], "End": true}
	  }
	}`)
	got := m.Sandboxes()
	var names, ptrs []string
	for _, u := range got {
		names = append(names, u.State)
		ptrs = append(ptrs, u.Pointer)
		if !u.Config.Sandboxed || u.Config.Sandbox == nil {
			t.Errorf("Sandboxes() lists %q with Sandboxed %v, Sandbox %v", u.State, u.Config.Sandboxed, u.Config.Sandbox)
		}
	}
	wantNames := []string{"", "Inner", "Own"}
	wantPtrs := []string{"/DefaultTools", "/States/Fan/ItemProcessor/States/Inner/Tools", "/States/Own/Tools"}
	if strings.Join(names, ",") != strings.Join(wantNames, ",") || strings.Join(ptrs, ",") != strings.Join(wantPtrs, ",") {
		t.Errorf("Sandboxes() = states %q at %q, want %q at %q", names, ptrs, wantNames, wantPtrs)
	}
	if own := got[2].Config.Sandbox; len(own.Mounts) != 1 || own.Mounts[0].Bucket != "corpus" {
		t.Errorf("Own's Sandbox = %+v, want its mount of corpus", own)
	}
	if got := mustParse(t, string(toolsTask(`{"Allowed": []}`))).Sandboxes(); got != nil {
		t.Errorf("Sandboxes() of an unsandboxed machine = %v, want nil", got)
	}
	if got := (*Machine)(nil).Sandboxes(); got != nil {
		t.Errorf("(*Machine)(nil).Sandboxes() = %v, want nil", got)
	}
}

// FuzzToolsBlock parses a Task whose Tools block is the fuzzed JSON: the
// parser must never panic, and a block it accepts keeps the invariants
// the engine relies on.
func FuzzToolsBlock(f *testing.F) {
	for _, s := range []string{
		`{"Domains": {"Allowed": ["*.example.com:443"], "Denied": ["10.0.0.0/8"]}}`,
		`{"FileSystem": {"AllowedPaths": ["notes/**"], "DeniedPaths": ["**/.git/**"], "AllowedExtensions": ["md"], "MaxFileSize": "1MB"}}`,
		`{"Sandboxed": true}`,
		`{"Sandbox": {"Network": false, "Memory": "256M", "CPU": 1.5, "Timeout": "10s", "ReadOnlyFS": true, "Mounts": {"/data": {"Source": "corpus", "ReadOnly": true}}}}`,
		`{"Sandboxed": false, "Sandbox": {"Environment": "docker", "Image": "x"}}`,
		`{"Network": {}, "Audit": 1, "Domains": {"Allowed": [""]}}`,
		`{"FileSystem": {"AllowedPaths": ["[", "a/../b", "/x", "**a"]}}`,
		`{"Sandbox": {"Mounts": {"/proc/x": {"Source": "file:///"}, "": null}}}`,
		`[]`, `null`, `{"Sandbox": {"CPU": -1e999}}`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, tools string) {
		def := toolsTask(tools)
		m, err := Parse(def)
		if err != nil {
			return
		}
		task, ok := m.States["T"].(*Task)
		if !ok || task.Tools == nil {
			return
		}
		tc := task.Tools
		if tc.Sandboxed != (tc.Sandbox != nil) {
			t.Fatalf("Parse(%s): Sandboxed %v with Sandbox %v", tools, tc.Sandboxed, tc.Sandbox)
		}
		if s := tc.Sandbox; s != nil {
			if s.Environment != "process" || s.Memory < 0 || s.CPU < 0 || s.Timeout < 0 {
				t.Fatalf("Parse(%s): Sandbox %+v", tools, *s)
			}
			for i, mt := range s.Mounts {
				if mountTargetProblem(mt.Target) != "" || mt.Bucket == "" || i > 0 && s.Mounts[i-1].Target >= mt.Target {
					t.Fatalf("Parse(%s): mount %d %+v accepted", tools, i, mt)
				}
			}
		}
		if fs := tc.FileSystem; fs != nil {
			for _, g := range append(append([]string{}, fs.AllowedPaths...), fs.DeniedPaths...) {
				if globProblem(g) != "" {
					t.Fatalf("Parse(%s): glob %q accepted", tools, g)
				}
			}
		}
		if len(m.Sandboxes()) != 0 != tc.Sandboxed {
			t.Fatalf("Parse(%s): Sandboxes() = %v with Sandboxed %v", tools, m.Sandboxes(), tc.Sandboxed)
		}
	})
}

// The engine asks a parsed machine which of its Tools blocks run their
// tools sandboxed, to refuse it on a machine that cannot sandbox and to
// check that the buckets it mounts exist.
func ExampleMachine_Sandboxes() {
	m, err := Parse([]byte(`{
	  "StartAt": "Analyse",
	  "States": {
	    "Analyse": {
	      "Type": "Task", "Agent": "analyst",
	      "Tools": {
	        "Domains": {"Allowed": ["api.example.com"]},
	        "FileSystem": {"AllowedPaths": ["reports/**"], "AllowedExtensions": ["csv"]},
	        "Sandbox": {"Memory": "256M", "CPU": 10, "Mounts": {"/data": {"Source": "corpus", "ReadOnly": true}}}
	      },
	      "End": true
	    }
	  }
	}`))
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, use := range m.Sandboxes() {
		s := use.Config.Sandbox
		fmt.Printf("%s (%s): %s, network %v, memory %d, CPU %v\n", use.State, use.Pointer, s.Environment, s.Network, s.Memory, s.CPU)
		for _, mt := range s.Mounts {
			fmt.Printf("  bucket %s at %s, read-only %v\n", mt.Bucket, mt.Target, mt.ReadOnly)
		}
	}
	// Output:
	// Analyse (/States/Analyse/Tools): process, network false, memory 268435456, CPU 10s
	//   bucket corpus at /data, read-only true
}
