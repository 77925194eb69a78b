package redisstore

import (
	"errors"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/internal/algo"
)

// TestDecodeShortAgreesWithTokenBucket checks the claim the short form's
// reply rests on: the reset-after before a decision, and whether the hit
// passed, give the same result as deciding at the script's own time.
func TestDecodeShortAgreesWithTokenBucket(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	limits := []sluice.Limit{sluice.PerSecond(10), sluice.PerMinute(7).WithBurst(3), sluice.Per(1000, time.Hour), sluice.PerSecond(1_000_000)}
	for range 100_000 {
		l := limits[rng.IntN(len(limits))]
		interval, capacity := l.IntervalMicros(), l.Capacity()
		now := rng.Int64N(1 << 45)
		var tat int64
		switch rng.IntN(3) {
		case 0: // never used
		case 1: // in the past
			tat = now - rng.Int64N(now)
		default: // in debt, up to twice the capacity
			tat = now + rng.Int64N(2*capacity*interval+1)
		}
		h := sluice.Hit{Limit: l, Cost: rng.Int64N(capacity + 2)}
		o, _ := algo.TokenBucket(now, tat, interval, capacity, h.Cost, false)
		var want sluice.Result
		o.Result(&want, l, o.Allowed)

		reply := max(tat-now, 0)
		if !o.Allowed {
			reply = -1 - reply
		}
		var got sluice.Result
		if err := decodeShort(reply, &h, &got); err != nil {
			t.Fatal(err)
		}
		if got != want {
			t.Fatalf("now %d, tat %d, %v, cost %d: decoded %+v, want %+v", now, tat, l, h.Cost, got, want)
		}
	}
}

func TestDecodeShortRefusesAReplyThatDisagrees(t *testing.T) {
	h := sluice.Hit{Limit: sluice.PerSecond(10), Cost: 1}
	for _, reply := range []any{
		int64(2_000_000), // "passed", yet twice the capacity is in use
		int64(-1),        // "refused", yet the bucket is full
		"1",
		[]any{int64(1)},
	} {
		var r sluice.Result
		err := decodeShort(reply, &h, &r)
		var se *sluice.StoreError
		if !errors.As(err, &se) || !se.Ambiguous || !errors.Is(err, sluice.ErrUnavailable) {
			t.Errorf("reply %#v: error %v, want an ambiguous ErrUnavailable", reply, err)
		}
	}
}
