package redisstore_test

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/internal/redistest"
	"github.com/sluicehq/sluice/store/redisstore"
	"github.com/sluicehq/sluice/store/storetest"
)

// safeOptions are go-redis options fit for a limiter at addr.
func safeOptions(addr string) *redis.Options {
	opt, err := redisstore.ClientOptions(addr)
	if err != nil {
		panic(err)
	}
	opt.DialTimeout, opt.ReadTimeout, opt.WriteTimeout = time.Second, time.Second, time.Second
	return opt
}

func newClient(t testing.TB, addr string) *redis.Client {
	c := redis.NewClient(safeOptions(addr))
	t.Cleanup(func() { c.Close() })
	return c
}

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// newStore returns a store on client whose clock is clock.
func newStore(t testing.TB, client redisstore.Client, clock *storetest.Clock) *redisstore.Store {
	t.Helper()
	return newStoreWith(t, client, clock, redisstore.Config{})
}

// newStoreWith is newStore with cfg (Logger and Secret are set for tests).
func newStoreWith(t testing.TB, client redisstore.Client, clock *storetest.Clock, cfg redisstore.Config) *redisstore.Store {
	t.Helper()
	if clock != nil {
		client.(interface{ AddHook(redis.Hook) }).AddHook(clockHook{clock})
		if cfg.Clock == nil {
			cfg.Clock = clock // calendar boundaries placed on the same clock
		}
	}
	cfg.Logger, cfg.Secret = quiet, []byte("test secret")
	if cfg.PresenceInterval == 0 {
		// Off unless asked for: tests that count the server's keys count
		// buckets (presence_test.go tests the instance count).
		cfg.PresenceInterval = -1
	}
	s, err := redisstore.New(client, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if clock != nil {
		redisstore.SetRefusalClock(s, clock.Now)
	}
	t.Cleanup(func() { s.Close(context.Background()) })
	return s
}

// realRedis returns a factory of harnesses on one redis-server started for
// t. Each harness has its own store and clock; the suite's keys keep their
// buckets apart.
func realRedis(t *testing.T) storetest.Factory {
	srv := redistest.Start(t)
	return func(t *testing.T) storetest.Harness {
		clock := storetest.NewClock(time.Now())
		return storetest.Harness{
			Store:   newStore(t, newClient(t, srv.Addr), clock),
			SetTime: clock.Set,
			Atomic:  true,
			Clients: func(t *testing.T, n int) []sluice.Store {
				stores := make([]sluice.Store, n)
				for i := range stores { // separate pools, separate store values
					stores[i] = newStore(t, newClient(t, srv.Addr), clock)
				}
				return stores
			},
		}
	}
}

func peek(t testing.TB, s sluice.Store, h sluice.Hit) sluice.Result {
	t.Helper()
	h.Peek, h.Shadow, h.Force, h.MinCost = true, false, false, 0
	out := make([]sluice.Result, 1)
	if err := s.Take(context.Background(), []sluice.Hit{h}, out); err != nil {
		t.Fatal(err)
	}
	return out[0]
}

// cmdHook is a go-redis hook that shows every command sent, alone or in
// a pipeline, to the function it is, before sending it.
type cmdHook func(redis.Cmder)

func (cmdHook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h cmdHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		h(cmd)
		return next(ctx, cmd)
	}
}

func (h cmdHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		for _, cmd := range cmds {
			h(cmd)
		}
		return next(ctx, cmds)
	}
}

// clockHook is a go-redis hook that makes the store's scripts decide by a
// test clock instead of the server's TIME: it fills in their first
// argument, which the store leaves empty. Keys still expire in real time;
// the scripts give keys decided by such a clock ten minutes more to live.
type clockHook struct{ clock *storetest.Clock }

func (clockHook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h clockHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		h.set(cmd)
		return next(ctx, cmd)
	}
}

func (h clockHook) set(cmd redis.Cmder) {
	if n := cmd.Name(); n == "evalsha" || n == "eval" {
		args := cmd.Args() // evalsha, digest, key count, keys..., arguments...
		if nkeys, ok := args[2].(int); ok && len(args) > 3+nkeys {
			args[3+nkeys] = h.clock.Now().UnixMicro()
		}
	}
}

// ProcessPipelineHook sets the clock of the scripts of a pipeline (the
// store pipelines a cross-slot request's per-slot scripts on a cluster).
func (h clockHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		for _, cmd := range cmds {
			h.set(cmd)
		}
		return next(ctx, cmds)
	}
}

// waitConnsReady waits until every ready connection s keeps is set up and
// idle: a connection set up later loads the scripts again, as after a
// restart, which a test of a flushed script cache must not meet.
func waitConnsReady(t testing.TB, s *redisstore.Store) {
	t.Helper()
	for start := time.Now(); redisstore.IdleConns(s) < redisstore.Conns(s); time.Sleep(time.Millisecond) {
		if time.Since(start) > ceiling {
			t.Fatalf("%d of %d connections ready after %v", redisstore.IdleConns(s), redisstore.Conns(s), ceiling)
		}
	}
}
