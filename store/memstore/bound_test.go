package memstore_test

import (
	"context"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/store/memstore"
	"github.com/sluicehq/sluice/store/storetest"
)

// floodKeys is how many distinct keys TestFloodStaysWithinBound sends:
// rotating IPv6 /128s or random API keys, each seen once. Ten million take
// 4 to 10 s, more on a busy machine, so they are sent only with
// SLUICE_LONG=1 and without the race detector (some 270 s there; .ci/test
// runs them so); otherwise a fiftieth of that, four times the bound.
func floodKeys() int {
	if os.Getenv("SLUICE_LONG") == "" || testing.Short() || raceEnabled {
		return 200_000
	}
	return 10_000_000
}

// bytesPerBucket is a generous ceiling on what one token bucket under a
// key such as the rules build costs: the bucket (64 bytes), its key, and
// its share of its shard's slots.
const bytesPerBucket = 400

// TestFloodStaysWithinBound sends a flood of distinct keys, none of which
// expires during the flood (per-hour limits, the clock barely moving), to
// a store bounded at 50,000 buckets: the store never holds more, and the
// heap stays within what that many buckets cost.
func TestFloodStaysWithinBound(t *testing.T) {
	const bound = 50_000
	clock := storetest.NewClock(time.Unix(1_800_000_000, 0))
	events := &countEvents{}
	s := memstore.New(memstore.Config{Clock: clock, SweepInterval: -1, MaxBuckets: bound, Events: events})
	defer s.Close(context.Background())
	base := heapInUse()
	limit := sluice.PerHour(100)
	hits := []sluice.Hit{{Limit: limit, Cost: 1}}
	out := make([]sluice.Result, 1)
	ctx := context.Background()
	n := floodKeys()
	var peakHeap uint64
	buf := []byte("per-key\x00apikey\x00")
	prefix := len(buf)
	for i := range n {
		buf = strconv.AppendUint(buf[:prefix], uint64(i)*2654435761, 36)
		hits[0].Key = string(buf)
		if err := s.Take(ctx, hits, out); err != nil {
			t.Fatal(err)
		}
		if !out[0].Allowed {
			t.Fatalf("key %d: the first request of a new key was refused", i)
		}
		if i%(n/10) == n/10-1 {
			clock.Advance(time.Millisecond)
			if l := s.Len(); l > bound {
				t.Fatalf("after %d keys the store holds %d buckets, bound %d", i+1, l, bound)
			}
			peakHeap = max(peakHeap, heapInUse())
		}
	}
	grew := int64(peakHeap) - int64(base)
	t.Logf("%d keys: %d buckets held, %d evicted, heap grew at most %d KB (%d B per bucket held)",
		n, s.Len(), s.Evicted(), grew/1024, grew/bound)
	if l := s.Len(); l > bound || l < bound*7/8 {
		t.Errorf("store holds %d buckets, want at most %d and near it", l, bound)
	}
	if got, want := s.Evicted(), uint64(n-s.Len()); got != want {
		t.Errorf("Evicted = %d, want %d (keys sent less buckets held)", got, want)
	}
	if got := events.n.Load(); got != int64(s.Evicted()) {
		t.Errorf("Events saw %d evictions, store counted %d", got, s.Evicted())
	}
	if grew > bound*bytesPerBucket {
		t.Errorf("heap grew by %d bytes, more than %d buckets at %d bytes", grew, bound, bytesPerBucket)
	}
}

// heapInUse returns the bytes of live heap objects after a collection.
func heapInUse() uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

type countEvents struct{ n atomic.Int64 }

func (e *countEvents) BucketsEvicted(n int) { e.n.Add(int64(n)) }

// TestEvictionBoundsEveryTable floods each kind of bucket the store keeps
// apart (window algorithms, keys stored as a digest) past a small bound.
func TestEvictionBoundsEveryTable(t *testing.T) {
	const bound, keys = 1000, 6000
	for _, tc := range []struct {
		name string
		alg  sluice.Algorithm
		key  string
	}{
		{"token bucket", sluice.TokenBucket, "k"},
		{"sliding window", sluice.SlidingWindow, "k"},
		{"fixed window", sluice.FixedWindow, "k"},
		{"sliding log", sluice.SlidingLog, "k"},
		{"long key", sluice.TokenBucket, strings.Repeat("k", 200)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clock := storetest.NewClock(time.Unix(1_800_000_000, 0))
			s := memstore.New(memstore.Config{Clock: clock, SweepInterval: -1, MaxBuckets: bound})
			defer s.Close(context.Background())
			out := make([]sluice.Result, 1)
			for i := range keys {
				h := []sluice.Hit{{Key: tc.key + strconv.Itoa(i), Limit: sluice.PerHour(10), Algorithm: tc.alg, Cost: 1}}
				if err := s.Take(context.Background(), h, out); err != nil {
					t.Fatal(err)
				}
				if i%500 != 0 {
					continue
				}
				if l := s.Len(); l > bound {
					t.Fatalf("after %d keys: %d buckets, bound %d", i+1, l, bound)
				}
			}
			if got, want := s.Evicted(), uint64(keys-s.Len()); got != want {
				t.Errorf("Evicted = %d, want %d", got, want)
			}
		})
	}
}

