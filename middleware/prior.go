package middleware

import (
	"context"
	"net/http"
	"sync/atomic"

	"github.com/sluicehq/sluice/headers"
)

// requestInfo is what a limiter leaves in the context of a request it
// admitted: the policies its headers described, for limiters further down
// the chain, and the charges made with [Charge] while the handler ran.
type requestInfo struct {
	outer    *requestInfo // the limiter before this one, if any
	policies []headers.Policy
	charged  atomic.Int64
}

type requestInfoKey struct{}

// newRequestInfo copies policies: the caller's slice is pooled. A limiter
// that described nothing (its store failed and on_fail let the request
// through) passes on what the limiters before it described.
func newRequestInfo(r *http.Request, policies []headers.Policy) *requestInfo {
	outer := infoFrom(r)
	if len(policies) == 0 && outer != nil {
		return &requestInfo{outer: outer, policies: outer.policies}
	}
	return &requestInfo{outer: outer, policies: append([]headers.Policy(nil), policies...)}
}

func (i *requestInfo) attach(r *http.Request) *http.Request {
	return r.WithContext(context.WithValue(r.Context(), requestInfoKey{}, i))
}

func infoFrom(r *http.Request) *requestInfo {
	i, _ := r.Context().Value(requestInfoKey{}).(*requestInfo)
	return i
}

// prior returns the policies the limiters before this one admitted r
// under (every policy the headers describe so far).
func prior(r *http.Request) []headers.Policy {
	if i := infoFrom(r); i != nil {
		return i.policies
	}
	return nil
}
