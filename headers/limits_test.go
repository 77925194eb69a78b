package headers_test

// The bounds the package clamps to, restated from the RFCs and the
// documentation rather than read from the package.
const (
	maxInteger = 999_999_999_999_999 // RFC 9651 §3.3.1: at most 15 digits
	maxNameLen = 64                  // SanitizeName's cut
)
