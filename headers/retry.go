package headers

import (
	"net/http"
	"strconv"
	"time"

	"github.com/sluicehq/sluice"
)

const fieldRetryAfter = "Retry-After"

// RetryAfterSeconds returns d as a Retry-After delay-seconds value: whole
// seconds rounded up, at least 1, so a client is never told to come back
// before capacity exists nor told to retry at once.
func RetryAfterSeconds(d time.Duration) int64 {
	return max(ceilSeconds(d), 1)
}

// SetRetryAfter sets Retry-After to [RetryAfterSeconds](d), as
// delay-seconds (never an HTTP-date). It writes whatever d it is given:
// call it for a denied [sluice.Result] with its RetryAfter, and not for one
// that is Unsatisfiable (the request's cost exceeds the capacity, so no
// wait would help). The value then equals the t parameter [Write] gives the
// same result, as draft-ietf-httpapi-ratelimit-headers asks. When several
// rules denied a request, pass the longest of their RetryAfter: the value
// is then at least the t [Write] gives any of them.
func SetRetryAfter(h http.Header, d time.Duration) {
	h.Set(fieldRetryAfter, strconv.FormatInt(RetryAfterSeconds(d), 10))
}

// RetryAfter returns the Retry-After field for a wait of d, as
// [SetRetryAfter] sets it.
func RetryAfter(d time.Duration) Field {
	return Field{Name: fieldRetryAfter, Value: strconv.FormatInt(RetryAfterSeconds(d), 10)}
}

// ceilSeconds returns d in whole seconds rounded up, 0 if d is not
// positive.
func ceilSeconds(d time.Duration) int64 {
	if d <= 0 {
		return 0
	}
	s := int64(d / time.Second)
	if d%time.Second != 0 {
		s++
	}
	return s
}

// resetAfter returns what the t parameter counts down to: for a denied
// result that can pass later, the time until it would pass, else the time
// until the quota is whole again. secs is that time in whole seconds
// rounded up, and at least 1 for a denied result (the Retry-After value).
func resetAfter(r sluice.Result) (d time.Duration, secs int64) {
	if !r.Allowed && !r.Unsatisfiable {
		return max(r.RetryAfter, 0), RetryAfterSeconds(r.RetryAfter)
	}
	return max(r.ResetAfter, 0), ceilSeconds(r.ResetAfter)
}
