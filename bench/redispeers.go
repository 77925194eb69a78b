package bench

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-chi/httprate"
	httprateredis "github.com/go-chi/httprate-redis"
	"github.com/go-redis/redis_rate/v10"
	"github.com/redis/go-redis/v9"
	"github.com/sluicehq/sluice/store/redisstore"
	"github.com/throttled/throttled/v2"
	thrredis "github.com/throttled/throttled/v2/store/goredisstore.v9"
	ulule "github.com/ulule/limiter/v3"
	ulredis "github.com/ulule/limiter/v3/drivers/store/redis"
)

// RedisPeer is a Redis-backed limiter, or a baseline, in the load tool's
// comparison.
type RedisPeer struct {
	// Name appears in tables and charts.
	Name string
	// Algorithm says what it enforces and how it talks to Redis.
	Algorithm string
	// MultiRule reports that New decides all of [Spec.Rules] in one call.
	// Peers without it are stacked by [NewRedisLimiter]: one call per
	// rule, the way their users chain middlewares.
	MultiRule bool
	// Baseline marks a measurement that is not a peer: PING, which limits
	// nothing, and the A/A control, a second instance of plain Lua. It is
	// left out of the correctness race and the multi-rule comparison.
	Baseline bool
	// New builds one instance on its own client from e.
	New func(e *Env, s Spec) (Limiter, error)
}

// ControlPeer is the A/A control among [RedisPeers]: a second instance of
// sluice as the README sets it up, measured in the same interleaved rounds.
// Two instances of one limiter should make the same checks/s; how far
// apart they are in a run shows how large a difference that run can
// resolve.
const ControlPeer = "sluice (again)"

// RedisPeers returns the Redis comparison: the sluice variants first, then
// the peers, then the baselines. To measure another sluice variant, add
// one entry.
func RedisPeers() []RedisPeer {
	return []RedisPeer{
		{Name: "sluice", Algorithm: "as the README sets it up: its own client from redisstore.NewClient, zero Config but the Secret " +
			"(token bucket, one integer; all rules in one EVALSHA, server TIME; concurrent checks share script calls)",
			MultiRule: true, New: newSluiceRedis(redisstore.Config{})},
		{Name: "sluice (one call per check)", Algorithm: "as sluice, coalescing off (Config.Coalesce -1): one script call per check",
			MultiRule: true, New: newSluiceRedis(redisstore.Config{Coalesce: -1})},
		{Name: "ulule", Algorithm: "fixed window: EVALSHA of INCRBY + PEXPIRE/PTTL", New: newUluleRedis},
		{Name: "redis_rate", Algorithm: "GCRA: EVALSHA, server TIME", New: newRedisRate},
		{Name: "throttled", Algorithm: "GCRA: pipeline TIME+GET, then EVAL compare-and-swap (10 tries)", New: newThrottledRedis},
		{Name: "httprate-redis", Algorithm: "sliding window counter: MGET, then MULTI INCRBY EXPIRE; one lock per limiter", New: newHTTPRateRedis},
		{Name: "plain-lua", Algorithm: "baseline: token bucket EVALSHA (TIME, HMGET, HSET, PEXPIRE)", New: newPlainLua},
		{Name: ControlPeer, Algorithm: "A/A control: a second sluice instance on its own client; its ratio to sluice is this run's noise",
			Baseline: true, New: newSluiceRedis(redisstore.Config{})},
		{Name: "ping", Algorithm: "baseline: PING only, limits nothing", Baseline: true, New: newPing},
	}
}

// Env hands every Redis peer a client with the same settings, and counts
// the round trips all of them make.
type Env struct {
	// Addr is the Redis server, always on loopback.
	Addr string
	// PoolSize is every client's connection pool size.
	PoolSize int

	roundTrips atomic.Int64
	mu         sync.Mutex
	clients    []*redis.Client
}

// Options returns the client settings every peer gets: no retries (a
// retried script may run twice), context deadlines honoured, generous
// timeouts so a busy machine shows slow checks rather than errors.
func (e *Env) Options() *redis.Options {
	return &redis.Options{
		Addr:                  e.Addr,
		PoolSize:              e.PoolSize,
		MaxRetries:            -1,
		ContextTimeoutEnabled: true,
		DialTimeout:           2 * time.Second,
		ReadTimeout:           2 * time.Second,
		WriteTimeout:          2 * time.Second,
		PoolTimeout:           2 * time.Second,
	}
}

