package client

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"sync"
	"time"
)

// Defaults of [New].
const (
	// DefaultMaxWait bounds the time one request spends waiting, in all.
	DefaultMaxWait = 30 * time.Second
	// DefaultMaxRetries bounds how many times one request is sent again.
	DefaultMaxRetries = 3
	// DefaultJitter is the largest share of a wait added at random, so
	// clients told the same Retry-After do not come back together.
	DefaultJitter = 0.2
)

// maxHosts bounds the table of hosts the transport paces.
const maxHosts = 1024

// Transport is an [http.RoundTripper] that honours rate limits: it waits
// out a 429 or 503 with Retry-After and sends the request again, and it
// reads the rate-limit fields of every response (see [ParseQuota]) to
// slow down before the server refuses. Create it with [New]. It is safe
// for concurrent use; share one per process, as an [http.Client]'s
// Transport, so its requests to one host are paced together.
//
// # Retries
//
// A refused request is sent again when it is safe: its body can be
// replayed (none, or Request.GetBody set, as [http.NewRequest] does for
// in-memory bodies), and, for a 503, its method is idempotent (GET, HEAD,
// OPTIONS, TRACE, PUT, DELETE) or it carries an Idempotency-Key (a 503
// may come from a server that started the work; a 429 is a refusal before
// any). Otherwise, or after the last retry, the refusing response is
// returned as is.
//
// The wait is Retry-After (delay seconds or an HTTP-date), or for a 429
// without it, the RateLimit field's reset; plus up to the jitter share
// more, never less. A response with neither is returned as is. A wait
// that would take the request past its maximum total wait, or past its
// context's deadline, is not started: the transport returns at once a
// [*RefusedError] wrapping [ErrWaitTooLong] or [context.DeadlineExceeded],
// as it does for a Retry-After it cannot read ([ErrMalformed]) on a
// request it would have retried. A cancelled context ends a wait at once.
//
// # Pacing
//
// When a response says no quota remains (RateLimit r=0, or a Remaining
// field of 0), requests to that host wait until the quota comes back: one
// unit's share of the policy's window (w/q from RateLimit-Policy) when the
// policy is known, else the reset the field gives. Concurrent requests
// waiting for it are released one per share, not all at once. Pacing
// never waits beyond the request's bound: a request that would is sent
// at once, and the server decides.
type Transport struct {
	base       http.RoundTripper
	maxWait    time.Duration
	maxRetries int
	jitter     float64
	pace       bool
	now        func() time.Time
	sleep      func(ctx context.Context, d time.Duration) error

	mu    sync.Mutex
	hosts map[string]*pacer
}

// Option configures a [Transport].
type Option func(*Transport) error

// WithMaxWait bounds the total time one request waits (for pacing and
// before retries). Default: [DefaultMaxWait].
func WithMaxWait(d time.Duration) Option {
	return func(t *Transport) error {
		if d < 0 {
			return fmt.Errorf("%w: WithMaxWait: negative %v", ErrInvalidConfig, d)
		}
		t.maxWait = d
		return nil
	}
}

// WithMaxRetries bounds how many times one request is sent again; 0 never
// retries (pacing still applies). Default: [DefaultMaxRetries].
func WithMaxRetries(n int) Option {
	return func(t *Transport) error {
		if n < 0 {
			return fmt.Errorf("%w: WithMaxRetries: negative %d", ErrInvalidConfig, n)
		}
		t.maxRetries = n
		return nil
	}
}

// WithJitter sets the largest share of a wait added at random, from 0 to
// 1. Default: [DefaultJitter].
func WithJitter(share float64) Option {
	return func(t *Transport) error {
		if !(share >= 0 && share <= 1) {
			return fmt.Errorf("%w: WithJitter: %v is not within 0 to 1", ErrInvalidConfig, share)
		}
		t.jitter = share
		return nil
	}
}

// WithoutPacing turns pacing off: the transport only waits out refusals.
func WithoutPacing() Option {
	return func(t *Transport) error { t.pace = false; return nil }
}

// WithTime sets the transport's clock and how it sleeps (sleep returns
// ctx's error if ctx ends first). A request's context deadline is compared
// against now. Default: the system clock and a timer.
// Tests pass a fake clock whose sleep moves it.
func WithTime(now func() time.Time, sleep func(ctx context.Context, d time.Duration) error) Option {
	return func(t *Transport) error {
		if now == nil || sleep == nil {
			return fmt.Errorf("%w: WithTime: nil clock or sleep", ErrInvalidConfig)
		}
		t.now, t.sleep = now, sleep
		return nil
	}
}

