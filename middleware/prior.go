package middleware

import (
	"context"
	"net/http"

	"github.com/sluicehq/sluice/headers"
)

// priorKey keys the policies the limiters a request passed so far admitted
// it under.
type priorKey struct{}

// withPrior returns r carrying policies, the complete list the headers
// describe (outer limiters' included), for limiters further down the
// chain. The slice is copied: the caller's is pooled.
func withPrior(r *http.Request, policies []headers.Policy) *http.Request {
	all := append([]headers.Policy(nil), policies...)
	return r.WithContext(context.WithValue(r.Context(), priorKey{}, all))
}

// prior returns the policies outer limiters admitted r under.
func prior(r *http.Request) []headers.Policy {
	p, _ := r.Context().Value(priorKey{}).([]headers.Policy)
	return p
}