// NewClient returns a new client with [Env.Options], whose commands and
// pipelines are counted as round trips. Env.Close closes it.
func (e *Env) NewClient() *redis.Client { return e.client(e.Options()) }

// NewSluiceClient returns the client the README gives a sluice store,
// redisstore.NewClient's (its options are [redisstore.ClientOptions]), with
// its round trips counted. Env.Close closes it.
func (e *Env) NewSluiceClient() (*redis.Client, error) {
	opt, err := redisstore.ClientOptions(e.Addr)
	if err != nil {
		return nil, err
	}
	return e.client(opt), nil
}

func (e *Env) client(opt *redis.Options) *redis.Client {
	c := redis.NewClient(opt)
	c.AddHook(tripHook{&e.roundTrips})
	e.mu.Lock()
	e.clients = append(e.clients, c)
	e.mu.Unlock()
	return c
}

// RoundTrips returns how many commands and pipelines (each one round trip)
// the clients of e have sent so far.
func (e *Env) RoundTrips() int64 { return e.roundTrips.Load() }

// Close closes every client NewClient returned.
func (e *Env) Close() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	var errs []error
	for _, c := range e.clients {
		errs = append(errs, c.Close())
	}
	e.clients = nil
	return errors.Join(errs...)
}

type tripHook struct{ n *atomic.Int64 }

func (h tripHook) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h tripHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		h.n.Add(1)
		return next(ctx, cmd)
	}
}
func (h tripHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		h.n.Add(1)
		return next(ctx, cmds)
	}
}

// NewRedisLimiter builds p for s. When s has several rules and p cannot
// decide them in one call, it stacks them: one check per rule in turn,
// stopping at the first refusal, as chained middlewares would.
func NewRedisLimiter(p RedisPeer, e *Env, s Spec) (Limiter, error) {
	rules := s.rules()
	if rules == 1 || p.MultiRule {
		return p.New(e, s)
	}
	n := len(s.Keys)
	flat := make([]string, 0, n*rules)
	for r := range rules {
		for _, k := range s.Keys {
			flat = append(flat, RuleKey(r, k))
		}
	}
	one := s
	one.Keys, one.Rules = flat, 1
	inner, err := p.New(e, one)
	if err != nil {
		return nil, err
	}
	return perWorker{
		newWorker: func() Worker {
			w := inner.NewWorker()
			return func(ctx context.Context, key int) (bool, error) {
				for r := range rules {
					ok, err := w(ctx, r*n+key)
					if err != nil || !ok {
						return false, err
					}
				}
				return true, nil
			}
		},
		close: inner.Close,
	}, nil
}

// Secret is the redisstore.Config.Secret of every sluice Redis store the
// comparison builds, as a deployment sets one (the cost of the keyed hash
// does not depend on the key).
var Secret = []byte("sluice bench: a 32-byte secret..")

// newSluiceRedis returns the constructor of a sluice Redis store with cfg
// on the client the README gives it, keyed with [Secret] unless cfg has a
// secret of its own.
func newSluiceRedis(cfg redisstore.Config) func(e *Env, s Spec) (Limiter, error) {
	if len(cfg.Secret) == 0 {
		cfg.Secret = Secret
	}
	return func(e *Env, s Spec) (Limiter, error) {
		c, err := e.NewSluiceClient()
		if err != nil {
			return nil, err
		}
		st, err := redisstore.New(c, cfg)
		if err != nil {
			return nil, err
		}
		return perWorker{newWorker: sluiceWorker(st, s), close: func() error { return st.Close(context.Background()) }}, nil
	}
}

func newUluleRedis(e *Env, s Spec) (Limiter, error) {
	st, err := ulredis.NewStoreWithOptions(e.NewClient(), ulule.StoreOptions{Prefix: "ulule"})
	if err != nil {
		return nil, err
	}
	l := ulule.New(st, ulule.Rate{Period: s.Period, Limit: s.Burst})
	return shared{check: func(ctx context.Context, key int) (bool, error) {
		c, err := l.Get(ctx, s.Keys[key])
		return err == nil && !c.Reached, err
	}}, nil
}

