package redisstore

import (
	"context"
	_ "embed"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/redis/go-redis/v9"
	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/internal/algo"
)

//go:embed take.lua
var takeSource string

// Store is the Redis store. Create it with [New]; it is safe for concurrent
// use. Take is atomic across every client of the same Redis node.
type Store struct {
	client Client
	script *redis.Script
	keys   *keyer
	log    *slog.Logger

	reloads  atomic.Int64 // scripts re-sent after NOSCRIPT
	breaker  *breaker     // nil when disabled
	coalesce *coalescer   // nil when off
	events   sluice.StoreEvents
	endpoint string
	closed   atomic.Bool
	cancel   context.CancelFunc
	wg       sync.WaitGroup

	// now, when set, replaces the server clock. Only tests set it, through
	// export_test.go: production code has no way to.
	now func() int64
}

var _ sluice.Store = (*Store)(nil)

// New returns a store deciding on client, which it does not own: closing
// the store leaves the client open.
//
// It refuses a Cluster or Ring client, and a client whose options would
// re-run scripts or ignore deadlines (see the package documentation), with
// an error wrapping [ErrUnsupportedClient]. It does no I/O itself; unless
// cfg.StartupCheckTimeout is negative it starts a background check that
// loads the script and warns if Redis may evict the store's keys.
func New(client Client, cfg Config) (*Store, error) {
	if client == nil {
		return nil, fmt.Errorf("%w: nil client", ErrUnsupportedClient)
	}
	cfg = cfg.withDefaults()
	if strings.ContainsAny(cfg.Prefix, "{}") {
		return nil, fmt.Errorf("redisstore: prefix %q contains a brace, which would change the keys' hash tag", cfg.Prefix)
	}
	if err := checkClient(client, cfg.AllowUnsafeClient); err != nil {
		return nil, err
	}
	endpoint := cfg.Endpoint
	if endpoint == "" {
		endpoint = "redis"
		if oc, ok := client.(interface{ Options() *redis.Options }); ok && oc.Options().Addr != "" {
			endpoint = oc.Options().Addr
		}
	}
	s := &Store{
		client:   client,
		script:   redis.NewScript(takeSource),
		keys:     newKeyer(cfg.Prefix, cfg.Secret),
		log:      cfg.Logger,
		breaker:  newBreaker(endpoint, cfg.Breaker, cfg.Events),
		events:   cfg.Events,
		endpoint: endpoint,
	}
	if cfg.Coalesce > 1 {
		s.coalesce = &coalescer{s: s, max: cfg.Coalesce}
	}
	ctx, cancel := context.WithCancel(context.Background())
	s.cancel = cancel
	if cfg.StartupCheckTimeout > 0 {
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			ctx, cancel := context.WithTimeout(ctx, cfg.StartupCheckTimeout)
			defer cancel()
			s.checkServer(ctx)
		}()
	}
	return s, nil
}

// Take decides hits in one script call (see [sluice.Store]). ctx bounds the
// call: give it the request's deadline. Failures are [*sluice.StoreError]
// values; a timeout or a connection reset is ambiguous, since the script may
// have run.
func (s *Store) Take(ctx context.Context, hits []sluice.Hit, out []sluice.Result) error {
	if err := sluice.CheckHits(hits, out); err != nil {
		return fmt.Errorf("redisstore: %w", err)
	}
	if s.closed.Load() {
		return &sluice.StoreError{Op: "redisstore: take", Kind: sluice.ErrClosed}
	}
	if len(hits) == 0 {
		return nil
	}
	if ctx.Err() != nil {
		// Sent, it would fail without reaching Redis, yet read as an
		// ambiguous timeout that the breaker counts.
		return ctxError(ctx, false)
	}
	if s.coalesce != nil {
		return s.coalesce.take(ctx, hits, out)
	}
	keys, args := s.appendRequest(nil, nil, hits)
	reply, err := s.call(ctx, keys, s.scriptArgs([][]any{args}))
	if err != nil {
		return err
	}
	return decode(reply, hits, out)
}

// call runs the script through the circuit breaker and classifies its
// error.
func (s *Store) call(ctx context.Context, keys []string, args []any) (any, error) {
	probe := false
	if s.breaker != nil {
		ok, p, retry := s.breaker.allow()
		if !ok {
			return nil, &sluice.StoreError{Op: "redisstore: take", Kind: sluice.ErrBreakerOpen, RetryAfter: retry}
		}
		probe = p
	}
	reply, err := s.run(ctx, keys, args)
	if err != nil {
		err = classify("redisstore: take", err)
	}
	if s.breaker != nil {
		s.breaker.record(probe, err)
	}
	return reply, err
}

