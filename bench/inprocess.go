package bench

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-chi/httprate"
	"github.com/sethvargo/go-limiter/memorystore"
	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/store/memstore"
	"github.com/throttled/throttled/v2"
	thrmem "github.com/throttled/throttled/v2/store/memstore"
	ulule "github.com/ulule/limiter/v3"
	ulmem "github.com/ulule/limiter/v3/drivers/store/memory"
	"golang.org/x/time/rate"
)

// Peer is an in-process limiter in the comparison.
type Peer struct {
	// Name appears in benchmark names, tables and charts; no spaces.
	Name string
	// Algorithm says what it enforces and how, for the tables.
	Algorithm string
	// New builds one instance configured with s.
	New func(s Spec) (Limiter, error)
	// GaveUp, for a peer whose compare-and-swap gives up after a few
	// tries, reports whether err is that: on one hot key some of its
	// checks fail so. Nil for the others, whose checks never fail here.
	GaveUp func(err error) bool
}

// throttledGaveUp reports throttled's GCRA giving up its compare-and-swap
// (it has no error value to compare with).
func throttledGaveUp(err error) bool {
	return strings.HasPrefix(err.Error(), "Failed to store updated rate limit data")
}

// InProcessPeers returns the in-process comparison, sluice first.
func InProcessPeers() []Peer {
	return []Peer{
		{Name: "sluice", Algorithm: "token bucket (GCRA), memstore: lock-free lookup, compare-and-swap", New: newSluiceMem},
		{Name: "x-time-rate", Algorithm: "token bucket, sync.Map of *rate.Limiter", New: newXTimeRate},
		{Name: "go-limiter", Algorithm: "bucket reset per interval, sethvargo memorystore (interval stretched to 1 h, see newGoLimiter)", New: newGoLimiter},
		{Name: "ulule", Algorithm: "fixed window, ulule memory store", New: newUluleMem},
		{Name: "throttled", Algorithm: "GCRA, throttled memstore (LRU 65536)", New: newThrottledMem, GaveUp: throttledGaveUp},
		{Name: "httprate", Algorithm: "sliding window counter, httprate local counter", New: newHTTPRate},
	}
}

func (s Spec) limit() sluice.Limit {
	return sluice.Limit{Rate: s.Rate, Period: s.Period, Burst: s.Burst}
}

// sluiceWorker decides s's rules for one key in one Store.Take.
func sluiceWorker(st sluice.Store, s Spec) func() Worker {
	keys, n := s.ruleKeys(), s.rules()
	lim := s.limit()
	return func() Worker {
		// Each worker writes its hits and results on every check. One spare
		// element on either side (each at least a cache line) keeps another
		// worker's from sharing a line with them: without it, two workers'
		// hits allocated side by side made the parallel runs bimodal
		// (50 or 80 ns/op), which a middleware's per-request hits never are.
		hits := make([]sluice.Hit, n+2)[1 : n+1]
		for i := range hits {
			hits[i] = sluice.Hit{Limit: lim, Cost: 1}
		}
		out := make([]sluice.Result, n+2)[1 : n+1]
		return func(ctx context.Context, key int) (bool, error) {
			for r, k := range keys[key*n : (key+1)*n] {
				hits[r].Key = k
			}
			if err := st.Take(ctx, hits, out); err != nil {
				return false, err
			}
			return sluice.Admitted(hits, out), nil
		}
	}
}

func newSluiceMem(s Spec) (Limiter, error) {
	st := memstore.New(memstore.Config{})
	return perWorker{newWorker: sluiceWorker(st, s), close: func() error { return st.Close(context.Background()) }}, nil
}

func newXTimeRate(s Spec) (Limiter, error) {
	var m sync.Map // key -> *rate.Limiter
	every := rate.Limit(float64(s.Rate) / s.Period.Seconds())
	burst := int(s.Burst)
	return shared{check: func(_ context.Context, key int) (bool, error) {
		k := s.Keys[key]
		v, ok := m.Load(k)
		if !ok {
			v, _ = m.LoadOrStore(k, rate.NewLimiter(every, burst))
		}
		return v.(*rate.Limiter).Allow(), nil
	}}, nil
}

// newGoLimiter gives go-limiter Burst tokens per interval. Its memorystore
// refills fillRate = interval/tokens (nanoseconds per token, used as tokens
// per tick) after each tick, so above √(interval in ns) tokens per interval
// (31,622 a second) a bucket gets almost nothing back after its first
// interval: with 2^30 per second every check after the first second would
// be refused. The interval is stretched to an hour in that case, so no tick
// happens during a run and every check takes the admitting path, like the
// other peers'.
func newGoLimiter(s Spec) (Limiter, error) {
	interval := s.Period
	if float64(s.Burst)*float64(s.Burst) > float64(interval) {
		interval = max(interval, time.Hour)
	}
	st, err := memorystore.New(&memorystore.Config{Tokens: uint64(s.Burst), Interval: interval})
	if err != nil {
		return nil, err
	}
	return shared{
		check: func(ctx context.Context, key int) (bool, error) {
			_, _, _, ok, err := st.Take(ctx, s.Keys[key])
			return ok, err
		},
		close: func() error { return st.Close(context.Background()) },
	}, nil
}