func newRedisRate(e *Env, s Spec) (Limiter, error) {
	l := redis_rate.NewLimiter(e.NewClient())
	lim := redis_rate.Limit{Rate: int(s.Rate), Burst: int(s.Burst), Period: s.Period}
	return shared{check: func(ctx context.Context, key int) (bool, error) {
		res, err := l.Allow(ctx, s.Keys[key], lim)
		return err == nil && res.Allowed > 0, err
	}}, nil
}

func newThrottledRedis(e *Env, s Spec) (Limiter, error) {
	st, err := thrredis.NewCtx(e.NewClient(), "throttled:")
	if err != nil {
		return nil, err
	}
	l, err := throttled.NewGCRARateLimiterCtx(st, throttledQuota(s))
	if err != nil {
		return nil, err
	}
	return shared{check: func(ctx context.Context, key int) (bool, error) {
		limited, _, err := l.RateLimitCtx(ctx, s.Keys[key], 1)
		return err == nil && !limited, err
	}}, nil
}

// errWriter is a discardWriter that also keeps the error httprate reports
// through its error handler: OnLimit itself only says "limited".
type errWriter struct {
	discardWriter
	err error
}

func newHTTPRateRedis(e *Env, s Spec) (Limiter, error) {
	counter := httprateredis.NewCounter(&httprateredis.Config{
		Client:           e.NewClient(),
		FallbackDisabled: true, // errors must show, not turn into a local in-memory count
		PrefixKey:        "httprate",
	})
	rl := httprate.NewRateLimiter(int(s.Burst), s.Period,
		httprate.WithLimitCounter(counter),
		httprate.WithErrorHandler(func(w http.ResponseWriter, _ *http.Request, err error) {
			w.(*errWriter).err = err
		}))
	return perWorker{newWorker: func() Worker {
		w := &errWriter{discardWriter: discardWriter{h: make(http.Header, 4)}}
		r, _ := http.NewRequest(http.MethodGet, "http://127.0.0.1/", nil)
		return func(_ context.Context, key int) (bool, error) {
			w.err = nil
			limited := rl.OnLimit(w, r, s.Keys[key])
			if w.err != nil {
				return false, w.err
			}
			return !limited, nil
		}
	}}, nil
}

// plainLua is the textbook Redis token bucket: a hash of tokens and
// timestamp, refilled from the server clock, one EVALSHA per check.
var plainLua = redis.NewScript(`
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local capacity = tonumber(ARGV[1])
local per_us = tonumber(ARGV[2])
local v = redis.call('HMGET', KEYS[1], 'tokens', 'ts')
local tokens = tonumber(v[1]) or capacity
local ts = tonumber(v[2]) or now
tokens = math.min(capacity, tokens + math.max(0, now - ts) * per_us)
local allowed = 0
if tokens >= 1 then
  tokens = tokens - 1
  allowed = 1
end
redis.call('HSET', KEYS[1], 'tokens', tokens, 'ts', now)
redis.call('PEXPIRE', KEYS[1], math.ceil((capacity - tokens) / per_us / 1000) + 1000)
return allowed
`)

func newPlainLua(e *Env, s Spec) (Limiter, error) {
	c := e.NewClient()
	perUs := strconv.FormatFloat(float64(s.Rate)/float64(s.Period.Microseconds()), 'g', -1, 64)
	keys := make([][]string, len(s.Keys))
	for i, k := range s.Keys {
		keys[i] = []string{"plain:" + k}
	}
	return shared{check: func(ctx context.Context, key int) (bool, error) {
		n, err := plainLua.Run(ctx, c, keys[key], s.Burst, perUs).Int64()
		return err == nil && n == 1, err
	}}, nil
}

func newPing(e *Env, _ Spec) (Limiter, error) {
	c := e.NewClient()
	return shared{check: func(ctx context.Context, _ int) (bool, error) {
		return true, c.Ping(ctx).Err()
	}}, nil
}
