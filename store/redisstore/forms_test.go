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

// TestTokenBucketRequestsTakeTheTokenBucketForm checks which requests take
// the script's token-bucket form, three arguments per hit, and that the
// others take the batch form, uncoalesced and as a coalescer's lone call.
func TestTokenBucketRequestsTakeTheTokenBucketForm(t *testing.T) {
	srv := redistest.Start(t)
	tb := sluice.Hit{Key: "tb", Limit: sluice.PerMinute(5), Cost: 1}
	shadow, forced, window := tb, tb, tb
	shadow.Shadow = true
	forced.Force = true
	window.Key, window.Algorithm = "sw", sluice.SlidingWindow
	tests := []struct {
		name   string
		hits   []sluice.Hit
		tbForm bool
	}{
		{"one token bucket", []sluice.Hit{tb}, true},
		{"one shadow token bucket", []sluice.Hit{shadow}, true},
		{"one forced token bucket", []sluice.Hit{forced}, false},
		{"one sliding window", []sluice.Hit{window}, false},
		{"two token buckets", []sluice.Hit{tb, {Key: "tb2", Limit: sluice.PerMinute(5), Cost: 1}}, true},
		{"two token buckets, one shadow", []sluice.Hit{tb, {Key: "tb2", Limit: sluice.PerMinute(5), Cost: 1, Shadow: true}}, false},
		{"a token bucket and a window", []sluice.Hit{tb, window}, false},
	}
	for _, coalesce := range []int{0, 8} {
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
				if !out[0].Allowed || out[0].Remaining != 4 {
					t.Fatalf("result %+v, want allowed with 4 remaining", out[0])
				}
				if tbForm := count.args == 3*count.keys; tbForm != tt.tbForm || count.keys != len(hits) {
					t.Fatalf("%d keys, %d script arguments; want the token-bucket form: %v", count.keys, count.args, tt.tbForm)
				}
			})
		}
	}
}
