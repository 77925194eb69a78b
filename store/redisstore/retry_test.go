package redisstore_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/internal/faultproxy"
	"github.com/sluicehq/sluice/internal/redistest"
	"github.com/sluicehq/sluice/store/redisstore"
)

// TestScriptsAreNeverResent: a response slower than the read timeout makes
// go-redis send an ordinary command again, MaxRetries times, and Redis would
// run a script every time. The store's script commands say they must never
// be re-sent, so even through a client with MaxRetries 3 (let through with
// AllowUnsafeClient) the script runs once.
func TestScriptsAreNeverResent(t *testing.T) {
	srv := redistest.Start(t)
	px := faultproxy.Start(t, srv.Addr)
	direct := newClient(t, srv.Addr)
	runs := func() int64 { return commandCalls(t, direct, "evalsha") + commandCalls(t, direct, "eval") }

	for _, tc := range []struct {
		name       string
		maxRetries int
		wantRuns   int64
	}{{"MaxRetries 3", 3, 1}, {"MaxRetries -1", -1, 1}} {
		t.Run(tc.name, func(t *testing.T) {
			c := redis.NewClient(&redis.Options{Addr: px.Addr, MaxRetries: tc.maxRetries, ReadTimeout: 100 * time.Millisecond, PoolSize: 8})
			defer c.Close()
			s, err := redisstore.New(c, redisstore.Config{AllowUnsafeClient: true, StartupCheckTimeout: -1, Breaker: redisstore.BreakerConfig{Disabled: true}, Logger: quiet})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close(context.Background())
			hit := []sluice.Hit{{Key: tc.name, Limit: sluice.PerHour(100), Cost: 1}}
			out := make([]sluice.Result, 1)
			// Warm the pool (8 connections at once) and load the script
			// before the latency, so retries find open connections.
			var wg sync.WaitGroup
			for range 8 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					if err := c.Ping(context.Background()).Err(); err != nil {
						t.Error(err)
					}
				}()
			}
			wg.Wait()
			if err := s.Take(context.Background(), hit, out); err != nil {
				t.Fatal(err)
			}
			px.SetLatency(faultproxy.Downstream, 300*time.Millisecond)
			before := runs()
			err = s.Take(context.Background(), hit, out)
			px.Heal()
			time.Sleep(700 * time.Millisecond) // let every attempt reach Redis
			if err == nil {
				t.Fatal("the call succeeded through a 60 ms latency with a 20 ms read timeout")
			}
			if got := runs() - before; got != tc.wantRuns {
				t.Fatalf("one Take ran the script %d times, want %d", got, tc.wantRuns)
			}
		})
	}
}
