package redisstore

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/redis/go-redis/v9"
	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/internal/refusal"
)

// Store is the Redis store. Create it with [New]; it is safe for concurrent
// use. Take is atomic across every client of the same Redis node.
type Store struct {
	client Client
	keys   *keyer
	log    *slog.Logger

	reloads atomic.Int64 // scripts re-sent after NOSCRIPT
	cluster *cluster     // nil unless the client is a *redis.ClusterClient
	primary *primary     // nil unless the client is redis.NewFailoverClient's
	// wrong, once set, fails every call: the start-up check found the
	// server is a Redis Cluster node behind a client that is not a
	// cluster client.
	wrong    atomic.Bool
	ep       *endpoint
	coalesce *coalescer      // nil when off
	refusals *refusal.Memory // nil when off
	presence *presence       // nil when off
	events   sluice.StoreEvents
	healed   healLog // the keys whose heal was logged
	policy   *policyWatch
	endpoint string // ep.name
	closed   atomic.Bool
	cancel   context.CancelFunc
	wg       sync.WaitGroup // background goroutines
	checked  chan struct{}  // closed when the start-up check is over
}

var _ sluice.Store = (*Store)(nil)

// New returns a store deciding on client, which it does not own: closing
// the store leaves the client open.
//
// client is a single node's, a Sentinel-managed primary's
// ([redis.NewFailoverClient]) or a Redis Cluster's ([redis.NewClusterClient]).
// New refuses a Ring, [redis.NewFailoverClusterClient]'s client, and a
// client whose options would re-run scripts or ignore deadlines (see the
// package documentation), with an error wrapping [ErrUnsupportedClient]. It does no I/O itself; unless
// cfg.StartupCheckTimeout is negative it starts a background check that
// loads the script and warns if Redis may evict the store's keys.
func New(client Client, cfg Config) (*Store, error) {
	if client == nil {
		return nil, fmt.Errorf("%w: nil client", ErrUnsupportedClient)
	}
	publicSecret := len(cfg.Secret) == 0
	cfg = cfg.withDefaults()
	if strings.ContainsAny(cfg.Prefix, "{}") {
		return nil, fmt.Errorf("%w: redisstore: Config.Prefix %q contains a brace, which would change the keys' hash tag", sluice.ErrInvalidConfig, cfg.Prefix)
	}
	if err := refusal.Validate("redisstore", cfg.RefusalMemory); err != nil {
		return nil, err
	}
	if err := checkClient(client, cfg.AllowUnsafeClient); err != nil {
		return nil, err
	}
	var opt *redis.Options
	if oc, ok := client.(interface{ Options() *redis.Options }); ok {
		opt = oc.Options()
	}
	conns, err := cfg.conns(opt)
	if err != nil {
		return nil, err
	}
	name := cfg.Endpoint
	if name == "" {
		name = "redis"
		if opt != nil && opt.Addr != "" {
			name = opt.Addr
		}
	}
	ep := &endpoint{name: name, client: client, breaker: newBreaker(name, cfg.Breaker, cfg.Events)}
	if ep.breaker != nil {
		ep.breaker.background = true
	}
	// Only a client of go-redis's own type: a wrapper that overrides
	// Process must see every command.
	if src, ok := client.(*redis.Client); ok && conns > 0 {
		if readySafe(opt) {
			ep.ready = newReadySet(src, opt, conns, cfg.SetupTimeout, cfg.Logger, name, &ep.rtt)
		} else {
			cfg.Logger.LogAttrs(context.Background(), slog.LevelWarn,
				"redisstore: the client's connections are set up on first use, inside a request's budget; build it with redisstore.NewClient, or set Protocol: 2 or MaintNotificationsConfig Mode disabled in redis.Options, so that the store keeps connections ready",
				slog.String("endpoint", name))
		}
	}
	s := &Store{
		client:   client,
		keys:     newKeyer(cfg.Prefix, cfg.Secret),
		log:      cfg.Logger,
		ep:       ep,
		events:   cfg.Events,
		endpoint: name,
		policy:   newPolicyWatch(cfg),
		refusals: refusal.New(cfg.RememberRefusals, cfg.RefusalMemory, nil),
	}
	if cfg.Coalesce > 1 {
		s.coalesce = newCoalescer(s, ep, cfg.Coalesce, cfg.CoalesceLanes)
	}
	if cc, ok := client.(*redis.ClusterClient); ok {
		s.cluster = newCluster(s, cc, cfg)
		s.ep.breaker = nil // one per master, in s.cluster
		if cfg.Endpoint == "" {
			s.endpoint = "cluster"
		}
	}
	if cfg.Endpoint == "" {
		if s.primary = watchPrimary(s, client, cfg); s.primary != nil {
			s.ep.breaker = nil // one per primary, in s.primary
		}
	}
	if publicSecret {
		warnPublicSecret(cfg.Logger)
	}
	ctx, cancel := context.WithCancel(context.Background())
	s.cancel = cancel
	if ep.ready != nil {
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			ep.ready.run(ctx)
		}()
	}
	if ep.breaker != nil {
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			ep.watch(ctx)
		}()
	}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		s.policy.run(ctx, s)
	}()
	if cfg.PresenceInterval > 0 {
		s.presence = newPresence(client, cfg.Prefix, cfg.PresenceInterval, cfg.Logger)
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			s.presence.run(ctx)
		}()
	}
	s.checked = make(chan struct{})
	if cfg.StartupCheckTimeout <= 0 {
		close(s.checked)
	} else {
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			defer close(s.checked)
			ctx, cancel := context.WithTimeout(ctx, cfg.StartupCheckTimeout)
			defer cancel()
			s.checkServer(ctx)
		}()
	}
	return s, nil
}

