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
	"github.com/sluicehq/sluice/store/redisstore/internal/conn"
)

// Store is the Redis store. Create it with [New]; it is safe for concurrent
// use. Take is atomic across every client of the same Redis node.
type Store struct {
	client Client
	b      backend // the topology: a node, or a cluster
	keys   *keyer
	log    *slog.Logger

	reloads atomic.Int64 // scripts re-sent after NOSCRIPT
	// wrong, once set, fails every call: the start-up check found the
	// server is a Redis Cluster node behind a client that is not a
	// cluster client.
	wrong    atomic.Bool
	refusals *refusal.Memory // nil when off
	record   *refusal.Record // what it last said of each bucket
	presence *presence       // nil when off
	events   sluice.StoreEvents
	policy   *policyWatch
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
	s := &Store{
		client:   client,
		keys:     newKeyer(cfg.Prefix, cfg.Secret),
		log:      cfg.Logger,
		events:   cfg.Events,
		refusals: refusal.New(cfg.RememberRefusals, cfg.RefusalMemory, nil),
		record:   refusal.NewRecord(0, nil),
	}
	s.refusals.Knowing(s.record)
	if cc, ok := client.(*redis.ClusterClient); ok {
		s.b = newCluster(cc, cfg, s.keys, &s.reloads, s.closed.Load, s.Instances)
	} else {
		n, err := newNode(client, cfg, s.keys, &s.reloads)
		if err != nil {
			return nil, err
		}
		s.b = n
	}
	setCalendarClock(s.b, cfg.Clock)
	s.policy = newPolicyWatch(cfg, s.b.policies)
	if publicSecret {
		warnPublicSecret(cfg.Logger)
	}
	s.start(cfg)
	return s, nil
}

// MustNew is like [New] but panics on an error, for a client and a
// configuration fixed in code (as rules.MustNew is for rules):
//
//	store := redisstore.MustNew(redisstore.MustNewClient("localhost:6379"), redisstore.Config{Secret: secret})
//
// New's errors are all about the client and the configuration, never about
// the server, which New does not contact: a panic here is a programming
// error, caught the first time the program starts.
func MustNew(client Client, cfg Config) *Store {
	s, err := New(client, cfg)
	if err != nil {
		panic(err)
	}
	return s
}

// start starts the store's background work: the topology's, the policy
// check, the instance count and the start-up check.
func (s *Store) start(cfg Config) {
	ctx, cancel := context.WithCancel(context.Background())
	s.cancel = cancel
	for _, run := range s.b.loops() {
		s.goRun(ctx, run)
	}
	s.goRun(ctx, s.policy.run)
	if cfg.PresenceInterval > 0 {
		s.presence = newPresence(s.client, cfg.Prefix, cfg.PresenceInterval, cfg.Logger)
		s.goRun(ctx, s.presence.run)
	}
	s.checked = make(chan struct{})
	if cfg.StartupCheckTimeout <= 0 {
		close(s.checked)
		return
	}
	s.goRun(ctx, func(ctx context.Context) {
		defer close(s.checked)
		ctx, cancel := context.WithTimeout(ctx, cfg.StartupCheckTimeout)
		defer cancel()
		s.checkServer(ctx)
	})
}

// goRun runs f in a goroutine that Close waits for.
func (s *Store) goRun(ctx context.Context, f func(ctx context.Context)) {
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		f(ctx)
	}()
}

// checkServer loads the script and warns when the server can evict the
// store's keys. It runs once, in the background, at New.
func (s *Store) checkServer(ctx context.Context) {
	if s.b.wrongClient(ctx) {
		s.wrong.Store(true)
		s.log.LogAttrs(ctx, slog.LevelError, "redisstore: every call fails: "+misconfigured().Error())
		return
	}
	err := s.client.ScriptLoad(ctx, takeSource).Err()
	if err == nil {
		err = s.client.ScriptLoad(ctx, refundSource).Err()
	}
	if errors.Is(err, context.Canceled) {
		return // the store was closed
	}
	if err != nil {
		if se := noPermission("redisstore: script load", err); se != nil {
			err = se
		}
		s.log.LogAttrs(ctx, slog.LevelWarn, "redisstore: could not preload the script; it is loaded on first use",
			slog.String("error", err.Error()))
		if !conn.IsReply(err) {
			return // the server did not answer: it would not answer CONFIG GET either
		}
	}
	s.policy.check(ctx)
}

