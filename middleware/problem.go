package middleware

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/sluicehq/sluice/decide"
	"github.com/sluicehq/sluice/headers"
	"github.com/sluicehq/sluice/keyfunc"
)

// Problem types from draft-ietf-httpapi-ratelimit-headers (requested from
// IANA, not yet registered).
const (
	TypeQuotaExceeded            = "https://iana.org/assignments/http-problem-types#quota-exceeded"
	TypeTemporaryReducedCapacity = "https://iana.org/assignments/http-problem-types#temporary-reduced-capacity"
)

// Problem is an RFC 9457 problem details object, as the default handlers
// write it with Content-Type application/problem+json.
type Problem struct {
	// Type is a URI naming the kind of problem, such as
	// [TypeQuotaExceeded].
	Type string `json:"type"`
	// Title is a short human-readable summary of the problem type.
	Title string `json:"title"`
	// Status is the HTTP status code Write sends.
	Status int `json:"status"`
	// Detail explains this occurrence of the problem; omitted if empty.
	Detail string `json:"detail,omitempty"`
	// ViolatedPolicies names the rate-limit policies (rules) the request
	// exceeded, as the RateLimit draft's quota-exceeded problem type
	// defines; omitted if empty.
	ViolatedPolicies []string `json:"violated-policies,omitempty"`
}

// Write sends p with its status.
func (p Problem) Write(w http.ResponseWriter) {
	body, err := json.Marshal(p)
	if err != nil { // cannot happen: strings and ints only
		body = []byte(`{"title":"Internal Server Error","status":500}`)
		p.Status = http.StatusInternalServerError
	}
	h := w.Header()
	h.Set("Content-Type", "application/problem+json")
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(p.Status)
	_, _ = w.Write(append(body, '\n'))
}

// Denial describes a request the limiter refused.
type Denial struct {
	// Policies names the exposed rules that refused the request (empty
	// when only hidden rules did), as the headers spell them.
	Policies []string
	// RetryAfter is when the request could pass, the Retry-After sent.
	// Zero when Unsatisfiable.
	RetryAfter time.Duration
	// Unsatisfiable: the request's cost exceeds a refusing rule's capacity;
	// it can never pass, and no Retry-After was sent.
	Unsatisfiable bool
}

// WriteDenial is the default [DenyHandler]: 429 Too Many Requests with a
// quota-exceeded problem naming the violated policies.
func WriteDenial(w http.ResponseWriter, _ *http.Request, d Denial) {
	p := Problem{
		Type:             TypeQuotaExceeded,
		Title:            "Quota Exceeded",
		Status:           http.StatusTooManyRequests,
		ViolatedPolicies: d.Policies,
	}
	subject := "A rate limit"
	if len(d.Policies) > 0 {
		subject = fmt.Sprintf("Rate limit policy %q", strings.Join(d.Policies, `", "`))
	}
	if d.Unsatisfiable {
		p.Detail = subject + " cannot admit this request: its cost exceeds the policy's capacity, so retrying will not help."
	} else {
		p.Detail = fmt.Sprintf("%s is exhausted; retry in %d s.", subject, headers.RetryAfterSeconds(d.RetryAfter))
	}
	p.Write(w)
}

// WriteError is the default [ErrorHandler]. A store failure under a closed
// policy gets 503 Service Unavailable with a temporary-reduced-capacity
// problem; a request a rule could not key gets 400 Bad Request (saying so
// when it sent the key's header more than once); a negative
// request cost (a server bug) gets 500. No body says anything about the
// cause beyond that.
//
// A rule keyed by the route pattern in a limiter that runs before routing
// (err wraps [keyfunc.ErrNotRouted]: keyfunc.Endpoint in chi's r.Use, or
// around a whole http.ServeMux) is the server's mistake, not the
// request's: it gets 500 with a detail saying so, and a warning naming the
// fix is logged through [slog.Default], at most once a second.
func WriteError(w http.ResponseWriter, r *http.Request, err error) {
	if errors.Is(err, decide.ErrStoreFailed) {
		Problem{
			Type:   TypeTemporaryReducedCapacity,
			Title:  "Temporary Reduced Capacity",
			Status: http.StatusServiceUnavailable,
			Detail: "Rate limiting is temporarily unavailable and this service refuses requests until it is back; retry later.",
		}.Write(w)
		return
	}
	if errors.Is(err, decide.ErrInvalidCost) {
		Problem{Type: "about:blank", Title: "Internal Server Error", Status: http.StatusInternalServerError}.Write(w)
		return
	}
	if errors.Is(err, keyfunc.ErrNotRouted) {
		Problem{
			Type:   "about:blank",
			Title:  "Internal Server Error",
			Status: http.StatusInternalServerError,
			Detail: "A rate limit policy keys on the route pattern, which is not known yet where the rate limiter runs (before routing); the server's configuration must change.",
		}.Write(w)
		return
	}
	Problem{
		Type:   "about:blank",
		Title:  "Bad Request",
		Status: http.StatusBadRequest,
		Detail: keyErrorDetail(err),
	}.Write(w)
}
