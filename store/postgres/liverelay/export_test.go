package liverelay

// ParseForTest is parse, for the fuzz target of the external tests.
func ParseForTest(payload string) bool {
	m, err := parse(payload)
	if err != nil {
		return false
	}
	switch m.T {
	case kindAsk, kindData, kindFrag, kindFence:
		return true
	}
	panic("parse accepted a message of kind " + m.T)
}
