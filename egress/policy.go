package egress

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"time"
)

// maxRedirects is how many redirects Policy.Client follows, as
// net/http's default client does.
const maxRedirects = 10

// dialTimeout limits each connection attempt of the default dialer.
const dialTimeout = 30 * time.Second

// minAttempt is the least time a connection attempt to one of several
// addresses gets before the next address is tried.
const minAttempt = 2 * time.Second

// Config configures a Policy. The zero Config is the default policy:
// loopback, private, link-local and other special addresses refused,
// public addresses allowed.
type Config struct {
	// Allow lists the hosts and addresses that may be reached although
	// they are not public, or, with Only, the only ones that may be
	// reached (see ParsePattern for the forms).
	Allow []string
	// Only, when true, refuses every host and address that Allow does
	// not list, public ones included. False allows public addresses.
	Only bool
	// LookupNetIP resolves host names; nil means
	// net.DefaultResolver.LookupNetIP. Tests set it to resolve a name to
	// an address of their choice.
	LookupNetIP func(ctx context.Context, network, host string) ([]netip.Addr, error)
	// Dial connects to an address the policy checked (always an IP
	// address and a port); nil means a net.Dialer with a 30 s timeout.
	Dial func(ctx context.Context, network, address string) (net.Conn, error)
}

// Merge returns the policy configuration that allows what c and other
// both allow: the union of their Allow lists (c's first, duplicates
// dropped), Only when either is Only. The resolver and dialer are c's,
// or other's when c has none.
func (c Config) Merge(other Config) Config {
	out := Config{Only: c.Only || other.Only, LookupNetIP: c.LookupNetIP, Dial: c.Dial}
	for _, s := range slices.Concat(c.Allow, other.Allow) {
		if !slices.Contains(out.Allow, s) {
			out.Allow = append(out.Allow, s)
		}
	}
	if out.LookupNetIP == nil {
		out.LookupNetIP = other.LookupNetIP
	}
	if out.Dial == nil {
		out.Dial = other.Dial
	}
	return out
}

// Policy decides which hosts and addresses outbound connections may
// reach, and makes the connections (see the package comment). Build one
// with New; the zero Policy is the default policy of the zero Config. A
// Policy is immutable and safe for concurrent use.
type Policy struct {
	allow []Pattern
	only  bool
	// narrow are the narrowings (Narrow) a connection must pass too, in
	// the order they were made.
	narrow []narrowing
	lookup func(ctx context.Context, network, host string) ([]netip.Addr, error)
	dial   func(ctx context.Context, network, address string) (net.Conn, error)
}

// New builds the policy cfg describes. The error is a *PatternError
// naming the first pattern of cfg.Allow that cannot be parsed, wrapped
// with its index.
func New(cfg Config) (*Policy, error) {
	p := &Policy{only: cfg.Only, lookup: cfg.LookupNetIP, dial: cfg.Dial}
	for i, s := range cfg.Allow {
		pat, err := ParsePattern(s)
		if err != nil {
			return nil, fmt.Errorf("allowed host %d: %w", i, err)
		}
		p.allow = append(p.allow, pat)
	}
	return p, nil
}

// Only reports whether the policy reaches only the hosts it lists.
func (p *Policy) Only() bool { return p.only }

// Allowed returns the policy's patterns, in their canonical form.
func (p *Policy) Allowed() []string {
	out := make([]string, len(p.allow))
	for i, pat := range p.allow {
		out[i] = pat.String()
	}
	return out
}

// narrowing is one Narrow of a policy.
type narrowing struct {
	what        string
	allow, deny []Pattern
	allowListed bool
}

// refuses says why the narrowing refuses a connection, or "".
func (n narrowing) refuses(host string, addr netip.Addr, port uint16) string {
	for _, pat := range n.deny {
		if pat.matches(host, addr, port) {
			return fmt.Sprintf("%s: it matches Denied %q", n.what, pat.String())
		}
	}
	if !n.allowListed {
		return ""
	}
	for _, pat := range n.allow {
		if pat.matches(host, addr, port) {
			return ""
		}
	}
	if len(n.allow) == 0 {
		return n.what + ": its Allowed list is empty"
	}
	return fmt.Sprintf("%s: it is not in Allowed %v", n.what, patternTexts(n.allow))
}

func patternTexts(ps []Pattern) []string {
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = p.String()
	}
	return out
}

