package redisstore_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"reflect"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/internal/redistest"
	"github.com/sluicehq/sluice/store/memstore"
	"github.com/sluicehq/sluice/store/storetest"
)

// ruleMix is the pool of (algorithm, limit) pairs the differential test
// draws from: round and non-round intervals, sub-second and longer windows,
// and calendar periods (the replays start a minute before an hour ends, so
// they cross a boundary).
var ruleMix = []struct {
	alg   sluice.Algorithm
	limit sluice.Limit
}{
	{sluice.TokenBucket, sluice.PerSecond(3).WithBurst(5)},
	{sluice.TokenBucket, sluice.Per(7, 900*time.Millisecond)}, // 128572 µs: not a whole number
	{sluice.SlidingWindow, sluice.PerSecond(4)},
	{sluice.SlidingWindow, sluice.Per(10, 250*time.Millisecond)},
	{sluice.FixedWindow, sluice.PerSecond(5)},
	{sluice.FixedWindow, sluice.Per(3, 700*time.Millisecond)},
	{sluice.SlidingLog, sluice.PerSecond(4)},
	{sluice.SlidingLog, sluice.Per(6, 1500*time.Millisecond)},
	{sluice.FixedWindow, sluice.PerCalendar(5, sluice.Hour, nil)},
	{sluice.FixedWindow, sluice.PerCalendar(4, sluice.Day, mustZone("Asia/Kathmandu"))}, // +05:45
}

// mustZone returns the zone named name (from time/tzdata when the system
// has none).
func mustZone(name string) *time.Location {
	loc, err := time.LoadLocation(name)
	if err != nil {
		panic(err)
	}
	return loc
}

// TestDifferentialMemstoreVsRedis replays seeded random sequences of (time
// step, keys, rule mix, cost, shadow, peeks, partial hits, forced charges,
// penalties, concurrency slots, refunds of earlier takes, refreshes of
// their slots) against memstore and
// the Redis store on a real redis-server, both on one fake clock, and
// requires identical results at every step: both stores compute the same
// integer microseconds, so they must agree exactly.
func TestDifferentialMemstoreVsRedis(t *testing.T) {
	srv := redistest.Start(t)
	seeds, ops := uint64(6), 500
	if n, err := strconv.Atoi(os.Getenv("SLUICE_DIFF_SEEDS")); err == nil { // a longer run: SLUICE_DIFF_SEEDS=200
		seeds, ops = uint64(n), 2000
	}
	remembered := 0
	for seed := uint64(1); seed <= seeds; seed++ {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			clock := storetest.NewClock(time.Now().Truncate(time.Hour).Add(59 * time.Minute))
			mem := memstore.New(memstore.Config{Clock: clock, SweepInterval: -1})
			defer mem.Close(context.Background())
			red := newStore(t, newClient(t, srv.Addr), clock)
			rng := rand.New(rand.NewPCG(seed, 0x5111ce))
			remembered += replay(t, rng, clock, mem, red, ops, fmt.Sprintf("diff%d-%d:", seed, time.Now().UnixNano()))
		})
	}
	checkRemembered(t, remembered)
}

