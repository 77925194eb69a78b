package memstore_test

import (
	"context"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/store/memstore"
	"github.com/sluicehq/sluice/store/storetest"
)

type admission struct {
	at   int64 // µs
	cost int64
}

// admitRandom runs a seeded random sequence of requests against one bucket
// and returns what was admitted. The Redis store gives the same answers
// (see the differential test), so these properties hold for it too.
func admitRandom(t *testing.T, seed uint64, alg sluice.Algorithm, l sluice.Limit) []admission {
	clock := storetest.NewClock(time.Unix(1_800_000_000, 0))
	s := memstore.New(memstore.Config{Clock: clock, SweepInterval: -1})
	defer s.Close(context.Background())
	rng := rand.New(rand.NewPCG(seed, uint64(alg)))
	var got []admission
	out := make([]sluice.Result, 1)
	period := l.PeriodMicros()
	for range 3000 {
		switch p := rng.IntN(10); {
		case p < 6:
			clock.Advance(time.Duration(rng.Int64N(period/10+1)) * time.Microsecond)
		case p < 9:
			clock.Advance(time.Duration(rng.Int64N(period+1)) * time.Microsecond)
		}
		cost := 1 + rng.Int64N(l.Capacity())
		if err := s.Take(context.Background(), []sluice.Hit{{Key: "k", Limit: l, Algorithm: alg, Cost: cost}}, out); err != nil {
			t.Fatal(err)
		}
		if out[0].Allowed {
			got = append(got, admission{clock.Now().UnixMicro(), cost})
		}
	}
	return got
}

// maxInWindow returns the most cost admitted in any interval of length d:
// (t−d, t] for every admission time t.
func maxInWindow(adm []admission, d int64) int64 {
	var best, sum int64
	lo := 0
	for hi := range adm {
		sum += adm[hi].cost
		for adm[lo].at <= adm[hi].at-d {
			sum -= adm[lo].cost
			lo++
		}
		best = max(best, sum)
	}
	return best
}

func TestPropertyAdmissionBounds(t *testing.T) {
	limits := []sluice.Limit{sluice.PerSecond(10), sluice.Per(7, 900*time.Millisecond), sluice.Per(100, time.Minute)}
	for _, l := range limits {
		for seed := uint64(1); seed <= 5; seed++ {
			period, limit := l.PeriodMicros(), l.Capacity()

			// Sliding log: exact, never more than the limit in any window.
			if got := maxInWindow(admitRandom(t, seed, sluice.SlidingLog, l), period); got > limit {
				t.Errorf("sliding log %v seed %d: %d admitted in one window, limit %d", l, seed, got, limit)
			}
			// Fixed window and sliding window counter: at most the limit per
			// aligned window, at most twice it in any sliding window.
			for _, alg := range []sluice.Algorithm{sluice.FixedWindow, sluice.SlidingWindow} {
				adm := admitRandom(t, seed, alg, l)
				perWindow := map[int64]int64{}
				for _, a := range adm {
					perWindow[a.at/period] += a.cost
				}
				for w, sum := range perWindow {
					if sum > limit {
						t.Errorf("%v %v seed %d: window %d admitted %d, limit %d", alg, l, seed, w, sum, limit)
					}
				}
				if got := maxInWindow(adm, period); got > 2*limit {
					t.Errorf("%v %v seed %d: %d in one sliding window, bound %d", alg, l, seed, got, 2*limit)
				}
			}
			// Token bucket: over any interval of length d, at most the
			// capacity plus what refills in d.
			tb := l.WithBurst(2 * l.Rate)
			adm := admitRandom(t, seed, sluice.TokenBucket, tb)
			iv := tb.IntervalMicros()
			for i := range adm {
				var sum int64
				for j := i; j < len(adm); j++ {
					sum += adm[j].cost
					if bound := tb.Capacity() + (adm[j].at-adm[i].at)/iv; sum > bound {
						t.Fatalf("token bucket %v seed %d: %d admitted in %d µs, bound %d", tb, seed, sum, adm[j].at-adm[i].at, bound)
					}
				}
			}
		}
	}
}
