package egress

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
)

func TestSpecialRange(t *testing.T) {
	tests := []struct {
		addr string
		want string // "" for public
	}{
		{"127.0.0.1", "loopback"},
		{"127.255.0.9", "loopback"},
		{"::1", "loopback"},
		{"::ffff:127.0.0.1", "loopback"},
		{"64:ff9b::7f00:1", "loopback (behind NAT64)"},
		{"2002:7f00:1::", "loopback (behind 6to4)"},
		{"169.254.169.254", "link-local (the cloud metadata service)"},
		{"::ffff:169.254.169.254", "link-local (the cloud metadata service)"},
		{"fd00:ec2::254", "private (the cloud metadata service)"},
		{"169.254.1.1", "link-local"},
		{"fe80::1", "link-local"},
		{"fe80::1%eth0", "link-local"},
		{"10.0.0.1", "private"},
		{"172.16.0.1", "private"},
		{"172.31.255.255", "private"},
		{"192.168.1.1", "private"},
		{"::ffff:192.168.1.1", "private"},
		{"fc00::1", "private"},
		{"fd12:3456::1", "private"},
		{"fec0::1", "private"},
		{"64:ff9b:1::1", "private"},
		{"100.64.0.1", "in the shared address space (carrier-grade NAT)"},
		{"100.127.255.255", "in the shared address space (carrier-grade NAT)"},
		{"0.0.0.0", "unspecified"},
		{"0.1.2.3", "unspecified"},
		{"::", "unspecified"},
		{"::ffff:0.0.0.0", "unspecified"},
		{"224.0.0.1", "multicast"},
		{"239.255.255.250", "multicast"},
		{"ff02::1", "multicast"},
		{"255.255.255.255", "reserved"},
		{"240.0.0.1", "reserved"},
		{"192.0.0.8", "reserved"},
		{"198.18.0.1", "reserved"},
		{"2001::1", "reserved"},
		{"100::1", "reserved"},
		{"::127.0.0.1", "reserved"},
		{"4000::1", "reserved"},
		{"192.0.2.1", "reserved for documentation"},
		{"2001:db8::1", "reserved for documentation"},
		{"8.8.8.8", ""},
		{"93.184.216.34", ""},
		{"172.32.0.1", ""},
		{"100.128.0.1", ""},
		{"::ffff:8.8.8.8", ""},
		{"64:ff9b::808:808", ""},
		{"2606:4700::1111", ""},
		{"2a00:1450:4001::1", ""},
	}
	for _, tt := range tests {
		if got := SpecialRange(netip.MustParseAddr(tt.addr)); got != tt.want {
			t.Errorf("SpecialRange(%s) = %q, want %q", tt.addr, got, tt.want)
		}
	}
	if got := SpecialRange(netip.Addr{}); got != "invalid" {
		t.Errorf("SpecialRange(invalid) = %q, want invalid", got)
	}
}

