package guardrails

import (
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

// The kinds of personal data, in the order they claim text: where two
// kinds would match the same characters, the earlier one wins.
const (
	kindEmail = "email"
	kindIBAN  = "iban"
	kindCard  = "card"
	kindPhone = "phone"
)

// piiName names a kind of personal data in messages.
func piiName(kind string) string {
	switch kind {
	case kindEmail:
		return "an email address"
	case kindPhone:
		return "a phone number"
	case kindCard:
		return "a card number"
	case kindIBAN:
		return "an IBAN"
	}
	return "personal data"
}

// redaction is what redact writes in place of a match: [REDACTED], or
// [REDACTED:kind] for personal data.
func redaction(kind string) string {
	if kind == "" {
		return "[REDACTED]"
	}
	return "[REDACTED:" + kind + "]"
}

// mask returns text with all but its last 4 characters replaced by *
// (all but its last half when it is shorter than 8 characters, so that
// a short match does not stay whole). For a card, phone or IBAN, the 4
// kept are letters or digits, with any spaces or dashes between them
// ("**** 606" keeps "2 606"). An email address keeps the first character
// of its local part and its domain, with *** between them.
func mask(kind, text string) string {
	if kind == kindEmail {
		if at := strings.LastIndexByte(text, '@'); at > 0 {
			_, size := utf8.DecodeRuneInString(text)
			return text[:size] + "***" + text[at:]
		}
	}
	counts := func(r rune) bool { return true }
	if kind != "" {
		counts = func(r rune) bool { return r < utf8.RuneSelf && isAlnum(byte(r)) }
	}
	n := 0
	for _, r := range text {
		if counts(r) {
			n++
		}
	}
	keep := min(4, n/2)
	tail := len(text)
	for keep > 0 {
		r, size := utf8.DecodeLastRuneInString(text[:tail])
		tail -= size
		if counts(r) {
			keep--
		}
	}
	stars := utf8.RuneCountInString(text[:tail])
	return strings.Repeat("*", stars) + text[tail:]
}

// maxExcerpt is the longest match an excerpt shows masked in full; a
// longer one is shown as excerptStars, an ellipsis and its last 4
// characters, which hides its length.
const (
	maxExcerpt   = 24
	excerptStars = "********"
)

// excerpt shows a match in a Finding: masked as by mask, and shortened
// when the match is long.
func excerpt(kind, text string) string {
	masked := mask(kind, text)
	if kind == kindEmail || utf8.RuneCountInString(text) <= maxExcerpt {
		return masked
	}
	return excerptStars + "…" + strings.TrimLeft(masked, "*")
}

// piiSet says which kinds a pii rule detects.
type piiSet struct {
	email, iban, card, phone bool
}

// newPIISet reads a rule's Detect list.
func newPIISet(detect []string) piiSet {
	return piiSet{
		email: slices.Contains(detect, kindEmail),
		iban:  slices.Contains(detect, kindIBAN),
		card:  slices.Contains(detect, kindCard),
		phone: slices.Contains(detect, kindPhone),
	}
}

// find appends the personal data of the kinds in p found in str to dst,
// in order and without overlaps.
//
// Every kind that claims text before a detected kind is looked for too,
// even when it is not detected, so that the digits of an IBAN are never
// reported as a card number, nor a number in an email address as a phone
// number; what was found only to be excluded is then dropped.
func (p piiSet) find(str string, dst []span) []span {
	numbers := p.card || p.phone
	ibans := p.iban || numbers
	if !p.email && !ibans {
		return dst
	}
	base := len(dst)
	dst = findEmails(str, dst)
	if ibans {
		dst = findIBANs(str, dst, base)
	}
	if numbers {
		dst = findNumbers(str, p, dst, base)
	}
	found := dst[base:]
	slices.SortFunc(found, func(a, b span) int { return a.start - b.start })
	kept := found[:0]
	for _, sp := range found {
		if p.has(sp.kind) {
			kept = append(kept, sp)
		}
	}
	return dst[:base+len(kept)]
}

// has reports whether the set detects kind.
func (p piiSet) has(kind string) bool {
	switch kind {
	case kindEmail:
		return p.email
	case kindIBAN:
		return p.iban
	case kindCard:
		return p.card
	case kindPhone:
		return p.phone
	}
	return false
}

// claims walks the spans earlier kinds claimed, sorted by start, while a
// later kind's candidates come in ascending order.
type claims struct {
	spans []span
	next  int
}

// overlaps reports whether [start, end) overlaps a claimed span; start
// must not decrease from one call to the next.
func (c *claims) overlaps(start, end int) bool {
	for c.next < len(c.spans) && c.spans[c.next].end <= start {
		c.next++
	}
	return c.next < len(c.spans) && c.spans[c.next].start < end
}

// sortedClaims sorts dst[base:] by start and returns a walker over it.
func sortedClaims(dst []span, base int) claims {
	found := dst[base:]
	slices.SortFunc(found, func(a, b span) int { return a.start - b.start })
	return claims{spans: found}
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

func isUpper(c byte) bool { return 'A' <= c && c <= 'Z' }

func isAlnum(c byte) bool {
	return isDigit(c) || isUpper(c) || ('a' <= c && c <= 'z')
}

// wordBefore reports whether the character before str[i] is a letter, a
// digit or '_' (any script), which would make a match starting at i part
// of a longer word.
func wordBefore(str string, i int) bool {
	if i == 0 {
		return false
	}
	r, _ := utf8.DecodeLastRuneInString(str[:i])
	return isWordRune(r)
}

// wordAfter reports whether str[j] is a letter, a digit or '_'.
func wordAfter(str string, j int) bool {
	if j >= len(str) {
		return false
	}
	r, _ := utf8.DecodeRuneInString(str[j:])
	return isWordRune(r)
}

func isWordRune(r rune) bool {
	return r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r)
}

// Email addresses.

const (
	maxLocal  = 64
	maxDomain = 253
	maxLabel  = 63
)

func isLocalChar(c byte) bool {
	return isAlnum(c) || c == '.' || c == '_' || c == '%' || c == '+' || c == '-'
}

func isDomainChar(c byte) bool {
	return isAlnum(c) || c == '.' || c == '-'
}

// findEmails appends the email addresses in str to dst.
func findEmails(str string, dst []span) []span {
	for off := 0; off < len(str); {
		at := strings.IndexByte(str[off:], '@')
		if at < 0 {
			break
		}
		at += off
		start := at
		for start > off && isLocalChar(str[start-1]) {
			start--
		}
		for start < at && str[start] == '.' {
			start++
		}
		end := at + 1
		for end < len(str) && isDomainChar(str[end]) {
			end++
		}
		for end > at+1 && (str[end-1] == '.' || str[end-1] == '-') {
			end--
		}
		if validLocal(str[start:at]) && validDomain(str[at+1:end]) &&
			!wordBefore(str, start) && !wordAfter(str, end) {
			dst = append(dst, span{start: start, end: end, kind: kindEmail})
			off = end
			continue
		}
		off = at + 1
	}
	return dst
}

// validLocal reports whether s is a local part: 1 to 64 characters,
// neither ending with '.' nor holding "..".
func validLocal(s string) bool {
	return s != "" && len(s) <= maxLocal && s[len(s)-1] != '.' && !strings.Contains(s, "..")
}

// validDomain reports whether s is a domain name of two or more labels
// of letters, digits and inner '-', the last one letters only.
func validDomain(s string) bool {
	if len(s) > maxDomain {
		return false
	}
	labels := 0
	for rest := s; ; labels++ {
		label, tail, more := strings.Cut(rest, ".")
		if label == "" || len(label) > maxLabel || label[0] == '-' || label[len(label)-1] == '-' {
			return false
		}
		if !more {
			if labels == 0 || len(label) < 2 {
				return false
			}
			for i := 0; i < len(label); i++ {
				if !('a' <= label[i]|0x20 && label[i]|0x20 <= 'z') {
					return false
				}
			}
			return true
		}
		rest = tail
	}
}

// IBANs.

// findIBANs appends to dst the IBANs in str that overlap none of the
// spans in dst[base:].
func findIBANs(str string, dst []span, base int) []span {
	cl := sortedClaims(dst, base)
	for i := 0; i+4 <= len(str); i++ {
		if !isUpper(str[i]) || !isUpper(str[i+1]) || !isDigit(str[i+2]) || !isDigit(str[i+3]) {
			continue
		}
		n := ibanLength(str[i : i+2])
		if n == 0 || wordBefore(str, i) {
			continue
		}
		end, ok := scanIBAN(str, i, n)
		if !ok || cl.overlaps(i, end) {
			continue
		}
		dst = append(dst, span{start: i, end: end, kind: kindIBAN})
		i = end - 1
	}
	return dst
}

// scanIBAN reads the n characters of an IBAN starting at str[i], written
// without spaces or in groups of four separated by single spaces, and
// returns where it ends and whether it passes the mod-97 check.
func scanIBAN(str string, i, n int) (int, bool) {
	grouped := i+4 < len(str) && str[i+4] == ' '
	j := i
	for count := 0; count < n; count++ {
		if grouped && count > 0 && count%4 == 0 {
			if j >= len(str) || str[j] != ' ' {
				return 0, false
			}
			j++
		}
		if j >= len(str) || !(isUpper(str[j]) || isDigit(str[j])) {
			return 0, false
		}
		j++
	}
	if wordAfter(str, j) {
		return 0, false
	}
	return j, ibanValid(str[i:j])
}

// ibanValid reports whether iban (spaces ignored) has check digits 02
// to 98 and passes the ISO 7064 mod-97 check.
func ibanValid(iban string) bool {
	compact := make([]byte, 0, 34)
	for i := 0; i < len(iban); i++ {
		if iban[i] != ' ' {
			compact = append(compact, iban[i])
		}
	}
	if len(compact) < 5 {
		return false
	}
	check := int(compact[2]-'0')*10 + int(compact[3]-'0')
	if check < 2 || check > 98 {
		return false
	}
	rem := 0
	for k := range compact {
		c := compact[(k+4)%len(compact)]
		switch {
		case isDigit(c):
			rem = (rem*10 + int(c-'0')) % 97
		case isUpper(c):
			rem = (rem*100 + int(c-'A') + 10) % 97
		default:
			return false
		}
	}
	return rem == 1
}

// ibanLength returns the length of the IBANs of a country in the SWIFT
// IBAN registry, or 0 for a code that has none.
func ibanLength(country string) int {
	switch country {
	case "NO":
		return 15
	case "BE":
		return 16
	case "DK", "FI", "FK", "FO", "GL", "NL", "SD":
		return 18
	case "MK", "SI":
		return 19
	case "AT", "BA", "EE", "KZ", "LT", "LU", "MN", "XK":
		return 20
	case "CH", "HR", "LI", "LV":
		return 21
	case "BG", "BH", "CR", "DE", "GB", "GE", "IE", "ME", "RS", "VA":
		return 22
	case "AE", "GI", "IL", "IQ", "OM", "SO", "TL":
		return 23
	case "AD", "CZ", "ES", "MD", "PK", "RO", "SA", "SE", "SK", "TN", "VG":
		return 24
	case "LY", "PT", "ST":
		return 25
	case "IS", "TR":
		return 26
	case "BI", "DJ", "FR", "GR", "IT", "MC", "MR", "SM":
		return 27
	case "AL", "AZ", "BY", "CY", "DO", "GT", "HN", "HU", "LB", "NI", "PL", "SV":
		return 28
	case "BR", "EG", "PS", "QA", "UA":
		return 29
	case "JO", "KW", "MU", "YE":
		return 30
	case "MT", "SC":
		return 31
	case "LC":
		return 32
	case "RU":
		return 33
	}
	return 0
}

// Card and phone numbers.

// maxNumberDigits is the most digits a card or phone number has: 19 for
// a card, 15 for a phone number after its 00 prefix.
const (
	maxNumberDigits = 19
	maxGroups       = maxNumberDigits
)

// group is one group of digits of a number, str[start:end]; sep is the
// separator before it (0 for none), paren is true when it is written in
// parentheses (start and end leave them out).
type group struct {
	start, end int
	sep        byte
	paren      bool
}

func (g group) digits() int { return g.end - g.start }

// number is a candidate card or phone number: its groups of digits and
// whether it starts with '+'.
type number struct {
	str    string
	plus   bool
	groups []group
}

// findNumbers appends to dst the card numbers and phone numbers (as set
// says) in str that overlap none of the spans in dst[base:].
//
// A number may start at a digit, '+' or '(' that does not continue a
// word or another number. From there, the longest run of groups that is
// a card or a phone number (a card first) and that does not run on into
// a word or another number is taken; a run may end at any space between
// two groups, and start after one unless it is grouped with spaces
// itself. When nothing starts there, the search goes on after the first
// group.
func findNumbers(str string, set piiSet, dst []span, base int) []span {
	cl := sortedClaims(dst, base)
	var buf [maxGroups]group
	for i := 0; i < len(str); {
		start := nextNumberStart(str, i)
		if start < 0 {
			break
		}
		num := parseNumber(str, start, buf[:0])
		if len(num.groups) == 0 {
			// An unclosed '(', or a first group too long for a number:
			// go on after the '(' or '+', or after the digits.
			i = start + 1
			for isDigit(str[start]) && i < len(str) && isDigit(str[i]) {
				i++
			}
			continue
		}
		i = groupEnd(str, num.groups[0])
		if !numberMayStart(str, start) {
			continue
		}
		// After a group of digits and a space, a number grouped with
		// spaces would be cut out of a longer one.
		afterGroup := !num.plus && start >= 2 && str[start-1] == ' ' && isDigit(str[start-2])
		for b := len(num.groups); b > 0; b-- {
			end := groupEnd(str, num.groups[b-1])
			if !numberEndsAt(str, end) || cl.overlaps(start, end) ||
				afterGroup && spaced(num.groups[:b]) {
				continue
			}
			sub := number{str: str, plus: num.plus, groups: num.groups[:b]}
			kind := ""
			switch {
			case set.card && sub.isCard():
				kind = kindCard
			case set.phone && sub.isPhone():
				kind = kindPhone
			}
			if kind != "" {
				dst = append(dst, span{start: start, end: end, kind: kind})
				i = end
				break
			}
		}
	}
	return dst
}

// spaced reports whether a space separates two of groups.
func spaced(groups []group) bool {
	for _, g := range groups {
		if g.sep == ' ' {
			return true
		}
	}
	return false
}

// nextNumberStart returns the first index at or after i of a digit, or
// of a '+' or '(' before a digit ("+(" before a digit too), or -1.
func nextNumberStart(str string, i int) int {
	for ; i < len(str); i++ {
		switch c := str[i]; {
		case isDigit(c):
			return i
		case c == '+' || c == '(':
			j := i + 1
			if c == '+' && j < len(str) && str[j] == '(' {
				j++
			}
			if j < len(str) && isDigit(str[j]) {
				return i
			}
		}
	}
	return -1
}

// groupEnd is the index after g, after its ')' when in parentheses.
func groupEnd(str string, g group) int {
	if g.paren {
		return g.end + 1
	}
	return g.end
}

// parseNumber reads the groups of digits of a number starting at
// str[start], at most maxGroups groups and maxNumberDigits digits (2
// more for a 00 prefix), into groups. Groups are separated by a single
// space, '-' or '.', or by nothing before or after a group in
// parentheses.
func parseNumber(str string, start int, groups []group) number {
	num := number{str: str}
	p := start
	if str[p] == '+' {
		num.plus = true
		p++
	}
	var sep byte
	total := 0
	for len(groups) < maxGroups {
		g, next, ok := parseGroup(str, p)
		if !ok || total+g.digits() > maxNumberDigits+2 {
			break
		}
		g.sep = sep
		groups = append(groups, g)
		total += g.digits()
		p = next
		switch {
		case p+1 < len(str) && (str[p] == ' ' || str[p] == '-' || str[p] == '.') && (isDigit(str[p+1]) || str[p+1] == '('):
			sep = str[p]
			p++
		case p < len(str) && (g.paren && isDigit(str[p]) || str[p] == '('):
			sep = 0
		default:
			num.groups = groups
			return num
		}
	}
	num.groups = groups
	return num
}

// parseGroup reads a group of digits, or one in parentheses, at str[p],
// and returns it and the index after it.
func parseGroup(str string, p int) (group, int, bool) {
	if p >= len(str) {
		return group{}, p, false
	}
	if str[p] == '(' {
		q := p + 1
		for q < len(str) && isDigit(str[q]) {
			q++
		}
		if q == p+1 || q >= len(str) || str[q] != ')' {
			return group{}, p, false
		}
		return group{start: p + 1, end: q, paren: true}, q + 1, true
	}
	q := p
	for q < len(str) && isDigit(str[q]) {
		q++
	}
	if q == p {
		return group{}, p, false
	}
	return group{start: p, end: q}, q, true
}

// numberMayStart reports whether a number may start at str[i]: not
// after a letter, digit or '_', not after a currency sign or '#'
// (amounts and order numbers), possibly with a space between, and not
// after '.', ',', ':', '/' or '-' that follow a digit (a decimal, a time,
// a date, a longer number).
func numberMayStart(str string, i int) bool {
	if i == 0 {
		return true
	}
	r, size := utf8.DecodeLastRuneInString(str[:i])
	switch {
	case isWordRune(r) || isMoneyOrNumberSign(r):
		return false
	case strings.ContainsRune(".,:/-", r):
		return i-size == 0 || !isDigit(str[i-size-1])
	case r == ' ' && i > 1:
		r, _ = utf8.DecodeLastRuneInString(str[:i-1])
		return !isMoneyOrNumberSign(r)
	}
	return true
}

func isMoneyOrNumberSign(r rune) bool {
	return r == '$' || r == '€' || r == '£' || r == '¥' || r == '#'
}

// numberEndsAt reports whether a number may end at str[j]: not before a
// letter, digit or '_', and not before '.', ',', ':', '/', '-' or '('
// followed by a digit.
func numberEndsAt(str string, j int) bool {
	if j >= len(str) {
		return true
	}
	if wordAfter(str, j) {
		return false
	}
	if strings.IndexByte(".,:/-(", str[j]) >= 0 {
		return j+1 >= len(str) || !isDigit(str[j+1])
	}
	return true
}

// digitCount is the number of digits in n.
func (n number) digitCount() int {
	total := 0
	for _, g := range n.groups {
		total += g.digits()
	}
	return total
}

// isCard reports whether n is a card number: 13 to 19 digits starting
// with 2 to 6, without '+' or parentheses, in one group or in groups of
// 3 to 6 digits separated by the same single space or '-', that pass the
// Luhn check.
func (n number) isCard() bool {
	if n.plus {
		return false
	}
	total := n.digitCount()
	if total < 13 || total > 19 {
		return false
	}
	if first := n.str[n.groups[0].start]; first < '2' || first > '6' {
		return false
	}
	if len(n.groups) > 1 {
		sep := n.groups[1].sep
		if sep != ' ' && sep != '-' {
			return false
		}
		for k, g := range n.groups {
			if g.paren || g.digits() < 3 || g.digits() > 6 || (k > 0 && g.sep != sep) {
				return false
			}
		}
	}
	return n.luhn()
}

// luhn reports whether n's digits pass the Luhn check.
func (n number) luhn() bool {
	sum, double := 0, false
	for k := len(n.groups) - 1; k >= 0; k-- {
		g := n.groups[k]
		for i := g.end - 1; i >= g.start; i-- {
			d := int(n.str[i] - '0')
			if double {
				d *= 2
				if d > 9 {
					d -= 9
				}
			}
			sum += d
			double = !double
		}
	}
	return sum%10 == 0
}

// isPhone reports whether n is a phone number (see the package
// documentation for the forms).
func (n number) isPhone() bool {
	total := n.digitCount()
	first := n.groups[0]
	switch {
	case n.plus:
		return total >= 8 && total <= 15
	case strings.HasPrefix(n.str[first.start:first.end], "00"):
		return len(n.groups) >= 2 && total-2 >= 8 && total-2 <= 15
	case total < 9 || total > 12 || !n.sameSeparators():
		return false
	case first.paren:
		return len(n.groups) >= 2
	}
	for _, g := range n.groups[1:] {
		if g.paren {
			return false
		}
	}
	if n.str[first.start] == '0' {
		return len(n.groups) >= 2 && n.minGroup(0) >= 2
	}
	return n.nationalGroups()
}

// sameSeparators reports whether every separator between two groups is
// the same character, leaving out the one after a group in parentheses.
func (n number) sameSeparators() bool {
	var sep byte
	seen := false
	for k := 1; k < len(n.groups); k++ {
		if n.groups[k-1].paren {
			continue
		}
		s := n.groups[k].sep
		if s == 0 || (seen && s != sep) {
			return false
		}
		sep, seen = s, true
	}
	return true
}

// minGroup is the fewest digits in a group of n from the group at from.
func (n number) minGroup(from int) int {
	least := maxNumberDigits + 2
	for _, g := range n.groups[from:] {
		least = min(least, g.digits())
	}
	return least
}

// nationalGroups reports whether the groups of a national number without
// a trunk prefix or an area code in parentheses look like a phone number
// rather than a list of numbers: at least three groups of 2 to 4 digits
// (after a leading "1", the North American country code), not all of
// the same length (a list of years or of small numbers), and not 1 to 3
// digits followed by groups of exactly 3 (thousands).
func (n number) nationalGroups() bool {
	groups := n.groups
	if len(groups) >= 4 && groups[0].digits() == 1 && n.str[groups[0].start] == '1' {
		groups = groups[1:]
	}
	if len(groups) < 3 {
		return false
	}
	same, thousands := true, groups[0].digits() <= 3
	for k, g := range groups {
		d := g.digits()
		if d < 2 || d > 4 {
			return false
		}
		if d != groups[0].digits() {
			same = false
		}
		if k > 0 && d != 3 {
			thousands = false
		}
	}
	return !same && !thousands
}
