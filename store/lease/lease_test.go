package lease_test

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/store/lease"
)

var leased = &sluice.LeasePolicy{Rule: "api", Enabled: true}

// hot is a key at 100/s with a burst of 100, leased.
func hotHit(key string) sluice.Hit {
	return sluice.Hit{Key: key, Limit: sluice.PerSecond(100), Lease: leased}
}

func TestMaxLease(t *testing.T) {
	for _, tc := range []struct {
		name      string
		limit     sluice.Limit
		alg       sluice.Algorithm
		instances int
		budget    float64
		want      int64
	}{
		{"4 instances at 100/s burst 100", sluice.PerSecond(100), sluice.TokenBucket, 4, 0.05, 25},
		{"one instance: capacity", sluice.PerSecond(100), sluice.TokenBucket, 1, 0.05, 100},
		{"drift bound below capacity/N", sluice.PerMinute(600), sluice.TokenBucket, 4, 0.05, 15},
		{"fixed window", sluice.PerSecond(100), sluice.FixedWindow, 4, 0.05, 25},
		{"sliding window passes through", sluice.PerSecond(100), sluice.SlidingWindow, 1, 0.05, 0},
		{"sliding log passes through", sluice.PerSecond(100), sluice.SlidingLog, 1, 0.05, 0},
		{"too small to lease", sluice.PerHour(10), sluice.TokenBucket, 8, 0.05, 0},
		{"a larger budget", sluice.PerMinute(600), sluice.TokenBucket, 4, 0.2, 60},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := lease.MaxLease(tc.limit, tc.alg, tc.instances, tc.budget); got != tc.want {
				t.Fatalf("MaxLease = %d, want %d", got, tc.want)
			}
		})
	}
}

func TestConfigErrorsNameTheField(t *testing.T) {
	back, _ := backing(t)
	for _, tc := range []struct {
		cfg   lease.Config
		field string
	}{
		{lease.Config{Instances: -1}, "Config.Instances"},
		{lease.Config{RefusalMemory: -1}, "Config.RefusalMemory"},
		{lease.Config{DriftBudget: 1.5}, "Config.DriftBudget"},
		{lease.Config{DriftBudget: -0.1}, "Config.DriftBudget"},
		{lease.Config{TTL: time.Hour}, "Config.TTL"},
		{lease.Config{TTL: time.Microsecond}, "Config.TTL"},
		{lease.Config{MaxLease: -1}, "Config.MaxLease"},
		{lease.Config{MaxKeys: -1}, "Config.MaxKeys"},
		{lease.Config{TopK: 1000}, "Config.TopK"},
		{lease.Config{Default: &sluice.LeasePolicy{MaxLease: -2}}, "lease.max_lease"},
		{lease.Config{Default: &sluice.LeasePolicy{HotKeys: sluice.HotKeyPolicy{Split: 1, Threshold: 5}}}, "hot_keys.split"},
		{lease.Config{Default: &sluice.LeasePolicy{HotKeys: sluice.HotKeyPolicy{Lease: true}}}, "hot_keys.threshold"},
	} {
		_, err := lease.New(back, tc.cfg)
		if !errors.Is(err, sluice.ErrInvalidConfig) || !strings.Contains(err.Error(), tc.field) {
			t.Errorf("%+v: %v, want ErrInvalidConfig naming %s", tc.cfg, err, tc.field)
		}
	}
	if _, err := lease.New(nil, lease.Config{}); !errors.Is(err, sluice.ErrInvalidConfig) {
		t.Errorf("no backing store: %v", err)
	}
}

// A busy key is served from leases: backing calls per check fall to about
// 1/K once K has grown, and every token is accounted for.
func TestBusyKeyLeases(t *testing.T) {
	back, clock := backing(t)
	s := newStore(t, back, lease.Config{Clock: clock, Instances: 4, SweepInterval: -1})
	h := hotHit("busy")
	admitted := 0
	for range 100 {
		if take(t, s, h)[0].Allowed {
			admitted++
		}
	}
	if admitted != 100 {
		t.Fatalf("admitted %d of a burst of 100", admitted)
	}
	// K grows 1, 2, 4, 8, 16, 25, 25, ...: 1+2+4+8+16 = 31, then 3 × 25.
	if n := back.takes.Load(); n > 9 {
		t.Fatalf("%d backing calls for 100 checks, want at most 9 (K up to 25)", n)
	}
	if r := take(t, s, h)[0]; r.Allowed || r.RetryAfter != 10*time.Millisecond {
		t.Fatalf("the 101st check: %+v, want refused with retry-after 10ms", r)
	}
	calls := back.takes.Load()
	for range 50 {
		if take(t, s, h)[0].Allowed {
			t.Fatal("passed with the bucket empty and no time passing")
		}
	}
	if n := back.takes.Load(); n != calls {
		t.Fatalf("%d backing calls for 50 refusals, want none: a remembered refusal is decided in process", n-calls)
	}
}

