// Package client is the other side of rate limiting: an
// [http.RoundTripper] for Go clients of a sluice-protected API, or of any
// API that sends Retry-After and the IETF RateLimit fields.
//
//	t, err := client.New(nil) // over http.DefaultTransport
//	if err != nil { ... }
//	c := &http.Client{Transport: t}
//
// The [Transport] waits out 429 and 503 responses that carry Retry-After
// and sends the request again when that is safe (a body it can replay;
// for a 503, an idempotent method), with jitter, never beyond a maximum
// total wait nor the request's context. It reads the rate-limit fields of
// every response (the IETF draft's RateLimit and RateLimit-Policy,
// draft-06's RateLimit-Limit, -Remaining and -Reset, and X-RateLimit-*)
// and paces requests to a host only once its quota is exhausted: while
// quota remains, requests go at once (goroutines sharing the transport send
// no more at once than the last response said remained); when a response
// says none remains, they go one per unit's share of the policy's window
// (w/q: 1.2 s for 50 a minute) or the reset the server gives, whichever is
// shorter, queued instead of refused, until a response says quota remains.
// Sixty requests in a row to a server's token bucket of 50 a minute, full
// at the start, take 12.0 s, none refused: 50 at once, then 10 × 1.2 s; with [WithoutPacing], 12.1 to 13 s, 9 or 10 of them
// refused and sent again after Retry-After. A server that lies (a Retry-After of a year, a
// field that does not parse) costs a bounded wait ([WithMaxWait], 30 s in
// all by default) and a clear error ([*RefusedError]), never a hang.
//
// The fields are read by the package's own Structured Fields parser
// ([ParseQuota], [ParseRetryAfter]); malformed fields are ignored, as the
// draft requires.
package client
