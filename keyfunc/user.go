package keyfunc

import (
	"context"
	"net/http"
)

// User returns the Key, of kind "user", whose identity is the user id that
// lookup finds in the request context, typically put there by
// authentication middleware that runs before the limiter:
//
//	users := keyfunc.User(func(ctx context.Context) (string, bool) {
//		u, ok := ctx.Value(userKey).(*Account)
//		if !ok {
//			return "", false
//		}
//		return u.ID, true
//	})
//
// A request for which lookup reports false, or returns an empty id, has no
// user: the rule skips it, or refuses it if the Key is [Key.Required] (see
// [Key]), so anonymous requests never share one empty-string bucket; give
// them a rule of their own keyed by IP. User panics if lookup is nil.
func User(lookup func(context.Context) (string, bool)) Key {
	if lookup == nil {
		panic("keyfunc: User: nil lookup function")
	}
	return Key{kind: "user", form: userForm, fn: func(r *http.Request) (string, error) {
		id, ok := lookup(r.Context())
		if !ok {
			return "", missing("no user in the request context")
		}
		if id == "" {
			return "", missing("empty user id in the request context")
		}
		return id, nil
	}}
}