func TestCheck(t *testing.T) {
	ip := netip.MustParseAddr
	tests := []struct {
		name string
		cfg  Config
		host string
		addr netip.Addr
		port uint16
		want bool
	}{
		{"public by default", Config{}, "example.com", ip("93.184.216.34"), 443, true},
		{"loopback refused", Config{}, "127.0.0.1", ip("127.0.0.1"), 80, false},
		{"mapped loopback refused", Config{}, "::ffff:127.0.0.1", ip("::ffff:127.0.0.1"), 80, false},
		{"ipv6 loopback refused", Config{}, "::1", ip("::1"), 80, false},
		{"metadata refused", Config{}, "169.254.169.254", ip("169.254.169.254"), 80, false},
		{"name resolving to private refused", Config{}, "intranet.example.com", ip("10.0.0.5"), 443, false},
		{"listed name", Config{Allow: []string{"localhost:11434"}}, "localhost", ip("127.0.0.1"), 11434, true},
		{"listed name, trailing dot and case", Config{Allow: []string{"localhost:11434"}}, "LocalHost.", ip("127.0.0.1"), 11434, true},
		{"listed name, other port", Config{Allow: []string{"localhost:11434"}}, "localhost", ip("127.0.0.1"), 22, false},
		{"listed name, other name", Config{Allow: []string{"localhost:11434"}}, "127.0.0.1", ip("127.0.0.1"), 11434, false},
		{"listed block", Config{Allow: []string{"10.0.0.0/8"}}, "db.internal", ip("10.1.2.3"), 5432, true},
		{"listed address, mapped form", Config{Allow: []string{"127.0.0.1"}}, "::ffff:127.0.0.1", ip("::ffff:127.0.0.1"), 80, true},
		{"only: public refused", Config{Only: true}, "example.com", ip("93.184.216.34"), 443, false},
		{"only: listed public", Config{Only: true, Allow: []string{"*.example.com"}}, "api.example.com", ip("93.184.216.34"), 443, true},
		{"only: listed loopback", Config{Only: true, Allow: []string{"127.0.0.1"}}, "127.0.0.1", ip("127.0.0.1"), 80, true},
		{"star", Config{Allow: []string{"*"}}, "169.254.169.254", ip("169.254.169.254"), 80, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := New(tt.cfg)
			if err != nil {
				t.Fatalf("New: %v", err)
			}
			err = p.Check(tt.host, tt.addr, tt.port)
			if tt.want && err != nil {
				t.Errorf("Check(%s, %s, %d) = %v, want nil", tt.host, tt.addr, tt.port, err)
			}
			var de *DeniedError
			if !tt.want && !errors.As(err, &de) {
				t.Errorf("Check(%s, %s, %d) = %v, want a *DeniedError", tt.host, tt.addr, tt.port, err)
			}
		})
	}
}

func TestDeniedErrorMessage(t *testing.T) {
	tests := []struct {
		err  *DeniedError
		want string
	}{
		{&DeniedError{Host: "127.0.0.1", Port: 8080, Addr: netip.MustParseAddr("127.0.0.1"), Reason: "loopback"},
			`host 127.0.0.1:8080 (127.0.0.1) is loopback and not in the allowed hosts; allow it with --allow-host 127.0.0.1:8080 or the agents file's "Hosts": {"Allow": ["127.0.0.1:8080"]}`},
		{&DeniedError{Host: "localhost", Port: 11434, Addr: netip.MustParseAddr("::1"), Reason: "loopback"},
			`host localhost:11434 (::1) is loopback and not in the allowed hosts; allow it with --allow-host localhost:11434 or the agents file's "Hosts": {"Allow": ["localhost:11434"]}`},
		{&DeniedError{Host: "::1", Port: 80, Addr: netip.MustParseAddr("::1"), Reason: "loopback"},
			`host [::1]:80 (::1) is loopback and not in the allowed hosts; allow it with --allow-host [::1]:80 or the agents file's "Hosts": {"Allow": ["[::1]:80"]}`},
		{&DeniedError{Host: "example.com", Port: 443, Addr: netip.MustParseAddr("93.184.216.34")},
			`host example.com:443 (93.184.216.34) is not in the allowed hosts, and only they may be reached; allow it with --allow-host example.com:443 or the agents file's "Hosts": {"Allow": ["example.com:443"]}`},
	}
	for _, tt := range tests {
		if got := tt.err.Error(); got != tt.want {
			t.Errorf("Error() =\n%s\nwant\n%s", got, tt.want)
		}
		// The pattern the message suggests is one, and allows the host.
		p, err := New(Config{Allow: []string{net.JoinHostPort(tt.err.Host, fmt.Sprint(tt.err.Port))}, Only: true})
		if err != nil {
			t.Fatalf("the suggested pattern: %v", err)
		}
		if err := p.Check(tt.err.Host, tt.err.Addr, tt.err.Port); err != nil {
			t.Errorf("the suggested pattern does not allow the host: %v", err)
		}
	}
}

