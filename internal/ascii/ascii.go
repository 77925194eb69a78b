// Package ascii holds the character checks that several packages apply
// to names: rule names, policy names in headers, plans and routes in rule
// files.
package ascii

// Printable reports whether every byte of s is printable ASCII (%x20-7E),
// the characters a rule name may use and a Structured Field String holds.
func Printable(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] > 0x7e {
			return false
		}
	}
	return true
}
