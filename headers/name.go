package headers

import "unicode/utf8"

// maxNameLen is the longest policy name, in characters after
// [SanitizeName], that this package writes; longer names are truncated.
const maxNameLen = 64

// SanitizeName returns name as it appears, unescaped, in the Structured
// Field String that names a policy: every rune outside printable ASCII
// (%x20-7E), and every byte that is not valid UTF-8, becomes one '?', and
// the result is cut to 64 characters. It is the string a
// Structured Fields parser reads back, so callers can use it wherever the
// name must match the header, e.g. in a problem's violated-policies.
func SanitizeName(name string) string {
	if len(name) <= maxNameLen && printable(name) {
		return name
	}
	b := make([]byte, 0, min(len(name), maxNameLen))
	return string(appendSanitized(b, name, false))
}

func printable(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] > 0x7e {
			return false
		}
	}
	return true
}

// appendString appends name, sanitised, as a Structured Field String.
func appendString(b []byte, name string) []byte {
	b = append(b, '"')
	b = appendSanitized(b, name, true)
	return append(b, '"')
}

// appendSanitized appends the sanitised name, escaping '"' and '\' if
// escape is set.
func appendSanitized(b []byte, name string, escape bool) []byte {
	n := 0
	for i := 0; i < len(name) && n < maxNameLen; n++ {
		c := name[i]
		if c < utf8.RuneSelf {
			i++
			switch {
			case c < 0x20 || c == 0x7f:
				c = '?'
			case escape && (c == '"' || c == '\\'):
				b = append(b, '\\')
			}
			b = append(b, c)
			continue
		}
		// One '?' per rune, or per byte of invalid UTF-8.
		_, size := utf8.DecodeRuneInString(name[i:])
		i += size
		b = append(b, '?')
	}
	return b
}
