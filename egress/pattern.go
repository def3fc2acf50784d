package egress

import (
	"fmt"
	"net/netip"
	"strconv"
	"strings"
)

// maxPatternLen is the longest pattern ParsePattern accepts: a host name
// of 253 characters, a port and a little more.
const maxPatternLen = 300

// Pattern is one entry of an allow-list: a host name (exact or wildcard),
// an IP address or CIDR block, or "*", with an optional port (see the
// package comment). The zero Pattern matches nothing. A Pattern is
// immutable and safe for concurrent use.
type Pattern struct {
	// kind says which of name, prefix is set.
	kind patternKind
	// name is the lower-case host name; for a wildcard, the suffix
	// after "*." (so "example.com" for "*.example.com").
	name string
	// prefix is the address block (a single address is a full-length
	// prefix), IPv4-mapped addresses unmapped.
	prefix netip.Prefix
	// port is the port the pattern is limited to; 0 means any.
	port uint16
}

type patternKind uint8

const (
	kindNone patternKind = iota
	kindName
	kindWildcard
	kindPrefix
	kindAny
)

// PatternError reports a pattern that cannot be parsed.
type PatternError struct {
	// Pattern is the text as given.
	Pattern string
	// Msg says what is wrong with it.
	Msg string
}

// Error returns "host pattern "TEXT": MSG".
func (e *PatternError) Error() string {
	return fmt.Sprintf("host pattern %q: %s", e.Pattern, e.Msg)
}

// ParsePattern parses one allow-list pattern (see the package comment):
// "api.example.com", "*.example.com", "10.0.0.0/8", "::1", "*", each
// optionally with ":PORT" ("[IPv6]:PORT" for IPv6). The error is a
// *PatternError saying what is wrong.
func ParsePattern(s string) (Pattern, error) {
	p, msg := parsePattern(s)
	if msg != "" {
		return Pattern{}, &PatternError{Pattern: s, Msg: msg}
	}
	return p, nil
}

// parsePattern returns the pattern, or a message saying why s is not one.
func parsePattern(s string) (Pattern, string) {
	switch {
	case s == "":
		return Pattern{}, "empty: want a host name, an IP address or a CIDR block, optionally with :PORT"
	case len(s) > maxPatternLen:
		return Pattern{}, fmt.Sprintf("longer than %d characters", maxPatternLen)
	case strings.TrimSpace(s) != s:
		return Pattern{}, "has white space around it"
	case strings.Contains(s, "://"):
		return Pattern{}, "is a URL: write only the host, like api.example.com or localhost:11434"
	}
	host, port := s, ""
	if rest, ok := strings.CutPrefix(s, "["); ok {
		end := strings.IndexByte(rest, ']')
		if end < 0 {
			return Pattern{}, "has '[' without ']'"
		}
		host, port = rest[:end], rest[end+1:]
		if port != "" {
			p, ok := strings.CutPrefix(port, ":")
			if !ok {
				return Pattern{}, "want :PORT after ']'"
			}
			port = p
			if port == "" {
				return Pattern{}, "has ':' without a port"
			}
		}
		if !strings.Contains(host, ":") {
			return Pattern{}, "brackets are for IPv6 addresses; write an IPv4 address or a name without them"
		}
	} else if strings.Count(s, ":") == 1 {
		host, port, _ = strings.Cut(s, ":")
		if port == "" {
			return Pattern{}, "has ':' without a port"
		}
	}
	var p Pattern
	if port != "" {
		n, err := strconv.ParseUint(port, 10, 16)
		if err != nil || n == 0 || port[0] == '0' || port[0] == '+' {
			return Pattern{}, fmt.Sprintf("port %q: want a number from 1 to 65535", port)
		}
		p.port = uint16(n)
	}
	if host == "" {
		return Pattern{}, "has a port but no host"
	}
	switch {
	case host == "*":
		p.kind = kindAny
	case strings.Contains(host, "/"):
		prefix, err := netip.ParsePrefix(host)
		if err != nil {
			return Pattern{}, fmt.Sprintf("not a CIDR block: %v", stripQuoted(err))
		}
		if prefix.Addr().Zone() != "" {
			return Pattern{}, "an address block has no zone"
		}
		if prefix.Masked() != prefix {
			return Pattern{}, fmt.Sprintf("%s has bits set past its prefix length: write %s", host, prefix.Masked())
		}
		p.kind, p.prefix = kindPrefix, unmapPrefix(prefix)
	case strings.Contains(host, ":") || isNumericHost(host):
		addr, err := netip.ParseAddr(host)
		if err != nil {
			if strings.Contains(host, ":") && port == "" && !strings.HasPrefix(s, "[") {
				return Pattern{}, fmt.Sprintf("not an IP address: %v (write an IPv6 address with a port as [ADDR]:PORT)", stripQuoted(err))
			}
			return Pattern{}, fmt.Sprintf("not an IP address: %v (write IPv4 addresses as four decimal numbers, like 10.0.0.1)", stripQuoted(err))
		}
		if addr.Zone() != "" {
			return Pattern{}, "write the address without its zone (%…)"
		}
		addr = addr.Unmap()
		p.kind, p.prefix = kindPrefix, netip.PrefixFrom(addr, addr.BitLen())
	default:
		name, wildcard := strings.CutPrefix(strings.ToLower(strings.TrimSuffix(host, ".")), "*.")
		if msg := checkName(name); msg != "" {
			return Pattern{}, msg
		}
		p.kind, p.name = kindName, name
		if wildcard {
			p.kind = kindWildcard
		}
	}
	return p, ""
}