// New returns a Transport sending requests through base
// ([http.DefaultTransport] if nil). It fails on an invalid option, with
// an error wrapping [ErrInvalidConfig].
func New(base http.RoundTripper, opts ...Option) (*Transport, error) {
	if base == nil {
		base = http.DefaultTransport
	}
	t := &Transport{
		base: base, maxWait: DefaultMaxWait, maxRetries: DefaultMaxRetries, jitter: DefaultJitter,
		pace: true, now: time.Now, sleep: sleep, hosts: map[string]*pacer{},
	}
	for _, o := range opts {
		if err := o(t); err != nil {
			return nil, err
		}
	}
	return t, nil
}

// MustNew is like [New] but panics on an invalid option; for options
// fixed in code, as in http.Client{Transport: client.MustNew(nil)}.
func MustNew(base http.RoundTripper, opts ...Option) *Transport {
	t, err := New(base, opts...)
	if err != nil {
		panic(err)
	}
	return t
}

// sleep waits d on a timer, or until ctx ends.
func sleep(ctx context.Context, d time.Duration) error {
	tm := time.NewTimer(d)
	defer tm.Stop()
	select {
	case <-ctx.Done():
		return context.Cause(ctx)
	case <-tm.C:
		return nil
	}
}

// RoundTrip sends req, waiting and sending it again as the type's
// documentation describes.
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx := req.Context()
	p := t.pacer(req.URL.Host)
	var waited time.Duration
	for attempt := 1; ; attempt++ {
		probing := false
		if t.pace {
			d, isProbe, err := p.reserve(ctx, t.now)
			if err != nil {
				return nil, err
			}
			probing = isProbe
			if d > 0 && t.fits(ctx, waited, d) {
				if err := t.sleep(ctx, d); err != nil {
					return nil, err
				}
				waited += d
			}
		}
		send := req
		if attempt > 1 {
			var err error
			if send, err = replay(req); err != nil {
				return nil, err
			}
		}
		resp, err := t.base.RoundTrip(send)
		if err != nil {
			if probing {
				p.answered(nil, time.Time{})
			}
			return nil, err
		}
		now := t.now()
		q, hasQuota := ParseQuota(resp.Header, now)
		if hasQuota {
			p.answered(&q, now)
		} else {
			p.answered(nil, now)
		}
		if resp.StatusCode != http.StatusTooManyRequests && resp.StatusCode != http.StatusServiceUnavailable {
			return resp, nil
		}
		var wait time.Duration
		var malformed error
		if v := resp.Header.Get("Retry-After"); v != "" {
			wait, malformed = ParseRetryAfter(v, now)
		} else if resp.StatusCode == http.StatusTooManyRequests && hasQuota && q.Reset > 0 {
			wait = q.Reset
		} else {
			return resp, nil // no word on when: the caller decides
		}
		if malformed == nil {
			p.block(now.Add(min(wait, t.maxWait)))
		}
		if attempt > t.maxRetries || !retryable(req, resp.StatusCode) {
			return resp, nil
		}
		if malformed != nil {
			return nil, t.refuse(resp, attempt, 0, malformed)
		}
		// The jitter's range doubles with each refusal of this request,
		// so clients that keep colliding spread further apart.
		wait += time.Duration(rand.Float64() * t.jitter * float64(wait) * float64(int64(1)<<min(attempt-1, 5)))
		switch {
		case waited+wait > t.maxWait:
			return nil, t.refuse(resp, attempt, wait, fmt.Errorf("%w: %v, with %v waited of at most %v", ErrWaitTooLong, wait, waited, t.maxWait))
		case !t.fitsDeadline(ctx, wait):
			return nil, t.refuse(resp, attempt, wait, fmt.Errorf("waiting %v would outlast the request's context: %w", wait, context.DeadlineExceeded))
		}
		discard(resp)
		if wait > 0 {
			if err := t.sleep(ctx, wait); err != nil {
				return nil, err
			}
			waited += wait
		}
	}
}

// fits reports whether a wait of d keeps the request within its bounds.
func (t *Transport) fits(ctx context.Context, waited, d time.Duration) bool {
	return waited+d <= t.maxWait && t.fitsDeadline(ctx, d)
}

// fitsDeadline reports whether a wait of d ends before ctx's deadline, on
// the transport's clock (see [WithTime]).
func (t *Transport) fitsDeadline(ctx context.Context, d time.Duration) bool {
	deadline, ok := ctx.Deadline()
	return !ok || deadline.Sub(t.now()) > d
}

