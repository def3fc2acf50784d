// Package egress decides which hosts an outbound connection may reach,
// and gives the dialer, transport and HTTP client that enforce it, so
// that nothing a workflow calls reaches a host its owner did not allow.
//
// A Policy is built from patterns (Config.Allow):
//
//   - a host name, exact ("api.example.com") or a wildcard
//     ("*.example.com", which matches every name ending in
//     ".example.com", at any depth, but not "example.com" itself);
//     names are compared without regard to case or a trailing dot, and
//     international names are written in their xn-- form;
//   - an IP address ("10.1.2.3", "::1") or a CIDR block ("10.0.0.0/8",
//     "fd00::/8"); an IPv4-mapped IPv6 address ("::ffff:10.1.2.3") is
//     its IPv4 address;
//   - "*", every host and address (the check is off);
//
// each optionally with a port: "localhost:11434", "10.0.0.0/8:5432",
// "[::1]:8080", "[fd00::/8]:443". A pattern without a port matches every
// port; one with a port only that port.
//
// The check is on the address a connection is actually made to: a host
// name is resolved, every address it resolves to is checked, and the
// connection goes to a checked address, never to a name resolved again
// (so a DNS answer that changes between the check and the connection —
// DNS rebinding — cannot slip past it). A connection to a host and
// address is allowed when
//
//   - a pattern matches the host name (and port) as written, whatever it
//     resolves to: the owner trusts that name; or
//   - a pattern matches the address (and port); or
//   - the address is public (see SpecialRange) and the policy is not
//     Only.
//
// Everything else is refused with a *DeniedError naming the host, the
// address, why, and the pattern that would allow it. So by default
// (the zero Config) loopback, private, link-local (the cloud metadata
// service 169.254.169.254 among them), shared (CGNAT), unspecified,
// multicast and reserved addresses, and the IPv4-mapped, NAT64 and 6to4
// forms of them, are refused unless listed, and public addresses are
// allowed; with Config.Only, only listed hosts and addresses are. A name
// that resolves to several addresses is refused as a whole when any of
// them is refused.
//
// A policy can be narrowed (Policy.Narrow) by a workflow state's Tools
// Domains: the narrowed policy allows only what both allow, so a
// definition can never reach a host its owner did not allow.
//
// HTTP redirects are checked too: Policy.Client's CheckRedirect checks
// the target before following it (and the connection to it is checked
// again when it is dialed). Proxies from the environment (HTTP_PROXY,
// HTTPS_PROXY) are not used: a proxy would resolve and reach the target
// itself, out of the policy's sight.
package egress