// clockArg is the script's first argument: ” for the server clock, or the
// test clock.
func (s *Store) clockArg() string {
	if s.now != nil {
		return strconv.FormatInt(s.now(), 10)
	}
	return ""
}

// scriptArgs returns the script's arguments for a call deciding requests,
// each given by its hits' arguments from appendRequest (six per hit). A call
// of one request with one unforced token-bucket hit, the most common,
// takes the script's short form (see take.lua): five arguments, not nine.
func (s *Store) scriptArgs(requests [][]any) []any {
	if a := requests[0]; len(requests) == 1 && len(a) == hitArgs && a[0] == int(sluice.TokenBucket) && a[5].(int)&flagForce == 0 {
		return []any{s.clockArg(), "t", a[3], a[2], a[4]}
	}
	args := []any{s.clockArg(), len(requests)}
	for _, a := range requests {
		args = append(args, len(a)/hitArgs)
	}
	for _, a := range requests {
		args = append(args, a...)
	}
	return args
}

// hitArgs is the number of script arguments per hit; flagShadow and
// flagForce are the bits of its last, the flags.
const (
	hitArgs    = 6
	flagShadow = 1
	flagForce  = 2
)

// appendRequest appends the keys and script arguments of one request's
// hits (hitArgs per hit) to keys and args.
func (s *Store) appendRequest(keys []string, args []any, hits []sluice.Hit) ([]string, []any) {
	for i := range hits {
		h := &hits[i]
		keys = append(keys, s.keys.key(h))
		flags := 0
		if h.Shadow {
			flags |= flagShadow
		}
		if h.Force {
			flags |= flagForce
		}
		args = append(args, int(h.Algorithm), h.Limit.PeriodMicros(), h.Limit.Capacity(), h.Limit.IntervalMicros(), h.Cost, flags)
	}
	return keys, args
}

// run evaluates the script by its SHA. If Redis lost it (NOSCRIPT: restart,
// failover, SCRIPT FLUSH) it sends the source once: Redis did not run the
// script, so this cannot consume twice.
func (s *Store) run(ctx context.Context, keys []string, args []any) (any, error) {
	reply, err := s.script.EvalSha(ctx, s.client, keys, args...).Result()
	if err != nil && redis.HasErrorPrefix(err, "NOSCRIPT") {
		s.reloads.Add(1)
		if s.events != nil {
			s.events.ScriptReloaded(s.endpoint)
		}
		reply, err = s.script.Eval(ctx, s.client, keys, args...).Result()
	}
	return reply, err
}

// decode fills out from the script's reply: five integers per hit.
func decode(reply any, hits []sluice.Hit, out []sluice.Result) error {
	vals, ok := reply.([]any)
	if !ok || len(vals) != 5*len(hits) {
		return badReply(reply)
	}
	for i := range hits {
		var n [5]int64
		for j := range n {
			v, ok := vals[5*i+j].(int64)
			if !ok {
				return badReply(reply)
			}
			n[j] = v
		}
		out[i] = sluice.Result{
			Allowed:       n[0] == 1,
			Unsatisfiable: n[1] == 1,
			Limit:         hits[i].Limit,
			Remaining:     n[2],
			ResetAfter:    algo.Micros(n[3]),
			RetryAfter:    algo.Micros(n[4]),
		}
	}
	return nil
}

// badReply reports a script reply of the wrong shape. The script ran, so
// the outcome is ambiguous.
func badReply(reply any) error {
	return &sluice.StoreError{Op: "redisstore: take", Kind: sluice.ErrUnavailable, Ambiguous: true,
		Err: fmt.Errorf("unexpected script reply %T", reply)}
}

// BreakerState returns the state of the store's circuit breaker
// ([sluice.BreakerClosed] when it is disabled).
func (s *Store) BreakerState() sluice.BreakerState {
	if s.breaker == nil {
		return sluice.BreakerClosed
	}
	return s.breaker.State()
}

// ScriptReloads returns how many times the store re-sent its script after
// Redis reported it missing.
func (s *Store) ScriptReloads() int64 { return s.reloads.Load() }

// Close stops the background start-up check and waits for it. Later calls to
// Take fail with [sluice.ErrClosed]. The client stays open. Close is
// idempotent and always returns nil.
func (s *Store) Close() error {
	s.closed.Store(true)
	s.cancel()
	s.wg.Wait()
	return nil
}