func TestNewErrors(t *testing.T) {
	_, err := New(Config{Allow: []string{"example.com", "10.0.0.1/8"}})
	var pe *PatternError
	if !errors.As(err, &pe) || pe.Pattern != "10.0.0.1/8" || !strings.Contains(err.Error(), "allowed host 1") {
		t.Errorf("New error = %v, want a *PatternError for allowed host 1", err)
	}
}

func TestMerge(t *testing.T) {
	a := Config{Allow: []string{"a.example.com", "10.0.0.0/8"}}
	b := Config{Allow: []string{"10.0.0.0/8", "localhost:11434"}, Only: true}
	got := a.Merge(b)
	if want := "a.example.com,10.0.0.0/8,localhost:11434"; strings.Join(got.Allow, ",") != want || !got.Only {
		t.Errorf("Merge = %v only %t, want %s only true", got.Allow, got.Only, want)
	}
	if got := (Config{}).Merge(Config{}); got.Allow != nil || got.Only {
		t.Errorf("Merge of zero configs = %+v, want the zero config", got)
	}
}

// fakeNet is a resolver and a dialer that never touches the network
// unless a name resolves to loopback: names resolve as the map says,
// and dials to addresses other than loopback are recorded and fail.
type fakeNet struct {
	names  map[string][]netip.Addr
	dialed []string
}

func (f *fakeNet) lookup(_ context.Context, network, host string) ([]netip.Addr, error) {
	addrs, ok := f.names[host]
	if !ok {
		return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
	}
	return addrs, nil
}

func (f *fakeNet) dial(ctx context.Context, network, address string) (net.Conn, error) {
	f.dialed = append(f.dialed, address)
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return nil, fmt.Errorf("fake dial of %q: not an address and port", address)
	}
	if !ap.Addr().IsLoopback() {
		return nil, errors.New("fake dial: connection refused")
	}
	return (&net.Dialer{}).DialContext(ctx, network, address)
}

// TestDialRefusesBeforeConnecting checks that a refused host is refused
// before any connection is attempted, and that an allowed one is dialed
// at the address checked, never by name.
func TestDialRefusesBeforeConnecting(t *testing.T) {
	ip := netip.MustParseAddr
	tests := []struct {
		name     string
		allow    []string
		address  string
		resolves []netip.Addr
		wantDial string // "" when refused
	}{
		{"metadata literal", nil, "169.254.169.254:80", nil, ""},
		{"metadata by name", nil, "metadata.google.internal:80", []netip.Addr{ip("169.254.169.254")}, ""},
		{"private", nil, "10.0.0.1:443", nil, ""},
		{"mapped private", nil, "[::ffff:10.0.0.1]:443", nil, ""},
		{"ipv6 loopback", nil, "[::1]:80", nil, ""},
		{"mapped loopback", nil, "[::ffff:127.0.0.1]:80", nil, ""},
		{"CGNAT", nil, "100.64.1.1:80", nil, ""},
		{"unspecified", nil, "0.0.0.0:80", nil, ""},
		{"one bad address of several", nil, "mixed.example:443", []netip.Addr{ip("93.184.216.34"), ip("10.0.0.1")}, ""},
		{"public", nil, "www.example:443", []netip.Addr{ip("93.184.216.34")}, "93.184.216.34:443"},
		{"listed private block", []string{"10.0.0.0/8"}, "db.internal:5432", []netip.Addr{ip("10.1.2.3")}, "10.1.2.3:5432"},
		{"listed private name", []string{"db.internal"}, "db.internal:5432", []netip.Addr{ip("10.1.2.3")}, "10.1.2.3:5432"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			host, _, _ := net.SplitHostPort(tt.address)
			fn := &fakeNet{names: map[string][]netip.Addr{host: tt.resolves}}
			p, err := New(Config{Allow: tt.allow, LookupNetIP: fn.lookup, Dial: fn.dial})
			if err != nil {
				t.Fatalf("New: %v", err)
			}
			_, err = p.DialContext(context.Background(), "tcp", tt.address)
			var de *DeniedError
			if tt.wantDial == "" {
				if !errors.As(err, &de) {
					t.Errorf("DialContext(%s) = %v, want a *DeniedError", tt.address, err)
				}
				if len(fn.dialed) != 0 {
					t.Errorf("DialContext(%s) connected to %v before refusing", tt.address, fn.dialed)
				}
				return
			}
			if errors.As(err, &de) {
				t.Errorf("DialContext(%s) = %v, want it allowed", tt.address, err)
			}
			if len(fn.dialed) != 1 || fn.dialed[0] != tt.wantDial {
				t.Errorf("DialContext(%s) dialed %v, want [%s]", tt.address, fn.dialed, tt.wantDial)
			}
		})
	}
}

