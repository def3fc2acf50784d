package builtin

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"

	asl "github.com/aslrun/aslrun"
	"github.com/aslrun/aslrun/agents"
	"github.com/aslrun/aslrun/egress"
	"github.com/aslrun/aslrun/jsonvalue"
)

// target is a test server on 127.0.0.1 that counts its requests.
func target(t *testing.T, h http.HandlerFunc) (*httptest.Server, *atomic.Int32) {
	t.Helper()
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		h(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv, &n
}

func hostOf(u string) string { return strings.TrimPrefix(u, "http://") }

// TestHostsRefused checks that the http and llm agents reach loopback
// only when it is listed: directly, through a name resolving to it (DNS
// rebinding) and through a redirect from a listed host; a refusal is
// States.Permissions naming the host and how to allow it, and the
// refused server gets no request.
func TestHostsRefused(t *testing.T) {
	secret, hits := target(t, func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, `{"choices": [{"message": {"role": "assistant", "content": "secret"}}]}`)
	})
	redirector, _ := target(t, func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, secret.URL+r.URL.Path, http.StatusTemporaryRedirect)
	})
	rebound := func(_ context.Context, _, host string) ([]netip.Addr, error) {
		if host == "public.example" {
			return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil
		}
		return nil, errors.New("no such host")
	}
	policy := func(allow ...string) *egress.Policy {
		p, err := egress.New(egress.Config{Allow: allow, LookupNetIP: rebound})
		if err != nil {
			t.Fatalf("egress.New: %v", err)
		}
		return p
	}
	_, port, _ := strings.Cut(hostOf(secret.URL), ":")
	tests := []struct {
		name  string
		url   string
		hosts *egress.Policy
		want  string // the refused host and port, "" when allowed
	}{
		{"default policy", secret.URL, nil, hostOf(secret.URL)},
		{"listed", secret.URL, policy(hostOf(secret.URL)), ""},
		{"ipv4-mapped form", "http://[::ffff:127.0.0.1]:" + port, nil, "[::ffff:127.0.0.1]:" + port},
		{"name resolving to loopback", "http://public.example:" + port, policy(), "public.example:" + port},
		{"redirect from a listed host", redirector.URL, policy(hostOf(redirector.URL)), hostOf(secret.URL)},
	}
	for _, tt := range tests {
		for _, kind := range []string{"http", "llm"} {
			t.Run(tt.name+"/"+kind, func(t *testing.T) {
				var a agents.Agent
				var err error
				if kind == "http" {
					a, err = HTTP(HTTPConfig{URL: tt.url, Hosts: tt.hosts})
				} else {
					a, err = LLM(LLMConfig{BaseURL: tt.url, Model: "m", Hosts: tt.hosts, MaxRetries: 5})
				}
				if err != nil {
					t.Fatalf("%s: %v", kind, err)
				}
				before := hits.Load()
				_, err = a.Invoke(context.Background(), &agents.Request{Agent: "A", Input: "hi"})
				hit := hits.Load() - before
				if tt.want == "" {
					if err != nil || hit != 1 {
						t.Errorf("Invoke = %v with %d requests, want it to reach the server once", err, hit)
					}
					return
				}
				if hit != 0 {
					t.Errorf("the refused server got %d requests", hit)
				}
				if errName(err) != asl.ErrPermissions {
					t.Fatalf("Invoke error = %v, want States.Permissions", err)
				}
				var de *egress.DeniedError
				if !errors.As(err, &de) {
					t.Errorf("Invoke error = %v, want it to wrap an *egress.DeniedError", err)
				}
				if cause := errCause(err); !strings.Contains(cause, "host "+tt.want+" (127.0.0.1) is loopback") || !strings.Contains(cause, "--allow-host "+tt.want) {
					t.Errorf("cause = %q, want it to name host %s, its address and --allow-host", cause, tt.want)
				}
				if cause := errCause(err); strings.Contains(cause, "attempts") {
					t.Errorf("cause = %q: the refusal was retried", cause)
				}
			})
		}
	}
}