// A quiet key takes only its cost: a lease it would not use is never held.
func TestQuietKeyHoldsNothing(t *testing.T) {
	back, clock := backing(t)
	s := newStore(t, back, lease.Config{Clock: clock, SweepInterval: -1})
	h := hotHit("quiet")
	for i := range 5 {
		clock.Advance(3 * time.Second) // longer than the TTL
		take(t, s, h)
		if got, want := peek(t, back, h), int64(99); got != want {
			t.Fatalf("check %d: the backing bucket holds %d, want %d: the lease took more than the cost", i, got, want)
		}
	}
}

// Leased tokens go back on Close, and on expiry through Sweep; a store
// dropped without Close loses at most what it held.
func TestGiveBack(t *testing.T) {
	for _, tc := range []struct {
		name string
		end  func(t *testing.T, s *lease.Store, clock interface{ Advance(time.Duration) time.Time })
		lost bool
	}{
		{"close", func(t *testing.T, s *lease.Store, _ interface{ Advance(time.Duration) time.Time }) {
			if err := s.Close(context.Background()); err != nil {
				t.Fatal(err)
			}
		}, false},
		{"expiry", func(t *testing.T, s *lease.Store, clock interface{ Advance(time.Duration) time.Time }) {
			clock.Advance(2 * time.Second)
			if err := s.Sweep(context.Background()); err != nil {
				t.Fatal(err)
			}
		}, false},
		{"crash", func(*testing.T, *lease.Store, interface{ Advance(time.Duration) time.Time }) {}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			back, clock := backing(t)
			s, err := lease.New(back, lease.Config{Clock: clock, Instances: 4, DriftBudget: 1, SweepInterval: -1})
			if err != nil {
				t.Fatal(err)
			}
			h := sluice.Hit{Key: "k", Limit: sluice.PerHour(100), Lease: leased} // no refill during the test
			const served = 40
			for range served {
				if !take(t, s, h)[0].Allowed {
					t.Fatal("refused")
				}
			}
			held := 100 - served - peek(t, back, h)
			if held <= 0 || held > 25 {
				t.Fatalf("the store holds %d tokens, want from 1 to K = 25", held)
			}
			tc.end(t, s, clock)
			got := peek(t, back, h)
			switch {
			case tc.lost && got != 100-served-held:
				t.Fatalf("after a crash the bucket holds %d, want %d: exactly the %d held are missing", got, 100-served-held, held)
			case !tc.lost && got != 100-served:
				t.Fatalf("the bucket holds %d after the tokens went back, want %d", got, 100-served)
			}
		})
	}
}

// All or nothing: a request refused by another rule consumes nothing from
// a lease, and a refusal remembered in process costs the other hits
// nothing and no backing call.
func TestAllOrNothing(t *testing.T) {
	back, clock := backing(t)
	s := newStore(t, back, lease.Config{Clock: clock, SweepInterval: -1})
	a := sluice.Hit{Key: "a", Limit: sluice.PerSecond(100), Lease: leased}
	for range 10 { // a holds a lease
		take(t, s, a)
	}
	leftA := take(t, s, sluice.Hit{Key: "a", Limit: a.Limit, Peek: true, Lease: leased})[0].Remaining
	// b: unleased and empty.
	b := sluice.Hit{Key: "b", Limit: sluice.PerHour(1)}
	take(t, s, b)
	hits := []sluice.Hit{a, b}
	for range 5 {
		res := take(t, s, hits...)
		if sluice.Admitted(hits, res) || !res[0].Allowed || res[1].Allowed {
			t.Fatalf("%+v: want refused by b alone", res)
		}
	}
	if got := take(t, s, sluice.Hit{Key: "a", Limit: a.Limit, Peek: true, Lease: leased})[0].Remaining; got != leftA {
		t.Fatalf("a holds %d after refused requests, want %d", got, leftA)
	}
	// c: leased, and refused by the backing store once: remembered.
	c := hotHit("c")
	c.Cost = 100
	take(t, s, c)
	c.Cost = 1
	if take(t, s, c)[0].Allowed {
		t.Fatal("c passed beyond its limit")
	}
	calls := back.takes.Load()
	hits = []sluice.Hit{a, c}
	res := take(t, s, hits...)
	if sluice.Admitted(hits, res) || res[1].Allowed || res[1].RetryAfter <= 0 {
		t.Fatalf("%+v: want refused by c with a retry-after", res)
	}
	if n := back.takes.Load() - calls; n != 0 {
		t.Fatalf("%d backing calls for a request refused in process", n)
	}
	if got := take(t, s, sluice.Hit{Key: "a", Limit: a.Limit, Peek: true, Lease: leased})[0].Remaining; got != leftA {
		t.Fatalf("a holds %d after a request refused in process, want %d", got, leftA)
	}
}