func TestDialBadAddress(t *testing.T) {
	p := &Policy{}
	for _, tc := range []struct{ network, address string }{
		{"tcp", "nohost"}, {"tcp", "example.com:http"}, {"tcp", ":80"}, {"unix", "/tmp/x:1"},
	} {
		if _, err := p.DialContext(context.Background(), tc.network, tc.address); err == nil {
			t.Errorf("DialContext(%s, %s) = nil error, want one", tc.network, tc.address)
		}
	}
}

// counting returns a test server that counts the requests it gets.
func counting(t *testing.T, h http.HandlerFunc) (*httptest.Server, *atomic.Int32) {
	t.Helper()
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		h(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv, &n
}

func get(c *http.Client, u string) (string, error) {
	resp, err := c.Get(u)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return string(b), err
}

// TestClient checks the client end to end against servers on 127.0.0.1:
// refused unless listed, directly, through a name that resolves to
// loopback (DNS rebinding) and through a redirect from a listed server.
func TestClient(t *testing.T) {
	target, hits := counting(t, func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "secret") })
	targetURL, _ := url.Parse(target.URL)
	redirector, _ := counting(t, func(w http.ResponseWriter, r *http.Request) {
		to := target.URL
		if r.URL.Path == "/by-name" {
			to = "http://rebound.example:" + targetURL.Port() + "/"
		}
		http.Redirect(w, r, to, http.StatusFound)
	})
	redirectorURL, _ := url.Parse(redirector.URL)
	names := map[string][]netip.Addr{
		// A public-looking name that resolves to loopback.
		"rebound.example": {netip.MustParseAddr("127.0.0.1")},
		"api.example":     {netip.MustParseAddr("127.0.0.1")},
	}
	lookup := (&fakeNet{names: names}).lookup
	tests := []struct {
		name    string
		allow   []string
		url     string
		want    string // the body, or "" when refused
		wantHit bool
	}{
		{name: "loopback unlisted", url: target.URL},
		{name: "loopback listed", allow: []string{targetURL.Host}, url: target.URL, want: "secret", wantHit: true},
		{name: "loopback listed without port", allow: []string{"127.0.0.1"}, url: target.URL, want: "secret", wantHit: true},
		{name: "loopback listed, other port", allow: []string{"127.0.0.1:1"}, url: target.URL},
		{name: "mapped loopback unlisted", url: "http://[::ffff:127.0.0.1]:" + targetURL.Port() + "/"},
		{name: "name resolving to loopback", url: "http://rebound.example:" + targetURL.Port() + "/"},
		{name: "listed name resolving to loopback", allow: []string{"rebound.example"}, url: "http://rebound.example:" + targetURL.Port() + "/", want: "secret", wantHit: true},
		{name: "redirect from a listed server to an unlisted port", allow: []string{redirectorURL.Host}, url: redirector.URL},
		{name: "redirect from a listed name to an unlisted port", allow: []string{"api.example:" + redirectorURL.Port()}, url: "http://api.example:" + redirectorURL.Port() + "/"},
		{name: "redirect to a name resolving to loopback", allow: []string{redirectorURL.Host}, url: redirector.URL + "/by-name"},
		{name: "redirect to a listed target", allow: []string{redirectorURL.Host, targetURL.Host}, url: redirector.URL, want: "secret", wantHit: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := hits.Load()
			p, err := New(Config{Allow: tt.allow, LookupNetIP: lookup})
			if err != nil {
				t.Fatalf("New: %v", err)
			}
			c := p.Client()
			defer c.CloseIdleConnections()
			got, err := get(c, tt.url)
			hit := hits.Load() != before
			if hit != tt.wantHit {
				t.Errorf("the target got a request: %t, want %t", hit, tt.wantHit)
			}
			if tt.want != "" {
				if err != nil || got != tt.want {
					t.Errorf("GET %s = %q, %v, want %q", tt.url, got, err, tt.want)
				}
				return
			}
			var de *DeniedError
			if !errors.As(err, &de) {
				t.Fatalf("GET %s = %q, %v, want a *DeniedError", tt.url, got, err)
			}
			if de.Addr.Unmap() != netip.MustParseAddr("127.0.0.1") || de.Reason != "loopback" {
				t.Errorf("DeniedError = %+v, want 127.0.0.1, loopback", de)
			}
		})
	}
}

