package headers

import (
	"fmt"
	"strconv"
	"strings"
)

// Mode selects which rate-limit header fields [Write] sets. Modes are bits
// and combine with |, e.g. IETF|XRateLimit while clients migrate.
type Mode uint8

// The header modes. See the package documentation for the exact fields each
// one writes.
const (
	// None writes no rate-limit fields. Retry-After is separate (see
	// [SetRetryAfter]) and not affected by the mode.
	None Mode = 0
	// IETF writes RateLimit-Policy and RateLimit as Structured Field Lists,
	// the syntax of draft-ietf-httpapi-ratelimit-headers-08 to -11.
	IETF Mode = 1 << 0
	// Draft06 writes RateLimit-Limit, RateLimit-Remaining, RateLimit-Reset
	// (delta seconds) and RateLimit-Policy as in
	// draft-ietf-httpapi-ratelimit-headers-06.
	Draft06 Mode = 1 << 1
	// XRateLimit writes X-RateLimit-Limit, X-RateLimit-Remaining and
	// X-RateLimit-Reset, the last as a Unix time in seconds (GitHub,
	// go-chi/httprate).
	XRateLimit Mode = 1 << 2

	// Default is the mode used when none is configured: IETF.
	Default = IETF
)

const allModes = IETF | Draft06 | XRateLimit

var modeNames = [...]struct {
	m    Mode
	name string
}{
	{IETF, "ietf"},
	{Draft06, "draft06"},
	{XRateLimit, "x-ratelimit"},
}

// String returns the names of the modes in m joined by "|", e.g.
// "ietf|x-ratelimit", or "none". [ParseMode] accepts the result. Bits
// that name no mode are shown in hexadecimal.
func (m Mode) String() string {
	if m == None {
		return "none"
	}
	var parts []string
	for _, n := range modeNames {
		if m&n.m != 0 {
			parts = append(parts, n.name)
		}
	}
	if rest := m &^ allModes; rest != 0 {
		parts = append(parts, "0x"+strconv.FormatUint(uint64(rest), 16))
	}
	return strings.Join(parts, "|")
}

// ParseMode parses a mode name, case-insensitively: "ietf", "default"
// (= [Default]), "draft06" or "draft-06", "x-ratelimit" or "xratelimit",
// "none". Several names joined by "," or "|" combine, e.g.
// "ietf, x-ratelimit"; spaces around names are ignored. An empty string or
// an empty name is an error.
func ParseMode(s string) (Mode, error) {
	var m Mode
	rest := s
	for {
		name, tail, more := cutAny(rest, ",|")
		switch strings.ToLower(strings.TrimSpace(name)) {
		case "ietf", "default":
			m |= IETF
		case "draft06", "draft-06":
			m |= Draft06
		case "x-ratelimit", "xratelimit":
			m |= XRateLimit
		case "none":
		case "":
			return None, fmt.Errorf("sluice/headers: mode %q: empty mode name", s)
		default:
			return None, fmt.Errorf("sluice/headers: mode %q: unknown name %q (want ietf, draft06, x-ratelimit or none)", s, strings.TrimSpace(name))
		}
		if !more {
			return m, nil
		}
		rest = tail
	}
}

// cutAny slices s around the first byte of seps, like [strings.Cut].
func cutAny(s, seps string) (before, after string, found bool) {
	if i := strings.IndexAny(s, seps); i >= 0 {
		return s[:i], s[i+1:], true
	}
	return s, "", false
}

// MarshalText implements [encoding.TextMarshaler] with [Mode.String]. It
// fails for a Mode with bits that name no mode.
func (m Mode) MarshalText() ([]byte, error) {
	if m&^allModes != 0 {
		return nil, fmt.Errorf("sluice/headers: invalid mode %v", m)
	}
	return []byte(m.String()), nil
}

// UnmarshalText implements [encoding.TextUnmarshaler] with [ParseMode], so
// a Mode can be read from JSON, YAML or flag values.
func (m *Mode) UnmarshalText(text []byte) error {
	v, err := ParseMode(string(text))
	if err != nil {
		return err
	}
	*m = v
	return nil
}
