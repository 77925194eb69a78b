package keyfunc

import "strconv"

// maxEcho is the number of bytes of attacker-controlled input an error
// message may quote.
const maxEcho = 48

// clip quotes at most maxEcho bytes of s for an error message, escaping
// control characters and invalid UTF-8, and says how long s really was when
// it was cut.
func clip(s string) string {
	if len(s) <= maxEcho {
		return strconv.Quote(s)
	}
	return strconv.Quote(s[:maxEcho]) + "... (" + strconv.Itoa(len(s)) + " bytes)"
}