// unmapPrefix makes a block within ::ffff:0:0/96 the IPv4 block it maps.
func unmapPrefix(p netip.Prefix) netip.Prefix {
	if a := p.Addr(); a.Is4In6() && p.Bits() >= 96 {
		return netip.PrefixFrom(a.Unmap(), p.Bits()-96)
	}
	return p
}

// isNumericHost reports whether the last label of host is all digits (or
// hexadecimal with 0x), which makes it an IPv4 address in some form, not
// a name (as URL parsers hold).
func isNumericHost(host string) bool {
	host = strings.TrimSuffix(host, ".")
	last := host[strings.LastIndexByte(host, '.')+1:]
	if h, ok := strings.CutPrefix(strings.ToLower(last), "0x"); ok {
		last = h
		if last == "" {
			return true
		}
		return strings.Trim(last, "0123456789abcdef") == ""
	}
	return last != "" && strings.Trim(last, "0123456789") == ""
}

// checkName checks a host name (lower case, without "*." or a trailing
// dot): labels of letters, digits, '-' and '_', 1 to 63 long, 253 in all.
func checkName(name string) string {
	if name == "" {
		return "has no host name"
	}
	if len(name) > 253 {
		return "the host name is longer than 253 characters"
	}
	for label := range strings.SplitSeq(name, ".") {
		if label == "" {
			return "the host name has an empty label"
		}
		if len(label) > 63 {
			return "a label of the host name is longer than 63 characters"
		}
		for _, c := range []byte(label) {
			switch {
			case c >= 'a' && c <= 'z', c >= '0' && c <= '9', c == '-', c == '_':
			case c == '*':
				return "'*' is only allowed as the whole first label, as in *.example.com"
			case c >= 0x80:
				return "write an international host name in its xn-- form"
			default:
				return fmt.Sprintf("the host name holds %q", c)
			}
		}
	}
	if isNumericHost(name) {
		return "the last label is a number, which makes it an IP address: write the address as four decimal numbers, like 10.0.0.1"
	}
	return ""
}

// stripQuoted shortens netip's messages, which quote the whole input.
func stripQuoted(err error) string {
	msg := err.Error()
	if _, after, ok := strings.Cut(msg, "): "); ok {
		return after
	}
	if _, after, ok := strings.Cut(msg, ": "); ok && strings.HasPrefix(msg, "netip.") {
		return after
	}
	return msg
}

// String returns the pattern in its canonical form, which ParsePattern
// parses back to the same pattern.
func (p Pattern) String() string {
	var host string
	switch p.kind {
	case kindAny:
		host = "*"
	case kindName:
		host = p.name
	case kindWildcard:
		host = "*." + p.name
	case kindPrefix:
		if p.prefix.IsSingleIP() {
			host = p.prefix.Addr().String()
		} else {
			host = p.prefix.String()
		}
		if p.prefix.Addr().Is6() && p.port != 0 {
			host = "[" + host + "]"
		}
	default:
		return ""
	}
	if p.port != 0 {
		return host + ":" + strconv.Itoa(int(p.port))
	}
	return host
}

// matches reports whether the pattern allows a connection to host (the
// name as written, lower case, no trailing dot; or an IP literal) at
// addr (unmapped, without zone) and port.
func (p Pattern) matches(host string, addr netip.Addr, port uint16) bool {
	if p.port != 0 && p.port != port {
		return false
	}
	switch p.kind {
	case kindAny:
		return true
	case kindName:
		return host == p.name
	case kindWildcard:
		return strings.HasSuffix(host, "."+p.name)
	case kindPrefix:
		return addr.IsValid() && p.prefix.Contains(addr)
	}
	return false
}
