package rulefile

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/sluicehq/sluice/keyfunc"
)

// keySpec is what a rule file's key field resolves to.
type keySpec struct {
	kind string          // the rule's KeyKind
	fn   keyfunc.KeyFunc // the rule's Key
	// present reports whether a request carries the identity at all; a
	// rule whose identity is absent does not apply (nil: always applies).
	// An identity that is present but unusable (a header sent twice) is a
	// key error, never a skip.
	present func(*http.Request) bool
}

// keySpec resolves a key field's value. The error says what is wrong,
// without the location.
func (e *env) keySpec(s string) (keySpec, error) {
	switch s {
	case "ip":
		return keySpec{kind: s, fn: e.ip}, nil
	case "global":
		return keySpec{kind: s, fn: keyfunc.Global()}, nil
	case "endpoint":
		return keySpec{kind: s, fn: e.endpoint}, nil
	case "api_key":
		return keySpec{kind: s, fn: e.apiKey, present: hasHeader(e.apiHeader)}, nil
	case "user", "user_endpoint":
		if e.user == nil {
			return keySpec{}, fmt.Errorf("%s needs the signed-in user: set LoadConfig.User", s)
		}
		fn := e.user
		if s == "user_endpoint" {
			fn = e.userEndpoint
		}
		return keySpec{kind: s, fn: fn, present: e.hasUser}, nil
	}
	if name, ok := strings.CutPrefix(s, "header:"); ok {
		fn, err := keyfunc.Header(name)
		if err != nil {
			return keySpec{}, fmt.Errorf("%q: not a valid header name", name)
		}
		canonical := http.CanonicalHeaderKey(name)
		return keySpec{kind: "header:" + canonical, fn: fn, present: hasHeader(canonical)}, nil
	}
	if fn, ok := e.custom[s]; ok {
		return keySpec{kind: s, fn: fn}, nil
	}
	return keySpec{}, fmt.Errorf("unknown key kind %q (built in: %s; registered in LoadConfig.Keys: %s)",
		s, strings.Join(builtinKinds, ", "), e.customNames())
}
