package egress

import (
	"errors"
	"net/netip"
	"strings"
	"testing"
)

func TestParsePattern(t *testing.T) {
	tests := []struct {
		in   string
		want string // the canonical form
	}{
		{"api.example.com", "api.example.com"},
		{"API.Example.COM.", "api.example.com"},
		{"*.example.com", "*.example.com"},
		{"*.Example.com:443", "*.example.com:443"},
		{"localhost:11434", "localhost:11434"},
		{"my_host-1.internal", "my_host-1.internal"},
		{"10.1.2.3", "10.1.2.3"},
		{"10.1.2.3:8080", "10.1.2.3:8080"},
		{"10.0.0.0/8", "10.0.0.0/8"},
		{"10.0.0.0/8:5432", "10.0.0.0/8:5432"},
		{"::1", "::1"},
		{"[::1]", "::1"},
		{"[::1]:8080", "[::1]:8080"},
		{"fd00::/8", "fd00::/8"},
		{"[fd00::/8]:443", "[fd00::/8]:443"},
		{"::ffff:10.1.2.3", "10.1.2.3"},
		{"::ffff:10.0.0.0/104", "10.0.0.0/8"},
		{"*", "*"},
		{"*:8080", "*:8080"},
		{"example.com:65535", "example.com:65535"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			p, err := ParsePattern(tt.in)
			if err != nil {
				t.Fatalf("ParsePattern(%q) error = %v", tt.in, err)
			}
			if got := p.String(); got != tt.want {
				t.Errorf("ParsePattern(%q).String() = %q, want %q", tt.in, got, tt.want)
			}
			again, err := ParsePattern(p.String())
			if err != nil || again != p {
				t.Errorf("ParsePattern(%q) = %v, %v, want the same pattern back", p.String(), again, err)
			}
		})
	}
}

func TestParsePatternErrors(t *testing.T) {
	tests := []struct {
		in   string
		want string // a part of the message
	}{
		{"", "empty"},
		{" example.com", "white space"},
		{"http://example.com", "is a URL"},
		{"example.com:", "without a port"},
		{"example.com:0", "port \"0\""},
		{"example.com:65536", "port \"65536\""},
		{"example.com:08", "port \"08\""},
		{"example.com:+8", "port \"+8\""},
		{"example.com:http", "port \"http\""},
		{":80", "no host"},
		{"[::1", "without ']'"},
		{"[::1]80", "want :PORT"},
		{"[::1]:", "without a port"},
		{"[10.0.0.1]:80", "brackets are for IPv6"},
		{"::1:80:x", "not an IP address"},
		{"10.0.0.1/8", "write 10.0.0.0/8"},
		{"10.0.0.0/33", "not a CIDR block"},
		{"fe80::1%eth0", "zone"},
		{"127.1", "not an IP address"},
		{"0x7f.1", "not an IP address"},
		{"2130706433", "not an IP address"},
		{"host.123", "not an IP address"},
		{"a..b", "empty label"},
		{"*.", "'*' is only allowed"},
		{"*..", "has no host name"},
		{"*.a..b", "empty label"},
		{"a.*.com", "'*' is only allowed"},
		{"*example.com", "'*' is only allowed"},
		{"**.example.com", "'*' is only allowed"},
		{"bücher.de", "xn-- form"},
		{"a b.com", "holds ' '"},
		{"a/b", "not a CIDR block"},
		{strings.Repeat("a", 64) + ".com", "longer than 63"},
		{strings.Repeat("a.", 140) + "com", "longer than 253"},
		{strings.Repeat("a", 301), "longer than 300"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			p, err := ParsePattern(tt.in)
			var pe *PatternError
			if !errors.As(err, &pe) {
				t.Fatalf("ParsePattern(%q) = %v, %v, want a *PatternError", tt.in, p, err)
			}
			if pe.Pattern != tt.in || !strings.Contains(pe.Msg, tt.want) {
				t.Errorf("ParsePattern(%q) error = %v, want one about %q", tt.in, err, tt.want)
			}
		})
	}
}

func TestPatternMatches(t *testing.T) {
	ip := netip.MustParseAddr
	tests := []struct {
		pattern string
		host    string
		addr    netip.Addr
		port    uint16
		want    bool
	}{
		{"api.example.com", "api.example.com", ip("93.184.216.34"), 443, true},
		{"api.example.com", "x.api.example.com", ip("93.184.216.34"), 443, false},
		{"*.example.com", "x.api.example.com", ip("93.184.216.34"), 443, true},
		{"*.example.com", "example.com", ip("93.184.216.34"), 443, false},
		{"*.example.com", "badexample.com", ip("93.184.216.34"), 443, false},
		{"localhost:11434", "localhost", ip("127.0.0.1"), 11434, true},
		{"localhost:11434", "localhost", ip("127.0.0.1"), 11435, false},
		{"10.0.0.0/8", "db.internal", ip("10.9.8.7"), 5432, true},
		{"10.0.0.0/8", "db.internal", ip("11.0.0.1"), 5432, false},
		{"::1", "::1", ip("::1"), 80, true},
		{"127.0.0.1", "127.0.0.1", ip("::ffff:127.0.0.1").Unmap(), 80, true},
		{"*", "anything", ip("169.254.169.254"), 80, true},
		{"*:80", "anything", ip("169.254.169.254"), 81, false},
	}
	for _, tt := range tests {
		p, err := ParsePattern(tt.pattern)
		if err != nil {
			t.Fatalf("ParsePattern(%q): %v", tt.pattern, err)
		}
		if got := p.matches(tt.host, tt.addr, tt.port); got != tt.want {
			t.Errorf("%q matches (%s, %s, %d) = %t, want %t", tt.pattern, tt.host, tt.addr, tt.port, got, tt.want)
		}
	}
}

// FuzzPattern checks that ParsePattern never panics, and that a pattern
// it accepts prints as a pattern that parses back to itself.
func FuzzPattern(f *testing.F) {
	for _, s := range []string{
		"api.example.com", "*.example.com", "localhost:11434", "10.0.0.0/8", "[fd00::/8]:443",
		"::ffff:10.0.0.0/104", "*", "[::1", "127.1", "0x7f.1", "a..b", "bücher.de", "fe80::1%eth0",
		"[::ffff:1.2.3.4/120]:1", "::/0", "0.0.0.0/0:65535",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		p, err := ParsePattern(s)
		if err != nil {
			var pe *PatternError
			if !errors.As(err, &pe) || pe.Msg == "" {
				t.Fatalf("ParsePattern(%q) error = %v, want a *PatternError with a message", s, err)
			}
			return
		}
		again, err := ParsePattern(p.String())
		if err != nil || again != p {
			t.Fatalf("ParsePattern(%q) = %v, %v; want %q back from its String", p.String(), again, err, s)
		}
	})
}