// refusesName says why the narrowing refuses host at port whatever it
// resolves to, or "" when that depends on its addresses: a Denied name
// pattern matches it, or it matches no Allowed pattern and every Allowed
// pattern is a name (so no address could match). Resolve asks this
// before looking host up, so a refused name is never sent to DNS.
func (n narrowing) refusesName(host string, port uint16) string {
	for _, pat := range n.deny {
		if (pat.kind == kindName || pat.kind == kindWildcard || pat.kind == kindAny) && pat.matches(host, netip.Addr{}, port) {
			return fmt.Sprintf("%s: it matches Denied %q", n.what, pat.String())
		}
	}
	if !n.allowListed {
		return ""
	}
	for _, pat := range n.allow {
		if pat.kind == kindPrefix || pat.matches(host, netip.Addr{}, port) {
			return ""
		}
	}
	return n.refuses(host, netip.Addr{}, port)
}

// Narrow returns a policy that allows only what p allows and the
// narrowing allows too: when allowListed, a host (by its name as written
// or its address, as Config.Allow matches) must match one of allow (none
// when allow is empty); and it must match none of deny. A narrowing can
// never allow what p refuses (a nil p is the default policy). what names the narrowing in a refusal's
// message (e.g. "the Domains of state 'Research'"). The error is a
// *PatternError wrapped with the list and index of the pattern that
// cannot be parsed.
func (p *Policy) Narrow(what string, allow []string, allowListed bool, deny []string) (*Policy, error) {
	n := narrowing{what: what, allowListed: allowListed}
	for _, list := range []struct {
		name string
		in   []string
		out  *[]Pattern
	}{{"Allowed", allow, &n.allow}, {"Denied", deny, &n.deny}} {
		for i, s := range list.in {
			pat, err := ParsePattern(s)
			if err != nil {
				return nil, fmt.Errorf("%s %d: %w", list.name, i, err)
			}
			*list.out = append(*list.out, pat)
		}
	}
	var q Policy
	if p != nil {
		q = *p
	}
	q.narrow = append(slices.Clip(q.narrow), n)
	return &q, nil
}

// DeniedError reports a connection the policy refused.
type DeniedError struct {
	// Host is the host as the caller named it: a name or an IP address.
	Host string
	// Port is the port of the connection.
	Port uint16
	// Addr is the address Host resolved to that was refused, an
	// IPv4-mapped IPv6 address as its IPv4 address, without a zone.
	Addr netip.Addr
	// Reason is why Addr is special (SpecialRange), or "" for a public
	// address refused because the policy is Only.
	Reason string
	// Narrowed, when not empty, says which narrowing of the policy
	// (Narrow) refused the host; the policy itself may have allowed it.
	// Addr is then the zero Addr when the host was refused by its name,
	// before it was looked up.
	Narrowed string
}

// Error names the host, the address, why it was refused and how to
// allow it.
func (e *DeniedError) Error() string {
	hostPort := net.JoinHostPort(e.Host, strconv.Itoa(int(e.Port)))
	if e.Narrowed != "" && !e.Addr.IsValid() {
		return fmt.Sprintf("host %s is refused by %s", hostPort, e.Narrowed)
	}
	if e.Narrowed != "" {
		return fmt.Sprintf("host %s (%s) is refused by %s", hostPort, e.Addr, e.Narrowed)
	}
	why := "is not in the allowed hosts, and only they may be reached"
	if e.Reason != "" {
		why = "is " + e.Reason + " and not in the allowed hosts"
	}
	return fmt.Sprintf("host %s (%s) %s; allow it with --allow-host %s or the agents file's \"Hosts\": {\"Allow\": [%q]}",
		hostPort, e.Addr, why, hostPort, hostPort)
}

// Check decides whether a connection to host (a name as written, or an
// IP literal) resolved to addr, at port, is allowed: nil, or a
// *DeniedError.
func (p *Policy) Check(host string, addr netip.Addr, port uint16) error {
	name := strings.ToLower(strings.TrimSuffix(host, "."))
	a := addr.WithZone("").Unmap()
	for _, n := range p.narrow {
		if why := n.refuses(name, a, port); why != "" {
			return &DeniedError{Host: host, Port: port, Addr: a, Narrowed: why}
		}
	}
	for _, pat := range p.allow {
		if pat.matches(name, a, port) {
			return nil
		}
	}
	reason := SpecialRange(a)
	if reason == "" && !p.only {
		return nil
	}
	return &DeniedError{Host: host, Port: port, Addr: a, Reason: reason}
}