// TestTransportNoProxy checks that the transport ignores proxies from the
// environment, which would reach the target out of the policy's sight.
func TestTransportNoProxy(t *testing.T) {
	t.Setenv("HTTP_PROXY", "http://proxy.example:3128")
	if tr := (&Policy{}).Transport(); tr.Proxy != nil {
		t.Error("Transport().Proxy is set, want no proxy")
	}
}

// TestDialTriesEachAddress checks that a listed name resolving to several
// addresses is dialed at each in turn until one connects.
func TestDialTriesEachAddress(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		if c, err := ln.Accept(); err == nil {
			c.Close()
		}
	}()
	port := ln.Addr().(*net.TCPAddr).Port
	fn := &fakeNet{names: map[string][]netip.Addr{"multi.internal": {netip.MustParseAddr("10.0.0.1"), netip.MustParseAddr("127.0.0.1")}}}
	p, err := New(Config{Allow: []string{"multi.internal"}, LookupNetIP: fn.lookup, Dial: fn.dial})
	if err != nil {
		t.Fatal(err)
	}
	conn, err := p.DialContext(context.Background(), "tcp", fmt.Sprintf("multi.internal:%d", port))
	if err != nil {
		t.Fatalf("DialContext: %v", err)
	}
	conn.Close()
	if want := []string{fmt.Sprintf("10.0.0.1:%d", port), fmt.Sprintf("127.0.0.1:%d", port)}; strings.Join(fn.dialed, " ") != strings.Join(want, " ") {
		t.Errorf("dialed %v, want %v", fn.dialed, want)
	}
}

