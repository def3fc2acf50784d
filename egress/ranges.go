package egress

import "net/netip"

// specialRange is an address block refused unless listed, and what it is.
type specialRange struct {
	prefix netip.Prefix
	what   string
}

// Names of the blocks, as DeniedError.Reason says them.
const (
	whatLoopback    = "loopback"
	whatPrivate     = "private"
	whatLinkLocal   = "link-local"
	whatShared      = "in the shared address space (carrier-grade NAT)"
	whatUnspecified = "unspecified"
	whatMulticast   = "multicast"
	whatReserved    = "reserved"
	whatDocs        = "reserved for documentation"
)

// ipv4Ranges are the IPv4 blocks that are not public (RFC 6890 and its
// successors).
var ipv4Ranges = []specialRange{
	{netip.MustParsePrefix("0.0.0.0/8"), whatUnspecified},
	{netip.MustParsePrefix("10.0.0.0/8"), whatPrivate},
	{netip.MustParsePrefix("100.64.0.0/10"), whatShared},
	{netip.MustParsePrefix("127.0.0.0/8"), whatLoopback},
	{netip.MustParsePrefix("169.254.0.0/16"), whatLinkLocal},
	{netip.MustParsePrefix("172.16.0.0/12"), whatPrivate},
	{netip.MustParsePrefix("192.0.0.0/24"), whatReserved},
	{netip.MustParsePrefix("192.0.2.0/24"), whatDocs},
	{netip.MustParsePrefix("192.88.99.0/24"), whatReserved},
	{netip.MustParsePrefix("192.168.0.0/16"), whatPrivate},
	{netip.MustParsePrefix("198.18.0.0/15"), whatReserved},
	{netip.MustParsePrefix("198.51.100.0/24"), whatDocs},
	{netip.MustParsePrefix("203.0.113.0/24"), whatDocs},
	{netip.MustParsePrefix("224.0.0.0/4"), whatMulticast},
	{netip.MustParsePrefix("240.0.0.0/4"), whatReserved}, // broadcast included
}

// ipv6Ranges are the IPv6 blocks that are not public, checked in order
// after the IPv4-mapped, NAT64 and 6to4 forms (which embed an IPv4
// address) were handled.
var ipv6Ranges = []specialRange{
	{netip.MustParsePrefix("::/128"), whatUnspecified},
	{netip.MustParsePrefix("::1/128"), whatLoopback},
	{netip.MustParsePrefix("64:ff9b:1::/48"), whatPrivate}, // local-use NAT64
	{netip.MustParsePrefix("100::/64"), whatReserved},      // discard-only
	{netip.MustParsePrefix("2001::/23"), whatReserved},     // IETF protocol assignments, Teredo among them
	{netip.MustParsePrefix("2001:db8::/32"), whatDocs},
	{netip.MustParsePrefix("3fff::/20"), whatDocs},
	{netip.MustParsePrefix("fc00::/7"), whatPrivate},
	{netip.MustParsePrefix("fe80::/10"), whatLinkLocal},
	{netip.MustParsePrefix("fec0::/10"), whatPrivate}, // the deprecated site-local block
	{netip.MustParsePrefix("ff00::/8"), whatMulticast},
}

var (
	nat64     = netip.MustParsePrefix("64:ff9b::/96")
	sixToFour = netip.MustParsePrefix("2002::/16")
	global6   = netip.MustParsePrefix("2000::/3")
)

// metadata are the addresses of cloud metadata services, named in
// refusals because they hand out credentials.
var metadata = []netip.Addr{
	netip.MustParseAddr("169.254.169.254"),
	netip.MustParseAddr("fd00:ec2::254"),
}

// SpecialRange says why addr is not a public address — "loopback",
// "private", "link-local", "unspecified", "multicast", "reserved", … —
// or returns "" when it is public. IPv4-mapped IPv6 addresses
// (::ffff:127.0.0.1) are judged as their IPv4 address, and so are the
// IPv4 addresses embedded in NAT64 (64:ff9b::/96) and 6to4 (2002::/16)
// addresses; IPv6 addresses outside the global unicast block 2000::/3
// are reserved. An invalid addr is "invalid".
func SpecialRange(addr netip.Addr) string {
	if !addr.IsValid() {
		return "invalid"
	}
	addr = addr.WithZone("").Unmap()
	what := ""
	if addr.Is4() {
		what = lookup(ipv4Ranges, addr)
	} else {
		what = special6(addr)
	}
	for _, m := range metadata {
		if addr == m {
			return what + " (the cloud metadata service)"
		}
	}
	return what
}

// special6 classifies an IPv6 address that is not IPv4-mapped.
func special6(addr netip.Addr) string {
	b := addr.As16()
	switch {
	case nat64.Contains(addr):
		if what := lookup(ipv4Ranges, netip.AddrFrom4([4]byte(b[12:16]))); what != "" {
			return what + " (behind NAT64)"
		}
		return ""
	case sixToFour.Contains(addr):
		if what := lookup(ipv4Ranges, netip.AddrFrom4([4]byte(b[2:6]))); what != "" {
			return what + " (behind 6to4)"
		}
		return ""
	}
	if what := lookup(ipv6Ranges, addr); what != "" {
		return what
	}
	if !global6.Contains(addr) {
		return whatReserved
	}
	return ""
}

func lookup(ranges []specialRange, addr netip.Addr) string {
	for _, r := range ranges {
		if r.prefix.Contains(addr) {
			return r.what
		}
	}
	return ""
}