// Take decides hits in one script call (see [sluice.Store]), or, on Redis
// Cluster, one per hash slot (see the package documentation). ctx bounds the
// call: give it the request's deadline. Failures are [*sluice.StoreError]
// values; a timeout or a connection reset is ambiguous, since the script may
// have run. A request one of whose buckets the store remembers refusing is
// refused with no script call (see Config.RememberRefusals).
func (s *Store) Take(ctx context.Context, hits []sluice.Hit, out []sluice.Result) error {
	if done, err := s.precheck(ctx, hits, out); done {
		return err
	}
	if s.refusals.Answer(hits, out) {
		return nil
	}
	sent := s.refusals.Now()
	err := s.take(ctx, hits, out)
	s.remember(hits, out, sent, err)
	return err
}

// remember records the refusals of a call sent at sent that ended with
// err: all of its hits' when it succeeded, the decided hits' when it
// failed in part.
func (s *Store) remember(hits []sluice.Hit, out []sluice.Result, sent int64, err error) {
	var pe *sluice.PartialError
	if s.refusals != nil && (err == nil || errors.As(err, &pe)) {
		s.refusals.Remember(hits, out, sent) // the failed hits' zero results are skipped
	}
}

// take sends hits: on Cluster per slot, else through the coalescer or as
// one script call.
func (s *Store) take(ctx context.Context, hits []sluice.Hit, out []sluice.Result) error {
	if s.cluster != nil {
		return s.cluster.take(ctx, hits, out)
	}
	if s.coalesce != nil {
		return s.coalesce.take(ctx, hits, out)
	}
	r := s.newRequest(hits, out)
	return s.decide(ctx, []*request{&r})
}

// precheck answers a Take that needs no script call: invalid hits, a
// closed store, no hits, a context already done, a misconfigured client.
// done is false when the hits are to be sent.
func (s *Store) precheck(ctx context.Context, hits []sluice.Hit, out []sluice.Result) (done bool, err error) {
	switch err := sluice.CheckHits(hits, out); {
	case err != nil:
		return true, fmt.Errorf("redisstore: %w", err)
	case s.closed.Load():
		return true, &sluice.StoreError{Op: "redisstore: take", Kind: sluice.ErrClosed}
	case len(hits) == 0:
		return true, nil
	case ctx.Err() != nil:
		// Sent, it would fail without reaching Redis, yet read as an
		// ambiguous timeout that the breaker counts.
		return true, ctxError(ctx, false)
	case s.wrong.Load():
		return true, misconfigured()
	}
	return false, nil
}

// call runs a script command (see takeCommand and refundCommand) through
// the circuit breaker and classifies its error.
func (s *Store) call(ctx context.Context, cmd []any) (any, error) {
	probe, b := false, s.ep.breaker
	switch {
	case s.cluster != nil: // the breaker of the master of the command's slot
		b = s.cluster.breakerFor(ctx, cmd[3].(string))
	case s.primary != nil: // the breaker of the current primary
		b = s.primary.breaker()
	}
	if b != nil {
		ok, p, retry := b.allow()
		if !ok {
			if s.cluster != nil { // the slot may have moved to a promoted replica
				s.cluster.c.ReloadState(ctx)
			}
			return nil, &sluice.StoreError{Op: "redisstore: take", Kind: sluice.ErrBreakerOpen, RetryAfter: retry}
		}
		probe = p
	}
	reply, err := s.run(ctx, cmd)
	var se *sluice.StoreError
	if errors.As(err, &se) {
		// Already classified: unsent, in a way that says nothing about
		// Redis (see errNoConn and reach): a probe lets another call probe.
		if b != nil && probe {
			b.record(true, context.Canceled)
		}
		return nil, err
	}
	if err != nil {
		err = classify("redisstore: take", err)
		if s.cluster != nil {
			s.cluster.failed(ctx, err)
		}
	}
	if b != nil {
		b.record(probe, err)
	}
	return reply, err
}

// process sends cmd to the store's endpoint: on a ready connection when
// the store keeps them (see the package documentation).
func (s *Store) process(ctx context.Context, cmd redis.Cmder) error {
	return s.ep.process(ctx, cmd)
}

// BreakerState returns the state of the store's circuit breaker
// ([sluice.BreakerClosed] when it is disabled).
//
// On Redis Cluster, where there is one per master, it is the least healthy
// of them: open if any is open. With a Sentinel-managed primary it is the
// current primary's.
func (s *Store) BreakerState() sluice.BreakerState {
	switch {
	case s.cluster != nil:
		return s.cluster.breakerState()
	case s.primary != nil:
		if b := s.primary.breaker(); b != nil {
			return b.State()
		}
	case s.ep.breaker != nil:
		return s.ep.breaker.State()
	}
	return sluice.BreakerClosed
}

// ScriptReloads returns how many times the store re-sent its script after
// Redis reported it missing.
func (s *Store) ScriptReloads() int64 { return s.reloads.Load() }

// Close stops the store's background work (the start-up check, the breaker's
// probe, the policy check, the instance count) and waits for it, gives its
// ready connections back to the client's pool, and removes its entry from
// the instance count, within ctx, so that the other instances count one
// fewer at once. Later calls to Take fail with [sluice.ErrClosed]. The
// client stays open. Close is idempotent; it returns the error of removing
// the entry, if any (the entry expires on its own within three
// Config.PresenceInterval).
func (s *Store) Close(ctx context.Context) error {
	if s.closed.Swap(true) {
		return nil
	}
	s.cancel()
	s.wg.Wait()
	if s.presence != nil {
		return s.presence.leave(ctx)
	}
	return nil
}
