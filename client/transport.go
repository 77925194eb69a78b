package client

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/sluicehq/sluice/internal/retrywait"
)

// Defaults of [New].
const (
	// DefaultMaxWait bounds the time one request spends waiting, in
	// all: 30 s.
	DefaultMaxWait = retrywait.DefaultMaxWait
	// DefaultMaxRetries bounds how many times one request is sent
	// again: 3.
	DefaultMaxRetries = retrywait.DefaultMaxRetries
	// DefaultJitter is the largest share of a wait added at random, so
	// clients told the same Retry-After do not come back together: 0.2.
	DefaultJitter = retrywait.DefaultJitter
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
// While a host's responses say quota remains, requests to it are sent at
// once, however little remains and however far off its reset: the
// transport spends the quota before it slows down, and never spreads
// what remains over the reset. Concurrent requests send no more at once
// than the latest response said remained; the others wait for the next
// response.
//
// When a response says no quota remains (RateLimit r=0, or a Remaining
// field of 0), the next request to that host waits one unit's share of
// the policy's window (w/q from RateLimit-Policy) or the reset the field
// gives, whichever is shorter (the reset alone when the policy is
// unknown), and requests go one per that wait, concurrent ones included,
// until a response says quota remains again. A 429 or 503 with
// Retry-After holds back every request to the host for that long. So 60
// requests in a row against a full token bucket of 50 a minute go 50 at
// once, then one every 1.2 s: 12 s in all, none refused. Pacing never waits beyond the
// request's bound: a request that would is sent at once, and the server
// decides.
type Transport struct {
	base   http.RoundTripper
	policy retrywait.Policy
	pace   bool

	mu    sync.Mutex
	hosts map[string]*pacer
}

// Option configures a [Transport].
type Option func(*Transport) error

// WithMaxWait bounds the total time one request waits (for pacing and
// before retries). Default: [DefaultMaxWait].
func WithMaxWait(d time.Duration) Option {
	return func(t *Transport) error { return invalid(t.policy.SetMaxWait(d)) }
}

// WithMaxRetries bounds how many times one request is sent again; 0 never
// retries (pacing still applies). Default: [DefaultMaxRetries].
func WithMaxRetries(n int) Option {
	return func(t *Transport) error { return invalid(t.policy.SetMaxRetries(n)) }
}

// WithJitter sets the largest share of a wait added at random, from 0 to
// 1. Default: [DefaultJitter].
func WithJitter(share float64) Option {
	return func(t *Transport) error { return invalid(t.policy.SetJitter(share)) }
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
	return func(t *Transport) error { return invalid(t.policy.SetTime(now, sleep)) }
}

// invalid wraps err, an option's error, in [ErrInvalidConfig].
func invalid(err error) error {
	if err != nil {
		return fmt.Errorf("%w: %v", ErrInvalidConfig, err)
	}
	return nil
}

// New returns a Transport sending requests through base
// ([http.DefaultTransport] if nil). It fails on an invalid option, with
// an error wrapping [ErrInvalidConfig].
func New(base http.RoundTripper, opts ...Option) (*Transport, error) {
	if base == nil {
		base = http.DefaultTransport
	}
	t := &Transport{
		base: base, policy: retrywait.New(ErrWaitTooLong, "request"),
		pace: true, hosts: map[string]*pacer{},
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

// RoundTrip sends req, waiting and sending it again as the type's
// documentation describes.
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx := req.Context()
	p := t.pacer(req.URL.Host)
	var waited time.Duration
	for attempt := 1; ; attempt++ {
		var seq uint64
		if t.pace {
			n, d, err := t.awaitTurn(ctx, p, waited)
			if err != nil {
				return nil, err
			}
			seq, waited = n, waited+d
		}
		resp, now, q, err := t.sendAttempt(req, attempt, p, seq)
		if err != nil {
			return nil, err
		}
		wait, retry, err := t.retryWait(ctx, req, resp, q, now, attempt, waited, p)
		if err != nil {
			return nil, err
		}
		if !retry {
			return resp, nil
		}
		discard(resp)
		if wait > 0 {
			if err := t.policy.Sleep(ctx, wait); err != nil {
				return nil, err
			}
			waited += wait
		}
	}
}

// awaitTurn books the request's turn with the host's pacer, and waits
// for it when the wait keeps the request within its bounds (it has waited
// waited so far). It returns the request's number (for [pacer.answered])
// and how long it waited.
func (t *Transport) awaitTurn(ctx context.Context, p *pacer, waited time.Duration) (seq uint64, d time.Duration, err error) {
	d, seq, err = p.reserve(ctx, t.policy.Now)
	if err != nil {
		return 0, 0, err
	}
	if d <= 0 || !t.policy.Fits(ctx, waited, d) {
		return seq, 0, nil
	}
	if err := t.policy.Sleep(ctx, d); err != nil {
		p.answered(nil, seq, time.Time{})
		return 0, 0, err
	}
	return seq, d, nil
}

// sendAttempt sends req (a fresh copy of it after the first attempt)
// and, when pacing, gives the answer to the pacer as the answer to
// request seq. It returns the response, when it came and the quota it
// gave (nil: none).
func (t *Transport) sendAttempt(req *http.Request, attempt int, p *pacer, seq uint64) (*http.Response, time.Time, *Quota, error) {
	out := req
	var err error
	if attempt > 1 {
		out, err = replay(req)
	}
	var resp *http.Response
	if err == nil {
		resp, err = t.base.RoundTrip(out)
	}
	if err != nil {
		if t.pace {
			p.answered(nil, seq, time.Time{})
		}
		return nil, time.Time{}, nil, err
	}
	now := t.policy.Now()
	var quota *Quota
	if q, ok := ParseQuota(resp.Header, now); ok {
		quota = &q
	}
	if t.pace {
		p.answered(quota, seq, now)
	}
	return resp, now, quota, nil
}

// retryWait decides what follows resp, the answer at now to the
// request's attempt-th sending, with q the quota it gave (nil: none) and
// waited the time the request has waited so far. It reports retry and
// how long to wait first; or no retry and no error, when resp is to be
// returned as is (not a refusal, a refusal that does not say when to come
// back, or a request that may not be sent again); or an error that ends
// the request, resp discarded. A refusal that says when holds back every
// request to the host for that long.
func (t *Transport) retryWait(ctx context.Context, req *http.Request, resp *http.Response, q *Quota, now time.Time, attempt int, waited time.Duration, p *pacer) (wait time.Duration, retry bool, err error) {
	wait, ok, malformed := refusalWait(resp, q, now)
	if !ok {
		return 0, false, nil // not a refusal, or no word on when: the caller decides
	}
	if malformed == nil {
		p.block(now.Add(min(wait, t.policy.MaxWait)))
	}
	if !t.policy.Retries(attempt) || !retryable(req, resp.StatusCode) {
		return 0, false, nil
	}
	if malformed != nil {
		return 0, false, t.refuse(resp, attempt, 0, malformed)
	}
	wait = t.policy.Jittered(wait, attempt)
	if err := t.policy.Check(ctx, waited, wait); err != nil {
		return 0, false, t.refuse(resp, attempt, wait, err)
	}
	return wait, true, nil
}

// refusalWait returns the wait a refusal (429 or 503) at now asks for:
// its Retry-After, or for a 429 without it, the reset of its quota q. It
// reports false when resp is not a refusal or does not say; malformed is
// the error of a Retry-After it cannot read.
func refusalWait(resp *http.Response, q *Quota, now time.Time) (wait time.Duration, ok bool, malformed error) {
	if resp.StatusCode != http.StatusTooManyRequests && resp.StatusCode != http.StatusServiceUnavailable {
		return 0, false, nil
	}
	if v := resp.Header.Get("Retry-After"); v != "" {
		wait, malformed = ParseRetryAfter(v, now)
		return wait, true, malformed
	}
	if resp.StatusCode == http.StatusTooManyRequests && q != nil && q.Reset > 0 {
		return q.Reset, true, nil
	}
	return 0, false, nil
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

// answerWait bounds how long a request waits for an answer from the
// host (the first answer of a host it has not heard from, or the next
// once the requests in flight have used up the quota remaining) before it
// is sent anyway.
const answerWait = 2 * time.Second

// pacer spaces the requests to one host by what its answers said. It
// holds requests back only once the quota is exhausted: an answer with
// quota remaining lets that many requests go at once, however little
// remains and however long its reset, since spreading what remains over
// the reset would slow a client that has not reached its limit (and a
// server whose reset counts until the whole quota is back would have it
// wait from its second request).
type pacer struct {
	mu   sync.Mutex
	next time.Time     // no request before this
	gap  time.Duration // while the quota is exhausted, the space between requests; 0: none
	// heard: the host has answered. counted: its latest answer gave the
	// quota remaining, and credit is that quota less the requests sent
	// since (0 or less: used up, though the host has not said so yet).
	heard, counted bool
	credit         int64
	// sent numbers the requests in the order they are sent; applied is
	// the number of the latest one whose answer is applied. An answer to
	// an earlier request is stale (the host counted it before the one
	// already applied) and changes nothing.
	sent, applied uint64
	inFlight      int
	// answer, when requests wait for one, is closed at the next answer.
	answer chan struct{}
}

// reserve returns how long a request made now waits, books its slot and
// numbers it (seq, for [pacer.answered]). While the quota is exhausted,
// requests are given slots gap apart. A request that would be sent blind
// while others are in flight (to a host not heard from yet, or with the
// quota remaining used up by the requests in flight) waits for the next
// answer first, at most answerWait, or until ctx ends.
func (p *pacer) reserve(ctx context.Context, now func() time.Time) (d time.Duration, seq uint64, err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	var timeout <-chan time.Time
	for {
		t := now()
		if t.Before(p.next) {
			slot := p.next
			p.next = p.next.Add(p.gap)
			return slot.Sub(t), p.send(), nil
		}
		blind := !p.heard || p.counted && p.credit <= 0 && p.gap == 0
		if !blind || p.inFlight == 0 {
			if p.gap > 0 {
				p.next = t.Add(p.gap)
			}
			return 0, p.send(), nil
		}
		if timeout == nil {
			tm := time.NewTimer(answerWait)
			defer tm.Stop()
			timeout = tm.C
		}
		if p.answer == nil {
			p.answer = make(chan struct{})
		}
		ch := p.answer
		p.mu.Unlock()
		select {
		case <-ch:
			p.mu.Lock()
		case <-timeout:
			p.mu.Lock()
			return 0, p.send(), nil
		case <-ctx.Done():
			p.mu.Lock()
			return 0, 0, context.Cause(ctx)
		}
	}
}

// send counts a request sent, and returns its number.
func (p *pacer) send() uint64 {
	p.sent++
	p.inFlight++
	p.credit--
	return p.sent
}

// answered records the answer to request seq, received at now, and what
// it said about the quota (nil: nothing). A zero now is a request that
// got no answer, or was not sent after all; every request reserve numbers
// ends here once.
//
// While quota remains, requests are not held back (but no more are sent
// at once than remain), and an answer that says nothing of the quota
// stops the spacing. Once none remains, the next request waits one unit's
// share of the policy's window (w/q from RateLimit-Policy) or the reset
// the field gives, whichever is shorter (the reset alone when the policy
// is unknown), and requests are spaced by that wait until an answer says
// quota remains again.
func (p *pacer) answered(q *Quota, seq uint64, now time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.inFlight > 0 {
		p.inFlight--
	}
	if p.answer != nil {
		close(p.answer)
		p.answer = nil
	}
	if now.IsZero() || seq < p.applied {
		return
	}
	p.applied, p.heard = seq, true
	if q == nil {
		p.counted, p.gap = false, 0
		return
	}
	p.counted, p.credit = true, q.Remaining-int64(p.sent-seq)
	if q.Remaining > 0 {
		p.gap, p.next = 0, time.Time{} // quota remains: nothing to wait for
		return
	}
	gap := q.Reset
	if q.Limit > 0 && q.Window > 0 {
		if share := q.Window / time.Duration(q.Limit); share > 0 && (gap == 0 || share < gap) {
			gap = share
		}
	}
	p.gap = gap
	if until := now.Add(gap); gap > 0 && p.next.Before(until) {
		p.next = until
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
