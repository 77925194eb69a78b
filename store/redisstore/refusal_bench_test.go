package redisstore

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/internal/redistest"
)

// BenchmarkRememberRefusals measures what the memory of refusals
// (Config.RememberRefusals) costs and saves, on a redis-server of its own:
// checks of a refused bucket (a flood) and checks that pass, each by a
// store remembering refusals ("on"), one that does not ("off", what every
// check cost before the memory), and a second "on" as an A/A control. Each
// round runs a block of checks of every variant in turn; it reports the
// medians over the rounds of each variant's Redis CPU (INFO commandstats)
// and client time per check, and of the ratios taken within each round.
// Run it short:
//
//	REQUIRE_REDIS=1 go test -run '^$' -bench RememberRefusals -benchtime 20x ./store/redisstore/
func BenchmarkRememberRefusals(b *testing.B) {
	srv := redistest.Start(b)
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	store := func(remember time.Duration) *Store {
		c := redis.NewClient(&redis.Options{Addr: srv.Addr, MaxRetries: -1, ContextTimeoutEnabled: true, Protocol: 2})
		b.Cleanup(func() { c.Close() })
		s, err := New(c, Config{Logger: quiet, StartupCheckTimeout: -1, RememberRefusals: remember, PresenceInterval: -1, Coalesce: 1})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { s.Close(context.Background()) })
		return s
	}
	variants := []struct {
		name string
		s    *Store
	}{{"on", store(0)}, {"off", store(-1)}, {"on_again", store(0)}}
	probe := redis.NewClient(&redis.Options{Addr: srv.Addr})
	b.Cleanup(func() { probe.Close() })
	redisUsec := func() float64 { return evalshaUsec(b, probe) + evalUsec(b, probe) }

	ctx := context.Background()
	refused := sluice.PerHour(1)          // spent by the first check of each key
	passing := sluice.Per(1e6, time.Hour) // never spent
	const block = 256                     // checks per variant per round
	type cost struct{ redis, wall float64 }
	var rounds [][]float64 // per round: [flood on, off, on again, pass on, off, on again] × (redis, wall)
	out := make([]sluice.Result, 1)
	seq := 0
	measure := func(s *Store, hit sluice.Hit) cost {
		before, start := redisUsec(), time.Now()
		for range block {
			if err := s.Take(ctx, []sluice.Hit{hit}, out); err != nil {
				b.Fatal(err)
			}
		}
		return cost{(redisUsec() - before) / block, float64(time.Since(start).Nanoseconds()) / block}
	}
	round := func() {
		seq++
		var r []float64
		for what, limit := range []sluice.Limit{refused, passing} {
			for _, v := range variants {
				hit := sluice.Hit{Key: fmt.Sprintf("%s/%d/%d", v.name, what, seq), Limit: limit}
				if limit == refused { // spend it: the block is a flood of refusals
					if err := v.s.Take(ctx, []sluice.Hit{hit}, out); err != nil || !out[0].Allowed {
						b.Fatalf("first check: %+v, %v", out[0], err)
					}
				}
				c := measure(v.s, hit)
				r = append(r, c.redis, c.wall)
			}
		}
		rounds = append(rounds, r)
	}
	round() // loads the scripts, opens the connections
	rounds = nil
	b.ReportAllocs()
	for b.Loop() {
		round()
	}
	at := func(i int) func([]float64) float64 { return func(r []float64) float64 { return r[i] } }
	ratio := func(n, d int) func([]float64) float64 { return func(r []float64) float64 { return r[n] / r[d] } }
	// Indexes: flood on 0/1, off 2/3, on again 4/5; pass on 6/7, off 8/9, on again 10/11.
	b.ReportMetric(median(rounds, at(0)), "flood_redis_usec/check:on")
	b.ReportMetric(median(rounds, at(2)), "flood_redis_usec/check:off")
	b.ReportMetric(median(rounds, func(r []float64) float64 { return (r[0] + 1e-9) / r[2] }), "flood_redis:on/off")
	b.ReportMetric(median(rounds, at(1)), "flood_ns/check:on")
	b.ReportMetric(median(rounds, at(3)), "flood_ns/check:off")
	b.ReportMetric(median(rounds, at(6)), "pass_redis_usec/check:on")
	b.ReportMetric(median(rounds, at(8)), "pass_redis_usec/check:off")
	b.ReportMetric(median(rounds, ratio(6, 8)), "pass_redis:on/off")
	b.ReportMetric(median(rounds, ratio(10, 6)), "pass_redis_A/A:on_again/on")
	b.ReportMetric(median(rounds, ratio(7, 9)), "pass_wall:on/off")
	b.ReportMetric(median(rounds, ratio(11, 7)), "pass_wall_A/A:on_again/on")
}

// evalUsec returns the microseconds the server has spent in EVAL.
func evalUsec(b *testing.B, c *redis.Client) float64 {
	info, err := c.Info(context.Background(), "commandstats").Result()
	if err != nil {
		b.Fatal(err)
	}
	us, err := commandUsec(info, "eval")
	if err != nil {
		b.Fatal(err)
	}
	return us
}