func (t *Transport) refuse(resp *http.Response, attempts int, wait time.Duration, err error) error {
	discard(resp)
	return &RefusedError{StatusCode: resp.StatusCode, Wait: wait, Attempts: attempts, Err: err}
}

// discard reads a little of resp's body, so the connection can be
// reused, and closes it.
func discard(resp *http.Response) {
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
}

// retryable reports whether req may be sent again after status.
func retryable(req *http.Request, status int) bool {
	if req.Body != nil && req.Body != http.NoBody && req.GetBody == nil {
		return false
	}
	if status == http.StatusTooManyRequests {
		return true
	}
	switch req.Method {
	case http.MethodGet, http.MethodHead, http.MethodOptions, http.MethodTrace, http.MethodPut, http.MethodDelete, "":
		return true
	}
	return req.Header.Get("Idempotency-Key") != ""
}

// replay returns a copy of req with a fresh body.
func replay(req *http.Request) (*http.Request, error) {
	r := req.Clone(req.Context())
	if req.GetBody != nil {
		body, err := req.GetBody()
		if err != nil {
			return nil, err
		}
		r.Body = body
	}
	return r, nil
}

// pacer returns the pacer of host.
func (t *Transport) pacer(host string) *pacer {
	t.mu.Lock()
	defer t.mu.Unlock()
	p, ok := t.hosts[host]
	if !ok {
		if len(t.hosts) >= maxHosts {
			clear(t.hosts)
		}
		p = &pacer{}
		t.hosts[host] = p
	}
	return p
}

// probeWait bounds how long a request waits for the first answer of a
// host it has not heard from before sending anyway.
const probeWait = 2 * time.Second

// pacer spaces the requests to one host by what its answers said.
type pacer struct {
	mu    sync.Mutex
	next  time.Time     // no request before this
	gap   time.Duration // the space between requests; 0: none
	heard bool          // the host has answered
	// probe, while the first request to a host is in flight, is closed
	// when its answer is in: concurrent requests wait for it rather than
	// all being sent blind.
	probe chan struct{}
}

// reserve returns how long a request made now waits, and books its slot.
// The first request to a host is its probe: requests made while it is in
// flight wait for its answer (at most probeWait, or until ctx ends).
func (p *pacer) reserve(ctx context.Context, now func() time.Time) (d time.Duration, probe bool, err error) {
	p.mu.Lock()
	if !p.heard {
		if p.probe == nil {
			p.probe = make(chan struct{})
			p.mu.Unlock()
			return 0, true, nil
		}
		ch := p.probe
		p.mu.Unlock()
		tm := time.NewTimer(probeWait)
		defer tm.Stop()
		select {
		case <-ch:
		case <-tm.C:
		case <-ctx.Done():
			return 0, false, context.Cause(ctx)
		}
		p.mu.Lock()
	}
	defer p.mu.Unlock()
	t := now()
	if t.Before(p.next) {
		slot := p.next
		p.next = p.next.Add(p.gap)
		return slot.Sub(t), false, nil
	}
	if p.gap > 0 {
		p.next = t.Add(p.gap)
	}
	return 0, false, nil
}

// answered records an answer from the host at now and what it said about
// the quota (nil: nothing), and ends a probe. A nil q with a zero now is
// a request that got no answer.
//
// With no quota remaining, requests are spaced by one unit's share of the
// policy's window (w/q), or by the reset when the policy is unknown; with
// r remaining, by the reset spread over r+1 requests, so the client does
// not spend its remaining quota before the reset.
func (p *pacer) answered(q *Quota, now time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.probe != nil {
		close(p.probe)
		p.probe = nil
	}
	if now.IsZero() {
		return
	}
	p.heard = true
	if q == nil {
		p.gap = 0
		return
	}
	gap := q.Reset / time.Duration(q.Remaining+1)
	if q.Remaining == 0 && q.Limit > 0 && q.Window > 0 {
		if share := q.Window / time.Duration(q.Limit); share > 0 && (gap == 0 || share < gap) {
			gap = share
		}
	}
	p.gap = gap
	if q.Remaining == 0 && gap > 0 {
		if until := now.Add(gap); p.next.Before(until) {
			p.next = until
		}
	}
}

// block keeps every request from being sent before until.
func (p *pacer) block(until time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.next.Before(until) {
		p.next = until
	}
}