// replay runs ops random requests on a and b and returns how many b
// answered from its memory of refusals.
func replay(t *testing.T, rng *rand.Rand, clock *storetest.Clock, a, b sluice.Store, ops int, keyPrefix string) (remembered int) {
	ctx := context.Background()
	var taken []sluice.Refund // what earlier hits took, to give back
	var refused []sluice.Hit  // the last request, when it was refused
	for op := range ops {
		clock.Advance(randomStep(rng))
		ra, okA := a.(sluice.Refunder)
		rb, okB := b.(sluice.Refunder)
		if okA && okB && len(taken) > 0 && rng.IntN(5) == 0 {
			// Give back some or all of an earlier take, on both stores.
			i := rng.IntN(len(taken))
			r := taken[i]
			taken = append(taken[:i], taken[i+1:]...)
			r.Units = rng.Int64N(r.Receipt.Taken + 1)
			if errA, errB := ra.Refund(ctx, []sluice.Refund{r}), rb.Refund(ctx, []sluice.Refund{r}); errA != nil || errB != nil {
				t.Fatalf("op %d: refund errors %v / %v for %+v", op, errA, errB, r)
			}
			continue
		}
		sa, okA := a.(sluice.SlotRefresher)
		sb, okB := b.(sluice.SlotRefresher)
		if okA && okB && len(taken) > 0 && rng.IntN(5) == 0 {
			// Refresh an earlier take's slot, if it took one, on both stores.
			i := rng.IntN(len(taken))
			if r := &taken[i]; r.Hit.Concurrency && clock.Now().UnixMicro() > r.Receipt.Mark {
				rcA, rcB := r.Receipt, r.Receipt
				// At most the time since the slot's mark, as a caller's
				// clock measures it; now and then more, which is not applied.
				held := time.Duration(1+rng.Int64N(clock.Now().UnixMicro()-r.Receipt.Mark+int64(rng.IntN(2)))) * time.Microsecond
				errA := sa.RefreshSlots(ctx, []sluice.SlotRefresh{{Hit: r.Hit, Receipt: &rcA, Held: held}})
				errB := sb.RefreshSlots(ctx, []sluice.SlotRefresh{{Hit: r.Hit, Receipt: &rcB, Held: held}})
				if errA != nil || errB != nil || rcA != rcB {
					t.Fatalf("op %d: refresh errors %v / %v, receipts %+v / %+v for %+v", op, errA, errB, rcA, rcB, r)
				}
				r.Receipt = rcB
				continue
			}
		}
		hits := randomHits(rng, keyPrefix)
		if refused != nil && rng.IntN(3) == 0 {
			hits = refused // a client trying again, as a flood does
		}
		outA := make([]sluice.Result, len(hits))
		outB := make([]sluice.Result, len(hits))
		errA := a.Take(ctx, hits, outA)
		errB := b.Take(ctx, hits, outB)
		if errA != nil || errB != nil {
			t.Fatalf("op %d: errors %v / %v for %+v", op, errA, errB, hits)
		}
		if compare(t, fmt.Sprint("op ", op), hits, outA, outB, b) {
			remembered++
		}
		refused = nil
		if !sluice.Admitted(hits, outA) {
			refused = hits
		}
		taken = appendTaken(taken, hits, outB)
	}
	return remembered
}

// compare fails t unless b's results outB for hits are a's outA, where a
// is memstore: the same but for what b answered from its memory of
// refusals, and for the receipts when b gives none. It reports whether b
// answered from memory.
func compare(t *testing.T, what string, hits []sluice.Hit, outA, outB []sluice.Result, b sluice.Store) (remembered bool) {
	t.Helper()
	if _, ok := b.(sluice.Refunder); !ok { // only refunders give receipts
		for i := range outA {
			outA[i].Receipt = sluice.Receipt{}
		}
	}
	// A request refused from memory (sluice.Result.Remembered) must be
	// one the memory store refuses, with the same answer for the
	// remembered refusals; its other hits were not decided.
	remembered = len(outB) > 0 && outB[0].Remembered
	for i := range outA {
		if outA[i].Blocked {
			blockedSeen.Add(1)
		}
		if hits[i].Concurrency && !outA[i].Allowed {
			slotRefusalsSeen.Add(1)
		}
	}
	for i := range outB {
		if !outB[i].Remembered {
			continue
		}
		if sluice.Admitted(hits, outA) {
			t.Fatalf("%s: refused from memory, admitted by memstore: %+v", what, outA)
		}
		outB[i].Remembered = false
		if hits[i].Concurrency && !outB[i].Allowed && outB[i].RetryAfter > 0 && outB[i].RetryAfter <= outA[i].RetryAfter {
			// A refused slot's RetryAfter is capped when decided, and the
			// memory counts the cap down: at most what is left.
			outB[i].RetryAfter = outA[i].RetryAfter
		}
		switch {
		case outB[i].Allowed:
			outB[i] = outA[i]
		case hits[i].Algorithm != sluice.TokenBucket && outB[i].Remaining <= outA[i].Remaining:
			// A window's remembered Remaining is what it held when
			// refused: while the refusal stands, time only adds.
			outB[i].Remaining = outA[i].Remaining
		}
	}
	if !reflect.DeepEqual(outA, outB) {
		for i := range hits {
			if outA[i] != outB[i] {
				t.Errorf("%s hit %d %v %v cost %d (min %d) peek %v shadow %v force %v:\n memstore %+v\n redis    %+v",
					what, i, hits[i].Algorithm, hits[i].Limit, hits[i].Cost, hits[i].MinCost, hits[i].Peek, hits[i].Shadow, hits[i].Force, outA[i], outB[i])
			}
		}
		t.FailNow()
	}
	return remembered
}

