package redisstore

import (
	"errors"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/internal/algo"
)

// TestDecodeTBAgreesWithTokenBucket checks the claim the token-bucket
// form's reply rests on: for each hit, the reset-after before its decision
// and whether it passed give the same result as deciding at the script's
// own time, hit after hit against the states the earlier hits left
// (tentatively: a refused request consumes nothing), as the batch form
// and the memory store decide.
func TestDecodeTBAgreesWithTokenBucket(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	limits := []sluice.Limit{sluice.PerSecond(10), sluice.PerMinute(7).WithBurst(3), sluice.Per(1000, time.Hour), sluice.PerSecond(1_000_000)}
	for range 50_000 {
		now := rng.Int64N(1 << 45)
		n := 1 + rng.IntN(4)
		hits := make([]sluice.Hit, n)
		tats := map[string]int64{} // a bucket's arrival time, by key
		for i := range hits {
			l := limits[rng.IntN(len(limits))]
			key := string(rune('a' + rng.IntN(3))) // keys repeat within a request
			hits[i] = sluice.Hit{Key: key, Limit: l, Cost: rng.Int64N(l.Capacity() + 2)}
			if _, ok := tats[key]; !ok {
				switch rng.IntN(3) {
				case 0: // never used
				case 1: // in the past
					tats[key] = now - rng.Int64N(now)
				default: // in debt, up to twice the capacity
					tats[key] = now + rng.Int64N(2*l.Capacity()*l.IntervalMicros()+1)
				}
			}
		}
		// The reference: decide hit after hit, then build each result.
		outcomes := make([]algo.Outcome, n)
		reply := make([]any, n)
		admitted := true
		for i, h := range hits {
			tat := tats[h.Key]
			o, next := algo.TokenBucket(now, tat, h.Limit.IntervalMicros(), h.Limit.Capacity(), h.Units(), false)
			outcomes[i] = o
			v := max(tat-now, 0)
			if o.Allowed {
				tats[h.Key] = next
			} else {
				v, admitted = -1-v, false
			}
			reply[i] = v
		}
		want := make([]sluice.Result, n)
		for i := range outcomes {
			outcomes[i].Result(&want[i], hits[i].Limit, admitted)
		}
		var r any = reply
		if n == 1 {
			r = reply[0]
		}
		got := make([]sluice.Result, n)
		if err := decodeTB(r, hits, got); err != nil {
			t.Fatal(err)
		}
		for i := range got {
			if got[i] != want[i] {
				t.Fatalf("now %d, hits %+v: hit %d decoded %+v, want %+v", now, hits, i, got[i], want[i])
			}
		}
	}
}

func TestDecodeTBRefusesAReplyThatDisagrees(t *testing.T) {
	hit := sluice.Hit{Limit: sluice.PerSecond(10), Cost: 1}
	for _, tc := range []struct {
		reply any
		hits  int
	}{
		{int64(2_000_000), 1}, // "passed", yet twice the capacity is in use
		{int64(-1), 1},        // "refused", yet the bucket is full
		{"1", 1},
		{[]any{int64(1)}, 1},
		{int64(1), 2},
		{[]any{int64(1)}, 2},
		{[]any{int64(1), "1"}, 2},
		{[]any{int64(1), int64(-1)}, 2}, // the second "refused" on a full bucket
	} {
		hits := make([]sluice.Hit, tc.hits)
		for i := range hits {
			hits[i] = hit
		}
		err := decodeTB(tc.reply, hits, make([]sluice.Result, tc.hits))
		var se *sluice.StoreError
		if !errors.As(err, &se) || !se.Ambiguous || !errors.Is(err, sluice.ErrUnavailable) {
			t.Errorf("reply %#v for %d hits: error %v, want an ambiguous ErrUnavailable", tc.reply, tc.hits, err)
		}
	}
}
