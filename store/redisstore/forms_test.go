package redisstore_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/internal/redistest"
	"github.com/sluicehq/sluice/store/redisstore"
)

// argCounter is a go-redis hook recording the key and argument counts of
// the last script command.
type argCounter struct{ keys, args int }

func (*argCounter) DialHook(next redis.DialHook) redis.DialHook { return next }

func (a *argCounter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if n := cmd.Name(); n == "evalsha" || n == "eval" {
			// evalsha, sha, numkeys, keys..., args...
			a.keys = cmd.Args()[2].(int)
			a.args = len(cmd.Args()) - 3 - a.keys
		}
		return next(ctx, cmd)
	}
}

func (*argCounter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// TestOneRequestForm checks that every request takes the script's one
// form, uncoalesced and as a coalescer's lone call: the clock, then four
// arguments per hit and a fifth for a partial hit's minimum.
func TestOneRequestForm(t *testing.T) {
	t.Parallel() // its own redis-server; no package state, no timing
	srv := redistest.Start(t)
	tb := sluice.Hit{Key: "tb", Limit: sluice.PerMinute(5), Cost: 1}
	shadow, forced, window, partial := tb, tb, tb, tb
	shadow.Shadow = true
	forced.Force = true
	window.Key, window.Algorithm = "sw", sluice.SlidingWindow
	partial.Key, partial.Cost, partial.MinCost = "partial", 2, 1
	tests := []struct {
		name string
		hits []sluice.Hit
		args int
	}{
		{"one token bucket", []sluice.Hit{tb}, 5},
		{"one shadow token bucket", []sluice.Hit{shadow}, 5},
		{"one forced token bucket", []sluice.Hit{forced}, 5},
		{"one sliding window", []sluice.Hit{window}, 5},
		{"one partial hit", []sluice.Hit{partial}, 6},
		{"two token buckets", []sluice.Hit{tb, {Key: "tb2", Limit: sluice.PerMinute(5), Cost: 1}}, 9},
		{"a token bucket and a window", []sluice.Hit{tb, window}, 9},
	}
	for _, coalesce := range []int{-1, 8} {
		for _, tt := range tests {
			t.Run(fmt.Sprintf("coalesce %d/%s", coalesce, tt.name), func(t *testing.T) {
				c := newClient(t, srv.Addr)
				count := &argCounter{}
				c.AddHook(count)
				s := newStoreWith(t, c, nil, redisstore.Config{Coalesce: coalesce, StartupCheckTimeout: -1})
				hits := append([]sluice.Hit(nil), tt.hits...)
				for i := range hits { // fresh buckets on the shared server
					hits[i].Key = t.Name() + "/" + hits[i].Key
				}
				out := make([]sluice.Result, len(hits))
				if err := s.Take(context.Background(), hits, out); err != nil {
					t.Fatal(err)
				}
				if want := 5 - hits[0].Units(); !out[0].Allowed || out[0].Remaining != want {
					t.Fatalf("result %+v, want allowed with %d remaining", out[0], want)
				}
				if count.keys != len(hits) || count.args != tt.args {
					t.Fatalf("%d keys, %d script arguments; want %d and %d", count.keys, count.args, len(hits), tt.args)
				}
			})
		}
	}
}