// Take decides hits in one script call (see [sluice.Store]), or, on Redis
// Cluster, one per hash slot (see the package documentation). ctx bounds the
// call: give it the request's deadline. Failures are [*sluice.StoreError]
// values; a timeout or a connection reset is ambiguous, since the script may
// have run. A request one of whose buckets the store remembers refusing is
// refused with no script call (see Config.RememberRefusals).
func (s *Store) Take(ctx context.Context, hits []sluice.Hit, out []sluice.Result) error {
	return s.take(ctx, hits, out, false)
}

// TakePartial decides hits as Take does, except on Redis Cluster when the
// slots of some hits fail (CLUSTERDOWN, TRYAGAIN after its retries, a
// master that does not answer, its breaker open) and the other slots
// decided theirs: then it returns a [*sluice.PartialError] naming the
// failed hits, and the other hits' results are decisions (see
// [sluice.PartialTaker]). If a decided hit refused, the other decided
// slots' takes were given back, as for any refused request; if they all
// passed, their takes stand, and a caller that refuses the request anyway
// gives them back with [Store.Refund]. On a single node or Sentinel, where
// one script decides every hit, it is Take.
func (s *Store) TakePartial(ctx context.Context, hits []sluice.Hit, out []sluice.Result) error {
	return s.take(ctx, hits, out, true)
}

var _ sluice.PartialTaker = (*Store)(nil)

// take is Take, and with partial TakePartial.
func (s *Store) take(ctx context.Context, hits []sluice.Hit, out []sluice.Result, partial bool) error {
	if done, err := s.precheck(ctx, hits, out); done {
		return err
	}
	if s.refusals.Answer(hits, out) {
		return nil
	}
	sent := s.record.Now()
	err := s.b.take(ctx, hits, out, partial)
	s.remember(hits, out, sent, err)
	return err
}

// remember records the refusals of a call sent at sent that ended with
// err: all of its hits' when it succeeded, the decided hits' when it
// failed in part.
func (s *Store) remember(hits []sluice.Hit, out []sluice.Result, sent int64, err error) {
	var pe *sluice.PartialError
	if err == nil || errors.As(err, &pe) {
		s.record.Note(hits, out, sent)
		s.refusals.Remember(hits, out, sent) // the failed hits' zero results are skipped
	}
}

var _ sluice.BucketRecorder = (*Store)(nil)

// ClaimBucket returns what the store last said about h's bucket, once
// (see [sluice.BucketRecorder]). It keeps the last 16,384 buckets it
// decided, or about: two candidate slots a bucket, the one said longest
// ago replaced.
func (s *Store) ClaimBucket(h *sluice.Hit) (sluice.BucketState, bool) {
	return s.record.Claim(h)
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

// BreakerState returns the state of the store's circuit breaker
// ([sluice.BreakerClosed] when it is disabled).
//
// On Redis Cluster, where there is one per master, it is the least healthy
// of them: open if any is open. With a Sentinel-managed primary it is the
// current primary's.
func (s *Store) BreakerState() sluice.BreakerState { return s.b.breakerState() }

var _ sluice.InstanceCounter = (*Store)(nil)

// Instances returns how many stores share this one's keys (its Prefix on
// the same Redis, this one included), counted through Redis every
// Config.PresenceInterval; the last count while Redis does not answer. It
// is 0 until the first count, and when counting is off.
func (s *Store) Instances() int {
	if s.presence == nil {
		return 0
	}
	return int(s.presence.count.Load())
}

// ScriptReloads returns how many times the store re-sent its script after
// Redis reported it missing.
func (s *Store) ScriptReloads() int64 { return s.reloads.Load() }

// Observer returns Config.Events when it is also a [sluice.Observer] (the
// metrics package's Collector is), else nil. It makes the store a
// [sluice.ObserverSource]: the middleware reports its decisions there too
// unless it is given an observer of its own, so a collector set as
// Config.Events sees the decisions, the store calls and the breaker alike.
func (s *Store) Observer() sluice.Observer {
	o, _ := s.events.(sluice.Observer)
	return o
}

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