// When the backing store fails, a leased key is served until its lease
// expires, then the error surfaces (for the rule's on_fail).
func TestBackingDown(t *testing.T) {
	noLeak(t, func() {
		back, clock := backing(t)
		s, err := lease.New(back, lease.Config{Clock: clock, SweepInterval: time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		h := sluice.Hit{Key: "k", Limit: sluice.PerHour(1000), Lease: leased}
		for range 30 {
			take(t, s, h)
		}
		back.down.Store(true)
		served := 0
		out := make([]sluice.Result, 1)
		for {
			err := s.Take(context.Background(), []sluice.Hit{h}, out)
			if err != nil {
				if !errors.Is(err, sluice.ErrUnavailable) {
					t.Fatalf("%v, want the backing store's ErrUnavailable", err)
				}
				break
			}
			served++
		}
		if served == 0 {
			t.Fatal("the lease served nothing while the backing store was down")
		}
		clock.Advance(3 * time.Second)
		if err := s.Take(context.Background(), []sluice.Hit{{Key: "other", Limit: h.Limit, Lease: leased}}, out); !errors.Is(err, sluice.ErrUnavailable) {
			t.Fatalf("after expiry: %v, want ErrUnavailable", err)
		}
		// The lease was spent, so Close has nothing to give back and
		// needs no backing store.
		if err := s.Close(context.Background()); err != nil {
			t.Fatalf("Close: %v", err)
		}
	})
}

// A return that cannot be delivered is counted and lost, never retried:
// a retry could give back twice.
func TestFailedReturnIsNeverRetried(t *testing.T) {
	back, clock := backing(t)
	rec := newRecorder()
	s := newStore(t, back, lease.Config{Clock: clock, Observer: rec, Logger: quiet, DriftBudget: 1, SweepInterval: -1})
	h := sluice.Hit{Key: "k", Limit: sluice.PerHour(100), Lease: leased}
	for range 10 {
		take(t, s, h)
	}
	held := 100 - 10 - peek(t, back, h)
	if held <= 0 {
		t.Fatal("nothing held")
	}
	back.down.Store(true)
	clock.Advance(3 * time.Second)
	if err := s.Sweep(context.Background()); !errors.Is(err, sluice.ErrUnavailable) {
		t.Fatalf("Sweep with the backing store down: %v, want ErrUnavailable", err)
	}
	back.down.Store(false)
	for range 3 {
		if err := s.Sweep(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	if n := back.refunds.Load(); n != 0 {
		t.Fatalf("%d refunds reached the backing store after the failed one, want none", n)
	}
	if rec.refundFailures != 1 || rec.lost != held || rec.returned != 0 {
		t.Fatalf("failed %d, lost %d, returned %d: want 1 failed and the %d held lost", rec.refundFailures, rec.lost, rec.returned, held)
	}
	if got := peek(t, back, h); got != 100-10-held {
		t.Fatalf("the bucket holds %d, want %d: the failed return must not have applied", got, 100-10-held)
	}
}

// TakeLocal decides a request only when every hit is served from a lease,
// and otherwise takes nothing.
func TestTakeLocal(t *testing.T) {
	back, clock := backing(t)
	s := newStore(t, back, lease.Config{Clock: clock, DriftBudget: 1, SweepInterval: -1})
	a := sluice.Hit{Key: "a", Limit: sluice.PerHour(100), Lease: leased}
	for range 10 {
		take(t, s, a)
	}
	held := take(t, s, sluice.Hit{Key: "a", Limit: a.Limit, Peek: true, Lease: leased})[0].Remaining
	out := make([]sluice.Result, 2)
	if !s.TakeLocal([]sluice.Hit{a}, out) || !out[0].Allowed {
		t.Fatalf("a hit its lease holds: not decided in process (%+v)", out[0])
	}
	calls := back.takes.Load()
	b := sluice.Hit{Key: "b", Limit: a.Limit, Lease: leased} // no lease yet
	if s.TakeLocal([]sluice.Hit{a, b}, out) {
		t.Fatal("a request with a hit no lease holds was decided in process")
	}
	if got := take(t, s, sluice.Hit{Key: "a", Limit: a.Limit, Peek: true, Lease: leased})[0].Remaining; got != held-1 {
		t.Fatalf("after a request TakeLocal left undecided: %d remaining, want %d", got, held-1)
	}
	if back.takes.Load() != calls+1 { // the peek only
		t.Fatalf("TakeLocal called the backing store")
	}
}

// Leasing with the default instance count says so once, at construction;
// an explicit count, or a store that cannot lease, says nothing.
func TestDefaultInstancesWarns(t *testing.T) {
	for _, tc := range []struct {
		name      string
		instances int
		lease     bool
		want      int
	}{
		{"default", 0, true, 1},
		{"explicit one", 1, true, 0},
		{"explicit four", 4, true, 0},
		{"nothing leased", 0, false, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var buf strings.Builder
			log := slog.New(slog.NewTextHandler(&buf, nil))
			back, clock := backing(t)
			var store sluice.Store = back
			if !tc.lease {
				store = passOnly{back}
			}
			s := newStore(t, store, lease.Config{Clock: clock, Instances: tc.instances, Logger: log, SweepInterval: -1})
			for range 3 {
				take(t, s, hotHit("k"))
			}
			if got := strings.Count(buf.String(), "Config.Instances"); got != tc.want {
				t.Fatalf("%d warnings naming Config.Instances, want %d:\n%s", got, tc.want, buf.String())
			}
		})
	}
}

// passOnly hides its store's optional interfaces.
type passOnly struct{ sluice.Store }
