package keyfunc

import (
	"context"
	"errors"
	"net/http"
)

// User returns a KeyFunc whose key is the user identity that lookup finds
// in the request context, typically put there by authentication middleware
// that runs before the limiter:
//
//	users := keyfunc.Must(keyfunc.User(func(ctx context.Context) (string, bool) {
//		u, ok := ctx.Value(userKey).(*Account)
//		if !ok {
//			return "", false
//		}
//		return u.ID, true
//	}))
//
// A request for which lookup reports false, or returns an empty id, fails
// with an error wrapping [ErrNoKey], so anonymous requests never share one
// empty-string bucket; give them a rule of their own keyed by IP. User
// returns an error if lookup is nil.
func User(lookup func(context.Context) (string, bool)) (KeyFunc, error) {
	if lookup == nil {
		return nil, errors.New("keyfunc: User: nil lookup function")
	}
	return func(r *http.Request) (string, error) {
		id, ok := lookup(r.Context())
		if !ok {
			return "", noKey("no user in the request context")
		}
		if id == "" {
			return "", noKey("empty user id in the request context")
		}
		return id, nil
	}, nil
}