// TestEvictionForgivesLeast fills a store to its bound with buckets used
// to different depths, then needs room: the buckets that are full again go
// first, then those closest to full; the most used ones are kept. Eviction
// works on one part of the store at a time; keys stored as a digest are
// all in one part, which makes the order visible.
func TestEvictionForgivesLeast(t *testing.T) {
	const bound = 64
	clock := storetest.NewClock(time.Unix(1_800_000_000, 0))
	s := memstore.New(memstore.Config{Clock: clock, SweepInterval: -1, MaxBuckets: bound})
	defer s.Close(context.Background())
	ctx := context.Background()
	limit := sluice.PerSecond(1).WithBurst(100) // a token back every second
	take := func(key string, cost int64) sluice.Result {
		out := make([]sluice.Result, 1)
		if err := s.Take(ctx, []sluice.Hit{{Key: key, Limit: limit, Cost: cost}}, out); err != nil {
			t.Fatal(err)
		}
		return out[0]
	}
	long := strings.Repeat("k", 200)
	// Bucket i has used i+1 tokens: it is full again in i+1 seconds.
	for i := range bound {
		take(long+strconv.Itoa(i), int64(i+1))
	}
	if n := s.Evicted(); n != 0 {
		t.Fatalf("%d evicted before the bound was reached", n)
	}
	clock.Advance(4 * time.Second) // used-0 … used-3 are full again
	take(long+"new", 1)
	evicted := s.Evicted()
	if evicted == 0 || s.Len() > bound {
		t.Fatalf("evicted %d, holding %d; want room made within %d", evicted, s.Len(), bound)
	}
	// Each evicted bucket is full again; each kept one has kept its use.
	// The evicted ones are the least used: every kept bucket was used at
	// least as much as every evicted one.
	kept, lowestKept, highestEvicted := 0, bound, -1
	for i := range bound {
		r := peek(t, s, long+strconv.Itoa(i), limit)
		switch {
		case r.Remaining == 100 && i >= 4: // forgotten: full again
			highestEvicted = max(highestEvicted, i)
		case r.Remaining < 100:
			kept++
			lowestKept = min(lowestKept, i)
		}
	}
	t.Logf("evicted %d; kept %d of the used buckets; least used kept: used-%d; most used evicted: used-%d",
		evicted, kept, lowestKept, highestEvicted)
	if highestEvicted >= lowestKept {
		t.Errorf("used-%d was evicted while the less used used-%d was kept", highestEvicted, lowestKept)
	}
	if kept == 0 || highestEvicted < 0 {
		t.Errorf("kept %d used buckets, most used evicted: used-%d; want some kept and some evicted", kept, highestEvicted)
	}
}

func peek(t *testing.T, s *memstore.Store, key string, limit sluice.Limit) sluice.Result {
	t.Helper()
	out := make([]sluice.Result, 1)
	if err := s.Take(context.Background(), []sluice.Hit{{Key: key, Limit: limit, Cost: 1, Peek: true}}, out); err != nil {
		t.Fatal(err)
	}
	return out[0]
}

// TestEvictionUnderConcurrentCallers floods a small bound from several
// goroutines, some deciding several hits per call on new keys: every call
// ends, and the store never holds more than the bound plus the buckets
// being created at that moment.
func TestEvictionUnderConcurrentCallers(t *testing.T) {
	const bound, callers, perCaller, hitsPerCall = 8, 4, 2000, 4
	s := memstore.New(memstore.Config{SweepInterval: -1, MaxBuckets: bound})
	defer s.Close(context.Background())
	var wg sync.WaitGroup
	var over atomic.Int64
	for c := range callers {
		wg.Go(func() {
			out := make([]sluice.Result, hitsPerCall)
			hits := make([]sluice.Hit, hitsPerCall)
			for i := range perCaller {
				n := 1 + i%hitsPerCall
				for j := range n {
					hits[j] = sluice.Hit{Key: strconv.Itoa(c) + "-" + strconv.Itoa(i) + "-" + strconv.Itoa(j), Limit: sluice.PerHour(10), Cost: 1}
				}
				if err := s.Take(context.Background(), hits[:n], out[:n]); err != nil {
					t.Error(err)
					return
				}
				if i%50 != 0 {
					continue
				}
				if l := s.Len(); l > bound+callers*hitsPerCall {
					over.Store(int64(l))
				}
			}
		})
	}
	wg.Wait()
	if l := over.Load(); l != 0 {
		t.Fatalf("the store held %d buckets, bound %d with %d callers creating", l, bound, callers)
	}
}