func TestNarrow(t *testing.T) {
	ip := netip.MustParseAddr
	base := Config{Allow: []string{"localhost:8080"}}
	tests := []struct {
		name        string
		allow       []string
		allowListed bool
		deny        []string
		host        string
		addr        netip.Addr
		port        uint16
		want        string // "" allowed, else a part of the refusal
	}{
		{"allowed public", []string{"*.example.com"}, true, nil, "api.example.com", ip("93.184.216.34"), 443, ""},
		{"public not in Allowed", []string{"*.example.com"}, true, nil, "evil.test", ip("93.184.216.35"), 443, `it is not in Allowed [*.example.com]`},
		{"empty Allowed refuses all", nil, true, nil, "api.example.com", ip("93.184.216.34"), 443, "its Allowed list is empty"},
		{"no Allowed keeps the owner's", nil, false, nil, "api.example.com", ip("93.184.216.34"), 443, ""},
		{"denied wins", []string{"*.example.com"}, true, []string{"admin.example.com"}, "admin.example.com", ip("93.184.216.34"), 443, `it matches Denied "admin.example.com"`},
		{"denied by address", nil, false, []string{"93.184.216.0/24"}, "www.example.org", ip("93.184.216.34"), 443, `Denied "93.184.216.0/24"`},
		{"cannot widen: loopback the owner did not allow", []string{"127.0.0.1"}, true, nil, "127.0.0.1", ip("127.0.0.1"), 9000, "is loopback"},
		{"owner's loopback kept when listed", []string{"localhost"}, true, nil, "localhost", ip("127.0.0.1"), 8080, ""},
		{"owner's loopback narrowed away", []string{"*.example.com"}, true, nil, "localhost", ip("127.0.0.1"), 8080, "not in Allowed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := New(base)
			if err != nil {
				t.Fatal(err)
			}
			n, err := p.Narrow("the Domains of state 'S'", tt.allow, tt.allowListed, tt.deny)
			if err != nil {
				t.Fatalf("Narrow: %v", err)
			}
			err = n.Check(tt.host, tt.addr, tt.port)
			if tt.want == "" {
				if err != nil {
					t.Fatalf("Check = %v, want nil", err)
				}
				return
			}
			var de *DeniedError
			if !errors.As(err, &de) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Check = %v, want a *DeniedError containing %q", err, tt.want)
			}
			// The original policy is not changed by narrowing it.
			if tt.name == "owner's loopback narrowed away" {
				if err := p.Check(tt.host, tt.addr, tt.port); err != nil {
					t.Fatalf("the narrowed policy changed the original: %v", err)
				}
			}
		})
	}
	if _, err := (&Policy{}).Narrow("x", []string{"bad host/"}, true, nil); err == nil || !strings.Contains(err.Error(), "Allowed 0") {
		t.Fatalf("Narrow with a bad pattern = %v, want an error naming Allowed 0", err)
	}
	var nilPolicy *Policy
	n, err := nilPolicy.Narrow("x", nil, false, []string{"example.com"})
	if err != nil {
		t.Fatal(err)
	}
	if err := n.Check("example.com", ip("93.184.216.34"), 443); err == nil {
		t.Fatal("a narrowed nil policy allowed a denied host")
	}
	if err := n.Check("127.0.0.1", ip("127.0.0.1"), 80); err == nil {
		t.Fatal("a narrowed nil policy allowed loopback, which the default policy refuses")
	}
}

// TestNarrowRefusesNamesBeforeDNS: a name a narrowing refuses whatever it
// resolves to is refused without a lookup (the name never reaches DNS);
// one it may allow is looked up and checked.
func TestNarrowRefusesNamesBeforeDNS(t *testing.T) {
	var looked []string
	p, err := New(Config{LookupNetIP: func(_ context.Context, _, host string) ([]netip.Addr, error) {
		looked = append(looked, host)
		return []netip.Addr{netip.MustParseAddr("93.184.216.34")}, nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name        string
		allow, deny []string
		host        string
		lookup      bool
		refused     string
	}{
		{"not in name-only Allowed", []string{"*.example.com", "docs.python.org"}, nil, "leak.attacker.test", false, "is refused by D: it is not in Allowed"},
		{"denied name", nil, []string{"*.attacker.test"}, "x.attacker.test", false, `Denied "*.attacker.test"`},
		{"allowed name", []string{"*.example.com"}, nil, "api.example.com", true, ""},
		{"an address pattern needs the lookup", []string{"93.184.216.0/24"}, nil, "www.example.org", true, ""},
		{"a denied block needs the lookup", nil, []string{"93.184.216.0/24"}, "www.example.org", true, `Denied "93.184.216.0/24"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			looked = nil
			n, err := p.Narrow("D", tc.allow, tc.allow != nil, tc.deny)
			if err != nil {
				t.Fatal(err)
			}
			_, err = n.Resolve(context.Background(), "tcp", tc.host, 443)
			if (len(looked) > 0) != tc.lookup {
				t.Errorf("looked up %v, want a lookup: %v", looked, tc.lookup)
			}
			if tc.refused == "" && err != nil || tc.refused != "" && (err == nil || !strings.Contains(err.Error(), tc.refused)) {
				t.Errorf("Resolve = %v, want %q", err, tc.refused)
			}
		})
	}
}
