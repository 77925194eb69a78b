package rulefile

import (
	"fmt"
	"strings"

	"github.com/sluicehq/sluice/internal/ident"
	"github.com/sluicehq/sluice/keyfunc"
)

// keySpec resolves a key field's value. The error says what is wrong,
// without the location. A key whose identity a request may lack (an API
// key, a header, a user) reports it as missing (keyfunc.ErrMissing), so the
// rule skips such requests unless key_required is set.
func (e *env) keySpec(s string) (keyfunc.Key, error) {
	switch s {
	case "ip":
		return e.ip, nil
	case "global":
		return keyfunc.Global(), nil
	case "endpoint":
		return e.endpoint, nil
	case "api_key":
		return e.apiKey, nil
	case "user", "user_endpoint":
		if e.user.IsZero() {
			return keyfunc.Key{}, fmt.Errorf("%s needs the signed-in user: set LoadConfig.User", s)
		}
		if s == "user_endpoint" {
			return e.userEndpoint, nil
		}
		return e.user, nil
	}
	if name, ok := strings.CutPrefix(s, "header:"); ok {
		if !ident.IsToken(name) {
			return keyfunc.Key{}, fmt.Errorf("%q: not a valid header name", name)
		}
		return keyfunc.Header(name), nil
	}
	if k, ok := e.custom[s]; ok {
		return k, nil
	}
	return keyfunc.Key{}, fmt.Errorf("unknown key kind %q (built in: %s; registered in LoadConfig.Keys: %s)",
		s, strings.Join(builtinKinds, ", "), e.customNames())
}