// appendTaken appends to taken a refund of what each hit took.
func appendTaken(taken []sluice.Refund, hits []sluice.Hit, out []sluice.Result) []sluice.Refund {
	for i := range hits {
		if out[i].Receipt.Taken > 0 {
			taken = append(taken, sluice.Refund{Hit: hits[i], Receipt: out[i].Receipt})
		}
	}
	return taken
}

// blockedSeen counts the blocked refusals the replays met, and
// slotRefusalsSeen the concurrency hits refused for want of a slot.
var blockedSeen, slotRefusalsSeen atomic.Int64

// checkRemembered fails t when no replay exercised the memory of refusals,
// or the penalties.
func checkRemembered(t *testing.T, remembered int) {
	if !t.Failed() && remembered == 0 {
		t.Error("no request was answered from memory: the replays do not exercise it")
	}
	if !t.Failed() && blockedSeen.Load() == 0 {
		t.Error("no request was blocked: the replays do not exercise penalties")
	}
	if !t.Failed() && slotRefusalsSeen.Load() == 0 {
		t.Error("no concurrency hit was refused: the replays do not exercise slots")
	}
}

func randomStep(rng *rand.Rand) time.Duration {
	switch p := rng.IntN(10); {
	case p < 3:
		return 0
	case p < 7:
		return time.Duration(rng.IntN(50_000)) * time.Microsecond
	case p < 9:
		return time.Duration(rng.IntN(1_500_000)) * time.Microsecond
	default:
		return time.Duration(rng.IntN(5_000_000)) * time.Microsecond
	}
}

// randomHits returns one request: 1–3 hits on a few shared keys (one time
// in four token buckets only), or, one time in ten, a forced charge.
func randomHits(rng *rand.Rand, prefix string) []sluice.Hit {
	n := 1 + rng.IntN(3)
	force := rng.IntN(10) == 0
	mix := ruleMix
	if rng.IntN(4) == 0 { // token buckets only: the script's token-bucket form
		mix = ruleMix[:2]
	}
	hits := make([]sluice.Hit, n)
	for i := range hits {
		m := mix[rng.IntN(len(mix))]
		capacity := m.limit.Capacity()
		hits[i] = sluice.Hit{
			Key:       fmt.Sprintf("%s%d", prefix, rng.IntN(3)),
			Limit:     m.limit,
			Algorithm: m.alg,
			Cost:      int64(rng.IntN(int(capacity) + 2)), // 0 (means 1) … capacity+1 (never passes)
			Shadow:    !force && rng.IntN(5) == 0,
			Force:     force,
		}
		switch {
		case force:
		case rng.IntN(6) == 0:
			hits[i].Peek = true
		case rng.IntN(6) == 0 && hits[i].Cost > 1:
			hits[i].MinCost = 1 + rng.Int64N(hits[i].Cost)
		}
	}
	if n == 1 && !hits[0].Shadow && hits[0].Algorithm != sluice.SlidingLog && rng.IntN(3) == 0 {
		penalize(rng, prefix, &hits[0])
	} else if !force && rng.IntN(4) == 0 {
		takeSlot(rng, prefix, &hits[rng.IntN(n)])
	}
	return hits
}

// takeSlot makes h a concurrency hit on one of the keys that hold slots:
// 2 slots held for 2 s at most, so that the replays' steps see slots
// expire as well as freed.
func takeSlot(rng *rand.Rand, prefix string, h *sluice.Hit) {
	*h = sluice.Hit{
		Key:         fmt.Sprintf("%sc%d", prefix, rng.IntN(2)),
		Limit:       sluice.Per(2, 2*time.Second),
		Algorithm:   sluice.SlidingLog,
		Concurrency: true,
		Cost:        rng.Int64N(2),
		Peek:        rng.IntN(6) == 0,
	}
}

// penalties are the penalties of the keys that carry one: each such key
// always has its own, so no bucket is decided with and without it.
var penalties = []struct {
	block time.Duration
	after int64
}{{300 * time.Millisecond, 0}, {2 * time.Second, 2}, {1500 * time.Millisecond, 3}}

// penalize gives h a penalty and one of the keys that carry one. Only
// requests of one hit carry a penalty: a request refused from memory by
// another of its rules is not decided for a penalty's rule, while the
// memory store decides (and counts) every hit.
func penalize(rng *rand.Rand, prefix string, h *sluice.Hit) {
	i := rng.IntN(len(penalties))
	h.Key = fmt.Sprintf("%sp%d", prefix, i)
	h.Block, h.After, h.MinCost = penalties[i].block, penalties[i].after, 0
}
