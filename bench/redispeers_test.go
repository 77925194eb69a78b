package bench

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/redistest"
)

// TestRedisPeers runs every Redis peer against a redis-server of its own:
// all admit under the high limit, alone and with four rules (native or
// stacked), and the race on one key behaves. It skips without redis-server.
func TestRedisPeers(t *testing.T) {
	srv := redistest.Start(t)
	e := &Env{Addr: srv.Addr, PoolSize: 8}
	defer e.Close()
	ctx := context.Background()
	for _, p := range RedisPeers() {
		t.Run(p.Name, func(t *testing.T) {
			for _, rules := range []int{1, 4} {
				s := HighLimit(Keys(50))
				s.Rules = rules
				l, err := NewRedisLimiter(p, e, s)
				if err != nil {
					t.Fatal(err)
				}
				w := l.NewWorker()
				before := e.RoundTrips()
				for i := range 100 {
					if ok, err := w(ctx, i%50); !ok || err != nil {
						t.Fatalf("%d rules, check %d: allowed=%v err=%v", rules, i, ok, err)
					}
				}
				if trips := e.RoundTrips() - before; trips < 100 {
					t.Errorf("%d rules: %d round trips counted for 100 checks", rules, trips)
				}
				l.Close()
			}
			if p.Baseline {
				return
			}
			r, err := Race(ctx, p, e, "race:"+p.Name+":"+strconv.FormatInt(time.Now().UnixNano(), 10), 3, 3, 400, 20*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("race: %+v", r)
			if r.Admitted == 0 || r.Attempts != 400 {
				t.Errorf("race: %+v", r)
			}
			if p.Name == "sluice" && (r.Admitted != r.Limit || r.Errors != 0) {
				t.Errorf("sluice admitted %d of limit %d (%d errors)", r.Admitted, r.Limit, r.Errors)
			}
		})
	}
}