// Resolve resolves host (a name or an IP literal; network is "tcp",
// "tcp4", "tcp6", "udp", "udp4" or "udp6") and checks every address it
// resolves to at port. It returns the addresses when all are allowed,
// and otherwise a *DeniedError for the first refused.
func (p *Policy) Resolve(ctx context.Context, network, host string, port uint16) ([]netip.Addr, error) {
	ipNet, err := ipNetwork(network)
	if err != nil {
		return nil, err
	}
	if host == "" {
		return nil, errors.New("egress: the address has no host")
	}
	var addrs []netip.Addr
	if a, err := netip.ParseAddr(host); err == nil {
		addrs = []netip.Addr{a}
	} else {
		name := strings.ToLower(strings.TrimSuffix(host, "."))
		for _, n := range p.narrow {
			if why := n.refusesName(name, port); why != "" {
				return nil, &DeniedError{Host: host, Port: port, Narrowed: why}
			}
		}
		lookup := p.lookup
		if lookup == nil {
			lookup = net.DefaultResolver.LookupNetIP
		}
		if addrs, err = lookup(ctx, ipNet, host); err != nil {
			return nil, err
		}
		if len(addrs) == 0 {
			return nil, fmt.Errorf("egress: host %s resolved to no address", host)
		}
	}
	for _, a := range addrs {
		if err := p.Check(host, a, port); err != nil {
			return nil, err
		}
	}
	return addrs, nil
}

// ipNetwork returns the lookup network of a dial network.
func ipNetwork(network string) (string, error) {
	switch network {
	case "tcp", "udp":
		return "ip", nil
	case "tcp4", "udp4":
		return "ip4", nil
	case "tcp6", "udp6":
		return "ip6", nil
	}
	return "", fmt.Errorf("egress: network %q is not an IP network", network)
}

// DialContext connects to address ("host:port", the port a number) on
// network, as net.Dialer.DialContext does, once Resolve allowed every
// address host resolves to: it dials those addresses in turn, never the
// name, so the address connected to is one that was checked (as
// net.Dialer does, an attempt while more addresses remain gets its share
// of dialTimeout, at least 2 s). A refused host is a *DeniedError,
// returned before any connection is attempted.
func (p *Policy) DialContext(ctx context.Context, network, address string) (net.Conn, error) {
	host, portText, err := net.SplitHostPort(address)
	if err != nil {
		return nil, fmt.Errorf("egress: %w", err)
	}
	port, err := strconv.ParseUint(portText, 10, 16)
	if err != nil {
		return nil, fmt.Errorf("egress: address %q: the port is not a number from 0 to 65535", address)
	}
	addrs, err := p.Resolve(ctx, network, host, uint16(port))
	if err != nil {
		return nil, err
	}
	dial := p.dial
	if dial == nil {
		dial = (&net.Dialer{Timeout: dialTimeout, KeepAlive: dialTimeout}).DialContext
	}
	var first error
	for i, a := range addrs {
		attemptCtx, cancel := ctx, context.CancelFunc(func() {})
		if left := len(addrs) - i; left > 1 {
			attemptCtx, cancel = context.WithTimeout(ctx, max(dialTimeout/time.Duration(left), minAttempt))
		}
		conn, err := dial(attemptCtx, network, netip.AddrPortFrom(a, uint16(port)).String())
		cancel()
		if err == nil {
			return conn, nil
		}
		if first == nil {
			first = err
		}
		if ctx.Err() != nil {
			break
		}
	}
	return nil, first
}

// Transport returns a new HTTP transport that makes every connection
// through DialContext (TLS is negotiated over the checked connection, for
// the name in the URL) and uses no proxy. Its other settings are those
// of http.DefaultTransport.
func (p *Policy) Transport() *http.Transport {
	return &http.Transport{
		DialContext:           p.DialContext,
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          100,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   10 * time.Second,
		ExpectContinueTimeout: time.Second,
	}
}

// Client returns a new HTTP client on Transport that checks the target
// of every redirect before following it (a refused one ends the request
// with a *DeniedError) and follows at most 10.
func (p *Policy) Client() *http.Client {
	return &http.Client{Transport: p.Transport(), CheckRedirect: p.checkRedirect}
}

// checkRedirect is Client's CheckRedirect.
func (p *Policy) checkRedirect(req *http.Request, via []*http.Request) error {
	if len(via) >= maxRedirects {
		return fmt.Errorf("stopped after %d redirects", maxRedirects)
	}
	port := req.URL.Port()
	if port == "" {
		port = "80"
		if req.URL.Scheme == "https" {
			port = "443"
		}
	}
	n, err := strconv.ParseUint(port, 10, 16)
	if err != nil {
		return fmt.Errorf("egress: redirect to %s: the port is not a number from 0 to 65535", req.URL.Redacted())
	}
	_, err = p.Resolve(req.Context(), "tcp", req.URL.Hostname(), uint16(n))
	return err
}
