package bench

import (
	"context"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/internal/redistest"
)

// BenchmarkLoneCheck runs one check at a time, as the load tool's -conc 1
// does, for sluice as the README sets it up, sluice with one script call
// per check, and ulule/limiter, over 10k keys and on one hot key, on a
// redis-server of its own: ns/op is a check's round trip, allocs/op and
// B/op its allocations. Run one peer alone with a CPU profile to see where
// its client CPU goes:
//
//	go test -run '^$' -bench 'LoneCheck/sluice/10k' -benchtime 20000x -cpuprofile sluice.prof .
//	go tool pprof -top sluice.prof
func BenchmarkLoneCheck(b *testing.B) {
	srv := redistest.Start(b)
	e := &Env{Addr: srv.Addr, PoolSize: 128}
	b.Cleanup(func() { e.Close() })
	peers := map[string]RedisPeer{}
	for _, p := range RedisPeers() {
		peers[p.Name] = p
	}
	for _, name := range []string{"sluice", "sluice (one call per check)", "ulule"} {
		for _, keys := range []struct {
			name string
			n    int
		}{{"10k keys", 10_000}, {"hot key", 1}} {
			b.Run(strings.ReplaceAll(name, " ", "_")+"/"+keys.name, func(b *testing.B) {
				l, err := NewRedisLimiter(peers[name], e, HighLimit(Keys(keys.n)))
				if err != nil {
					b.Fatal(err)
				}
				b.Cleanup(func() { l.Close() })
				w, ctx, key := l.NewWorker(), context.Background(), 0
				b.ReportAllocs()
				for b.Loop() {
					if ok, err := w(ctx, key); !ok || err != nil {
						b.Fatalf("check %d: allowed=%v err=%v", key, ok, err)
					}
					if key++; key == keys.n {
						key = 0
					}
				}
			})
		}
	}
}