// TestAgentsFileHosts checks the agents file's Hosts: what it lists is
// reached, what it does not is refused, WithHosts adds the owner's
// patterns, and Resolved stores the merged list.
func TestAgentsFileHosts(t *testing.T) {
	srv, _ := target(t, func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, `{"ok": true}`) })
	call := func(t *testing.T, f *AgentsFile) error {
		t.Helper()
		reg := agents.NewRegistry()
		if err := f.Register(reg, t.TempDir(), slog.New(slog.DiscardHandler)); err != nil {
			t.Fatalf("Register: %v", err)
		}
		a, _ := reg.Lookup("Hook")
		_, err := a.Invoke(context.Background(), &agents.Request{Agent: "Hook", Input: map[string]any{}})
		return err
	}
	hook := `"Hook": {"Type": "http", "URL": "` + srv.URL + `"}`
	bare, err := ParseAgentsFile([]byte(`{` + hook + `}`))
	if err != nil {
		t.Fatalf("ParseAgentsFile: %v", err)
	}
	if err := call(t, bare); errName(err) != asl.ErrPermissions {
		t.Errorf("without Hosts: Invoke error = %v, want States.Permissions", err)
	}
	listed, err := ParseAgentsFile([]byte(`{` + hook + `, "Hosts": {"Allow": ["` + hostOf(srv.URL) + `"], "Comment": "the local hook"}}`))
	if err != nil {
		t.Fatalf("ParseAgentsFile: %v", err)
	}
	if err := call(t, listed); err != nil {
		t.Errorf("listed in Hosts: Invoke error = %v, want none", err)
	}
	only, err := ParseAgentsFile([]byte(`{` + hook + `, "Hosts": {"Allow": ["` + hostOf(srv.URL) + `"], "Only": true}}`))
	if err != nil {
		t.Fatalf("ParseAgentsFile: %v", err)
	}
	if err := call(t, only); err != nil {
		t.Errorf("listed with Only: Invoke error = %v, want none", err)
	}

	// The owner's patterns join the file's.
	widened, err := bare.WithHosts(egress.Config{Allow: []string{"127.0.0.1"}, Only: true})
	if err != nil {
		t.Fatalf("WithHosts: %v", err)
	}
	if err := call(t, widened); err != nil {
		t.Errorf("WithHosts 127.0.0.1: Invoke error = %v, want none", err)
	}
	if err := call(t, bare); errName(err) != asl.ErrPermissions {
		t.Errorf("WithHosts changed the file it was called on: Invoke error = %v, want States.Permissions", err)
	}
	if _, err := bare.WithHosts(egress.Config{Allow: []string{"http://x"}}); err == nil {
		t.Error("WithHosts with a bad pattern: no error")
	}
	both, err := listed.WithHosts(egress.Config{Allow: []string{"10.0.0.0/8", hostOf(srv.URL)}})
	if err != nil {
		t.Fatalf("WithHosts: %v", err)
	}
	if got, want := strings.Join(both.Hosts().Allow, " "), hostOf(srv.URL)+" 10.0.0.0/8"; got != want || both.Hosts().Only {
		t.Errorf("Hosts() = %q only %t, want %q only false", got, both.Hosts().Only, want)
	}

	// Resolved stores the merged list, which a rebuilt file applies.
	stored, err := widened.Resolved(t.TempDir())
	if err != nil {
		t.Fatalf("Resolved: %v", err)
	}
	v, err := jsonvalue.Decode(stored)
	if err != nil {
		t.Fatalf("Resolved is not JSON: %v", err)
	}
	hosts, _ := jsonvalue.Marshal(v.(map[string]any)[HostsKey])
	if want := `{"Allow":["127.0.0.1"],"Only":true}`; string(hosts) != want {
		t.Errorf("Resolved Hosts = %s, want %s", hosts, want)
	}
	rebuilt, err := ParseAgentsFile(stored)
	if err != nil {
		t.Fatalf("ParseAgentsFile(Resolved): %v", err)
	}
	if err := call(t, rebuilt); err != nil {
		t.Errorf("rebuilt from Resolved: Invoke error = %v, want none", err)
	}
	if plain, err := bare.Resolved(t.TempDir()); err != nil || strings.Contains(string(plain), HostsKey) {
		t.Errorf("Resolved without Hosts = %s, %v, want no Hosts key", plain, err)
	}
}

// TestHostsMetadataRefused checks that the cloud metadata service is
// refused by the default policy before any connection is attempted (the
// test's dialer would fail the test, and never connects).
func TestHostsMetadataRefused(t *testing.T) {
	noDial := func(_ context.Context, network, address string) (net.Conn, error) {
		t.Errorf("dialed %s %s, want the refusal before any connection", network, address)
		return nil, errors.New("no connection in this test")
	}
	p, err := egress.New(egress.Config{Dial: noDial})
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range []string{"http://169.254.169.254/latest/meta-data/", "http://[::ffff:169.254.169.254]/", "http://[fd00:ec2::254]/"} {
		a, err := HTTP(HTTPConfig{URL: u, Hosts: p})
		if err != nil {
			t.Fatalf("HTTP: %v", err)
		}
		_, err = a.Invoke(context.Background(), &agents.Request{Agent: "A", Input: map[string]any{}})
		if errName(err) != asl.ErrPermissions || !strings.Contains(errCause(err), "(the cloud metadata service) and not in the allowed hosts") {
			t.Errorf("POST %s: %v, want States.Permissions naming the cloud metadata service", u, err)
		}
	}
}
