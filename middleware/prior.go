package middleware

import (
	"context"
	"fmt"
	"net/http"
	"sync/atomic"

	"github.com/sluicehq/sluice/headers"
)

// requestInfo is what a limiter leaves in the context of a request it
// admitted: the policies its headers described, for limiters further down
// the chain, and the charges made with [Charge] while the handler ran.
//
// It is itself the request's new context: the context it was attached to,
// with itself as the value of requestInfoKey. One allocation instead of a
// record and a context.WithValue, and one policy (the usual case) is kept
// inline instead of in a slice of its own.
type requestInfo struct {
	context.Context // the request's context before this limiter's

	outer    *requestInfo // the limiter before this one, if any
	policies []headers.Policy
	charged  atomic.Int64
	one      [1]headers.Policy // policies' backing array when there is one
}

type requestInfoKey struct{}

// Value returns i for requestInfoKey, else what the context i was attached
// to holds.
func (i *requestInfo) Value(key any) any {
	if key == (requestInfoKey{}) {
		return i
	}
	return i.Context.Value(key)
}

func (i *requestInfo) String() string {
	return fmt.Sprintf("%v.WithValue(sluice request info, %d policies)", i.Context, len(i.policies))
}

// newRequestInfo copies policies: the caller's slice is pooled. A limiter
// that described nothing (its store failed and on_fail let the request
// through) passes on what the limiters before it described.
func newRequestInfo(r *http.Request, policies []headers.Policy) *requestInfo {
	i := &requestInfo{outer: infoFrom(r)}
	switch {
	case len(policies) == 0 && i.outer != nil:
		i.policies = i.outer.policies
	case len(policies) == 1:
		i.one[0] = policies[0]
		i.policies = i.one[:]
	default:
		i.policies = append([]headers.Policy(nil), policies...)
	}
	return i
}

// attach returns r with i as its context, on top of r's.
func (i *requestInfo) attach(r *http.Request) *http.Request {
	i.Context = r.Context()
	return r.WithContext(i)
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
