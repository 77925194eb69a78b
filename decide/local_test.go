package decide_test

import (
	"context"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/decide"
	"github.com/sluicehq/sluice/keyfunc"
	"github.com/sluicehq/sluice/rules"
	"github.com/sluicehq/sluice/store/memstore"
)

// admittedOf checks n requests through dc on set, finishing each, and
// returns how many were admitted.
func admittedOf(dc *decide.Decider, set *rules.Set, n int) int {
	got := 0
	for range n {
		d := dc.Check(set, httptest.NewRequest("GET", "/", nil), nil)
		if d.Verdict == decide.Admitted {
			got++
		}
		d.Finish(context.Background(), 0)
	}
	return got
}

// recordingStore fails every call, and keeps a record of what it last said
// of a bucket: the state it is given, claimable once.
type recordingStore struct {
	failingStore
	state   sluice.BucketState
	known   bool
	claims  int
	claimed bool
}

func (s *recordingStore) ClaimBucket(h *sluice.Hit) (sluice.BucketState, bool) {
	s.claims++
	if !s.known || s.claimed {
		return sluice.BucketState{}, false
	}
	s.claimed = true
	return s.state, true
}

// TestLocalStartsFromRecord: the local fallback starts a bucket from what
// the store last said of it, its share of what remained, rather than
// full; with no record it starts full, as before.
func TestLocalStartsFromRecord(t *testing.T) {
	for _, tt := range []struct {
		name      string
		state     sluice.BucketState
		known     bool
		instances int
		admitted  int // of 20 requests at 10 a minute
	}{
		{"no record: full", sluice.BucketState{}, false, 1, 10},
		{"refused: empty", sluice.BucketState{Refused: true, RetryAfter: 6 * time.Second, ResetAfter: time.Minute}, true, 1, 0},
		{"3 left", sluice.BucketState{Remaining: 3, ResetAfter: 42 * time.Second}, true, 1, 3},
		{"8 left, 2 instances: 4 each", sluice.BucketState{Remaining: 8, ResetAfter: 12 * time.Second}, true, 2, 4},
		{"more left than the share: the share", sluice.BucketState{Remaining: 10}, true, 2, 5},
	} {
		t.Run(tt.name, func(t *testing.T) {
			store := &recordingStore{failingStore: failingStore{down(0)}, state: tt.state, known: tt.known}
			dc, err := decide.New(store, decide.WithInstances(tt.instances), quiet)
			if err != nil {
				t.Fatal(err)
			}
			set := rules.MustNew(rules.Rule{Name: "a", Key: keyfunc.Global(), Limit: sluice.PerMinute(10)})
			if admitted := admittedOf(dc, set, 20); admitted != tt.admitted {
				t.Errorf("admitted %d of 20, want %d", admitted, tt.admitted)
			}
		})
	}
}

// countingStore fails every call and counts the instances sharing it as
// its count says.
type countingStore struct {
	failingStore
	count atomic.Int64
}

func (s *countingStore) Instances() int { return int(s.count.Load()) }

// TestLocalHoldsTheInstanceCount: the local fallback divides a limit by
// the largest instance count the store reported lately, not by a count
// that just fell: a starved instance refreshes its presence late and the
// others count it out while it still decides.
func TestLocalHoldsTheInstanceCount(t *testing.T) {
	store := &countingStore{failingStore: failingStore{down(0)}}
	store.count.Store(4)
	dc, err := decide.New(store, quiet)
	if err != nil {
		t.Fatal(err)
	}
	set := rules.MustNew(rules.Rule{Name: "a", Key: keyfunc.Global(), Limit: sluice.PerMinute(40)})
	admitted := func(n int) int { return admittedOf(dc, set, n) }
	if got := admitted(5); got != 5 {
		t.Fatalf("admitted %d of 5 on a share of 10, want 5", got)
	}
	store.count.Store(1) // three instances counted out
	if got := admitted(20); got != 5 {
		t.Errorf("admitted %d of 20 more after the count fell to 1, want the rest of the share of 10: 5", got)
	}
}

// upDownStore decides on an in-process store until down, then fails
// every call, and counts the instances sharing it as its count says.
type upDownStore struct {
	mem   *memstore.Store
	down  atomic.Bool
	count atomic.Int64
}

func (s *upDownStore) Take(ctx context.Context, hits []sluice.Hit, out []sluice.Result) error {
	if s.down.Load() {
		return down(0)
	}
	return s.mem.Take(ctx, hits, out)
}

func (s *upDownStore) Instances() int { return int(s.count.Load()) }

// TestLocalHoldsTheCountSeenBeforeAFailure: the instance count the local
// fallback divides by is held from while the store answered, so an
// instance counted out just before the store fails is still counted.
func TestLocalHoldsTheCountSeenBeforeAFailure(t *testing.T) {
	mem := memstore.New(memstore.Config{})
	t.Cleanup(func() { mem.Close(context.Background()) })
	store := &upDownStore{mem: mem}
	store.count.Store(4)
	dc, err := decide.New(store, quiet)
	if err != nil {
		t.Fatal(err)
	}
	set := rules.MustNew(rules.Rule{Name: "a", Key: keyfunc.Global(), Limit: sluice.PerMinute(40)})
	admitted := func(n int) int { return admittedOf(dc, set, n) }
	if got := admitted(5); got != 5 {
		t.Fatalf("store answering: admitted %d of 5, want 5", got)
	}
	store.count.Store(3) // one instance counted out
	store.down.Store(true)
	if got := admitted(20); got != 10 {
		t.Errorf("store down: admitted %d of 20, want a share of 40 among 4 instances: 10", got)
	}
}
