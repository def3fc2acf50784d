// Package guardrails applies the Guardrails block of a Task state: the
// Input rules to the agent's effective input (after InputPath and the
// Memory inject, before Parameters) and the Output rules to the agent's
// result (after the Budget check, before Reasoning extraction and
// ResultSelector). It reads the definition's types (package states) and
// knows nothing of running: the engine calls Check and then raises,
// regenerates or records what the Result says.
//
// # Content
//
// Content is a JSON value of package jsonpath's model (nil, bool, string,
// json.Number, []any, map[string]any) and is never modified. The rules
// that look for text (pattern, regex, pii) look at every string value in
// it, each at its path; object keys, numbers and booleans are not looked
// at. Paths are written $.a.b[2], with ['key'] for a key that is not a
// plain identifier, and $ for the content itself.
//
// Rules run in the order they are listed, each on the content as the
// rules before it left it: a pii rule that redacts before a regex rule
// means the regex sees [REDACTED:email], not the address. The set's
// Validator runs last, on the content after every rule, so a validating
// agent never sees what a rule removed. Content that no rule changed is
// returned as it came (the same maps and slices); a change copies only
// the objects and arrays on the way to the changed strings.
//
// # Rules
//
//   - length measures the whole content: a string's length in characters
//     (Unicode code points), any other value's length in characters of
//     its compact JSON text (jsonvalue.Marshal). It fails when the length
//     is under Min or over Max (both inclusive bounds; a Max of 0 is no
//     upper bound).
//   - pattern fails on every occurrence of a Block substring, matched
//     case-insensitively (Unicode simple case folding, as strings.EqualFold
//     does). Where occurrences overlap, the one that starts first wins,
//     then the longer one.
//   - regex fails on every match of Pattern (Go RE2 syntax, unanchored)
//     in a string; a match of no characters is ignored. Pattern describes
//     text that must not appear, like a Block entry. The spec never says
//     so in words, but it only reads that way: it gives regex rules the
//     actions redact ("delete the match") and mask, which replace the
//     match itself and would mean nothing if the match were the wanted
//     text, and its content-pipeline example flags regex matches for
//     review. A format the content must follow is a custom rule's job.
//   - pii fails on every piece of personal data of the kinds in Detect
//     (see below).
//   - custom asks the rule's Validator agent (see Validator); it fails
//     when the agent answers {"valid": false}.
//   - semantic asks the rule's Validator agent, or the set's Validator
//     when the rule names none, whether the content satisfies the rule's
//     Check, a requirement in words ("does not give medical advice"). The
//     agent gets the object {"check": Check, "content": content} (the
//     content as the rules before left it) instead of the bare content,
//     and answers a verdict as for custom rules; {"valid": false} is one
//     finding at $ with the rule's Action (block, warn, flag or retry).
//     A set's Validator that serves a semantic rule is still called once
//     more at the end, on the bare content, as the set's own check.
//
// # Personal data
//
// The detectors work on text alone, without context, so they aim at the
// common written forms and refuse what looks like something else:
//
//   - email: local@domain.tld, with a local part of ASCII letters, digits
//     and . _ % + -, and a domain of at least two labels whose last one is
//     letters only (two or more).
//   - phone: international numbers, + then 8 to 15 digits, which may be
//     grouped with single spaces, dashes, dots or parentheses
//     (+1 (555) 123-4567, +44 20 7946 0958, +14155552671), or 00 then 8
//     to 15 digits in at least two groups (0044 20 7946 0958); national
//     numbers of 9 to 12 digits with one separator throughout: an area
//     code in parentheses then more groups ((555) 123-4567), a trunk
//     prefix 0 then at least two groups of two or more digits (020 7946
//     0958, 06 12 34 56 78, 06-12345678), or at least three groups of 2
//     to 4 digits, after an optional leading 1 (555-123-4567,
//     1-800-555-0199, 612 34 56 78), that are not all of one length (a
//     list of years or of small numbers) and are not 1 to 3 digits then
//     groups of exactly 3 (thousands: 1 234 567 890). A bare run of
//     digits without + is not a phone number (order numbers look like
//     that); years, amounts and dates are too short or oddly grouped.
//   - card: 13 to 19 digits starting with 2 to 6 (the ranges card
//     networks issue), in one group or in groups of 3 to 6 digits
//     separated by the same single space or dash, passing the Luhn check.
//   - iban: a country code of the SWIFT IBAN registry in capitals, two
//     check digits (02 to 98), and the country's number of capital
//     letters and digits, written without spaces or in groups of four
//     separated by single spaces; the ISO 7064 mod-97 check must give 1.
//
// A phone or card number never touches a letter or a digit, never
// follows $ € £ ¥ or # (with or without a space: amounts, order
// numbers), and is never part of a decimal, a time, a date or a longer
// number (next to . , : / or - and a digit). It may end at a space
// between two groups when more digits follow (a card number, then its
// expiry date), and start after another group of digits and a space
// only when it is not grouped with spaces itself.
//
// Where two kinds claim the same text, email wins over iban, iban over
// card, and card over phone, even when the winning kind is not in
// Detect: the digits of an IBAN are never reported as a card number.
//
// # Actions
//
//   - block: a failure is a violation.
//   - redact: every match is replaced by [REDACTED], or [REDACTED:kind]
//     for personal data ([REDACTED:email]); never a violation.
//   - mask: every match keeps its last 4 characters (never more than half
//     of them, so that a short match does not stay whole) and the rest
//     become *; a card, phone or IBAN keeps its last 4 letters or
//     digits and what separates them (***************2 606), an email
//     address its first character and its domain (j***@example.com);
//     never a violation.
//   - warn: findings only.
//   - flag: findings only, marked Action "flag" for a human to review.
//   - retry (Output only): a failure sets Result.Retry, asking the engine
//     to have the agent regenerate its output, up to the set's MaxRetries
//     times, and is also the violation the engine raises when it has no
//     retries left (with MaxRetries 0, at once). On Input it acts as
//     block.
//
// redact and mask apply to pattern, regex and pii rules; length, custom
// and semantic rules have no match to replace (the parser refuses them).
//
// # Violations
//
// A violation is an *asl.Error, so Retry and Catch match it by name:
// every Input violation is Agent.InvalidInput; on Output, length and
// regex (the form of the output) are Agent.InvalidOutput, and pattern,
// pii, custom, semantic and the set's Validator (its content) are
// Agent.GuardrailViolation. The Cause is one line naming the rule, the
// path and what was found, like
//
//	Guardrails.Output.Rules[1] (pii) at $.customer.contact: contains an email address; 2 more findings
//
// It never quotes the content: the definition's Block substrings and
// Pattern and a validating agent's reason may appear in it, the matched
// text never does.
//
// OnFail says what a failure does: "reject", "fail_state" and "fail"
// (all the same here) make it the Result's Violation, and Check stops
// there: later rules and the Validator do not run. "continue" records
// findings only: every rule and the Validator run and Violation stays
// nil (a retry rule still asks for regeneration; when the retries run
// out, the last output is taken).
//
// # Findings
//
// Every match of every rule, whatever its action, is a Finding, in rule
// order and then in document order (object keys sorted), with a masked
// Excerpt of what was found (a match longer than 24 characters shows
// ********, an ellipsis and its masked end, which hides its length). A
// rule lists at most 50 findings per Check; one more finding at $ counts
// the rest.
//
// # Use
//
// The engine calls Check twice per Task attempt, where DESIGN.md §2 puts
// the guardrails:
//
//	res, err := guardrails.Check(ctx, g.Output, guardrails.Output, result, validate)
//	if err != nil {
//		// a validating agent could not answer: raise err
//	}
//	// record res.Findings (Finding.JSON) in a history event
//	if res.Retry && retries < g.Output.MaxRetries {
//		// call the agent again and Check its new result
//	}
//	if res.Violation != nil {
//		// raise res.Violation: Retry and Catch see it by name
//	}
//	// go on with res.Content
//
// Input is the same with guardrails.Input on the effective input, and
// without Retry. The validate function calls the named agent with the
// content it is given as its input (for a semantic rule, the
// {"check", "content"} object) and decodes its answer with ParseVerdict;
// an *asl.Error it returns is wrapped, so errors.As still finds it.
//
// Everything here is safe for concurrent use: Check keeps no state
// between calls, and the definition's types are immutable.
package guardrails
