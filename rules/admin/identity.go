package admin

import (
	"errors"
	"net/netip"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/sluicehq/sluice/keyfunc"
)

// maxIdentity bounds the identity an operator may type, in bytes.
const maxIdentity = 1024

var ipv6Probe = netip.MustParseAddr("2001:db8::1")

// errIdentity reports an identity its kind cannot parse; the message says
// what is expected, never echoing the input.
type errIdentity string

func (e errIdentity) Error() string { return string(e) }

// builtinParsers returns the parsers of the key kinds the rule files know.
func builtinParsers(ipv6Prefix int) map[string]IdentityParser {
	return map[string]IdentityParser{
		"ip": func(s string) (string, error) {
			a, err := keyfunc.ParseAddr(s)
			if err != nil {
				return "", errIdentity("an ip identity is an IPv4 or IPv6 address, such as 192.0.2.7 or 2001:db8::1")
			}
			return keyfunc.IPKey(a, ipv6Prefix)
		},
		"global": func(s string) (string, error) {
			if s != "" && s != keyfunc.GlobalKey {
				return "", errIdentity(`a global rule has one bucket: leave the identity empty or write "global"`)
			}
			return keyfunc.GlobalKey, nil
		},
		"endpoint": parseEndpoint,
		"user_endpoint": func(s string) (string, error) {
			user, endpoint, ok := strings.Cut(s, " ")
			if !ok || user == "" {
				return "", errIdentity(`a user_endpoint identity is a user id, a space and an endpoint: "alice GET /users/{id}"`)
			}
			ep, err := parseEndpoint(endpoint)
			if err != nil {
				return "", err
			}
			return netstring(user) + netstring(ep), nil
		},
	}
}

// parseEndpoint reads "METHOD /pattern" into the key keyfunc.Endpoint gives.
func parseEndpoint(s string) (string, error) {
	method, pattern, ok := strings.Cut(s, " ")
	if !ok || method == "" || !strings.HasPrefix(pattern, "/") && pattern != keyfunc.Unmatched {
		return "", errIdentity(`an endpoint identity is a method, a space and a route pattern: "GET /users/{id}"`)
	}
	if pattern == keyfunc.Unmatched {
		pattern = ""
	}
	return keyfunc.EndpointKey(method, pattern), nil
}

// netstring encodes s as keyfunc.Join encodes each part.
func netstring(s string) string { return strconv.Itoa(len(s)) + ":" + s + "," }

// plain is the parser of every other kind: the identity as typed, without
// the spaces and tabs a header's value loses.
func plain(s string) (string, error) {
	if s == "" {
		return "", errIdentity("empty identity")
	}
	return s, nil
}

// parseIdentity checks what any identity must be, then parses it by kind.
func (h *handler) parseIdentity(kind, typed string) (string, error) {
	if len(typed) > maxIdentity {
		return "", errIdentity("identity longer than " + strconv.Itoa(maxIdentity) + " bytes")
	}
	typed = strings.Trim(typed, " \t")
	if !utf8.ValidString(typed) || strings.ContainsFunc(typed, unicode.IsControl) {
		return "", errIdentity("an identity is UTF-8 text without control characters")
	}
	parse, ok := h.parsers[kind]
	if !ok {
		parse = plain
	}
	id, err := parse(typed)
	if err == nil && id == "" {
		err = errors.New("empty identity")
	}
	return id, err
}