func newUluleMem(s Spec) (Limiter, error) {
	l := ulule.New(ulmem.NewStore(), ulule.Rate{Period: s.Period, Limit: s.Burst})
	return shared{check: func(ctx context.Context, key int) (bool, error) {
		c, err := l.Get(ctx, s.Keys[key])
		return err == nil && !c.Reached, err
	}}, nil
}

// throttledQuota maps a Spec onto throttled's GCRA: MaxBurst is the
// capacity minus one (throttled admits MaxBurst+1 at once).
func throttledQuota(s Spec) throttled.RateQuota {
	return throttled.RateQuota{
		MaxRate:  throttled.PerDuration(int(s.Rate), s.Period),
		MaxBurst: int(s.Burst) - 1,
	}
}

func newThrottledMem(s Spec) (Limiter, error) {
	st, err := thrmem.NewCtx(65536) // the size throttled's README uses
	if err != nil {
		return nil, err
	}
	l, err := throttled.NewGCRARateLimiterCtx(st, throttledQuota(s))
	if err != nil {
		return nil, err
	}
	return shared{check: func(ctx context.Context, key int) (bool, error) {
		limited, _, err := l.RateLimitCtx(ctx, s.Keys[key], 1)
		return err == nil && !limited, err
	}}, nil
}

// discardWriter is a reusable http.ResponseWriter: httprate's limiter writes
// its headers to one, as its middleware would.
type discardWriter struct{ h http.Header }

func (w *discardWriter) Header() http.Header         { return w.h }
func (w *discardWriter) Write(b []byte) (int, error) { return len(b), nil }
func (w *discardWriter) WriteHeader(int)             {}

// httprateWorker calls RateLimiter.OnLimit, the in-handler entry point: the
// same path as httprate's middleware, less the key function.
func httprateWorker(rl *httprate.RateLimiter, s Spec) func() Worker {
	return func() Worker {
		w := &discardWriter{h: make(http.Header, 4)}
		r := httptest.NewRequest(http.MethodGet, "/", nil)
		return func(_ context.Context, key int) (bool, error) {
			return !rl.OnLimit(w, r, s.Keys[key]), nil
		}
	}
}

func newHTTPRate(s Spec) (Limiter, error) {
	rl := httprate.NewRateLimiter(int(s.Burst), s.Period)
	return perWorker{newWorker: httprateWorker(rl, s)}, nil
}

// BenchSequential measures one goroutine checking the keys of s in turn.
func BenchSequential(p Peer, s Spec) func(*testing.B) {
	return func(b *testing.B) {
		l, err := p.New(s)
		if err != nil {
			b.Fatal(err)
		}
		defer l.Close()
		w := l.NewWorker()
		ctx := context.Background()
		n := len(s.Keys)
		var denied, failed int64
		b.ReportAllocs()
		b.ResetTimer()
		for i := range b.N {
			ok, err := w(ctx, i%n)
			switch {
			case err != nil:
				failed++
			case !ok:
				denied++
			}
		}
		reportFailures(b, denied, failed)
	}
}

// reportFailures adds denied/op and errors/op to a benchmark's figures when
// there were any: a peer that errs or refuses under the high limit is
// reported, not hidden (throttled's CAS gives up on a hot key).
func reportFailures(b *testing.B, denied, failed int64) {
	if denied > 0 {
		b.ReportMetric(float64(denied)/float64(b.N), "denied/op")
	}
	if failed > 0 {
		b.ReportMetric(float64(failed)/float64(b.N), "errors/op")
	}
}

// BenchParallel measures b.RunParallel (GOMAXPROCS goroutines) checking the
// keys of s, each goroutine starting at its own offset.
func BenchParallel(p Peer, s Spec) func(*testing.B) {
	return func(b *testing.B) {
		l, err := p.New(s)
		if err != nil {
			b.Fatal(err)
		}
		defer l.Close()
		ctx := context.Background()
		n := len(s.Keys)
		var seq, denied, failed atomic.Int64
		b.ReportAllocs()
		b.ResetTimer()
		b.RunParallel(func(pb *testing.PB) {
			w := l.NewWorker()
			i := int(seq.Add(7919))
			var d, f int64
			for pb.Next() {
				ok, err := w(ctx, i%n)
				switch {
				case err != nil:
					f++
				case !ok:
					d++
				}
				i++
			}
			denied.Add(d)
			failed.Add(f)
		})
		reportFailures(b, denied.Load(), failed.Load())
	}
}

// InProcessModes are the three in-process measurements: name and how to
// build the benchmark for a peer.
var InProcessModes = []struct {
	Name  string
	Bench func(p Peer) func(*testing.B)
}{
	{"sequential", func(p Peer) func(*testing.B) { return BenchSequential(p, HighLimit(Keys(10_000))) }},
	{"parallel-10k-keys", func(p Peer) func(*testing.B) { return BenchParallel(p, HighLimit(Keys(10_000))) }},
	{"parallel-hot-key", func(p Peer) func(*testing.B) { return BenchParallel(p, HighLimit(Keys(1))) }},
}
